// RMSNorm two ways on the CPU device: op by op (six kernels) and the built-in fused
// kernel. Prints both timings, their ratio, and checks the results agree.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "opscope/cases/rmsnorm.h"
#include "opscope/opscope.h"

int main(int argc, char** argv) {
  CLI::App app{"RMSNorm: naive (six ops) vs built-in fused kernel"};
  std::string shape = "4096x4096", dtype = "f32";
  opscope::cases::RmsNormSetup st;
  app.add_option("--shape", shape, "ROWSxHIDDEN")->capture_default_str();
  app.add_option("--dtype", dtype, "f32, bf16 or f16")->capture_default_str();
  app.add_option("--iters", st.iters, "timed iterations")->capture_default_str()->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    opscope::cases::parse_shape(shape, st.rows, st.hidden);
    st.dtype = opscope::parse_dtype(dtype, "--dtype");
    fmt::print("{}\nRMSNorm {}x{} {}\n", opscope::cpu().description(), st.rows, st.hidden, dtype);
    auto t = opscope::cases::time_rms_norm(st, {"naive", "builtin"});
    fmt::print("{:<10} {:>12} {:>12} {:>14}\n", "impl", "device ms", "host ms", "max |diff|");
    for (auto& r : t) fmt::print("{:<10} {:>12.3f} {:>12.3f} {:>14.3g}\n", r.impl, r.device_ms, r.host_ms, r.max_abs_diff);
    fmt::print("device time naive / built-in: {:.2f}x\n", t[0].device_ms / t[1].device_ms);
    double tol = st.dtype == opscope::DType::f32 ? 1e-4 : 5e-2;
    if (t[1].max_abs_diff > tol) {
      fmt::print(stderr, "results differ by {} (> {})\n", t[1].max_abs_diff, tol);
      return 1;
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
  return 0;
}
