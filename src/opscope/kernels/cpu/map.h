// A generic elementwise map over broadcast operands of any element types: out[i] =
// f(in0[i], in1[i], ...), for the kernels whose output dtype differs from their inputs'
// (comparisons give bool) or which take more than two tensors (where). The layout and
// the walk are elementwise.h's; each run's loop is unit-stride when every operand is.
#pragma once
#include <array>
#include <tuple>
#include <utility>

#include "opscope/kernels/cpu/elementwise.h"

namespace opscope::cpu_kernels {

namespace map_detail {

template <class Out, class... In, class F, size_t... K>
[[gnu::always_inline]] inline void run(Out* __restrict o, int64_t so, const std::tuple<const In*...>& p,
                                       const std::array<int64_t, sizeof...(In)>& s, int64_t n, const F& f,
                                       std::index_sequence<K...>) {
  bool unit = so == 1 && ((s[K] == 1) && ...);
  if (unit)
    for (int64_t i = 0; i < n; ++i) o[i] = f(std::get<K>(p)[i]...);
  else
    for (int64_t i = 0; i < n; ++i) o[i * so] = f(std::get<K>(p)[i * s[K]]...);
}

}  // namespace map_detail

// out = f(ins...) elementwise; out is contiguous in the broadcast shape of the inputs,
// whose element types are In... (what their dtypes hold). Work units: kElemBlock elements.
template <class Out, class... In, class F>
KernelBody map_body(const Tensor& out, const std::array<const Tensor*, sizeof...(In)>& ins, F f) {
  constexpr int N = int(sizeof...(In)) + 1;
  Shape shape;
  std::array<Strides, N> st;
  elementwise_layout<N>(out, ins, shape, st);
  Out* op = out.data<Out>();
  std::tuple<const In*...> ptrs = [&]<size_t... K>(std::index_sequence<K...>) {
    return std::tuple<const In*...>{ins[K]->template data<In>()...};
  }(std::index_sequence_for<In...>{});
  int64_t n = out.numel();
  return [=](int64_t b, int64_t e) {
    int64_t lo = b * kElemBlock, hi = std::min(n, e * kElemBlock);
    walk<N>(shape, st, lo, hi, [&](const auto& off, const auto& inner, int64_t count) {
      auto p = [&]<size_t... K>(std::index_sequence<K...>) {
        return std::tuple<const In*...>{std::get<K>(ptrs) + off[K + 1]...};
      }(std::index_sequence_for<In...>{});
      std::array<int64_t, sizeof...(In)> s{};
      for (size_t k = 0; k < sizeof...(In); ++k) s[k] = inner[k + 1];
      map_detail::run<Out, In...>(op + off[0], inner[0], p, s, count, f, std::index_sequence_for<In...>{});
    });
  };
}

// A launch over out's elements in blocks of kElemBlock.
inline LaunchSpec map_spec(std::string name, const Tensor& out, int64_t bytes, int64_t flops_per_element = 1) {
  LaunchSpec spec;
  spec.name = std::move(name);
  spec.work = (out.numel() + kElemBlock - 1) / kElemBlock;
  spec.grain = kElemGrainBlocks;
  spec.bytes = bytes;
  spec.flops = out.numel() * flops_per_element;
  return spec;
}

}  // namespace opscope::cpu_kernels
