// What each framework op is to the advisor: whether a generated kernel can absorb it,
// whether its math can outlast its memory traffic, whether it reduces, and the bytes of
// its inputs from the shapes the profiler recorded.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace opscope::advisor {

// The op a framework op computes, in opscope's names: "aten::mul" → "mul", "aten::add_" →
// "add", "aten::amax" → "max" (torch profiles name aten ops); other names as they are.
std::string_view base_op(std::string_view name);
// Ops a generated kernel can absorb (elementwise, casts, reductions); in advise.h too.
bool fusable_op(std::string_view name);
// autograd's wrappers of a backward node ("autograd::engine::evaluate_function: ...",
// "MulBackward0"): scopes around the ops a user wrote, not ops themselves.
bool autograd_wrapper(std::string_view name);
// Ops whose output a fused epilogue can finish (bias, activation): matmuls, convolutions.
bool matmul_like(std::string_view name);
bool activation(std::string_view name);
// An add of a vector along the last axis ("[(8, 64) f32, (64) f32]"): a bias. Needs shapes.
bool bias_add(std::string_view name, std::string_view shapes);
// Ops whose math can outlast their memory traffic (transcendentals, division); the
// others (add, mul, casts, sums) stream: time past their bytes at the probe's rate is
// memory inefficiency a fused kernel does not inherit op by op.
bool math_op(std::string_view op);
bool reduction(std::string_view op);
// "norm", "residual+norm", "activation" or "elementwise".
std::string classify(const std::vector<std::string>& ops);
// "[(4, 8) f32, (8) f32]" → the bytes of each input; empty when the op has no shapes.
std::vector<int64_t> input_bytes(std::string_view shapes);
// The element count of the largest input (the domain an elementwise op walks); 0
// without shapes.
int64_t largest_input_numel(std::string_view shapes);
// Numbers in a range name generalized, so layers group: "layers.3" → "layers.N".
std::string generalize(std::string_view name);

}  // namespace opscope::advisor
