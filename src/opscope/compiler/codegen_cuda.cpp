// FusedKernel → one CUDA __global__ function and its launch config (codegen_cuda.h).
#include "opscope/compiler/codegen_cuda.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "opscope/compiler/hash.h"
#include "opscope/compiler/scalar_ops.h"
#include "opscope/core/error.h"

namespace opscope::compiler {

namespace {

constexpr int kFlatBlock = 256;        // threads per block of the flat and elementwise forms
constexpr int kWarpRowBlock = 256;     // 8 rows per block
constexpr int kMaxWarpCols = 1024;     // longer rows get a block each
constexpr int kRegisterFloats = 64;    // per-thread floats kept across passes at most (half of
                                       // the registers a thread has at 512 threads per block)
constexpr int kMaxUnroll = 16;         // chunks per thread of a fully unrolled row loop

std::string float_literal(double d) {
  float f = float(d);
  if (std::isnan(f)) return "__uint_as_float(0x7fc00000u)";
  if (std::isinf(f)) return f > 0 ? "__uint_as_float(0x7f800000u)" : "__uint_as_float(0xff800000u)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%af", double(f));
  return buf;
}

const char* ptr_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::bf16:
    case DType::f16: return "u16";
    default: fail("compile", "internal: fused operand of dtype {}", dtype_name(t));
  }
}
const char* dt_tag(DType t) { return t == DType::f32 ? "f32" : t == DType::bf16 ? "bf16" : "f16"; }
std::string load(DType t, const std::string& e) {
  if (t == DType::bf16) return "ofs_bf16_ld(" + e + ")";
  if (t == DType::f16) return "ofs_f16_ld(" + e + ")";
  return e;
}
std::string store(DType t, const std::string& e) {
  if (t == DType::bf16) return "(u16)ofs_bf16_st(" + e + ")";
  if (t == DType::f16) return "(u16)ofs_f16_st(" + e + ")";
  return e;
}

bool expensive(OpKind k) {
  switch (k) {
    case OpKind::neg: case OpKind::abs: case OpKind::relu: case OpKind::add: case OpKind::sub:
    case OpKind::mul: case OpKind::maximum: case OpKind::minimum: case OpKind::cast:
    case OpKind::contiguous: case OpKind::clone:
      return false;
    default: return true;
  }
}

int64_t pow2_ceil(int64_t x) {
  int64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

enum class Role : uint8_t { input, constant, full, row };

// What one variant of the kernel body (vector width V) computes in which pass.
struct Plan {
  int V = 1;
  int T = 0;  // chunks per thread per row in a fully unrolled loop; 0: a strided loop
  std::vector<std::set<int>> roots, needed, loads, scratch_loads;
  std::vector<int> stored;    // per value: its register array s<i> across passes, or -1
  int num_stored = 0;
  std::set<int> cached;       // inputs kept in registers k<v> between passes
  std::map<int, int> first_load;  // the pass that loads a cached input
};

class Emitter {
 public:
  explicit Emitter(const FusedKernel& k) : k_(k), b_(k.body), n_(k.domain.size()), R_(k.rows), C_(k.cols) {}

  std::string run(CudaLaunch& launch) {
    analyze();
    choose_form();
    launch = launch_;
    return emit();
  }

 private:
  // ---- analysis (as the CPU generator's) ----
  void analyze() {
    size_t nv = b_.values.size();
    role_.assign(nv, Role::input);
    level_.assign(nv, 0);
    arg_.assign(nv, -1);
    out_.assign(nv, -1);
    full_use_.assign(nv, 0);
    row_use_.assign(nv, 0);
    for (size_t i = 0; i < b_.inputs.size(); ++i) arg_[b_.inputs[i]] = int(i);
    for (size_t i = 0; i < b_.outputs.size(); ++i) out_[b_.outputs[i]] = int(b_.inputs.size() + i);
    for (const Node& n : b_.nodes) {
      int v = n.outputs[0];
      if (n.kind == OpKind::input) continue;
      if (n.kind == OpKind::constant) {
        role_[v] = Role::constant;
        continue;
      }
      bool red = op_class(n.kind) == OpClass::reduction;
      role_[v] = !red && b_.values[v].shape == k_.domain ? Role::full : Role::row;
      int l = 0;
      bool reads_full = role_[v] == Role::full || red;
      for (int o : n.inputs) {
        l = std::max(l, level_[o]);
        if (role_[o] == Role::input) (reads_full ? full_use_ : row_use_)[o] = 1;
        if (role_[o] == Role::input && !reads_full) row_shape_[o] = b_.values[v].shape;
      }
      if (red) {
        reductions_.push_back(&n);
        ++l;
      }
      level_[v] = l;
    }
  }

  bool hoisted(int v) const {  // a full-space read that does not move along the row
    if (form_ == CudaForm::flat) return b_.values[v].shape.numel() == 1;
    return inner_stride(v) == 0;
  }

  // v's strides in a target shape of rank m (right-aligned; 0 where v broadcasts).
  std::vector<int64_t> strides_in(int v, int m) const {
    const Value& val = b_.values[v];
    std::vector<int64_t> sd(size_t(m), 0);
    int lead = m - val.shape.size();
    for (int d = 0; d < m; ++d) {
      int k = d - lead;
      if (k >= 0 && val.shape[k] != 1) sd[size_t(d)] = val.strides[k];
    }
    return sd;
  }
  int64_t inner_stride(int v) const { return n_ == 0 ? 0 : strides_in(v, n_)[size_t(n_ - 1)]; }
  std::vector<int64_t> full_outer(int v) const {
    auto sd = strides_in(v, n_);
    sd.resize(size_t(std::max(n_ - 1, 0)));
    return sd;
  }
  std::vector<int64_t> row_outer(int v) const {
    if (R_ == 1) return std::vector<int64_t>(size_t(std::max(n_ - 1, 0)), 0);
    const Shape& ns = row_shape_.at(v);
    if (ns.size() == n_) return full_outer(v);
    return strides_in(v, n_ - 1);  // ns is the domain without its last dim
  }

  // Offset of row r for outer strides `os`: an expression, or statements defining
  // `name` (appended to `pre`).
  std::string outer_offset(const std::vector<int64_t>& os, const std::string& name, std::string& pre,
                           const std::string& ind) const {
    int m = int(os.size());
    int64_t K = -1, prod = 1;
    bool linear = true;
    for (int d = m - 1; d >= 0; --d) {
      int64_t dim = k_.domain[d];
      if (dim == 1) continue;
      if (K < 0) {
        if (os[size_t(d)] % prod) linear = false;
        K = os[size_t(d)] / prod;
      }
      if (os[size_t(d)] != K * prod) linear = false;
      prod *= dim;
    }
    if (K < 0 || (linear && K == 0)) return "0";
    if (linear) return K == 1 ? "r" : fmt::format("r * {}", K);
    pre += fmt::format("{0}i64 {1} = 0;\n{0}{{\n{0}  i64 q = r;\n", ind, name);
    for (int d = m - 1; d >= 0; --d) {
      int64_t dim = k_.domain[d];
      if (dim == 1) continue;
      if (os[size_t(d)] != 0) pre += fmt::format("{}  {} += (q % {}) * {};\n", ind, name, dim, os[size_t(d)]);
      pre += fmt::format("{}  q /= {};\n", ind, dim);
    }
    pre += ind + "}\n";
    return name;
  }

  // Every row starts at a multiple of V for an operand with these outer strides.
  bool rows_aligned(const std::vector<int64_t>& os, int V) const {
    for (size_t d = 0; d < os.size(); ++d)
      if (k_.domain[int(d)] != 1 && os[d] % V != 0) return false;
    return true;
  }

  bool row_form() const { return form_ == CudaForm::warp_row || form_ == CudaForm::block_row; }

  // Inputs read per element (not hoisted) with unit inner stride: vector candidates.
  bool contiguous_along_row(int v) const {
    if (role_[v] != Role::input || !full_use_[v] || hoisted(v)) return false;
    return form_ == CudaForm::flat || inner_stride(v) == 1;
  }
  bool vector_loaded(int v, int V) const {
    if (V == 1 || !contiguous_along_row(v)) return false;
    return form_ == CudaForm::flat || rows_aligned(full_outer(v), V);
  }

  void choose_form() {
    if (k_.has_reduction) form_ = C_ <= kMaxWarpCols ? CudaForm::warp_row : CudaForm::block_row;
    else form_ = k_.flat ? CudaForm::flat : CudaForm::elementwise;
    // Vector width: 16 bytes of the widest vector-loaded operand or full result.
    int widest = 0;
    for (int v : b_.inputs)
      if (contiguous_along_row(v)) widest = std::max(widest, int(itemsize(b_.values[v].dtype)));
    for (int o : b_.outputs)
      if (role_[o] == Role::full) widest = std::max(widest, int(itemsize(b_.values[o].dtype)));
    V_ = 1;
    for (int w : {8, 4})
      if (widest > 0 && w * widest <= 16 && (form_ == CudaForm::flat || C_ % w == 0)) {
        V_ = w;
        break;
      }
    bool any = false;
    for (int o : b_.outputs) any = any || role_[o] == Role::full;
    for (int v : b_.inputs) any = any || vector_loaded(v, V_);
    if (!any) V_ = 1;

    int64_t N = R_ * C_;
    launch_.form = form_;
    launch_.vector = V_;
    switch (form_) {
      case CudaForm::flat:
      case CudaForm::elementwise:
        B_ = kFlatBlock;
        launch_.units = (N + V_ - 1) / V_;
        launch_.units_per_block = B_;
        break;
      case CudaForm::warp_row:
        B_ = kWarpRowBlock;
        L_ = 32;
        launch_.units = R_;
        launch_.units_per_block = B_ / 32;
        break;
      case CudaForm::block_row: {
        // About four chunks per thread, 128 to 1024 threads.
        int64_t chunks = (C_ + V_ - 1) / V_;
        B_ = int(std::clamp<int64_t>(pow2_ceil((chunks + 3) / 4), 128, 1024));
        L_ = B_;
        launch_.units = R_;
        launch_.units_per_block = 1;
        launch_.shared_bytes = 32 * 4;
        break;
      }
    }
    launch_.block = B_;
  }

  Plan make_plan(int V, bool allow_scratch) const {
    Plan P;
    P.V = V;
    int passes = k_.passes;
    if (row_form()) {
      int64_t T = (C_ + int64_t(L_) * V - 1) / (int64_t(L_) * V);
      if (T <= kMaxUnroll && T * V <= register_floats()) P.T = int(T);
    }
    bool keep = allow_scratch && P.T > 0;
    P.roots.assign(size_t(passes), {});
    P.needed.assign(size_t(passes), {});
    P.loads.assign(size_t(passes), {});
    P.scratch_loads.assign(size_t(passes), {});
    P.stored.assign(b_.values.size(), -1);
    for (const Node* r : reductions_) {
      int op = r->inputs[0];
      if (role_[op] == Role::full) P.roots[size_t(level_[op])].insert(op);
      if (role_[op] == Role::input && !hoisted(op)) P.loads[0].insert(op);
    }
    for (int o : b_.outputs)
      if (role_[o] == Role::full) P.roots[size_t(level_[o])].insert(o);
    for (int p = passes - 1; p >= 0; --p) {
      std::vector<int> stack(P.roots[size_t(p)].begin(), P.roots[size_t(p)].end());
      while (!stack.empty()) {
        int x = stack.back();
        stack.pop_back();
        if (!P.needed[size_t(p)].insert(x).second) continue;
        for (int o : b_.producer(x).inputs) {
          if (role_[o] == Role::input) {
            if (!hoisted(o)) P.loads[size_t(p)].insert(o);
          } else if (role_[o] == Role::full) {
            // An expensive value of an earlier pass stays in registers when they allow.
            if (keep && level_[o] < p && (P.stored[o] >= 0 || expensive(b_.producer(o).kind))) {
              if (P.stored[o] < 0) {
                P.stored[o] = P.num_stored++;
                P.roots[size_t(level_[o])].insert(o);
              }
              P.scratch_loads[size_t(p)].insert(o);
            } else {
              stack.push_back(o);
            }
          }
        }
      }
    }
    if (P.T > 0) {
      std::map<int, int> passes_of;
      for (int p = 0; p < passes; ++p)
        for (int v : P.loads[size_t(p)]) {
          if (!passes_of.count(v)) P.first_load[v] = p;
          ++passes_of[v];
        }
      for (auto& [v, c] : passes_of)
        if (c > 1) P.cached.insert(v);
    }
    return P;
  }

  // Registers are 64K per SM: __launch_bounds__(B) leaves a thread 65536 / B (at most
  // 255); what is kept across passes gets half of them, so that nothing spills.
  int register_floats() const { return std::min<int>(kRegisterFloats, std::min(255, 65536 / B_) / 2); }

  Plan plan(int V) const {
    Plan P = make_plan(V, true);
    auto floats = [&](const Plan& q) { return int64_t(q.cached.size() + size_t(q.num_stored)) * q.T * q.V; };
    if (floats(P) <= register_floats()) return P;
    P = make_plan(V, false);
    if (floats(P) > register_floats()) P.cached.clear();  // reload each pass (from L1)
    return P;
  }

  // ---- emission ----
  std::string name(int v, bool row_scope) const {
    switch (role_[v]) {
      case Role::constant: return fmt::format("c{}", v);
      case Role::input:
        if (row_scope) return fmt::format("w{}", v);
        return hoisted(v) ? fmt::format("h{}", v) : fmt::format("v{}", v);
      default: return fmt::format("v{}", v);
    }
  }

  std::string expr(const Node& n, bool row_scope) const {
    auto a = [&](int i) { return name(n.inputs[size_t(i)], row_scope); };
    switch (n.kind) {
      case OpKind::neg: return fmt::format("-{}", a(0));
      case OpKind::abs: return fmt::format("fabsf({})", a(0));
      case OpKind::exp: return fmt::format("expf({})", a(0));
      case OpKind::log: return fmt::format("logf({})", a(0));
      case OpKind::sqrt: return fmt::format("sqrtf({})", a(0));
      case OpKind::rsqrt: return fmt::format("rsqrtf({})", a(0));
      case OpKind::sin: return fmt::format("sinf({})", a(0));
      case OpKind::cos: return fmt::format("cosf({})", a(0));
      case OpKind::tanh: return fmt::format("tanhf({})", a(0));
      case OpKind::sigmoid: return fmt::format("1.0f / (1.0f + expf(-{}))", a(0));
      case OpKind::silu: return fmt::format("{0} / (1.0f + expf(-{0}))", a(0));
      case OpKind::gelu: return fmt::format("0.5f * {0} * (1.0f + erff({0} * 0.70710678118654752f))", a(0));
      case OpKind::relu: return fmt::format("{0} < 0.0f ? 0.0f : {0}", a(0));
      case OpKind::add: return a(0) + " + " + a(1);
      case OpKind::sub: return a(0) + " - " + a(1);
      case OpKind::mul: return a(0) + " * " + a(1);
      case OpKind::div: return a(0) + " / " + a(1);
      case OpKind::pow: {
        const Node& e = b_.producer(n.inputs[1]);
        if (e.kind == OpKind::constant)  // the eager kernels' steps for torch's special exponents
          if (std::string s = pow_expr(a(0), e.attrs.scalar, "sqrtf"); !s.empty()) return s;
        return fmt::format("powf({}, {})", a(0), a(1));
      }
      case OpKind::maximum: return fmt::format("ofs_max({}, {})", a(0), a(1));
      case OpKind::minimum: return fmt::format("ofs_min({}, {})", a(0), a(1));
      case OpKind::cast:
        if (n.attrs.dtype == DType::bf16) return fmt::format("ofs_bf16_round({})", a(0));
        if (n.attrs.dtype == DType::f16) return fmt::format("ofs_f16_round({})", a(0));
        return a(0);
      case OpKind::contiguous:
      case OpKind::clone: return a(0);
      default: fail("compile", "internal: no CUDA code for {} in a fused kernel", op_name(n.kind));
    }
  }

  // Element index of input v at column expression `j` (row and elementwise forms), or
  // at flat index `j`.
  std::string index(int v, const std::string& j) const {
    if (form_ == CudaForm::flat) return j;
    int64_t s = inner_stride(v);
    if (s == 1) return fmt::format("f{} + {}", v, j);
    // 32-bit products while they cannot overflow
    bool wide = std::abs(double(s)) * double(C_) >= double(INT_MAX);
    return fmt::format("f{} + {}{} * {}", v, wide ? "(i64)" : "", j, s);
  }
  std::string out_index(const std::string& j) const { return form_ == CudaForm::flat ? j : "base + " + j; }

  // Statements loading V elements of input v at chunk start `j` into the float array `dst`;
  // `once`: no other row or pass reads them (a 16-byte load then streams: _cs).
  std::string load_chunk(int v, int V, const std::string& j, const std::string& dst, const std::string& ind,
                         bool once = false) const {
    DType dt = b_.values[v].dtype;
    std::string a = fmt::format("a{}", arg_[v]);
    if (vector_loaded(v, V))
      return fmt::format("{}ofs_ld{}_{}{}({} + {}, {});\n", ind, V, dt_tag(dt), once && streams(dt, V) ? "_cs" : "", a,
                         index(v, j), dst);
    if (V == 1) return fmt::format("{}{}[0] = {};\n", ind, dst, load(dt, fmt::format("{}[{}]", a, index(v, j))));
    return fmt::format("{}for (int e = 0; e < {}; ++e) {}[e] = {};\n", ind, V, dst,
                       load(dt, fmt::format("{}[{}]", a, index(v, "(" + j + " + e)"))));
  }

  // A 16-byte access of V elements of dt in a row form: cache-streaming when read or
  // written once (on the H200, rms_norm 16384x8192 f32 at 0.97 of cudaMemcpy with, 0.94
  // without).
  bool streams(DType dt, int V) const { return row_form() && int64_t(V) * int64_t(itemsize(dt)) == 16; }

  // Input v's elements each belong to one row of the domain (no outer dim broadcasts it):
  // the kernel reads each of them in one row only.
  bool own_rows(int v) const {
    std::vector<int64_t> os = full_outer(v);
    for (size_t d = 0; d < os.size(); ++d)
      if (k_.domain[int(d)] != 1 && os[d] == 0) return false;
    return true;
  }

  // How many passes of plan P load input v.
  static int load_passes(const Plan& P, int v) {
    int n = 0;
    for (const auto& loads : P.loads) n += int(loads.count(v));
    return n;
  }

  std::string leader() const {
    switch (form_) {
      case CudaForm::flat: return "tid == 0";
      case CudaForm::elementwise: return "j == 0";
      default: return "ti == 0";
    }
  }

  // One chunk of V elements at `j` in pass p: loads, the element statements, stores,
  // reduction updates.
  std::string chunk(const Plan& P, int p, const std::string& j, const std::string& ind) const {
    int V = P.V;
    std::string s, in = ind + "  ";
    std::string slot = P.T > 0 ? "t * " + std::to_string(V) + " + e" : "e";
    for (int v : P.loads[size_t(p)]) {
      bool own = own_rows(v);
      if (P.cached.count(v)) {
        if (P.first_load.at(v) == p) s += load_chunk(v, V, j, fmt::format("(k{} + t * {})", v, V), ind, own);
      } else {
        s += fmt::format("{}float x{}[{}];\n", ind, v, V);
        s += load_chunk(v, V, j, fmt::format("x{}", v), ind, own && load_passes(P, v) == 1);
      }
    }
    std::vector<int> outs;
    for (const Node& n : b_.nodes) {
      int v = n.outputs[0];
      if (P.needed[size_t(p)].count(v) && level_[v] == p && out_[v] >= 0) outs.push_back(v);
    }
    for (int o : outs) s += fmt::format("{}float y{}[{}];\n", ind, o, V);
    s += V > 1 ? ind + "#pragma unroll\n" + ind + fmt::format("for (int e = 0; e < {}; ++e) {{\n", V)
               : ind + "{\n" + in + "const int e = 0;\n" + in + "(void)e;\n";
    for (int v : P.loads[size_t(p)])
      s += fmt::format("{}const float v{} = {}[{}];\n", in, v, P.cached.count(v) ? fmt::format("k{}", v) : fmt::format("x{}", v),
                       P.cached.count(v) ? slot : "e");
    for (int v : P.scratch_loads[size_t(p)]) s += fmt::format("{}const float v{} = s{}[{}];\n", in, v, P.stored[v], slot);
    for (const Node& n : b_.nodes) {
      int v = n.outputs[0];
      if (!P.needed[size_t(p)].count(v)) continue;
      s += fmt::format("{}const float v{} = {};\n", in, v, expr(n, false));
      if (level_[v] == p && P.stored[v] >= 0) s += fmt::format("{}s{}[{}] = v{};\n", in, P.stored[v], slot, v);
      if (level_[v] == p && out_[v] >= 0) s += fmt::format("{}y{}[e] = v{};\n", in, v, v);
    }
    for (const Node* r : reductions_) {
      int op = r->inputs[0], v = r->outputs[0];
      if (level_[op] != p) continue;
      std::string x = name(op, false);
      if (r->kind == OpKind::max) s += fmt::format("{}acc{} = ofs_max(acc{}, {});\n", in, v, v, x);
      else if (r->kind == OpKind::min) s += fmt::format("{}acc{} = ofs_min(acc{}, {});\n", in, v, v, x);
      else s += fmt::format("{}acc{} += {};\n", in, v, x);
    }
    s += ind + "}\n";
    for (int o : outs) {
      DType dt = b_.values[o].dtype;
      std::string a = fmt::format("a{}", out_[o]);
      if (V > 1)
        s += fmt::format("{}ofs_st{}_{}{}({} + {}, y{});\n", ind, V, dt_tag(dt), streams(dt, V) ? "_cs" : "", a,
                         out_index(j), o);
      else s += fmt::format("{}{}[{}] = {};\n", ind, a, out_index(j), store(dt, fmt::format("y{}[0]", o)));
    }
    return s;
  }

  // Per-row values of `level` (reductions' results and what is computed from them), and
  // per-row results, written by one thread.
  std::string row_nodes(int level, const std::string& ind) const {
    std::string s;
    for (const Node& n : b_.nodes) {
      int v = n.outputs[0];
      if (role_[v] != Role::row || level_[v] != level || op_class(n.kind) == OpClass::reduction) continue;
      s += fmt::format("{}const float v{} = {};\n", ind, v, expr(n, true));
      if (out_[v] >= 0)
        s += fmt::format("{}if ({}) a{}[r] = {};\n", ind, leader(), out_[v], store(b_.values[v].dtype, fmt::format("v{}", v)));
    }
    return s;
  }

  // Row offsets (f<v>), hoisted reads (h<v>) and per-row inputs (w<v>) of row r.
  std::string row_start(const std::string& ind) const {
    std::string pre;
    for (int v : b_.inputs) {
      const Value& val = b_.values[v];
      if (full_use_[v]) {
        if (form_ == CudaForm::flat) {
          if (hoisted(v)) pre += fmt::format("{}const float h{} = {};\n", ind, v, load(val.dtype, fmt::format("a{}[0]", arg_[v])));
        } else {
          std::string f = fmt::format("f{}", v);
          std::string off = outer_offset(full_outer(v), f, pre, ind);
          if (hoisted(v)) pre += fmt::format("{}const float h{} = {};\n", ind, v, load(val.dtype, fmt::format("a{}[{}]", arg_[v], off)));
          else if (off != f) pre += fmt::format("{}const i64 {} = {};\n", ind, f, off);
        }
      }
      if (row_use_[v]) {
        std::string off = form_ == CudaForm::flat ? "0" : outer_offset(row_outer(v), fmt::format("g{}", v), pre, ind);
        pre += fmt::format("{}const float w{} = {};\n", ind, v, load(val.dtype, fmt::format("a{}[{}]", arg_[v], off)));
      }
    }
    return pre;
  }

  // One row of a row form: for each pass, its per-row values, then a sweep over the row
  // (each thread V elements at a time, its threads L*V apart) and the reductions across
  // the row's threads.
  std::string row_body(const Plan& P, const std::string& ind) const {
    std::string s;
    int V = P.V;
    for (int v : P.cached) s += fmt::format("{}float k{}[{}];\n", ind, v, P.T * V);
    for (int i = 0; i < P.num_stored; ++i) s += fmt::format("{}float s{}[{}];\n", ind, i, P.T * V);
    const char* jt = C_ >= INT_MAX ? "i64" : "int";
    for (int p = 0; p < k_.passes; ++p) {
      s += row_nodes(p, ind);
      std::vector<const Node*> reds;
      for (const Node* r : reductions_)
        if (level_[r->inputs[0]] == p) reds.push_back(r);
      if (P.needed[size_t(p)].empty() && reds.empty() && P.loads[size_t(p)].empty()) continue;
      for (const Node* r : reds) {
        const char* init = r->kind == OpKind::max ? "__uint_as_float(0xff800000u)"
                           : r->kind == OpKind::min ? "__uint_as_float(0x7f800000u)" : "0.0f";
        s += fmt::format("{}float acc{} = {};\n", ind, r->outputs[0], init);
      }
      std::string in = ind + "  ";
      if (P.T > 0) {
        bool whole = C_ % (int64_t(L_) * V) == 0;
        s += ind + "#pragma unroll\n";
        s += fmt::format("{}for (int t = 0; t < {}; ++t) {{\n", ind, P.T);
        s += fmt::format("{}const {} j = ({})(ti + t * {}) * {};\n{}(void)j;  // a pass may read registers only\n", in, jt,
                         jt, L_, V, in);
        if (whole) {
          s += chunk(P, p, "j", in);
        } else {
          s += fmt::format("{}if (j < {}) {{\n", in, C_);
          s += chunk(P, p, "j", in + "  ");
          s += in + "}\n";
        }
        s += ind + "}\n";
      } else {
        s += fmt::format("{}for ({} j = ({})ti * {}; j < {}; j += {}) {{\n", ind, jt, jt, V, C_, int64_t(L_) * V);
        s += chunk(P, p, "j", in);
        s += ind + "}\n";
      }
      for (const Node* r : reds) {
        int v = r->outputs[0];
        const char* op = r->kind == OpKind::max ? "max" : r->kind == OpKind::min ? "min" : "sum";
        if (form_ == CudaForm::warp_row) {
          s += fmt::format("{}acc{} = ofs_warp_{}(acc{});\n", ind, v, op, v);
        } else {
          const char* id = r->kind == OpKind::max ? "__uint_as_float(0xff800000u)"
                           : r->kind == OpKind::min ? "__uint_as_float(0x7f800000u)" : "0.0f";
          s += fmt::format("{}acc{} = ofs_block_{}(acc{}, ofs_red, {});\n", ind, v, op, v, id);
        }
        if (r->kind == OpKind::mean) s += fmt::format("{}const float v{} = acc{} / {};\n", ind, v, v, float_literal(double(C_)));
        else s += fmt::format("{}const float v{} = acc{};\n", ind, v, v);
        if (out_[v] >= 0)
          s += fmt::format("{}if (ti == 0) a{}[r] = {};\n", ind, out_[v], store(b_.values[v].dtype, fmt::format("v{}", v)));
      }
    }
    s += row_nodes(k_.passes, ind);
    return s;
  }

  // The runtime test of the vector path: every vector-accessed pointer is aligned.
  std::string aligned_test() const {
    std::vector<std::string> parts;
    for (int v : b_.inputs)
      if (vector_loaded(v, V_))
        parts.push_back(fmt::format("((u64)a{} & {})", arg_[v], V_ * int(itemsize(b_.values[v].dtype)) - 1));
    for (int o : b_.outputs)
      if (role_[o] == Role::full)
        parts.push_back(fmt::format("((u64)a{} & {})", out_[o], V_ * int(itemsize(b_.values[o].dtype)) - 1));
    std::string s;
    for (size_t i = 0; i < parts.size(); ++i) s += (i ? " | " : "") + parts[i];
    return "(" + s + ") == 0";
  }

  // The flat and elementwise forms: a grid-stride loop over chunks of V elements.
  std::string chunks_loop(int V, const std::string& ind) const {
    Plan P = plan(V);
    int64_t N = R_ * C_;
    std::string s, in = ind + "  ";
    if (form_ == CudaForm::flat) {
      if (V > 1) {
        s += fmt::format("{}for (i64 i = tid; i < {}; i += nt) {{\n", ind, N / V);
        s += fmt::format("{}const i64 j = i * {};\n", in, V);
        s += chunk(P, 0, "j", in);
        s += ind + "}\n";
        if (N % V) {  // the tail, one element per thread
          Plan P1 = plan(1);
          s += fmt::format("{}for (i64 j = {} + tid; j < {}; j += nt) {{\n", ind, N / V * V, N);
          s += chunk(P1, 0, "j", in);
          s += ind + "}\n";
        }
      } else {
        s += fmt::format("{}for (i64 j = tid; j < {}; j += nt) {{\n", ind, N);
        s += chunk(P, 0, "j", in);
        s += ind + "}\n";
      }
      return s;
    }
    // elementwise: each chunk lies in one row (V divides C)
    s += fmt::format("{}for (i64 i = tid; i < {}; i += nt) {{\n", ind, N / V);
    s += fmt::format("{}const i64 r = i / {}, j = i * {} - r * {}, base = r * {};\n", in, C_ / V, V, C_, C_);
    s += row_start(in);
    s += row_nodes(0, in);
    s += chunk(P, 0, "j", in);
    s += ind + "}\n";
    return s;
  }

  std::string emit() const {
    std::string s = fmt::format("extern \"C\" __global__ void __launch_bounds__({}) @SYM@(", B_);
    std::vector<std::string> params;
    for (size_t i = 0; i < b_.inputs.size(); ++i)
      params.push_back(fmt::format("const {}* __restrict__ a{}", ptr_type(b_.values[b_.inputs[i]].dtype), i));
    for (int o : b_.outputs) params.push_back(fmt::format("{}* __restrict__ a{}", ptr_type(b_.values[o].dtype), out_[o]));
    for (size_t i = 0; i < params.size(); ++i) s += (i ? ", " : "") + params[i];
    s += ") {\n";
    for (const Node& n : b_.nodes)
      if (n.kind == OpKind::constant)  // (void): x^2 is written x * x
        s += fmt::format("  const float c{0} = {1};\n  (void)c{0};\n", n.outputs[0], float_literal(n.attrs.scalar));
    if (V_ > 1) s += fmt::format("  const bool vec = {};\n", aligned_test());
    if (form_ == CudaForm::flat || form_ == CudaForm::elementwise) {
      s += "  const i64 tid = (i64)blockIdx.x * blockDim.x + threadIdx.x, nt = (i64)gridDim.x * blockDim.x;\n";
      if (form_ == CudaForm::flat) {
        s += "  const i64 r = 0;\n  (void)r;\n";
        s += row_start("  ");
        s += row_nodes(0, "  ");
      }
      if (V_ > 1) {
        s += "  if (vec) {\n" + chunks_loop(V_, "    ") + "  } else {\n" + chunks_loop(1, "    ") + "  }\n";
      } else {
        s += chunks_loop(1, "  ");
      }
      s += "}\n";
      return s;
    }
    if (form_ == CudaForm::warp_row) {
      s += "  const int ti = threadIdx.x & 31;\n";
      s += "  const i64 rows_per_step = (i64)gridDim.x * (blockDim.x >> 5);\n";
      s += fmt::format("  for (i64 r = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < {}; r += rows_per_step) {{\n", R_);
    } else {
      s += fmt::format("  if (blockDim.x != {}) __trap();  // the row loop is compiled for this block size\n", B_);
      s += "  __shared__ float ofs_red[32];\n";
      s += "  const int ti = threadIdx.x;\n";
      s += fmt::format("  for (i64 r = blockIdx.x; r < {}; r += gridDim.x) {{\n", R_);
    }
    s += fmt::format("    const i64 base = r * {};\n    (void)base;\n", C_);
    s += row_start("    ");
    if (V_ > 1) {
      s += "    if (vec) {\n" + row_body(plan(V_), "      ") + "    } else {\n" + row_body(plan(1), "      ") + "    }\n";
    } else {
      s += row_body(plan(1), "    ");
    }
    s += "  }\n}\n";
    return s;
  }

  const FusedKernel& k_;
  const Graph& b_;
  int n_;
  int64_t R_, C_;
  CudaForm form_ = CudaForm::flat;
  CudaLaunch launch_;
  int B_ = 256, L_ = 32, V_ = 1;
  std::vector<Role> role_;
  std::vector<int> level_, arg_, out_;
  std::vector<char> full_use_, row_use_;
  std::map<int, Shape> row_shape_;
  std::vector<const Node*> reductions_;
};

}  // namespace

const char* cuda_form_name(CudaForm f) {
  switch (f) {
    case CudaForm::flat: return "flat";
    case CudaForm::elementwise: return "elementwise";
    case CudaForm::warp_row: return "warp_row";
    case CudaForm::block_row: return "block_row";
  }
  return "?";
}

int64_t CudaLaunch::grid() const {
  int64_t per = std::max(units_per_block, 1);
  return std::clamp<int64_t>((units + per - 1) / per, 1, INT_MAX);
}

std::string CudaLaunch::str() const {
  return fmt::format("{} block={} grid={} vector={} shared={}", cuda_form_name(form), block, grid(), vector, shared_bytes);
}

CudaKernel generate_cuda_kernel(const FusedKernel& k) {
  CudaKernel ck;
  std::string text = Emitter(k).run(ck.launch);
  uint64_t h = fnv1a64(text, fnv1a64(k.name + "|cuda"));
  ck.name = k.name;
  ck.symbol = k.name + "_" + hex64(h).substr(0, 8);
  size_t at = text.find("@SYM@");
  ck.source = text.substr(0, at) + ck.symbol + text.substr(at + 5);
  ck.num_inputs = int(k.body.inputs.size());
  ck.num_outputs = int(k.body.outputs.size());
  return ck;
}

std::string generate_cuda_library(const std::vector<CudaKernel>& kernels) {
  std::string s = cuda_prelude();
  std::set<std::string> seen;
  for (const CudaKernel& k : kernels) {
    if (!seen.insert(k.symbol).second) continue;  // identical kernels share one function
    s += "\n// " + k.name + ": " + k.launch.str() + "\n" + k.source;
  }
  return s;
}

}  // namespace opscope::compiler
