// A kernel body: a callable (begin, end) like std::function, except that closures up
// to kInline bytes live inside the object. Every launch carries one; with
// std::function most kernel closures (pointers, shapes, strides) went to the heap,
// a malloc per launch on the host and a free on whichever thread dropped it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

namespace opscope {

class KernelFn {
 public:
  static constexpr size_t kInline = 160;

  KernelFn() = default;
  KernelFn(std::nullptr_t) {}
  template <class F, class D = std::decay_t<F>,
            class = std::enable_if_t<!std::is_same_v<D, KernelFn> && std::is_invocable_v<D&, int64_t, int64_t>>>
  KernelFn(F&& f) {
    emplace<D>(std::forward<F>(f));
  }
  KernelFn(KernelFn&& o) noexcept { take(o); }
  KernelFn(const KernelFn& o) {
    if (o.ops_) o.ops_->copy(buf_, o.buf_), ops_ = o.ops_;
  }
  KernelFn& operator=(KernelFn&& o) noexcept {
    if (this != &o) reset(), take(o);
    return *this;
  }
  KernelFn& operator=(const KernelFn& o) {
    if (this != &o) {
      KernelFn t(o);
      *this = std::move(t);
    }
    return *this;
  }
  KernelFn& operator=(std::nullptr_t) {
    reset();
    return *this;
  }
  ~KernelFn() { reset(); }

  explicit operator bool() const { return ops_ != nullptr; }
  // Like std::function, callable through const (the closure may be mutable).
  void operator()(int64_t begin, int64_t end) const { ops_->call(const_cast<unsigned char*>(buf_), begin, end); }
  bool is_inline() const { return ops_ && ops_->inline_; }

 private:
  struct Ops {
    void (*call)(void* self, int64_t b, int64_t e);
    void (*move)(void* dst, void* src);  // move-constructs dst from src and destroys src
    void (*copy)(void* dst, const void* src);
    void (*destroy)(void* self);
    bool inline_;
  };

  template <class F>
  static constexpr bool fits =
      sizeof(F) <= kInline && alignof(F) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<F>;

  template <class F>
  static void copy_closure(void* dst, const F& f) {
    if constexpr (std::is_copy_constructible_v<F>) {
      if constexpr (fits<F>) ::new (dst) F(f);
      else *static_cast<F**>(dst) = new F(f);
    } else {
      throw std::bad_function_call();
    }
  }

  template <class F>
  static const Ops* ops_for() {
    if constexpr (fits<F>) {
      static constexpr Ops ops{
          [](void* s, int64_t b, int64_t e) { (*static_cast<F*>(s))(b, e); },
          [](void* d, void* s) {
            ::new (d) F(std::move(*static_cast<F*>(s)));
            static_cast<F*>(s)->~F();
          },
          [](void* d, const void* s) { copy_closure<F>(d, *static_cast<const F*>(s)); },
          [](void* s) { static_cast<F*>(s)->~F(); }, true};
      return &ops;
    } else {
      static constexpr Ops ops{[](void* s, int64_t b, int64_t e) { (**static_cast<F**>(s))(b, e); },
                               [](void* d, void* s) { *static_cast<F**>(d) = *static_cast<F**>(s); },
                               [](void* d, const void* s) { copy_closure<F>(d, **static_cast<F* const*>(s)); },
                               [](void* s) { delete *static_cast<F**>(s); }, false};
      return &ops;
    }
  }

  template <class F, class A>
  void emplace(A&& f) {
    if constexpr (fits<F>) ::new (buf_) F(std::forward<A>(f));
    else *reinterpret_cast<F**>(buf_) = new F(std::forward<A>(f));
    ops_ = ops_for<F>();
  }
  void take(KernelFn& o) noexcept {
    if (o.ops_) {
      o.ops_->move(buf_, o.buf_);
      ops_ = o.ops_;
      o.ops_ = nullptr;
    }
  }
  void reset() {
    if (ops_) ops_->destroy(buf_), ops_ = nullptr;
  }

  const Ops* ops_ = nullptr;
  alignas(std::max_align_t) unsigned char buf_[kInline];
};

}  // namespace opscope
