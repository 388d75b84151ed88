"""leaky_relu, elu (selu, celu), softplus, mish, log10, exp2, logsigmoid, atanh, frac and sgn
on the device's own kernels: functional, in-place and out= forms against torch CPU,
with no fallback."""
import pytest
import torch
import torch.nn.functional as F

import opscope
from conftest import assert_close, fallbacks, native, reference

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.3, -0.3, 1e-6, -1e-6, 4.0, -4.0, 19.0, 21.0, 25.0, 60.0, -60.0, 100.0, -100.0,
           1e4, -1e4, float("inf"), float("-inf"), float("nan")]

# name -> (functional, in-place or None, its torch.* out= function with its extra arguments or None)
OPS = {
    "leaky_relu": (F.leaky_relu, lambda t: F.leaky_relu_(t), (torch._C._nn.leaky_relu, ())),
    "leaky_relu_0.2": (lambda t: F.leaky_relu(t, 0.2), lambda t: F.leaky_relu_(t, 0.2),
                       (torch._C._nn.leaky_relu, (0.2,))),
    "leaky_relu_-0.5": (lambda t: F.leaky_relu(t, -0.5), lambda t: F.leaky_relu_(t, -0.5),
                        (torch._C._nn.leaky_relu, (-0.5,))),
    "elu": (F.elu, lambda t: F.elu_(t), (torch._C._nn.elu, ())),
    "elu_0.5": (lambda t: F.elu(t, 0.5), lambda t: F.elu_(t, 0.5), (torch._C._nn.elu, (0.5,))),
    "elu_scaled": (lambda t: torch._C._nn.elu(t, 0.7, 1.5, 0.25), None, (torch._C._nn.elu, (0.7, 1.5, 0.25))),
    "selu": (F.selu, lambda t: torch.selu_(t), None),
    "celu_0.5": (lambda t: F.celu(t, 0.5), lambda t: torch.celu_(t, 0.5), None),
    "softplus": (F.softplus, None, (torch._C._nn.softplus, ())),
    "softplus_2_5": (lambda t: F.softplus(t, 2, 5), None, (torch._C._nn.softplus, (2, 5))),
    "mish": (F.mish, lambda t: F.mish(t, inplace=True), (torch._C._nn.mish, ())),
    "log10": (torch.log10, torch.log10_, (torch.log10, ())),
    "exp2": (torch.exp2, torch.exp2_, (torch.exp2, ())),
    "logsigmoid": (F.logsigmoid, None, (torch._C._nn.log_sigmoid, ())),
    "atanh": (torch.atanh, torch.atanh_, (torch.atanh, ())),
    "frac": (torch.frac, torch.frac_, (torch.frac, ())),
    "sgn": (torch.sgn, lambda t: t.sgn_(), (torch.sgn, ())),
}


def inputs(n, dtype, name):
    x = torch.randn(n) * 4
    if name == "log10":
        x = x.abs() * 10  # in log10's domain (the special values test the rest)
    if name == "atanh":
        x = torch.rand(n) * 1.98 - 0.99  # likewise
    return x.to(dtype)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 3, 4097])
def test_functional(name, dtype, n):
    x = inputs(n, dtype, name)
    got, want = native(OPS[name][0], x)
    assert got.dtype == dtype
    assert_close(got, want)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_special_values(name, dtype):
    x = torch.tensor(SPECIAL).to(dtype)
    if name == "sgn":  # the device's sign keeps NaN NaN (as NumPy), where torch 1.13's gives 0
        assert torch.sgn(x.to(opscope.device())).cpu()[-1].isnan()
        x = x[:-1]
    got, want = native(OPS[name][0], x)
    torch.testing.assert_close(got.cpu().float(), want.float(), equal_nan=True,
                               atol=2e-2 if dtype == torch.bfloat16 else 2e-3 if dtype == torch.float16 else 1e-5,
                               rtol=2e-2 if dtype == torch.bfloat16 else 2e-3 if dtype == torch.float16 else 1e-5)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_view(name, dtype):
    x = inputs(7 * 9, dtype, name).reshape(7, 9)
    got, want = native(lambda t: OPS[name][0](t.t()[1:, ::2]), x)
    assert_close(got, want)


@pytest.mark.parametrize("name", [k for k, v in OPS.items() if v[1] is not None])
@pytest.mark.parametrize("dtype", DTYPES)
def test_inplace(name, dtype):
    x = inputs(4097, dtype, name)
    dev = opscope.device()
    xd = x.to(dev)
    view = xd[::3]
    opscope.reset_fallback_stats()
    r = OPS[name][1](view)
    opscope.synchronize()
    assert fallbacks() == {}, fallbacks()
    assert r.data_ptr() == view.data_ptr()
    want_view = reference(OPS[name][0], x[::3])
    want = x.clone()
    want[::3] = want_view
    assert_close(xd, want)  # the view written, the other elements untouched


@pytest.mark.parametrize("name", [k for k, v in OPS.items() if v[2] is not None])
@pytest.mark.parametrize("dtype", DTYPES)
def test_out(name, dtype):
    fn, extra = OPS[name][2]
    x = inputs(1000, dtype, name)
    dev = opscope.device()
    out = torch.empty(1000, dtype=dtype, device=dev)
    opscope.reset_fallback_stats()
    r = fn(x.to(dev), *extra, out=out)
    opscope.synchronize()
    assert fallbacks() == {}, fallbacks()
    assert r.data_ptr() == out.data_ptr()
    assert_close(out, reference(lambda t: fn(t, *extra), x))


def test_float_results_only():
    # torch refuses integers for the activations and promotes them for log10/exp2: the
    # device answers as torch's kernel does (through it).
    x = torch.arange(1, 6, dtype=torch.int64)
    dev = opscope.device()
    assert_close(torch.log10(x.to(dev)), torch.log10(x))
    assert_close(torch.exp2(x.to(dev)), torch.exp2(x))
    with pytest.raises(RuntimeError):
        F.leaky_relu(x.to(dev))


def test_logsigmoid_buffer_serves_autograd():
    # log_sigmoid_forward's buffer (e^-|x|) is for the backward, which runs torch's CPU kernel
    # on it: computed when x requires grad, empty otherwise (as torch's CUDA kernel leaves it).
    x = torch.randn(37) * 6
    xd = x.to(opscope.device()).requires_grad_()
    xc = x.clone().requires_grad_()
    F.logsigmoid(xd).sum().backward()
    F.logsigmoid(xc).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xc.grad)
    out, buffer = torch.ops.aten.log_sigmoid_forward(xd.detach())
    assert buffer.numel() == 0
    assert_close(out, F.logsigmoid(x))


def test_special_functions_of_integers_answer_as_torch():
    # atanh promotes integers to float, frac refuses them: the device answers as torch's
    # kernel does (through it); sgn of integers is native.
    x = torch.arange(-3, 4, dtype=torch.int64)
    dev = opscope.device()
    torch.testing.assert_close(torch.atanh(x.to(dev)).cpu(), torch.atanh(x), equal_nan=True)
    with pytest.raises(RuntimeError):
        torch.frac(x.to(dev))
    opscope.reset_fallback_stats()
    assert torch.equal(torch.sgn(x.to(dev)).cpu(), torch.sgn(x))
    assert fallbacks() == {}, fallbacks()
