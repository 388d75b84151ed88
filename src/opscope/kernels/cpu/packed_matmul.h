// A matmul against a weight that stays the same from call to call (a compiled graph's
// parameter), with the weight reordered once into oneDNN's blocked layout: each call then
// runs oneDNN's matmul primitive on it, where sgemm packs B again on every call. B is cut
// into one column chunk per core, each packed for its own primitive. Compiled 4-layer d=512
// transformers take 0.83-0.92 of their time with sgemm (docs/BENCHMARKS.md).
// The packing is itself a launch (pack_spec): the cores reorder the chunks in parallel, into
// the device's memory (the caching allocator's, counted in its stats), while the host goes on
// queueing. Done on the host, ViT-B/16's call that packed took 1.1 s against 0.1 s a call,
// most of it faulting in fresh pages with the device idle; now 0.48 s.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "opscope/runtime/launch.h"
#include "opscope/runtime/tensor.h"

namespace opscope::cpu_kernels {

// An activation oneDNN applies to each block of C as it is computed (a post-op), after the bias.
enum class Epilogue : uint8_t { none, relu, gelu, silu, tanh, sigmoid };
// A second operand of C's shape (dense rows), added to or multiplied with C after the
// activation, as oneDNN applies a binary post-op: a residual add, or a gated unit's product.
enum class Residual : uint8_t { none, add, mul };

class PackedMatmul : public std::enable_shared_from_this<PackedMatmul> {
 public:
  // Whether an (M x K) @ (K x N) product is large enough to pack, on two cores or more.
  static bool worth_packing(int64_t M, int64_t N, int64_t K);
  // Packs `b` for out = a @ b (+ bias) with a's layout as given: f32, or bf16 (on the CPU's
  // bf16 dot products; the bias f32 or bf16, added with the epilogue to the f32 sums before
  // the one rounding to bf16). Null where packing does not pay or oneDNN
  // cannot take it: another dtype, b batched, a's rows not one stride apart, fewer
  // than 64 columns a core, or a product too small to gain from it. The caller then runs
  // matmul as usual (and the epilogue after it).
  // The packed memory is allocated but not yet written: queue pack_spec() before spec().
  // With `residual`, each launch also reads C's second operand (spec()'s `other`): f32 only.
  static std::shared_ptr<const PackedMatmul> make(const Tensor& a, const Tensor& b, const Tensor* bias, int cores,
                                                  Epilogue epilogue = Epilogue::none,
                                                  Residual residual = Residual::none);
  // make() in two steps: plan() decides and makes oneDNN's primitives (null where make() is),
  // allocate() then takes the packed memory from dev's allocator, once. A caller allocates
  // inside its op, so that a memory profile puts the packed weights under that op.
  static std::shared_ptr<PackedMatmul> plan(const Tensor& a, const Tensor& b, const Tensor* bias, int cores,
                                            Epilogue epilogue = Epilogue::none, Residual residual = Residual::none);
  void allocate(Device& dev);
  ~PackedMatmul();

  // The launch that reorders `b` (the tensor make() saw) into the packed chunks, a chunk per
  // unit of work. It reads `b` and writes packed(); a launch of spec() reads packed().
  LaunchSpec pack_spec(const Tensor& b) const;
  // The packed chunks' memory, one tensor per chunk.
  const std::vector<Tensor>& packed() const { return packed_; }

  // The launch of out = act(a @ b (+ bias)) (+ or * other): `a`, `out` and `bias` have the
  // shapes and strides make() saw (out contiguous), `other` (where make() had a residual)
  // out's dtype and element count, contiguous; any other layout is refused with an error
  // naming matmul.
  LaunchSpec spec(const Tensor& out, const Tensor& a, const Tensor* bias, const Tensor* other = nullptr) const;
  const Shape& out_shape() const { return out_shape_; }
  // The name its launches carry: "matmul_packed_f32", "matmul_packed_gelu_f32",
  // "matmul_packed_add_f32" (a residual add), ...
  static std::string kernel_name(Epilogue epilogue, DType dtype, Residual residual = Residual::none);

 private:
  struct Chunk;
  PackedMatmul() = default;
  Shape a_shape_, out_shape_;
  Strides a_strides_;
  int64_t m_ = 0, n_ = 0, k_ = 0;
  bool bias_ = false;
  Epilogue epilogue_ = Epilogue::none;
  Residual residual_ = Residual::none;
  DType dtype_ = DType::f32, bias_dtype_ = DType::f32;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  std::vector<Tensor> packed_;  // chunk i's weights live in packed_[i]
  const void* b_data_ = nullptr;  // where make() saw b, for pack_spec's check
};

}  // namespace opscope::cpu_kernels
