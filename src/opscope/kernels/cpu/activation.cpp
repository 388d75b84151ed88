#include "opscope/kernels/cpu/activation.h"

namespace opscope::cpu_kernels {

namespace {
#include "opscope/kernels/cpu/vec_math.inc"
}  // namespace

std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::none: return "";
    case Activation::relu: return "relu";
    case Activation::relu6: return "relu6";
    case Activation::hardswish: return "hardswish";
    case Activation::silu: return "silu";
  }
  return "";
}

bool activation_from_name(std::string_view name, Activation& out) {
  for (Activation a : {Activation::none, Activation::relu, Activation::relu6, Activation::hardswish, Activation::silu})
    if (activation_name(a) == name) return out = a, true;
  return false;
}

void apply_activation(Activation a, float* p, int64_t n) {
  switch (a) {
    case Activation::none: return;
    // NaN stays NaN, as in torch: x < 0 and the std::max/min below are false for it.
    case Activation::relu:
      for (int64_t i = 0; i < n; ++i) p[i] = p[i] < 0.f ? 0.f : p[i];
      return;
    case Activation::relu6:
      for (int64_t i = 0; i < n; ++i) p[i] = std::min(std::max(p[i], 0.f), 6.f);
      return;
    case Activation::hardswish:
      for (int64_t i = 0; i < n; ++i) p[i] = p[i] * relu6_shift(p[i]) / 6.f;
      return;
    case Activation::silu:
      for (int64_t i = 0; i < n; ++i) p[i] = ofs_silu(p[i]);
      return;
  }
}

}  // namespace opscope::cpu_kernels
