"""torch.div's rounding_mode ("trunc", "floor"), floor_divide and remainder (%) on the
device, against torch's CPU kernels: floating and integer dtypes (integers stay integers),
signs, exact multiples, zero divisors, broadcasting, views, scalars, the in-place and out=
forms. Each runs natively (no fallback counted)."""
import pytest
import torch

import opscope
from conftest import assert_close, native

FORMS = {
    "trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "floor_divide": lambda a, b: a // b,
    "remainder": lambda a, b: a % b,  # detection heads: topk_idxs % num_classes
}


def operands(dtype):
    """Every sign pair, exact multiples, quotients just off an integer, and (floats) zeros."""
    a = torch.tensor([-7, 7, -6, 6, 0, 1, -1, 13, -13, 100, -100, 5, -5, 9], dtype=torch.float64)
    b = torch.tensor([2, -2, 3, -3, 5, 3, 3, -4, 4, 7, 7, 5, 5, -10], dtype=torch.float64)
    if dtype.is_floating_point:
        a = torch.cat([a * 0.37, a, torch.tensor([1.0, -1.0, 0.0, 7.5, -7.5, 1e30, -3e-30])])
        b = torch.cat([b * 0.11, b, torch.tensor([0.0, 0.0, 0.0, 2.5, 2.5, 3.0, 7.0])])
    return a.to(dtype), b.to(dtype)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int32])
def test_exactly_torch_cpu(form, dtype):
    a, b = operands(dtype)
    got, want = native(FORMS[form], a, b)
    assert got.dtype == want.dtype == dtype
    assert torch.equal(got.cpu().isnan(), want.isnan()), (got.cpu(), want)
    ok = ~want.isnan() if dtype.is_floating_point else torch.ones_like(want, dtype=torch.bool)
    assert torch.equal(got.cpu()[ok], want[ok]), (a, b, got.cpu(), want)
    if dtype.is_floating_point:  # the sign of a zero quotient too (-0.0 for -1 // 3)
        assert torch.equal(torch.signbit(got.cpu()[ok]), torch.signbit(want[ok]))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_16_bit_floats(form, dtype):
    a, b = operands(torch.float32)
    keep = (b != 0) & (a.abs() < 1e4)
    got, want = native(FORMS[form], a[keep].to(dtype), b[keep].to(dtype))
    assert got.dtype == dtype
    assert_close(got, want)


@pytest.mark.parametrize("form", FORMS)
def test_broadcasting_views_and_scalars(form):
    fn = FORMS[form]
    a = torch.randint(-50, 50, (4, 1, 6))
    b = torch.randint(1, 9, (3, 1)) * torch.tensor([[1], [-1], [1]])
    got, want = native(fn, a, b)
    assert torch.equal(got.cpu(), want)
    x = torch.randn(6, 8) * 10
    got, want = native(lambda t: fn(t.t()[::2], -3), x)  # a strided view against a scalar
    assert torch.equal(got.cpu(), want)
    got, want = native(lambda t: fn(t, 4), a)
    assert torch.equal(got.cpu(), want) and got.dtype == torch.int64
    got, want = native(lambda t: fn(t, 2.5), a)  # an int tensor by a float: a float result
    assert got.dtype == want.dtype == torch.float32 and torch.equal(got.cpu(), want)


def test_in_place_and_out_forms():
    a, b = torch.randint(-30, 30, (5, 7)), torch.randint(1, 6, (7,))
    for mode in ("trunc", "floor"):
        got, want = native(lambda x, y: x.clone().div_(y, rounding_mode=mode), a, b)
        assert torch.equal(got.cpu(), want)
        got, want = native(lambda x: x.clone().div_(-4, rounding_mode=mode), a)
        assert torch.equal(got.cpu(), want)

        def out_form(x, y):
            out = torch.empty(0, dtype=x.dtype, device=x.device)
            r = torch.div(x, y, rounding_mode=mode, out=out)
            assert r is out
            return out
        got, want = native(out_form, a, b)
        assert torch.equal(got.cpu(), want)
    got, want = native(lambda x, y: x.clone().floor_divide_(y), a, b)
    assert torch.equal(got.cpu(), want)
    got, want = native(lambda x, y: torch.floor_divide(x, y, out=torch.empty_like(x)), a, b)
    assert torch.equal(got.cpu(), want)


def test_an_integer_zero_divisor_is_an_error_naming_div_and_the_device_goes_on():
    dev = opscope.device()
    a, b = torch.tensor([4, 5, 6]).to(dev), torch.tensor([2, 0, 3]).to(dev)
    for mode in ("trunc", "floor"):
        with pytest.raises(RuntimeError, match=r"div.*ZeroDivisionError"):
            torch.div(a, b, rounding_mode=mode).cpu()
    assert torch.equal((a // torch.tensor([2, 1, 3]).to(dev)).cpu(), torch.tensor([2, 5, 2]))


def test_the_minimum_over_minus_one_wraps_instead_of_trapping():
    dev = opscope.device()
    lo = torch.iinfo(torch.int64).min
    a = torch.tensor([lo, lo + 1], dtype=torch.int64).to(dev)
    for mode in ("trunc", "floor"):
        got = torch.div(a, -1, rounding_mode=mode).cpu()
        assert got.tolist() == [lo, -(lo + 1)]


def test_remainder_in_place_out_and_a_number_first():
    a, b = torch.randint(-30, 30, (5, 7)), torch.randint(1, 6, (7,)) * torch.tensor([1, -1, 1, -1, 1, -1, 1])
    got, want = native(lambda x, y: x.clone().remainder_(y), a, b)
    assert torch.equal(got.cpu(), want)
    got, want = native(lambda x, y: torch.remainder(x, y, out=torch.empty_like(x)), a, b)
    assert torch.equal(got.cpu(), want)
    got, want = native(lambda y: 7 % y, b)  # remainder.Scalar_Tensor
    assert torch.equal(got.cpu(), want)
    x = torch.randn(4, 6) * 10
    got, want = native(lambda t: torch.remainder(-2.5, t), x)
    assert_close(got, want)
    got, want = native(lambda t: t % 3, torch.empty(0, 3))
    assert got.shape == want.shape == (0, 3)


def test_an_integer_zero_remainder_is_an_error_naming_remainder():
    dev = opscope.device()
    a, b = torch.tensor([4, 5, 6]).to(dev), torch.tensor([2, 0, 3]).to(dev)
    with pytest.raises(RuntimeError, match=r"remainder.*ZeroDivisionError"):
        (a % b).cpu()
    assert torch.equal((a % torch.tensor([3, 2, -4]).to(dev)).cpu(), torch.tensor([1, 1, -2]))
