// A row of f32 scratch per thread: each of the device's cores grows its own and keeps it,
// so that launches on a core reuse one allocation rather than make one per call.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>

namespace opscope::cpu_kernels {

// At least n floats, 64-byte aligned, this thread's. A caller holds it until it returns and
// calls no other user of it meanwhile.
inline float* thread_row(int64_t n) {
  struct Buffer {
    float* p = nullptr;
    int64_t n = 0;
    ~Buffer() { ::operator delete(p, std::align_val_t(64)); }
  };
  thread_local Buffer buf;
  if (n > buf.n) {
    ::operator delete(buf.p, std::align_val_t(64));
    buf.p = nullptr;  // (should the allocation below throw)
    buf.n = 0;
    buf.p = static_cast<float*>(::operator new(size_t(n) * sizeof(float), std::align_val_t(64)));
    buf.n = n;
  }
  return buf.p;
}

}  // namespace opscope::cpu_kernels
