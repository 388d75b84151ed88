// The always-built face of the CUDA device: forwards to src/opscope/cuda when this build
// has it, else reports that it has none.
#include "opscope/runtime/cuda.h"

#include "opscope/core/error.h"

#if OPSCOPE_HAVE_CUDA
#include "opscope/cuda/cuda_device.h"
#endif

namespace opscope {

#if OPSCOPE_HAVE_CUDA

bool cuda_available() { return cuda_impl::available(); }
std::string cuda_unavailable_reason() { return cuda_impl::unavailable_reason(); }
int cuda_device_count() { return cuda_impl::device_count(); }
Device& cuda(int ordinal) { return cuda_impl::get_device(ordinal); }

#else

namespace {
constexpr const char* kNoSupport =
    "this build has no CUDA device support (configured without the CUDA toolkit or with -DOPSCOPE_CUDA=OFF)";
}

bool cuda_available() { return false; }
std::string cuda_unavailable_reason() { return kNoSupport; }
int cuda_device_count() { return 0; }
Device& cuda(int ordinal) { fail("cuda", "cuda:{}: {}", ordinal, kNoSupport); }

#endif

}  // namespace opscope
