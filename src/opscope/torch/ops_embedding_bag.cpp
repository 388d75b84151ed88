// nn.EmbeddingBag's ops, aten::_embedding_bag_forward_only and aten::_embedding_bag (torch
// 1.13 takes the second whenever the weight requires grad, as a module's does, even under
// no_grad), in sum, mean and max modes (recommendation models' sparse features). Sum and
// mean: the bags' rows gathered (index_select), weighted per sample, and added into their
// bag with one accumulating index_put_; mean divides by the bag's count. Max: one kernel per
// bag (embedding_bag_max), each column's maximum and the row that reached it. The indices
// and offsets are read on the host (torch's kernel reads them on the CPU too). Its three
// side outputs follow torch 1.13's CPU kernel, which backward would read: offset2bag (empty
// for sum without padding_idx), bag_size (the counts for mean and max, zeros for sum) and
// max_indices (the rows for max, bag_size again for mean, zeros for sum).
// Anything else (include_last_offset, other dtypes, bad offsets or indices: torch's
// errors) takes torch's kernel.
#include <vector>

#include "opscope/ops/indexing.h"
#include "opscope/ops/ops.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {

namespace {

std::vector<int64_t> host_values(const Tensor& t) { return t.to(DType::i64).to_vector<int64_t>(); }

// The bag of each index position from the offsets (starts, non-decreasing, the first 0);
// empty when the offsets are not that (torch's error then).
std::vector<int64_t> bag_of_positions(const std::vector<int64_t>& offsets, int64_t n) {
  if (offsets.empty() || offsets[0] != 0) return {};
  for (size_t b = 1; b < offsets.size(); ++b)
    if (offsets[b] < offsets[b - 1] || offsets[b] > n) return {};
  std::vector<int64_t> bag(static_cast<size_t>(n));
  for (size_t b = 0; b < offsets.size(); ++b) {
    const int64_t end = b + 1 < offsets.size() ? offsets[b + 1] : n;
    for (int64_t p = offsets[b]; p < end; ++p) bag[size_t(p)] = int64_t(b);
  }
  return bag;
}

}  // namespace

// _embedding_bag[_forward_only](weight, indices, offsets, scale_grad_by_freq, mode, sparse,
//                               per_sample_weights, include_last_offset, padding_idx)
void embedding_bag_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor &weight = c.tensor(0), &indices = c.tensor(1), &offsets = c.tensor(2);
  const int64_t mode = c.arg(4).toInt(), padding_idx = c.arg(8).toInt();
  const c10::optional<at::Tensor> psw = c.opt_tensor(6);
  const bool weighted = psw.has_value() && psw->defined();
  if (!has_kernels({&weight, &indices, &offsets}, false) || weight.scalar_type() != at::kFloat || weight.dim() != 2 ||
      indices.dim() != 1 || offsets.dim() != 1 || indices.scalar_type() != offsets.scalar_type() ||
      (indices.scalar_type() != at::kLong && indices.scalar_type() != at::kInt) || mode < 0 || mode > 2 ||
      c.arg(7).toBool() || (weighted && (mode != 0 || !has_kernels({&*psw}, false) ||
                                         psw->scalar_type() != at::kFloat || psw->sizes() != indices.sizes())))
    return c.fall_back();
  try {
    Tensor w = from_torch(weight, c.name()), idx = from_torch(indices, c.name()), off = from_torch(offsets, c.name());
    const int64_t n = idx.numel(), bags = off.numel(), rows = w.shape()[0], dim = w.shape()[1];
    const std::vector<int64_t> iv = host_values(idx), bag = bag_of_positions(host_values(off), n);
    if (bag.size() != size_t(n) || (n > 0 && bags == 0)) return c.fall_back();
    for (int64_t i : iv)
      if (i < 0 || i >= rows) return c.fall_back();  // torch's error names the index
    AtenScope scope(c.name(), {&w, &idx, &off});
    Device& dev = w.device();
    // the positions not at padding_idx: their weight rows (the indices are on the host
    // already) and bags
    std::vector<int64_t> kept, kept_row, kept_bag, count(size_t(bags), 0);
    for (int64_t p = 0; p < n; ++p)
      if (iv[size_t(p)] != padding_idx) {
        kept.push_back(p);
        kept_row.push_back(iv[size_t(p)]);
        kept_bag.push_back(bag[size_t(p)]);
        ++count[size_t(bag[size_t(p)])];
      }
    const DType side = idx.dtype();
    if (mode == 2) {  // max: the kept rows in bag order, each bag a run of them
      std::vector<int64_t> starts(size_t(bags) + 1, 0);
      for (int64_t b = 0; b < bags; ++b) starts[size_t(b) + 1] = starts[size_t(b)] + count[size_t(b)];
      auto [out, argmax] = embedding_bag_max(w, from_host_i64(kept_row, {int64_t(kept_row.size())}, &dev),
                                             from_host_i64(starts, {bags + 1}, &dev));
      c.ret_tuple(to_torch(out), to_torch(from_host_i64(bag, {n}, &dev).to(side)),
                  to_torch(from_host_i64(count, {bags}, &dev).to(side)), to_torch(argmax.to(side)));
      return;
    }
    Tensor out = zeros({bags, dim}, DType::f32, &dev);
    if (!kept.empty()) {
      const int64_t k = int64_t(kept.size());
      Tensor picked = index_select(w, 0, from_host_i64(kept_row, {k}, &dev));
      if (weighted)
        picked = opscope::mul(
            picked, index_select(from_torch(*psw, c.name()), 0, from_host_i64(kept, {k}, &dev)).unsqueeze(1));
      index_put_(out, {from_host_i64(kept_bag, {k}, &dev)}, picked, /*accumulate=*/true);
    }
    Tensor bag_size = zeros({bags}, side, &dev);
    if (mode == 1) {
      std::vector<float> divisor(count.begin(), count.end());
      for (float& d : divisor) d = d > 0 ? d : 1.0f;  // an empty bag's sum is 0 already
      out = opscope::div(out, from_host(divisor, {bags, 1}, DType::f32, &dev));
      bag_size = from_host_i64(count, {bags}, &dev).to(side);
    }
    Tensor offset2bag = mode == 1 || padding_idx >= 0 ? from_host_i64(bag, {n}, &dev).to(side) : zeros({0}, side, &dev);
    Tensor max_indices = mode == 1 ? bag_size.clone() : zeros({bags}, side, &dev);
    c.ret_tuple(to_torch(out), to_torch(offset2bag), to_torch(bag_size), to_torch(max_indices));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

}  // namespace opscope::torch_bridge
