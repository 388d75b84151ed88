// Tracing: while opscope::compile traces a function, every public op records a node.
// An op's hook is one line after it has made its output:
//
//   if (compiler::tracing()) compiler::record("mul", {&a, &b}, out);
//   if (compiler::tracing()) compiler::record("add", {&a}, out, compiler::TraceAttrs::rhs(b));
//   if (compiler::tracing()) compiler::record("mean", {&x}, out, compiler::TraceAttrs::reduce(axes, keepdim));
//
// When nothing traces, the hook costs one thread-local load and a branch. Ops that call
// other ops record them too; the outer op's record wins and the inner nodes are dead code.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "opscope/core/dtype.h"

namespace opscope {
class Tensor;
}

namespace opscope::compiler {

class Tracer;
namespace detail {
extern thread_local Tracer* t_tracer;
}
// True while this thread traces a function for compile().
inline bool tracing() { return detail::t_tracer != nullptr; }

// An op's arguments other than its tensors.
struct TraceAttrs {
  std::vector<int64_t> axes;
  bool keepdim = false;
  int scalar_pos = -1;  // binary op with a double operand: 0 = left (2 - x), 1 = right (x - 2)
  double scalar = 0;    // that operand; eps of rms_norm / layer_norm
  int64_t axis = 0;     // softmax, argmax, concat
  int64_t correction = 1;
  DType dtype = DType::f32;  // to(dtype)

  static TraceAttrs rhs(double v) { TraceAttrs a; a.scalar_pos = 1; a.scalar = v; return a; }
  static TraceAttrs lhs(double v) { TraceAttrs a; a.scalar_pos = 0; a.scalar = v; return a; }
  static TraceAttrs reduce(const std::vector<int64_t>& axes, bool keepdim) {
    TraceAttrs a; a.axes = axes; a.keepdim = keepdim; return a;
  }
  static TraceAttrs var(const std::vector<int64_t>& axes, bool keepdim, int64_t correction) {
    TraceAttrs a = reduce(axes, keepdim); a.correction = correction; return a;
  }
  static TraceAttrs at_axis(int64_t axis, bool keepdim = false) {
    TraceAttrs a; a.axis = axis; a.keepdim = keepdim; return a;
  }
  static TraceAttrs eps(double e) { TraceAttrs a; a.scalar = e; return a; }
  static TraceAttrs cast(DType t) { TraceAttrs a; a.dtype = t; return a; }
};

// Records public op `op` (its OPSCOPE_OP name; "to" for casts) with its tensor operands
// and its output.
void record(const char* op, std::initializer_list<const Tensor*> inputs, const Tensor& out,
            const TraceAttrs& attrs = {});
void record(const char* op, std::span<const Tensor> inputs, const Tensor& out, const TraceAttrs& attrs = {});
// A registered custom op: an opaque node that calls the op by name at run time.
void record_custom(std::string_view name, std::span<const Tensor> inputs, const Tensor& out);
// record(), then `out` itself: for ops that return an expression,
//   return compiler::traced("matmul", {&a, &b}, Tensor(...));
Tensor traced(const char* op, std::initializer_list<const Tensor*> inputs, Tensor out, const TraceAttrs& attrs = {});
// A tensor made inside the function (full, arange, from_host, randn, ...): a constant of
// the compiled graph, as in torch.jit.trace.
void record_creation(const Tensor& out);

}  // namespace opscope::compiler
