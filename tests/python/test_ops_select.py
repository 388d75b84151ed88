"""Comparisons, logic and selection against torch CPU: eq/ne/lt/le/gt/ge (tensors, numbers,
promotion, bool results), logical and bitwise ops on bool, where, masked_fill, clamp (and
hardtanh/ReLU6), addcmul, the rounding unary ops. Each runs natively (no fallback)."""
import pytest
import torch
import torch.nn.functional as F

import opscope
from conftest import assert_close, native, rand, tol

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
COMPARE = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}


def exact(got, want):
    assert got.device.type == "privateuseone"
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert torch.equal(got.cpu(), want), (got.cpu(), want)


@pytest.mark.parametrize("name", COMPARE)
@pytest.mark.parametrize("dtype", DTYPES + [torch.int64, torch.int32])
def test_comparisons_broadcast_and_give_bool(name, dtype):
    a = (torch.randn(4, 1, 7) * 3).round().to(dtype)  # rounded: ties happen, eq/ne see them
    b = (torch.randn(5, 1) * 3).round().to(dtype)
    got, _ = native(COMPARE[name], a, b)
    exact(got, COMPARE[name](a, b))


@pytest.mark.parametrize("name", COMPARE)
def test_comparisons_with_numbers_round_them_to_the_dtype(name):
    a = torch.tensor([0.1, 0.2, 1.0, float("nan"), -float("inf")], dtype=torch.bfloat16)
    for s in (0.1, 1, -2.5):
        got, _ = native(lambda x: COMPARE[name](x, s), a)
        exact(got, COMPARE[name](a, s))
    ints = torch.tensor([0, 1, 2, 3])
    got, _ = native(lambda x: COMPARE[name](x, 1.5), ints)  # int vs float: promoted
    exact(got, COMPARE[name](ints, 1.5))


def test_comparison_views_out_and_inplace(dev):
    a, b = rand(6, 8), rand(8, 6)
    got, _ = native(lambda x, y: x.t()[::2] > y[::2], a, b)
    exact(got, a.t()[::2] > b[::2])
    out = torch.empty(0, dtype=torch.bool, device=dev)
    torch.lt(a.to(dev), 0.0, out=out)
    exact(out, torch.lt(a, 0.0))
    d = a.to(dev)
    d.ge_(0.0)  # in place: the result keeps self's dtype
    exact(d, a.ge(0.0).float())


def test_bool_tensors_compare_and_copy():
    m = torch.tensor([[True, False, True], [False, False, True]])
    got, _ = native(lambda x: x == x.flip(1), m)
    exact(got, m == m.flip(1))
    got, _ = native(lambda x: x.float() * 2 + x.to(torch.int64).sum(), m)  # casts both ways
    exact(got, m.float() * 2 + m.to(torch.int64).sum())


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_logical_and_bitwise_on_bool(op):
    a, b = torch.rand(3, 5) > 0.5, torch.rand(5) > 0.5
    logical, bitwise = getattr(torch, f"logical_{op}"), getattr(torch, f"bitwise_{op}")
    got, _ = native(logical, a, b)
    exact(got, logical(a, b))
    got, _ = native(bitwise, a, b)
    exact(got, bitwise(a, b))
    x, y = rand(3, 5), rand(3, 5)  # any dtype: nonzero is true
    got, _ = native(logical, x, y)
    exact(got, logical(x, y))
    got, _ = native(lambda p: ~p, a)
    exact(got, ~a)
    got, _ = native(torch.logical_not, x)
    exact(got, torch.logical_not(x))


@pytest.mark.parametrize("dtype", DTYPES + [torch.int64])
def test_where_broadcasts_and_promotes(dtype):
    c = torch.rand(4, 1, 6) > 0.5
    a, b = rand(5, 1).to(dtype), rand(6).to(dtype)
    got, _ = native(torch.where, c, a, b)
    exact(got, torch.where(c, a, b))
    x = rand(4, 5, 6)
    got, _ = native(lambda m, y: torch.where(m, y, 0.5), c, x)  # a number operand
    exact(got, torch.where(c, x, 0.5))


@pytest.mark.parametrize("dtype", DTYPES + [torch.int32])
def test_masked_fill_functional_and_inplace_through_views(dev, dtype):
    x = (rand(4, 6) * 10).to(dtype)
    m = torch.rand(6) > 0.5
    got, _ = native(lambda t, k: t.masked_fill(k, -3), x, m)
    exact(got, x.masked_fill(m, -3))
    d = x.to(dev)
    d[:, ::2].masked_fill_(m[::2].to(dev), 7)
    want = x.clone()
    want[:, ::2].masked_fill_(m[::2], 7)
    exact(d, want)
    y, k = rand(3, 4), torch.rand(3, 4) > 0.5
    got, _ = native(lambda t, q: t.masked_fill(q, torch.tensor(-100.0)), y, k)  # a 0-dim value (Swin's)
    exact(got, y.masked_fill(k, torch.tensor(-100.0)))


@pytest.mark.parametrize("dtype", DTYPES + [torch.int64])
def test_clamp_forms_and_relu6(dev, dtype):
    x = (torch.randn(5, 7) * 4).to(dtype)
    for fn in (lambda t: t.clamp(-1, 2), lambda t: t.clamp(min=0.5 if dtype.is_floating_point else 1),
               lambda t: t.clamp(max=1), lambda t: torch.clamp_min(t, 0), lambda t: t.clamp(3, -3)):
        got, _ = native(fn, x)
        # clamping commutes with rounding: torch 1.13's CPU lacks f16 clamp, so compute in f32
        exact(got, fn(x.float()).to(dtype) if dtype.is_floating_point else fn(x))
    if dtype.is_floating_point:
        got, _ = native(F.relu6, x)
        assert_close(got, F.relu6(x.float()).to(dtype))
        got, _ = native(lambda t: F.hardtanh(t, -0.5, 0.5), x)
        assert_close(got, F.hardtanh(x.float(), -0.5, 0.5).to(dtype))
    d = x.to(dev)
    d[1:3].clamp_(max=0)
    want = x.float() if dtype.is_floating_point else x.clone()
    want[1:3].clamp_(max=0)
    exact(d, want.to(dtype))


def test_clamp_keeps_nan():
    x = torch.tensor([float("nan"), -5.0, 5.0, 0.3])
    got, _ = native(lambda t: t.clamp(-1, 1), x)
    torch.testing.assert_close(got.cpu(), x.clamp(-1, 1), equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_clamp_by_tensors(dtype):
    """clamp with tensor bounds (min only, max only, both, broadcast, crossed bounds), NaN in
    self or a bound giving NaN, and the in-place and out= forms, as torch CPU."""
    x = (torch.randn(4, 6) * 4).to(dtype)
    lo, hi = (torch.randn(6) * 2 - 1).to(dtype), (torch.randn(4, 1) * 2 + 1).to(dtype)
    for fn in (lambda t, a, b: torch.clamp(t, a, b), lambda t, a, b: torch.clamp(t, min=a),
               lambda t, a, b: torch.clamp(t, max=b), lambda t, a, b: torch.clamp_min(t, a),
               lambda t, a, b: torch.clamp_max(t, b), lambda t, a, b: torch.clamp(t, b.expand(4, 6), a),
               lambda t, a, b: t.clone().clamp_(a, b.expand(4, 6)),
               lambda t, a, b: torch.clamp(t, a, b, out=torch.empty(4, 6, dtype=t.dtype, device=t.device))):
        got, want = native(fn, x, lo, hi)
        assert torch.equal(got.cpu(), want)
    if dtype.is_floating_point:
        nan = float("nan")
        y = torch.tensor([nan, -5.0, 5.0, 0.3]).to(dtype)
        a, b = torch.tensor([-1.0, nan, -1.0, -1.0]).to(dtype), torch.tensor([1.0, 1.0, nan, 1.0]).to(dtype)
        got, want = native(lambda t, p, q: torch.clamp(t, p, q), y, a, b)
        torch.testing.assert_close(got.cpu(), want, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_addcmul(dtype):
    x, a, b = rand(4, 5, dtype=dtype), rand(5, dtype=dtype), rand(4, 1, dtype=dtype)
    got, want = native(lambda p, q, r: torch.addcmul(p, q, r, value=0.5), x, a, b)
    assert_close(got, want)


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc", "sign", "log2", "reciprocal", "erf"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rounding_and_math_unary(name, dtype):
    fn = getattr(torch, name)
    x = torch.cat([torch.randn(67) * 4, torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 0.0, -0.0])]).to(dtype)
    if name == "log2":
        x = x.abs() + 2 ** -10
    got, want = native(fn, x)
    if name in ("floor", "ceil", "round", "trunc", "sign"):
        exact(got, want)
    else:
        assert_close(got, want)


# Inputs inside each op's domain, with values near 0 where e^x - 1 and log(1 + x) would
# cancel (1e-7: computed naively, expm1 gives 1.19e-7, 19% off).
LIBM_INPUTS = {
    "expm1": lambda: torch.cat([torch.randn(61) * 3, torch.tensor([1e-7, -1e-7, 0.0, -0.0, 80.0, -90.0])]),
    "log1p": lambda: torch.cat([torch.rand(61) * 9 - 0.9, torch.tensor([1e-7, -1e-7, 0.0, -1.0, -2.0, 1e30])]),
    "tan": lambda: torch.cat([torch.randn(64), torch.tensor([0.0, -0.0, 1.5])]),
    "atan": lambda: torch.cat([torch.randn(64) * 10, torch.tensor([0.0, float("inf"), float("-inf")])]),
    "asin": lambda: torch.cat([torch.rand(64) * 2 - 1, torch.tensor([1.0, -1.0, 1.5])]),
    "acos": lambda: torch.cat([torch.rand(64) * 2 - 1, torch.tensor([1.0, -1.0, -1.5])]),
    "sinh": lambda: torch.cat([torch.randn(64) * 4, torch.tensor([1e-7, 0.0, 100.0])]),
    "cosh": lambda: torch.cat([torch.randn(64) * 4, torch.tensor([0.0, -100.0])]),
    "erfinv": lambda: torch.cat([torch.rand(64) * 2 - 1, torch.tensor([0.0, 1e-7, 0.9999999, -0.99999, 1.0, -1.0, 1.5])]),
}


@pytest.mark.parametrize("name", sorted(LIBM_INPUTS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_libm_unary(name, dtype):
    torch.manual_seed(3)
    x = LIBM_INPUTS[name]().to(dtype)
    fn = getattr(torch, name)
    atol, rtol = tol(dtype)

    def check(got):  # NaN outside the domain, and only there
        assert got.device.type == "privateuseone"
        torch.testing.assert_close(got.cpu().float(), want.float(), atol=atol, rtol=rtol, equal_nan=True)

    got, want = native(fn, x)
    check(got)
    got_, _ = native(lambda t: getattr(t.clone(), name + "_")(), x)  # in place
    check(got_)
    out = torch.empty(0, dtype=dtype).to(opscope.device())
    native(lambda t: fn(t, out=out), x)
    check(out)


@pytest.mark.parametrize("name", ["exp", "log2", "sigmoid", "erf", "expm1", "log1p", "atan", "sinh"])
def test_float_unary_of_integers_and_bools_is_f32(name):
    for x in (torch.tensor([0, 1, 3]), torch.tensor([2, 5], dtype=torch.int32), torch.tensor([True, False])):
        got, want = native(getattr(torch, name), x)
        assert got.dtype == want.dtype == torch.float32
        assert_close(got, want)
    dev = opscope.device()
    with pytest.raises(RuntimeError, match="can't be cast"):  # torch's error, not a silent truncation
        getattr(torch, name)(torch.tensor([1, 2]).to(dev), out=torch.empty(2, dtype=torch.long).to(dev))
    with pytest.raises(RuntimeError, match="can't be cast"):
        getattr(torch.tensor([1, 2]).to(dev), name + "_")()


def test_rounding_keeps_integers():
    x = torch.tensor([-3, 0, 7])
    for name in ("floor", "round", "sign"):
        got, _ = native(getattr(torch, name), x)
        exact(got, getattr(torch, name)(x))
