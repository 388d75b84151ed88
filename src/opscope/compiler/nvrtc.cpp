#include "opscope/compiler/nvrtc.h"

#include <chrono>
#include <regex>
#include <sys/stat.h>

#include "opscope/core/error.h"

#ifdef OPSCOPE_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace opscope::compiler {

void check_cuda_arch(const std::string& arch) {
  static const std::regex re("(sm|compute)_[0-9]{2,3}[af]?");
  if (!std::regex_match(arch, re))
    fail("nvrtc", "'{}' is not a CUDA architecture (want sm_NN for a GPU, e.g. sm_90 on H100/H200, or compute_NN)", arch);
}

bool is_real_arch(const std::string& arch) { return arch.rfind("sm_", 0) == 0; }

#ifdef OPSCOPE_HAVE_NVRTC

namespace {

#ifndef OPSCOPE_CUDA_INCLUDE_DIR
#define OPSCOPE_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

void check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) fail("nvrtc", "{} failed: {}", what, nvrtcGetErrorString(r));
}

// Destroys the program on every path out.
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p) nvrtcDestroyProgram(&p);
  }
};

}  // namespace

bool nvrtc_available() { return true; }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> nvrtc_options(const std::string& arch) {
  check_cuda_arch(arch);
  std::vector<std::string> o = {"-std=c++17", "--gpu-architecture=" + arch, "-default-device", "-lineinfo"};
  struct stat st;
  if (::stat(OPSCOPE_CUDA_INCLUDE_DIR, &st) == 0) o.push_back(std::string("--include-path=") + OPSCOPE_CUDA_INCLUDE_DIR);
  return o;
}

NvrtcOutput nvrtc_compile(const std::string& source, const std::string& file_name, const std::string& arch) {
  std::vector<std::string> opts = nvrtc_options(arch);
  std::vector<const char*> argv;
  for (auto& o : opts) argv.push_back(o.c_str());
  auto t0 = std::chrono::steady_clock::now();
  NvrtcOutput out;
  Program prog;
  check(nvrtcCreateProgram(&prog.p, source.c_str(), file_name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  nvrtcResult rc = nvrtcCompileProgram(prog.p, int(argv.size()), argv.data());
  size_t n = 0;
  check(nvrtcGetProgramLogSize(prog.p, &n), "nvrtcGetProgramLogSize");
  if (n > 1) {
    out.log.resize(n);
    check(nvrtcGetProgramLog(prog.p, out.log.data()), "nvrtcGetProgramLog");
    out.log.resize(n - 1);  // the terminating NUL
  }
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (rc == NVRTC_ERROR_COMPILATION) return out;
  check(rc, "nvrtcCompileProgram");
  check(nvrtcGetPTXSize(prog.p, &n), "nvrtcGetPTXSize");
  out.ptx.resize(n);
  check(nvrtcGetPTX(prog.p, out.ptx.data()), "nvrtcGetPTX");
  while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  if (is_real_arch(arch)) {
    check(nvrtcGetCUBINSize(prog.p, &n), "nvrtcGetCUBINSize");
    out.cubin.resize(n);
    check(nvrtcGetCUBIN(prog.p, out.cubin.data()), "nvrtcGetCUBIN");
  }
  out.ok = true;
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

#else  // no CUDA toolkit in this build

bool nvrtc_available() { return false; }
std::string nvrtc_version() { fail("nvrtc", "this build has no CUDA toolkit (CMake did not find it)"); }
std::vector<std::string> nvrtc_options(const std::string& arch) {
  check_cuda_arch(arch);
  fail("nvrtc", "this build has no CUDA toolkit (CMake did not find it)");
}
NvrtcOutput nvrtc_compile(const std::string&, const std::string&, const std::string&) {
  fail("nvrtc", "this build has no CUDA toolkit (CMake did not find it)");
}

#endif

}  // namespace opscope::compiler
