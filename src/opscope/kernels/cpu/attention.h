// Attention per head, with the scores kept in the core's cache: for a block of query rows,
// S = Q Kᵀ (sgemm), each score through its elementwise steps (the scale, masks), a row
// softmax, O = P V (sgemm). Unfused, S goes to memory and back three times (the product,
// the scale-and-mask kernel, the softmax) and the scale and mask cost a launch each. A
// compiled graph's matmul → scale/mask → softmax → matmul becomes this
// (compiler/fuse_attention.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

// One elementwise step on each score s: s = s op x, or x op s when `swap`, where x is the
// scalar, or `operand`'s element (broadcast to the scores' shape) at the score's index.
struct ScoreStep {
  enum class Op : uint8_t { add, sub, mul, div };
  Op op = Op::mul;
  bool swap = false;
  float scalar = 0;
  const Tensor* operand = nullptr;  // null: the scalar
};

// The name its launches carry.
inline constexpr const char* kAttentionKernel = "attention_f32";

// out (BH, Tq, Dv), rows dense, = softmax(steps(q @ kt), last axis) @ v, with q (BH, Tq, D),
// kt (BH, D, Tk) and v (BH, Tk, Dv) f32 in any batch strides, each matrix with a dense dim
// (sgemm_layout, sgemm.h). `scores` is the shape the steps' operands broadcast to: its last
// two dims Tq and Tk, the product of the others BH. Throws "[attention] ..." for anything else.
LaunchSpec attention_spec(const Tensor& out, const Tensor& q, const Tensor& kt, const Tensor& v,
                          const std::vector<ScoreStep>& steps, const Shape& scores);

}  // namespace opscope::cpu_kernels
