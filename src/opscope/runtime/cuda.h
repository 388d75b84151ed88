// The CUDA device, in every build. With the CUDA toolkit (OPSCOPE_HAVE_CUDA) these
// forward to src/opscope/cuda; without it cuda_available() is false and cuda() throws
// "[cuda] this build has no CUDA device support".
#pragma once
#include <string>

namespace opscope {

class Device;

// True when this build has the CUDA device and a usable GPU is present.
bool cuda_available();
// Why cuda_available() is false ("" when it is true): no CUDA support in this build, no
// GPU (the driver's answer), a driver older than the toolkit.
std::string cuda_unavailable_reason();
// GPUs the driver reports (0 without one or without CUDA support).
int cuda_device_count();
// The CUDA device `ordinal`, made on first use (like cpu()) and kept until exit. Throws
// "[cuda] cuda:0: <reason>" when it cannot be used.
Device& cuda(int ordinal = 0);

}  // namespace opscope
