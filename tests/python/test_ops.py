"""Each aten op opscope has a kernel for, against torch's CPU result: broadcasting,
non-contiguous views, in-place through views, odd sizes, f32/bf16/f16. Each test also
checks that the op ran natively (no fallback was counted)."""
import pytest
import torch
import torch.nn.functional as F

import opscope
from conftest import assert_close, fallbacks, native, rand, steady_call

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
SIZES = [1, 3, 4097]

BINARY = {
    "add": lambda a, b: a + b,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=0.5),
    "sub_alpha": lambda a, b: torch.sub(a, b, alpha=2),
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: torch.pow(a, b),
    "maximum": torch.maximum,
    "minimum": torch.minimum,
}


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_broadcasting(name, dtype):
    positive = name in ("pow", "div")
    a, b = rand(4, 1, 5, dtype=dtype, positive=positive), rand(3, 1, dtype=dtype, positive=positive)
    got, want = native(BINARY[name], a, b)
    assert got.shape == want.shape
    assert_close(got, want)


@pytest.mark.parametrize("n", SIZES)
def test_binary_odd_sizes_and_scalars(n):
    a, b = rand(n), rand(n)
    for fn in (lambda x, y: x * y + 2, lambda x, y: 3 - x, lambda x, y: x / 4, lambda x, y: x ** 2,
               lambda x, y: torch.tensor(2.0) * x):
        got, want = native(fn, a, b)
        assert_close(got, want)


def _same_bits(got, want):
    got, want = got.cpu(), want
    return bool(((got.view(torch.int32) == want.view(torch.int32)) | (got.isnan() & want.isnan())).all())


@pytest.mark.parametrize("exponent", [2.0, 3.0, -2.0, -1.0, 0.5, -0.5])
def test_pow_by_a_constant_is_torchs_value_bit_for_bit(exponent):
    # torch's CPU kernel computes these exponents as x * x * x, 1 / (x * x), sqrt ... rather
    # than pow (a correctly rounded pow differs from x * x * x in a quarter of all f32); so
    # does the device, eager and in a compiled kernel, with -0, infinities and NaN as torch.
    x = torch.cat([torch.randn(4099) * 10, torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"),
                                                          1e-40, -1e-40, 3e38, -3e38])])
    got, want = native(lambda t: torch.pow(t, exponent), x)
    assert _same_bits(got, want), (got.cpu() - want).abs().max()
    fn = lambda t: torch.pow(t, exponent) * 2.0  # noqa: E731  (an exact scaling, so the bits stay torch's)
    c = opscope.compile(fn)
    dx = x.to(opscope.device())
    assert _same_bits(steady_call(c, dx), fn(x))
    ks = [k for r in c.report(dx) for k in r.kernels]
    assert len(ks) == 1 and ks[0].startswith("fused_"), ks


def test_binary_non_contiguous_views():
    a, b = rand(8, 6), rand(6, 8)
    got, want = native(lambda x, y: x.t()[::2, :6] * y[::2, 1:7], a, b)  # (3, 6) views of both
    assert_close(got, want)
    got, want = native(lambda x, y: x[:, ::2] + y.t()[:, ::2], a, b)
    assert_close(got, want)


def test_type_promotion_casts_to_the_result_dtype():
    a, b = rand(5, dtype=torch.bfloat16), rand(5)
    got, want = native(lambda x, y: x + y, a, b)
    assert got.dtype == torch.float32
    assert_close(got, want)
    got, want = native(lambda x: x * 0.5, a)
    assert got.dtype == torch.bfloat16
    assert_close(got, want)


def test_inplace_through_a_view_changes_the_base():
    dev = opscope.device()
    base = torch.zeros(4, 6)
    d = base.to(dev)
    opscope.reset_fallback_stats()
    v = d[1:3, ::2]
    v.add_(1.5)
    v.mul_(torch.full((2, 3), 2.0, device=dev))
    d[:, 0].neg_()
    base[1:3, ::2].add_(1.5)
    base[1:3, ::2].mul_(2)
    base[:, 0].neg_()
    assert fallbacks() == {}
    assert torch.equal(d.cpu(), base)


def test_out_variants_resize_and_write():
    dev = opscope.device()
    a, b = rand(3, 4), rand(3, 4)
    out = torch.empty(0, device=dev)
    torch.mul(a.to(dev), b.to(dev), out=out)
    assert out.shape == (3, 4)
    assert_close(out, a * b)
    out2 = torch.empty(3, 4, device=dev)
    torch.exp(a.to(dev), out=out2)
    assert_close(out2, torch.exp(a))
    torch.sum(a.to(dev), 1, out=out2)
    assert_close(out2, a.sum(1))


UNARY = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "log": lambda x: torch.log(x.abs() + 0.5),
    "sqrt": lambda x: torch.sqrt(x.abs()), "rsqrt": lambda x: torch.rsqrt(x.abs() + 0.5), "sin": torch.sin,
    "cos": torch.cos, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "silu": F.silu, "gelu": F.gelu, "relu": F.relu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "hardswish": lambda x: F.hardswish(x * 3), "hardsigmoid": lambda x: F.hardsigmoid(x * 3),  # past the kinks at ±3
}


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", DTYPES)
def test_unary(name, dtype):
    x = rand(7, 9, dtype=dtype)
    got, want = native(UNARY[name], x)
    assert_close(got, want)
    got, want = native(lambda t: UNARY[name](t.t()[1:, ::2]), x)  # a strided view
    assert_close(got, want)


def test_unary_inplace():
    for name in ("exp_", "sigmoid_", "tanh_", "relu_", "neg_"):
        x = rand(4097)
        got, want = native(lambda t: getattr(t[::3], name)(), x)
        assert_close(got, want)
    for fn in (F.hardswish, F.hardsigmoid):  # MobileNetV3's activations run in place
        x = rand(4097) * 3
        got, want = native(lambda t: fn(t[::3], inplace=True), x)
        assert_close(got, want)


REDUCE = {
    "sum_all": lambda x: x.sum(),
    "sum_dims_keep": lambda x: x.sum((0, 2), keepdim=True),
    "mean_last": lambda x: x.mean(-1),
    "amax": lambda x: x.amax(1),
    "amin_keep": lambda x: x.amin(-1, keepdim=True),
    "var": lambda x: x.var(-1),
    "var_unbiased_false": lambda x: x.var(1, unbiased=False, keepdim=True),
}


@pytest.mark.parametrize("name", REDUCE)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions(name, dtype):
    x = rand(3, 5, 7, dtype=dtype)
    got, want = native(REDUCE[name], x)
    assert got.shape == want.shape
    assert_close(got, want, dtype=dtype if "sum" not in name else torch.bfloat16 if dtype != torch.float32 else dtype)


def test_argmax():
    x = rand(4, 4097)
    for fn in (lambda t: t.argmax(-1), lambda t: t.argmax(), lambda t: t.argmax(0, keepdim=True)):
        got, want = native(fn, x)
        assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_family(dtype):
    a, b, c = rand(5, 7, dtype=dtype), rand(7, 3, dtype=dtype), rand(2, 5, 7, dtype=dtype)
    tol = torch.float32 if dtype == torch.float32 else torch.bfloat16
    for fn, args in ((torch.mm, (a, b)), (lambda x, y: x @ y, (c, b)), (lambda x, y: torch.bmm(x, y.expand(2, 7, 3)), (c, b)),
                     (lambda x, y: x.t() @ x, (a, b))):
        got, want = native(fn, *args)
        assert_close(got, want, dtype=tol)
    lin = torch.nn.Linear(7, 4).to(dtype)
    w, bias = lin.weight.detach(), lin.bias.detach()
    got, want = native(lambda x, w_, b_: F.linear(x, w_, b_), c, w, bias)
    assert_close(got, want, dtype=tol)
    got, want = native(lambda s, x, y: torch.addmm(s, x, y, beta=0.5, alpha=2), rand(3, dtype=dtype), a, b)
    assert_close(got, want, dtype=tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_layer_norm_embedding_cat(dtype):
    x = rand(2, 3, 33, dtype=dtype)
    got, want = native(lambda t: torch.softmax(t, -1), x)
    assert_close(got, want)
    got, want = native(lambda t: torch.softmax(t, 1), x)
    assert_close(got, want)
    w, b = rand(33, dtype=dtype), rand(33, dtype=dtype)
    with torch.no_grad():
        got, want = native(lambda t, w_, b_: F.layer_norm(t, (33,), w_, b_), x, w, b)
    assert_close(got, want)
    table = rand(10, 6, dtype=dtype)
    idx = torch.tensor([[1, 9, 0], [3, 3, 7]])
    got, want = native(F.embedding, idx, table)
    assert torch.equal(got.cpu(), want)
    got, want = native(lambda p, q: torch.cat([p, q, p], dim=1), x, rand(2, 1, 33, dtype=dtype))
    assert torch.equal(got.cpu(), want)


def test_cat_of_empty_tensors_only_is_an_empty_tensor_of_their_result_type():
    """A detection head's levels with no box above the threshold: cat of legacy (0,) tensors
    gives (0,) of the promoted dtype on the device, in the functional and out= forms."""
    e32, e64 = torch.empty(0), torch.empty(0, dtype=torch.int64)
    got, want = native(lambda a, b: torch.cat([a, b, a]), e32, e32)
    assert got.shape == want.shape == (0,) and got.dtype == want.dtype == torch.float32
    got, want = native(lambda a, b: torch.cat([b, a], dim=0), e32, e64)
    assert got.shape == want.shape == (0,) and got.dtype == want.dtype == torch.float32
    got, want = native(lambda b: torch.cat([b, b]), e64)
    assert got.dtype == want.dtype == torch.int64
    got, want = native(lambda a: torch.cat([a, a], out=torch.empty(0, device=a.device)), e32)
    assert got.shape == want.shape == (0,)
    # beside a non-empty tensor, the empties are skipped as torch skips them
    got, want = native(lambda a, x: torch.cat([a, x, a]), e32, rand(2, 3))
    assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])  # torch's CPU has no f16 batch_norm
def test_instance_norm_and_batch_norm_in_training_mode_run_natively(dtype):
    """Batch statistics (F.instance_norm, a BatchNorm in train()): the output, the saved mean
    and 1/std, and the running statistics moved by momentum (the variance unbiased), as
    torch's CPU kernel gives them."""
    x = rand(2, 3, 5, 4, dtype=dtype) * 3 + 1
    got, want = native(lambda t: F.instance_norm(t), x)
    assert_close(got, want)
    w, b = rand(3, dtype=dtype), rand(3, dtype=dtype)
    got, want = native(lambda t, w_, b_: F.instance_norm(t, weight=w_, bias=b_, eps=1e-3), x, w, b)
    assert_close(got, want)
    rm, rv = rand(3, dtype=dtype), rand(3, dtype=dtype, positive=True)
    dev = opscope.device()
    rm_d, rv_d = rm.to(dev), rv.to(dev)
    opscope.reset_fallback_stats()
    out_d, mean_d, invstd_d = torch.native_batch_norm(x.to(dev), w.to(dev), b.to(dev), rm_d, rv_d, True, 0.3, 1e-5)
    opscope.synchronize()
    assert opscope.fallback_stats() == {}, opscope.fallback_stats()
    out, mean, invstd = torch.native_batch_norm(x, w, b, rm, rv, True, 0.3, 1e-5)
    for g, wnt in ((out_d, out), (mean_d, mean), (invstd_d, invstd), (rm_d, rm), (rv_d, rv)):
        assert g.dtype == wnt.dtype
        assert_close(g, wnt)


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_eval_runs_natively(affine):
    bn = torch.nn.BatchNorm2d(5, affine=affine).eval()
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(5))
        bn.running_var.copy_(torch.rand(5) + 0.5)
        if affine:
            bn.weight.copy_(torch.randn(5))
            bn.bias.copy_(torch.randn(5))
    params = [bn.running_mean, bn.running_var] + ([bn.weight.detach(), bn.bias.detach()] if affine else [None, None])
    with torch.no_grad():
        got, want = native(lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False, eps=1e-5),
                           rand(2, 5, 3, 4), *params)
    assert_close(got, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(3, 5), (2, 5, 7), (2, 5, 3, 4), (1, 5, 2, 3, 4), (0, 5, 2)])
def test_batch_norm_eval_dtypes_ranks_and_empty(dtype, shape):
    m, v, w, b = (torch.randn(5), torch.rand(5) + 0.5, torch.randn(5), torch.randn(5))
    with torch.no_grad():
        got, want = native(lambda x, *p: F.batch_norm(x, *p, training=False, eps=1e-3),
                           rand(*shape, dtype=dtype), *(t.to(dtype) for t in (m, v, w, b)))
    assert got.shape == want.shape and got.dtype == want.dtype
    assert_close(got, want)


def test_batch_norm_eval_on_a_permuted_input_and_f32_statistics_of_a_bf16_input():
    x = rand(2, 4, 6, 3).permute(0, 3, 1, 2)  # (2, 3, 4, 6), channels last in memory
    m, v = torch.randn(3), torch.rand(3) + 0.5
    with torch.no_grad():
        got, want = native(lambda t, m_, v_: F.batch_norm(t, m_, v_), x, m, v)
    assert_close(got, want)
    xb = rand(2, 3, 5, dtype=torch.bfloat16)
    dev = opscope.device()
    with torch.no_grad():
        got = F.batch_norm(xb.to(dev), m.to(dev), v.to(dev))
    assert got.dtype == torch.bfloat16
    assert_close(got, F.batch_norm(xb.float(), m, v).to(torch.bfloat16))


def test_batch_norm_eval_is_one_kernel():
    from opscope.profiler import profile
    dev = opscope.device()
    x, m, v, w, b = (t.to(dev) for t in (rand(2, 8, 5, 5), torch.randn(8), torch.rand(8) + 0.5, torch.randn(8),
                                          torch.randn(8)))
    opscope.synchronize()  # the copies' kernels must not run inside the profile
    with torch.no_grad(), profile() as prof:
        F.batch_norm(x, m, v, w, b)
        opscope.synchronize()
    kernels = [e.key for e in prof.key_averages() if e.key.endswith("_f32")]
    assert kernels == ["batch_norm_f32"], kernels


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_in_place_activations_and_arithmetic_write_self_in_one_kernel_each(dtype):
    from opscope.profiler import profile
    dev = opscope.device()
    x, y = rand(4, 6, 5, 3, dtype=dtype), rand(4, 6, 5, 3, dtype=dtype)
    want = x.float()
    for f in (F.silu, torch.relu, F.hardswish, torch.sigmoid):
        want = f(want)
    yf = y.float()
    want = ((((want + yf) - yf[0]) * yf[1, 2]) / (yf.abs() + 1)).to(dtype).float()
    want = (want + want).to(dtype)
    xd, yd = x.to(dev), y.to(dev)
    d = yd.abs() + 1
    ptr = xd.data_ptr()
    opscope.synchronize()  # else abs and add run on the device inside the profile (CI saw it)
    with torch.no_grad(), profile() as prof:
        F.silu(xd, inplace=True)
        xd.relu_()
        F.hardswish(xd, inplace=True)
        xd.sigmoid_()
        xd.add_(yd)
        xd.sub_(yd[0])      # broadcast over the first dim
        xd.mul_(yd[1, 2])   # over the first two
        xd.div_(d)
        xd.add_(xd)         # other is self, the same view
        opscope.synchronize()
    assert xd.data_ptr() == ptr
    assert_close(xd, want)
    suffix = "_f32" if dtype == torch.float32 else "_bf16"
    kernels = [e.key for e in prof.key_averages() if e.key.endswith(suffix)]
    assert sorted(kernels) == sorted(k + suffix for k in ("silu", "relu", "hardswish", "sigmoid", "add", "sub", "mul",
                                                          "div")), kernels


def test_in_place_forms_that_cannot_write_self_directly_still_match_torch():
    dev = opscope.device()
    x = rand(6, 5)
    # a transposed self, other a view overlapping self, alpha, an integer self
    got = x.to(dev)
    got.t().relu_()
    assert_close(got, torch.relu(x))
    got = x.to(dev)
    got[1:].add_(got[:-1])  # other overlaps self partly: read before any write, as out of place
    want = x.clone()
    want[1:] = x[1:] + x[:-1]
    assert_close(got, want)
    got = x.to(dev)
    got.add_(x.to(dev), alpha=2)
    assert_close(got, x + 2 * x)
    i = torch.arange(6)
    gi = i.to(dev)
    gi.add_(i.to(dev))
    assert torch.equal(gi.cpu(), i + i)


def test_batch_norm_training_runs_natively_and_updates_the_running_stats(dev):
    bn = torch.nn.BatchNorm1d(3).train()
    x = rand(8, 3)
    want = bn(x)
    bd = torch.nn.BatchNorm1d(3).train().to(dev)
    got = bd(x.to(dev))
    assert_close(got.detach(), want.detach())
    assert_close(bd.running_mean, bn.running_mean)
    assert_close(bd.running_var, bn.running_var)
    assert bd.num_batches_tracked.item() == 1
    assert "aten::native_batch_norm" not in fallbacks()


def test_layer_norm_over_two_dims_and_without_affine():
    x = rand(4, 3, 5)
    with torch.no_grad():
        got, want = native(lambda t: F.layer_norm(t, (3, 5)), x)
    assert_close(got, want)


def test_copies_and_casts():
    x = rand(3, 8)
    for fn in (lambda t: t.clone(), lambda t: t.t().contiguous(), lambda t: t.to(torch.bfloat16),
               lambda t: t.t().to(torch.float16), lambda t: t.to(torch.int64)):
        got, want = native(fn, x)
        assert got.dtype == want.dtype
        assert torch.equal(got.cpu(), want)


def test_arange_runs_natively():
    dev = opscope.device()
    opscope.reset_fallback_stats()
    got = [torch.arange(7, device=dev), torch.arange(2, 11, 3, device=dev), torch.arange(0.5, 4.0, 0.25, device=dev),
           torch.arange(5, 0, -1, device=dev), torch.arange(0, 10, dtype=torch.bfloat16, device=dev)]
    want = [torch.arange(7), torch.arange(2, 11, 3), torch.arange(0.5, 4.0, 0.25), torch.arange(5, 0, -1),
            torch.arange(0, 10, dtype=torch.bfloat16)]
    assert fallbacks() == {}
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and torch.equal(g.cpu(), w)
    with pytest.raises(RuntimeError):
        torch.arange(0, 5, -1, device=dev)  # torch's own error, through the fallback


def test_fill_and_zero_through_views():
    dev = opscope.device()
    d = torch.ones(4, 4, device=dev)
    opscope.reset_fallback_stats()
    d[:, 1].fill_(5)
    d[2].zero_()
    want = torch.ones(4, 4)
    want[:, 1] = 5
    want[2] = 0
    assert fallbacks() == {}
    assert torch.equal(d.cpu(), want)


def test_rms_norm_op_matches_the_cpu_reference():
    for dtype in DTYPES:
        x, w = rand(3, 4097, dtype=dtype), rand(4097, dtype=dtype)
        got, want = native(lambda a, b: opscope.ops.rms_norm(a, b, 1e-6), x, w)
        assert_close(got, want)
        naive = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(dtype)
        torch.testing.assert_close(want, naive)
