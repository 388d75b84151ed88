#include "opscope/kernels/cpu/packed_matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include "opscope/core/error.h"
#include "opscope/kernels/cpu/onednn.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/runtime.h"

extern "C" int omp_get_max_threads() noexcept;
extern "C" void omp_set_num_threads(int) noexcept;

namespace opscope::cpu_kernels {

namespace {

constexpr int64_t kMinColumnsPerCore = 64;
// f32 column chunks per core: each core runs two in turn. Half as many columns a chunk keep
// its packed weights and output nearer the core (compiled GPT-2 11.4-12.4 -> 10.5-11.3 ms,
// nn.TransformerEncoder 10.3-11.9 -> 10.0-11.4, ViT-B/16 111-117 -> 109-116; four a core
// were slower than two). bf16 chunks, half the bytes already, stay one a core: two made
// compiled bf16 GPT-2 0.86-0.87x -> 0.88-0.90x eager.
constexpr int64_t kF32ChunksPerCore = 2;
// Where oneDNN's f32 matmul is its sgemm ("gemm:jit", on a CPU without AVX-512) the packed
// weights keep b's plain layout, a chunk's rows n floats apart: at 512 columns (2 KiB) one
// Zen 3 core ran 64-73 GFLOP/s, at 256 or 768 87-90, at 496 or 528 96-98. Rows padded by
// 16 floats run every width at 95-97 (docs/BENCHMARKS.md).
constexpr int64_t kGemmRowPad = 16;
constexpr int64_t kMinRows = 16;                    // fewer rows: the matrix-vector kernels' shape
constexpr int64_t kMinFlops = int64_t(1) << 23;     // below this the primitive's own cost shows

using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;

// The row stride of a's rows when every dim but the last folds into one run of rows
// (unit column stride); 0 when it does not.
int64_t folded_row_stride(const Tensor& a) {
  const int nd = a.ndim();
  const Shape& s = a.shape();
  const Strides& st = a.strides();
  if (s[nd - 1] > 1 && st[nd - 1] != 1) return 0;
  int64_t lda = s[nd - 2] > 1 ? st[nd - 2] : std::max<int64_t>(s[nd - 1], 1);
  int64_t want = lda * s[nd - 2];
  for (int d = nd - 3; d >= 0; --d) {
    if (s[d] > 1 && st[d] != want) return 0;
    want *= s[d];
  }
  return lda >= s[nd - 1] ? lda : 0;
}

// How oneDNN applies an epilogue (a post-op: algorithm and alpha), and the kernel name's suffix.
struct EpilogueOp {
  dnnl::algorithm alg;
  float alpha;
  const char* suffix;
};

EpilogueOp epilogue_op(Epilogue e) {
  using alg = dnnl::algorithm;
  switch (e) {
    case Epilogue::relu: return {alg::eltwise_relu, 0.0f, "_relu"};
    case Epilogue::gelu: return {alg::eltwise_gelu_erf, 0.0f, "_gelu"};
    case Epilogue::silu: return {alg::eltwise_swish, 1.0f, "_silu"};  // x * sigmoid(alpha x)
    case Epilogue::tanh: return {alg::eltwise_tanh, 0.0f, "_tanh"};
    case Epilogue::sigmoid: return {alg::eltwise_logistic, 0.0f, "_sigmoid"};
    case Epilogue::none: break;
  }
  return {alg::undef, 0.0f, ""};
}

// Whether oneDNN's f32 matmul on this CPU is its sgemm rather than brgemm (which packs into
// blocks of its own): asked once, of a small product.
bool f32_matmul_is_gemm() {
  static const bool gemm = [] {
    md a({64, 64}, dt::f32, {64, 1}), any({64, 64}, dt::f32, dnnl::memory::format_tag::any);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, any, a), onednn_engine());
    return std::strncmp(pd.impl_info_str(), "gemm", 4) == 0;
  }();
  return gemm;
}

const char* residual_suffix(Residual r) { return r == Residual::add ? "_add" : r == Residual::mul ? "_mul" : ""; }

// The activation, then the residual (its operand the chunk's columns of C's shape, `other`).
dnnl::primitive_attr post_ops(Epilogue e, Residual r, const md& other) {
  dnnl::primitive_attr attr;
  dnnl::post_ops ops;
  if (e != Epilogue::none) {
    EpilogueOp op = epilogue_op(e);
    ops.append_eltwise(1.0f, op.alg, op.alpha, 0.0f);
  }
  if (r != Residual::none)
    ops.append_binary(r == Residual::add ? dnnl::algorithm::binary_add : dnnl::algorithm::binary_mul, other);
  attr.set_post_ops(ops);
  return attr;
}

}  // namespace

bool PackedMatmul::worth_packing(int64_t M, int64_t N, int64_t K) {
  return M >= kMinRows && N >= 2 * kMinColumnsPerCore && 2 * M * N * K >= kMinFlops;
}

struct PackedMatmul::Chunk {
  int64_t lo = 0, hi = 0;
  md src, dst, bias, other;  // other: the residual's columns lo..hi (as dst lies)
  md user;                    // b's columns lo..hi as b lays them out
  int64_t user_offset = 0;    // bytes from b's data to column lo
  md packed;                  // the packed columns' layout, oneDNN's choice for prim
  dnnl::memory weights;       // the packed columns, in packed_[i] (allocate())
  dnnl::reorder pack;         // user -> weights
  dnnl::matmul prim;
};

PackedMatmul::~PackedMatmul() = default;

std::shared_ptr<const PackedMatmul> PackedMatmul::make(const Tensor& a, const Tensor& b, const Tensor* bias,
                                                       int cores, Epilogue epilogue, Residual residual) {
  std::shared_ptr<PackedMatmul> p = plan(a, b, bias, cores, epilogue, residual);
  if (p) p->allocate(a.device());
  return p;
}

std::shared_ptr<PackedMatmul> PackedMatmul::plan(const Tensor& a, const Tensor& b, const Tensor* bias, int cores,
                                                 Epilogue epilogue, Residual residual) {
  const DType dtype = a.dtype();
  if ((dtype != DType::f32 && dtype != DType::bf16) || b.dtype() != dtype || a.ndim() < 2 || b.ndim() < 2) return nullptr;
  if (residual != Residual::none && dtype != DType::f32) return nullptr;  // bf16's binary post-op: not measured
  // The bias: f32, or the operands' dtype (a bf16 Linear's); oneDNN adds it to the f32 sums.
  if (a.device().type() != DeviceType::cpu || (bias && bias->dtype() != DType::f32 && bias->dtype() != dtype))
    return nullptr;
  for (int d = 0; d + 2 < b.ndim(); ++d)
    if (b.shape()[d] != 1) return nullptr;  // one weight for every row
  const int64_t K = a.shape()[a.ndim() - 1], N = b.shape()[b.ndim() - 1];
  if (b.shape()[b.ndim() - 2] != K || K == 0 || N == 0) return nullptr;
  const int64_t M = a.numel() / K, lda = folded_row_stride(a);
  if (lda == 0 || M < kMinRows || 2 * M * N * K < kMinFlops) return nullptr;
  const int64_t sbk = b.strides()[b.ndim() - 2], sbn = b.strides()[b.ndim() - 1];
  if (bias && (bias->ndim() != 1 || bias->shape()[0] != N || (N > 1 && bias->strides()[0] != 1))) return nullptr;
  const int64_t per_core = dtype == DType::f32 ? kF32ChunksPerCore : 1;
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(per_core * cores, N / kMinColumnsPerCore));
  if (cores > 1 && chunks < 2) return nullptr;  // one chunk would leave the other cores idle

  auto p = std::shared_ptr<PackedMatmul>(new PackedMatmul());
  p->a_shape_ = a.shape();
  p->a_strides_ = a.strides();
  p->out_shape_ = a.shape();
  p->out_shape_[a.ndim() - 1] = N;
  p->m_ = M, p->n_ = N, p->k_ = K, p->bias_ = bias != nullptr, p->epilogue_ = epilogue, p->dtype_ = dtype;
  p->residual_ = residual;
  p->bias_dtype_ = bias ? bias->dtype() : dtype;
  const dt type = dtype == DType::bf16 ? dt::bf16 : dt::f32;
  const int64_t width = (N + chunks - 1) / chunks, step = (width + 15) / 16 * 16;  // oneDNN's 16-wide blocks
  const int64_t item = int64_t(b.itemsize());
  // oneDNN plans a primitive for the OpenMP threads of the thread that makes it: one, as on
  // the core that runs it (made for two, the compiled GPT-2 ran 8-10% slower).
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  try {
    // oneDNN's choice of layout for the packed chunks, or for its sgemm rows one pad apart
    const bool padded_rows = dtype == DType::f32 && f32_matmul_is_gemm();
    for (int64_t lo = 0; lo < N; lo += step) {
      auto c = std::make_unique<Chunk>();
      c->lo = lo, c->hi = std::min(N, lo + step);
      const int64_t n = c->hi - lo;
      c->src = md({M, K}, type, {lda, 1});
      c->dst = md({M, n}, type, {N, 1});
      c->bias = md({1, n}, bias && bias->dtype() == DType::bf16 ? dt::bf16 : dt::f32, {n, 1});
      c->other = md({M, n}, type, {N, 1});
      c->user = md({K, n}, type, {sbk, sbn});
      c->user_offset = lo * sbn * item;
      md any = padded_rows ? md({K, n}, type, {n + kGemmRowPad, 1}) : md({K, n}, type, dnnl::memory::format_tag::any);
      const dnnl::primitive_attr attr = post_ops(epilogue, residual, c->other);
      auto pd = bias ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(c->src, any, c->bias, c->dst), attr,
                                                    onednn_engine())
                     : dnnl::matmul::primitive_desc(dnnl::matmul::desc(c->src, any, c->dst), attr, onednn_engine());
      if (reference_kernel(pd)) throw std::runtime_error("a reference kernel");
      c->prim = dnnl::matmul(pd);
      c->packed = pd.weights_desc();
      c->pack = dnnl::reorder(dnnl::reorder::primitive_desc(onednn_engine(), c->user, onednn_engine(), c->packed));
      p->chunks_.push_back(std::move(c));
    }
  } catch (const std::exception&) {
    omp_set_num_threads(threads);
    return nullptr;  // a layout, size or CPU oneDNN's matmul has no fast kernel for: the eager op runs it
  }
  omp_set_num_threads(threads);
  p->b_data_ = b.data_ptr();
  onednn_statics_made();
  return p;
}

void PackedMatmul::allocate(Device& dev) {
  if (!packed_.empty()) fail("matmul", "internal: packed memory allocated twice");
  const int64_t item = int64_t(itemsize(dtype_));
  for (const auto& c : chunks_) {
    const int64_t bytes = int64_t(c->packed.get_size());
    Tensor mem = runtime::allocate(Shape{(bytes + item - 1) / item}, dtype_, dev);
    c->weights = dnnl::memory(c->packed, onednn_engine(), mem.data_ptr());
    packed_.push_back(std::move(mem));
  }
}

LaunchSpec PackedMatmul::pack_spec(const Tensor& b) const {
  if (b.data_ptr() != b_data_) fail("matmul", "internal: packing weights from another tensor than make() saw");
  if (packed_.size() != chunks_.size()) fail("matmul", "internal: packing weights before allocate()");
  LaunchSpec spec;
  spec.name = fmt::format("pack_weights_{}", dtype_name(dtype_));
  spec.work = int64_t(chunks_.size());
  spec.grain = 1;
  spec.bytes = 2 * k_ * n_ * int64_t(b.itemsize());
  char* bp = static_cast<char*>(b.data_ptr());
  spec.body = [self = shared_from_this(), bp](int64_t begin, int64_t end) {
    dnnl::stream& s = onednn_core_stream();
    try {
      for (int64_t i = begin; i < end; ++i) {
        Chunk& c = *self->chunks_[size_t(i)];
        dnnl::memory from(c.user, onednn_engine(), bp + c.user_offset);
        c.pack.execute(s, from, c.weights);
      }
      s.wait();
    } catch (const dnnl::error& e) {
      fail("matmul", "oneDNN's reorder of weights to pack failed: {} (status {})", e.what(), int(e.status));
    }
  };
  return spec;
}

std::string PackedMatmul::kernel_name(Epilogue epilogue, DType dtype, Residual residual) {
  return fmt::format("matmul_packed{}{}_{}", epilogue_op(epilogue).suffix, residual_suffix(residual), dtype_name(dtype));
}

LaunchSpec PackedMatmul::spec(const Tensor& out, const Tensor& a, const Tensor* bias, const Tensor* other) const {
  if (a.shape() != a_shape_ || a.strides() != a_strides_ || out.shape() != out_shape_ || !out.is_contiguous() ||
      bool(bias) != bias_ || (bias && bias->dtype() != bias_dtype_) || a.dtype() != dtype_ || out.dtype() != dtype_)
    fail("matmul", "internal: packed weights were made for a {} with strides {}, not {} with strides {}",
         a_shape_.str(), a_strides_.str(), a.shape().str(), a.strides().str());
  if ((residual_ != Residual::none) != bool(other) ||
      (other && (other->dtype() != dtype_ || other->numel() != m_ * n_ || !other->is_contiguous())))
    fail("matmul", "internal: the residual operand must be a contiguous {} of {} elements, got {}",
         dtype_name(dtype_), m_ * n_, other ? fmt::format("{} {}", dtype_name(other->dtype()), other->shape().str()) : "none");
  LaunchSpec spec;
  spec.name = kernel_name(epilogue_, dtype_, residual_);
  spec.work = int64_t(chunks_.size());
  spec.grain = 1;
  spec.flops = 2 * m_ * n_ * k_;
  spec.bytes = a.nbytes() + out.nbytes() + k_ * n_ * int64_t(a.itemsize()) + (bias ? bias->nbytes() : 0) +
               (other ? other->nbytes() : 0);
  char* ap = static_cast<char*>(a.data_ptr());
  char* cp = static_cast<char*>(out.data_ptr());
  char* bp = bias ? static_cast<char*>(bias->data_ptr()) : nullptr;
  char* rp = other ? static_cast<char*>(other->data_ptr()) : nullptr;
  const int64_t item = int64_t(out.itemsize()), bias_item = bias ? int64_t(bias->itemsize()) : 0;
  // The launch may run after the caller has dropped these weights: it holds them.
  spec.body = [self = shared_from_this(), ap, cp, bp, rp, item, bias_item](int64_t begin, int64_t end) {
    dnnl::stream& s = onednn_core_stream();
    try {
      for (int64_t i = begin; i < end; ++i) {
        const Chunk& c = *self->chunks_[size_t(i)];
        dnnl::memory src(c.src, onednn_engine(), ap), dst(c.dst, onednn_engine(), cp + c.lo * item);
        std::unordered_map<int, dnnl::memory> args{
            {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, c.weights}, {DNNL_ARG_DST, dst}};
        if (bp) args.emplace(DNNL_ARG_BIAS, dnnl::memory(c.bias, onednn_engine(), bp + c.lo * bias_item));
        // the residual is the post-ops' last: index 1 after an activation, else 0
        const int post = self->epilogue_ != Epilogue::none ? 1 : 0;
        if (rp)
          args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(post) | DNNL_ARG_SRC_1,
                       dnnl::memory(c.other, onednn_engine(), rp + c.lo * item));
        c.prim.execute(s, args);
      }
      s.wait();
    } catch (const dnnl::error& e) {
      fail("matmul", "oneDNN's matmul on packed weights failed: {} (status {})", e.what(), int(e.status));
    }
  };
  return spec;
}

}  // namespace opscope::cpu_kernels
