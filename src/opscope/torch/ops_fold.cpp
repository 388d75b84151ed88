// F.unfold and F.fold (aten::im2col, aten::col2im) from the device's strided copy and
// index_put_: no kernel of their own.
//  im2col  the (zero-)padded input seen as (N, C, kh, kw, oh, ow) through strides (a tap
//          (i, j) at output pixel (y, x) reads row y*sh + i*dh, column x*sw + j*dw), then
//          one contiguous copy: (N, C*kh*kw, oh*ow).
//  col2im  each column value added at its pixel of the padded image: one index_put_ with
//          accumulate (overlapping windows add up), the padding sliced off.
#include <vector>

#include "opscope/ops/indexing.h"
#include "opscope/torch/kernels.h"

namespace opscope::torch_bridge {

namespace {

// kernel_size, dilation, padding, stride of an im2col/col2im call, starting at argument `first`.
struct FoldArgs {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};

std::optional<FoldArgs> fold_args(const Call& c, size_t first) {
  std::vector<int64_t> v[4];
  for (size_t i = 0; i < 4; ++i) {
    if (!c.arg(first + i).isIntList()) return std::nullopt;
    v[i] = int_list(c.arg(first + i));
    if (v[i].size() != 2) return std::nullopt;
  }
  FoldArgs a{v[0][0], v[0][1], v[1][0], v[1][1], v[2][0], v[2][1], v[3][0], v[3][1]};
  if (a.kh <= 0 || a.kw <= 0 || a.dh <= 0 || a.dw <= 0 || a.ph < 0 || a.pw < 0 || a.sh <= 0 || a.sw <= 0)
    return std::nullopt;  // torch's error names the bad argument
  return a;
}

// Output positions along a dim of n (padded by p on both sides) for a window of k taps d apart.
int64_t positions(int64_t n, int64_t k, int64_t d, int64_t p, int64_t s) { return (n + 2 * p - d * (k - 1) - 1) / s + 1; }

// x (N, C, H, W) zero-padded by (ph, pw); x itself when there is no padding.
Tensor zero_padded(const Tensor& x, int64_t ph, int64_t pw) {
  if (ph == 0 && pw == 0) return x;
  const Shape& s = x.shape();
  Tensor p = zeros({s[0], s[1], s[2] + 2 * ph, s[3] + 2 * pw}, x.dtype(), &x.device());
  copy_into(p.slice(2, ph, ph + s[2]).slice(3, pw, pw + s[3]), x);
  return p;
}

}  // namespace

template <Form F>
void im2col_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  auto a = fold_args(c, 1);
  // integers: torch's CPU kernel has none, and its error says so
  if (!a || !has_kernels({&self}, true) || (self.dim() != 3 && self.dim() != 4)) return c.fall_back();
  const bool batched = self.dim() == 4;
  const int64_t H = self.size(-2), W = self.size(-1);
  const int64_t oh = positions(H, a->kh, a->dh, a->ph, a->sh), ow = positions(W, a->kw, a->dw, a->pw, a->sw);
  if (oh <= 0 || ow <= 0 || self.size(-3) == 0) return c.fall_back();  // torch's error for a window past the input
  try {
    Tensor x = from_torch(self, c.name());
    AtenScope scope(c.name(), {&x});
    if (!batched) x = x.unsqueeze(0);
    const int64_t N = x.shape()[0], C = x.shape()[1];
    Tensor p = zero_padded(x, a->ph, a->pw);
    const Strides& st = p.strides();
    Tensor windows(p.storage(), {N, C, a->kh, a->kw, oh, ow},
                   {st[0], st[1], a->dh * st[2], a->dw * st[3], a->sh * st[2], a->sw * st[3]}, p.offset(), p.dtype());
    Tensor cols = windows.contiguous().view({N, C * a->kh * a->kw, oh * ow});
    if (!batched) cols = cols.squeeze(0);
    c.ret(deliver(F, cols, F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

template <Form F>
void col2im_kernel(const c10::OperatorHandle& op, Stack* s) {
  Call c(op, s);
  if (meta_mode()) return c.fall_back();
  const at::Tensor& self = c.tensor(0);
  auto a = fold_args(c, 2);
  if (!a || !c.arg(1).isIntList() || !has_kernels({&self}, true) || (self.dim() != 2 && self.dim() != 3))
    return c.fall_back();
  const std::vector<int64_t> size = int_list(c.arg(1));
  if (size.size() != 2) return c.fall_back();
  const bool batched = self.dim() == 3;
  const int64_t H = size[0], W = size[1], taps = a->kh * a->kw;
  const int64_t oh = positions(H, a->kh, a->dh, a->ph, a->sh), ow = positions(W, a->kw, a->dw, a->pw, a->sw);
  // the columns must be C * taps rows of oh * ow blocks, as torch checks (its error)
  if (oh <= 0 || ow <= 0 || self.size(-2) % taps != 0 || self.size(-1) != oh * ow || self.size(-2) == 0)
    return c.fall_back();
  try {
    Tensor cols = from_torch(self, c.name());
    AtenScope scope(c.name(), {&cols});
    if (!batched) cols = cols.unsqueeze(0);
    const int64_t N = cols.shape()[0], C = cols.shape()[1] / taps, L = oh * ow;
    const int64_t Hp = H + 2 * a->ph, Wp = W + 2 * a->pw;
    // values in (tap, block, N, C) order, one row per (tap, block): each row goes to one pixel
    Tensor rows = cols.view({N, C, taps, L}).permute({2, 3, 0, 1}).contiguous().view({taps * L, N, C});
    std::vector<int64_t> pixel;
    pixel.reserve(size_t(taps * L));
    for (int64_t i = 0; i < a->kh; ++i)
      for (int64_t j = 0; j < a->kw; ++j)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t x = 0; x < ow; ++x) pixel.push_back((y * a->sh + i * a->dh) * Wp + x * a->sw + j * a->dw);
    Tensor image = zeros({Hp * Wp, N, C}, cols.dtype(), &cols.device());
    index_put_(image, {from_host_i64(pixel, {int64_t(pixel.size())}, &cols.device())}, rows, /*accumulate=*/true);
    Tensor out = image.view({Hp, Wp, N, C})
                     .permute({2, 3, 0, 1})
                     .slice(2, a->ph, a->ph + H)
                     .slice(3, a->pw, a->pw + W)
                     .contiguous();
    if (!batched) out = out.squeeze(0);
    c.ret(deliver(F, out, F == Form::out ? c.out() : self, c.name()));
  } catch (const opscope::Error& e) {
    c.refused(e);
  }
}

template void im2col_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void im2col_kernel<Form::out>(const c10::OperatorHandle&, Stack*);
template void col2im_kernel<Form::functional>(const c10::OperatorHandle&, Stack*);
template void col2im_kernel<Form::out>(const c10::OperatorHandle&, Stack*);

}  // namespace opscope::torch_bridge
