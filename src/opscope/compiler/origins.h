// Where each node of a compiled graph came from: the framework op and the module calls
// of the user's code that made it (opscope.compile records aten ops and nn.Module
// paths; a C++ function its opscope op names). Passes keep them: a fused kernel or a
// library call carries the union of its nodes' origins. So a profile of compiled code
// still says which ops each kernel computes (Inductor names kernels after their origin
// ops) and in which modules its time belongs (Neuron's hierarchy view maps compiled
// instructions back to layers).
#pragma once
#include <string>
#include <vector>

namespace opscope::prof {
struct Trace;
}

namespace opscope::compiler {

struct Origin {
  std::string op;                    // "aten::mul"
  std::vector<std::string> modules;  // the module calls around it, outermost first:
                                     // "Llama", "layers.0", "layers.0.attention"
  bool operator==(const Origin& o) const { return op == o.op && modules == o.modules; }
  const std::string& module() const;  // the innermost ("" for none)
};

// While tracing: the origin of the nodes recorded on this thread until the scope ends.
class OriginScope {
 public:
  explicit OriginScope(const Origin* o);
  ~OriginScope();
  OriginScope(const OriginScope&) = delete;
  OriginScope& operator=(const OriginScope&) = delete;

 private:
  const Origin* prev_;
};
const Origin* current_origin();

// The module ranges a launch for these origins runs inside, outermost first, without the
// outermost module (the compiled call's own op stands for it). When the origins' modules
// lie on one path the launch belongs to the innermost (a projection with the residual
// add of its block is the projection's); when they diverge, to a range named after each
// ("layers.0 + layers.1.attention_norm") inside their common ancestor: shown as shared,
// never given to one of them.
struct LaunchScope {
  std::vector<std::string> ranges;
  bool shared = false;
};
LaunchScope launch_scope(const std::vector<const Origin*>& origins);

// For profiles: the origins of each kernel name launched so far (identical kernels of
// several layers share a name and list each layer's modules). A trace annotator adds
//   "kernel_origins": {"<kernel>": {"ops": ["aten::pow", ...], "modules": [...], "shared": bool}}
// to the config of traces that ran these kernels.
void register_kernel_origins(const std::string& kernel, const std::vector<const Origin*>& origins, bool shared);
void annotate_trace_origins(prof::Trace& trace);

}  // namespace opscope::compiler
