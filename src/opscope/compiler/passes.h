// The compiler's passes, each a function over the graph, run in this order:
// dce → cse → fold → dce → fuse (which first drops copies read only through views, sinks
// reshapes below unary ops and folds a matmul's bias add into it). Each can be switched
// off for debugging through PassOptions or OPSCOPE_COMPILE_DISABLE=fuse,cse,... ; explain mode prints the graph before and after
// each pass (OPSCOPE_COMPILE_EXPLAIN=1).
#pragma once
#include <string>

#include "opscope/compiler/graph.h"

namespace opscope::compiler {

struct PassOptions {
  bool dce = true;
  bool cse = true;
  bool fold = true;
  bool fuse = true;
  bool attention = true;  // within fuse: attention's matmuls, score steps and softmax as one node (CPU)
  bool pack = true;  // not a graph pass: the executor packs the weights of f32 matmuls (packed_weights.h)
  bool residual = true;  // with pack: a residual add or gate multiply joins its packed matmul
  bool rotary = true;    // within fuse: RoPE's rotate_half pattern as one node (a CPU kernel)
};

// The names a pass can be switched off by, in pipeline order, and "all".
inline constexpr const char* kPassNames = "dce, cse, fold, fuse, attention, rotary, pack, residual, all";
// Switches off the pass called `name` (one of kPassNames); false for an unknown name.
bool disable_pass(PassOptions& opt, const std::string& name);
// `base` with the passes named in OPSCOPE_COMPILE_DISABLE (comma-separated: dce, cse,
// fold, fuse, attention, rotary, pack, residual, or all) switched off. Unknown names throw "[compile] ...".
PassOptions pass_options_from_env(PassOptions base);

// Dead code: drops nodes whose results no output needs (and the params they captured).
void dce(Graph& g);
// Common subexpressions: a node equal to an earlier one (kind, operands, attributes,
// result type) is replaced by it. Custom ops are left alone (they may not be pure).
void cse(Graph& g);
// Scalar constants: elementwise ops on constants become constants; x*1, x/1, x+0,
// x-0 and x^1 become x when that keeps the result's type and layout.
void fold_constants(Graph& g);
// Before fusion: a matmul's bias add joins the matmul (add(matmul(a, b), bias) with bias
// of shape (N) becomes matmul(a, b, bias), added in the matmul's launch).
void fold_matmul_bias(Graph& g);
// With packed weights ("pack" on): an activation (relu, gelu, silu, tanh, sigmoid) of a
// matmul on a weight, and the bias add before it, join the matmul as its bias and
// attrs.epilogue: oneDNN applies them to each block of C as it computes it, where a fused
// kernel would make a second pass over C. Products too small to pack keep the fused kernel.
void fold_matmul_epilogue(Graph& g);
// After fold_matmul_epilogue: an add or mul of such a matmul's result (through an in-order
// view) with a dense f32 value of its size, defined before the matmul, joins it as
// attrs.residual and its last input: a residual stream's add, a gated unit's product,
// applied by oneDNN in the launch instead of a pass of its own (matmul_bias.cpp).
void fold_matmul_residual(Graph& g);
// Before fusion: a copy to contiguous (clone, .contiguous()) read only through views
// becomes those views of the copied value's storage, where each is expressible as strides
// and keeps its rows dense (elide_clones.cpp).
void elide_clones(Graph& g);
// Before fusion, on the CPU ("attention" on): matmul(q, kᵀ) → elementwise steps on the
// scores (scale, masks) → softmax over the last axis → matmul(·, v) becomes one attention
// node, its scores kept in the cores' caches (fuse_attention.cpp).
void fuse_attention(Graph& g);
// Before fusion: x * cos + cat(-x2, x1) * sin, x's halves x1 and x2 views of it (RoPE),
// becomes one rotary node (fuse_rotary.cpp).
void fuse_rotary(Graph& g);
// Before fusion: a unary elementwise op on an order-keeping reshape runs before the
// reshape instead (u(reshape(x)) = reshape(u(x))), so a chain split by a view fuses.
void sink_reshapes(Graph& g);
// Whether `r` only reinterprets its whole input in order: an as_strided view, contiguous in
// and out, offset 0 (an elementwise op commutes with it).
bool order_keeping_reshape(const Graph& g, const Node& r);
// Fusion: elementwise chains and last-axis reductions with their producers and
// consumers become fused nodes (see fuse.cpp for the rules).
void fuse(Graph& g);

// Runs the enabled passes; with `log`, appends the graph before and after each pass.
void run_passes(Graph& g, const PassOptions& opt, std::string* log);

}  // namespace opscope::compiler
