// Activations a kernel applies to its output block while it is in cache (a convolution's
// epilogue): one pass fewer over the activations than the elementwise op after it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string_view>

namespace opscope::cpu_kernels {

enum class Activation : uint8_t { none, relu, relu6, hardswish, silu };

// "relu", "relu6", "hardswish", "silu" ("" for none); the name of the kernel's suffix.
std::string_view activation_name(Activation a);
// The activation of that name; false if there is none.
bool activation_from_name(std::string_view name, Activation& out);

// relu6(x + 3), hardswish's and hardsigmoid's ramp, as torch computes it: NaN stays NaN.
[[gnu::always_inline]] inline float relu6_shift(float x) { return std::min(std::max(x + 3.f, 0.f), 6.f); }

// p[0, n) = act(p[0, n)), vectorized; as the elementwise op of the same name computes it.
void apply_activation(Activation a, float* p, int64_t n);

}  // namespace opscope::cpu_kernels
