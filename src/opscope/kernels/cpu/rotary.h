// Rotary position embedding (RoPE) as one kernel: out = x * cos + rotate_half(x) * sin, where
// rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2]), Llama's and GPT-NeoX's form. Traced, it is
// two views, a neg, a concat, two muls and an add; a compiled graph's `rotary` node
// (compiler/fuse_rotary.cpp) runs it here, reading x strided (the heads of a projection)
// and cos and sin broadcast.
#pragma once
#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

inline constexpr const char* kRotaryKernel = "rotary_f32";

// out (contiguous, x's shape) = x * cos + rotate_half(x) * sin; f32; x's last dim even;
// cos and sin broadcast to x's shape. Errors name "rotary".
LaunchSpec rotary_spec(const Tensor& out, const Tensor& x, const Tensor& cos, const Tensor& sin);

}  // namespace opscope::cpu_kernels
