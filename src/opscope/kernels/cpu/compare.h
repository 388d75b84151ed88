// Comparisons, logic and selection: the elementwise kernels whose output dtype is not
// their inputs' (comparisons give bool) or that take a bool mask (where, masked_fill),
// plus clamp and addcmul. All over map.h's broadcasting walk; floating inputs are
// compared as f32 (exact for bf16/f16), integers and bools as themselves.
#pragma once
#include <cstdint>
#include <optional>

#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

enum class CompareOp : uint8_t { eq, ne, lt, le, gt, ge };
enum class LogicalOp : uint8_t { and_, or_, xor_ };

const char* op_name(CompareOp op);
const char* op_name(LogicalOp op);

// out (bool, contiguous, the broadcast shape) = a op b; a and b share a dtype.
LaunchSpec compare_spec(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b);
// out = x op s, s already a value of x's dtype (the op rounds it).
LaunchSpec compare_scalar_spec(CompareOp op, const Tensor& out, const Tensor& x, double s);
// out (bool) = a op b on bool a and b.
LaunchSpec logical_spec(LogicalOp op, const Tensor& out, const Tensor& a, const Tensor& b);
// out (bool) = !x on bool x.
LaunchSpec logical_not_spec(const Tensor& out, const Tensor& x);
// out = cond ? a : b; cond bool, a and b of out's dtype.
LaunchSpec where_spec(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
// out = mask ? value : x (value a value of x's dtype).
LaunchSpec masked_fill_spec(const Tensor& out, const Tensor& x, const Tensor& mask, double value);
// out = clamp(x, lo, hi) (absent bounds: none).
LaunchSpec clamp_spec(const Tensor& out, const Tensor& x, std::optional<double> lo, std::optional<double> hi);
// out = x + value * a * b (floating, one dtype).
LaunchSpec addcmul_spec(const Tensor& out, const Tensor& x, const Tensor& a, const Tensor& b, double value);

}  // namespace opscope::cpu_kernels
