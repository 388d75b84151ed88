"""F.pad's "reflect" and "replicate" modes on the device (reflection_pad1d/2d/3d,
replication_pad1d/2d/3d), against torch's CPU kernels: asymmetric and zero pads, batched
and unbatched inputs, strided views, 16-bit dtypes, the out= form; a reflect
pad as wide as its dim gets torch's own error. Each runs natively (no fallback counted)."""
import warnings

import pytest
import torch
import torch.nn.functional as F

import opscope
from conftest import native

SHAPES = {1: (2, 3, 7), 2: (2, 3, 5, 6), 3: (1, 2, 4, 5, 3)}
PADS = {1: [(1, 2), (0, 3), (4, 0)], 2: [(1, 2, 3, 0), (0, 0, 2, 2), (2, 1, 1, 2)], 3: [(1, 0, 2, 1, 0, 2), (2, 2, 0, 0, 1, 1)]}


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_pads_equal_torch_cpu(mode, d):
    x = torch.randn(*SHAPES[d])
    for pad in PADS[d]:
        got, want = native(lambda t: F.pad(t, pad, mode=mode), x)
        assert torch.equal(got.cpu(), want), (mode, pad)
        got, want = native(lambda t: F.pad(t[0], pad, mode=mode), x)  # unbatched
        assert torch.equal(got.cpu(), want), (mode, pad, "unbatched")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_dtypes_and_strided_views(dtype):
    x = (torch.randn(2, 3, 6, 8) * 10).to(dtype)
    for mode in ("reflect", "replicate"):
        got, want = native(lambda t: F.pad(t.transpose(2, 3)[:, :, ::2], (2, 1, 1, 2), mode=mode), x)
        assert got.dtype == dtype and torch.equal(got.cpu(), want), mode


def test_out_form_and_zero_pads():
    x = torch.randn(2, 3, 5, 6)

    def out_form(t):
        out = torch.empty(0, device=t.device)
        r = torch.ops.aten.reflection_pad2d.out(t, [1, 1, 2, 0], out=out)
        assert r is out
        return out
    got, want = native(out_form, x)
    assert torch.equal(got.cpu(), want)
    dev = opscope.device()
    xd = x.to(dev)
    y = torch.ops.aten.replication_pad2d(xd, [0, 0, 0, 0])  # a new tensor, not self
    y.add_(1)
    assert torch.equal(xd.cpu(), x) and torch.equal(y.cpu(), x + 1)


def test_a_reflect_pad_as_wide_as_its_dim_is_torchs_error():
    dev = opscope.device()
    x = torch.randn(1, 2, 3)
    with pytest.raises(RuntimeError) as cpu_error:
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(RuntimeError) as dev_error, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's kernel runs, for its error
        F.pad(x.to(dev), (3, 0), mode="reflect")
    assert str(dev_error.value).split("\n")[0] == str(cpu_error.value).split("\n")[0]
    assert torch.equal(F.pad(x.to(dev), (2, 0), mode="reflect").cpu(), F.pad(x, (2, 0), mode="reflect"))
