// NVRTC, in process: CUDA C source to PTX and (for a real architecture) cubin. Needs
// no GPU. Built with OPSCOPE_HAVE_NVRTC when CMake finds the CUDA toolkit; otherwise
// nvrtc_available() is false and the other functions throw
// "[nvrtc] this build has no CUDA toolkit".
#pragma once
#include <string>
#include <vector>

namespace opscope::compiler {

// Whether this build can compile CUDA source.
bool nvrtc_available();
// "13.0": part of every CUDA artifact's key.
std::string nvrtc_version();

// "sm_90" (a real GPU: PTX and cubin) or "compute_90" (virtual: PTX only); also
// "sm_90a", "sm_100f". Throws "[nvrtc] ..." for anything else.
void check_cuda_arch(const std::string& arch);
bool is_real_arch(const std::string& arch);

// The options a compile for `arch` uses: -std=c++17, the architecture, -default-device,
// -lineinfo (profilers map SASS to source), the toolkit's include folder. No fast math.
std::vector<std::string> nvrtc_options(const std::string& arch);

struct NvrtcOutput {
  bool ok = false;
  std::string log;    // the compiler's messages (warnings too, when it built)
  std::string ptx;    // without the trailing NUL
  std::string cubin;  // empty for a virtual architecture
  double ms = 0;
};

// Compiles `source` (called `file_name` in the log's messages) for `arch`. A compile
// error is ok == false with the log; API failures throw "[nvrtc] ...".
NvrtcOutput nvrtc_compile(const std::string& source, const std::string& file_name, const std::string& arch);

}  // namespace opscope::compiler
