// An allocator for std::allocate_shared that keeps freed blocks on a per-thread free
// list. Every op allocates a tensor's Storage (with its shared_ptr control block);
// through malloc that cost more than the rest of the launch once frees came in
// batches (the stream recycles finished launches together) and overflowed glibc's
// per-thread cache.
#pragma once
#include <cstddef>
#include <new>

namespace opscope {

namespace detail {

template <size_t Size>
struct FreeList {
  static constexpr int kMax = 4096;  // beyond this, blocks go back to the heap
  void* head = nullptr;
  int count = 0;
  ~FreeList() {
    while (head) {
      void* n = *static_cast<void**>(head);
      ::operator delete(head);
      head = n;
    }
    dead() = true;
  }
  // Set once this thread's list is destroyed (at thread exit); later frees use the heap.
  static bool& dead() {
    thread_local bool d = false;
    return d;
  }
  static FreeList& get() {
    thread_local FreeList l;
    return l;
  }
};

}  // namespace detail

template <class T>
struct PoolAllocator {
  using value_type = T;
  static constexpr size_t kSize = sizeof(T) < sizeof(void*) ? sizeof(void*) : sizeof(T);
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "PoolAllocator: over-aligned type");

  PoolAllocator() = default;
  template <class U>
  PoolAllocator(const PoolAllocator<U>&) {}

  T* allocate(size_t n) {
    if (n == 1 && !detail::FreeList<kSize>::dead()) {
      auto& l = detail::FreeList<kSize>::get();
      if (void* p = l.head) {
        l.head = *static_cast<void**>(p);
        --l.count;
        return static_cast<T*>(p);
      }
    }
    return static_cast<T*>(::operator new(n == 1 ? kSize : n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (n == 1 && !detail::FreeList<kSize>::dead()) {
      auto& l = detail::FreeList<kSize>::get();
      if (l.count < l.kMax) {
        *reinterpret_cast<void**>(p) = l.head;
        l.head = p;
        ++l.count;
        return;
      }
    }
    ::operator delete(p);
  }
  template <class U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
};

}  // namespace opscope
