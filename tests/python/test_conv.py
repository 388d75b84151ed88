"""Convolution and max pooling on the device against torch CPU: nn.Conv2d / F.conv2d with
stride, padding, dilation, groups and depthwise, bias on and off, batches, unbatched and
channels-last input, f32/bf16/f16; max_pool2d with and without indices, ceil_mode, the out
form. What opscope does not compute natively (1-d, 3-d and transposed convolutions,
backward) still runs, through the counted fallback; fake-mode tracing still works."""
import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

import opscope
from conftest import fallbacks, native, rand

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
# Sums of up to a few hundred products: f32 differs from torch's order in the last bits.
TOL = {torch.float32: 1e-4, torch.bfloat16: 2e-2, torch.float16: 4e-3}

CONV = {  # name: (x shape, weight shape, kwargs of F.conv2d)
    "3x3": ((2, 3, 9, 11), (5, 3, 3, 3), dict(padding=1)),
    "7x7_stride2": ((1, 3, 17, 15), (8, 3, 7, 7), dict(stride=2, padding=3)),
    "1x1": ((2, 16, 5, 7), (12, 16, 1, 1), {}),
    "1x1_stride2": ((1, 16, 9, 9), (8, 16, 1, 1), dict(stride=2)),
    "dilated_rect": ((1, 4, 12, 10), (6, 4, 3, 2), dict(stride=(1, 2), padding=(2, 1), dilation=(2, 3))),
    "groups": ((2, 8, 7, 7), (6, 4, 3, 3), dict(padding=1, groups=2)),
    "depthwise": ((2, 12, 10, 9), (12, 1, 3, 3), dict(padding=1, groups=12)),
    "depthwise_5x5_stride2": ((1, 8, 13, 13), (16, 1, 5, 5), dict(stride=2, padding=2, groups=8)),
    "many_channels": ((1, 64, 20, 21), (130, 64, 3, 3), dict(padding=1)),
}


def check(got, want, dtype):
    assert got.device.type == "privateuseone"
    t = TOL[dtype]
    torch.testing.assert_close(got.cpu().float(), want.float(), atol=t, rtol=t)


@pytest.mark.parametrize("name", CONV)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_matches_cpu(name, bias):
    xs, ws, kw = CONV[name]
    for dtype in DTYPES:
        torch.manual_seed(0)
        x, w = rand(*xs, dtype=dtype), rand(*ws, dtype=dtype) / ws[1]
        b = rand(ws[0], dtype=dtype) if bias else None
        got, want = native(lambda x, w, b: F.conv2d(x, w, b, **kw), x, w, b)
        assert got.shape == want.shape and got.dtype == dtype
        check(got, want, dtype)


def test_conv2d_module_unbatched_channels_last_and_same_padding():
    torch.manual_seed(0)
    m = torch.nn.Conv2d(6, 4, 3, padding="same", bias=True).eval()
    x = rand(2, 6, 8, 9)
    with torch.no_grad():
        for inp in (x, x[0], x.to(memory_format=torch.channels_last), x[:, :, ::2, 1:]):
            got, want = native(lambda t: m.to(t.device)(t), inp)
            check(got, want, torch.float32)


def test_conv2d_kernels_are_named_in_the_profile(dev):
    x, w = rand(1, 8, 10, 10).to(dev), rand(8, 1, 3, 3).to(dev)
    events = opscope._C._profile_events(lambda: F.conv2d(F.max_pool2d(x, 2), w, padding=1, groups=8).cpu())
    ops = {eid: name for kind, name, eid, *_ in events if kind == "op"}
    kernels = {(name, ops.get(parent)) for kind, name, _, parent, *_ in events if kind == "kernel"}
    assert ("conv2d_depthwise_f32", "aten::convolution") in kernels, kernels
    assert ("max_pool2d_f32", "aten::max_pool2d_with_indices") in kernels, kernels


@pytest.mark.parametrize("call", [
    lambda x: F.conv_transpose2d(x, torch.ones(3, 2, 3, 3, device=x.device) / 9, stride=2),
    lambda x: F.conv1d(x[:, :, 0], torch.ones(2, 3, 3, device=x.device) / 3, padding=1),
    lambda x: F.conv3d(x[:, :, None], torch.ones(2, 3, 1, 3, 3, device=x.device) / 9),
], ids=["transposed", "1d", "3d"])
def test_other_convolutions_run_natively_and_match(dev, call):
    x = rand(2, 3, 6, 7)
    got = call(x.to(dev))
    assert fallbacks() == {}
    check(got, call(x), torch.float32)


@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_overrideable_runs_natively(dev, transposed):
    # torch._convolution reaches convolution_overrideable on PrivateUse1, whose CPU kernel throws.
    def f(x, w):
        return torch._convolution(x, w, None, [1, 1], [1, 1], [1, 1], transposed, [0, 0], 1, False, False, True, True)

    x, w = rand(1, 3, 8, 8), rand(3, 2, 3, 3) if transposed else rand(4, 3, 3, 3)
    got = f(x.to(dev), w.to(dev))
    assert fallbacks() == {}
    check(got, f(x, w), torch.float32)


def test_conv_backward_runs_through_the_fallback(dev, no_fallback_warnings):
    x, w, b = rand(2, 3, 7, 7), rand(4, 3, 3, 3), rand(4)
    grads = []
    for d in ("cpu", dev):
        xs = [t.detach().to(d).requires_grad_() for t in (x, w, b)]
        F.conv2d(*xs, stride=2, padding=1).square().sum().backward()
        grads.append([t.grad.cpu() for t in xs])
    assert "aten::convolution_backward" in fallbacks()
    for g, want in zip(*grads):
        torch.testing.assert_close(g, want, atol=1e-4, rtol=1e-4)


POOL = {  # name: (x shape, kwargs of F.max_pool2d)
    "resnet_stem": ((1, 4, 16, 16), dict(kernel_size=3, stride=2, padding=1)),
    "2x2_odd": ((2, 3, 7, 9), dict(kernel_size=2)),
    "ceil_mode": ((2, 3, 7, 9), dict(kernel_size=2, ceil_mode=True)),
    "dilated_rect": ((1, 2, 11, 10), dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), dilation=(2, 1))),
    "unbatched": ((3, 8, 8), dict(kernel_size=3, stride=1, padding=1)),
}


@pytest.mark.parametrize("name", POOL)
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool2d_matches_cpu_with_indices(name, dtype):
    xs, kw = POOL[name]
    x = rand(*xs, dtype=dtype)
    (got, got_idx), (want, want_idx) = native(lambda t: F.max_pool2d(t, return_indices=True, **kw), x)
    assert torch.equal(got.cpu(), want)  # the maximum is copied, not computed
    if dtype == torch.float32:  # 16-bit rounding makes ties, where either index is right
        assert torch.equal(got_idx.cpu(), want_idx)
    assert torch.equal(x.flatten(-2).gather(-1, got_idx.cpu().flatten(-2)).view_as(want), want)
    got, want = native(lambda t: F.max_pool2d(t, **kw), x)
    assert torch.equal(got.cpu(), want)


def test_max_pool2d_out_form_and_nan(dev):
    x = rand(1, 2, 6, 6)
    x[0, 1, 2, 3] = float("nan")
    out, idx = torch.empty(0, device=dev), torch.empty(0, dtype=torch.long, device=dev)
    torch.ops.aten.max_pool2d_with_indices.out(x.to(dev), [2, 2], [2, 2], [0, 0], [1, 1], False, out=out, indices=idx)
    want, want_idx = F.max_pool2d(x, 2, return_indices=True)
    assert fallbacks() == {}
    torch.testing.assert_close(out.cpu(), want, equal_nan=True)
    assert torch.equal(idx.cpu(), want_idx)


def test_max_pool2d_bad_padding_is_torchs_error(dev, no_fallback_warnings):
    with pytest.raises(RuntimeError, match="pad should be"):
        F.max_pool2d(rand(1, 1, 6, 6).to(dev), 2, padding=2)


def test_fake_mode_traces_a_cnn_without_device_memory(dev):
    def f(x, w1, w2, w3):
        y = F.max_pool2d(F.relu(F.conv2d(x, w1, padding=1)), 2)
        return F.conv_transpose2d(F.conv2d(y, w2, groups=8), w3)

    args = [rand(*s).to(dev) for s in ((1, 3, 12, 12), (8, 3, 3, 3), (8, 1, 3, 3), (8, 2, 2, 2))]
    opscope.synchronize()
    before = opscope.memory_stats()["num_allocs"]
    g = make_fx(f, tracing_mode="fake")(*args)
    assert opscope.memory_stats()["num_allocs"] == before
    assert fallbacks() == {}
    targets = {str(n.target) for n in g.graph.nodes}
    assert "aten.convolution.default" in targets and "aten.max_pool2d_with_indices.default" in targets, targets
