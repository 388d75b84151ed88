"""The CPU fallback: ops without an opscope kernel run torch's CPU kernel on the device's
memory, are counted and reported, warn once, and are errors under OPSCOPE_STRICT=1."""
import os
import subprocess
import sys
import warnings

import pytest
import torch

import opscope
from conftest import fallbacks


def test_fallback_runs_and_is_counted(dev):
    x = torch.randn(6, 5)
    d = x.to(dev)
    got = torch.cumprod(d, 1)
    assert got.device == dev
    assert torch.equal(got.cpu(), torch.cumprod(x, 1))
    torch.cumprod(d, 0)
    stats = fallbacks()
    assert sum(s["count"] for name, s in stats.items() if name.startswith("aten::cumprod")) == 2, stats
    assert all(s["time_ms"] > 0 for s in stats.values())
    report = opscope.fallback_report()
    assert "aten::cumprod" in report and "count" in report


def test_fallback_warns_once_per_op(dev):
    d = torch.randn(4, device=dev)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        torch.special.erfcx(d)
        torch.special.erfcx(d)
    msgs = [str(x.message) for x in w if "erfcx" in str(x.message)]
    assert len(msgs) == 1, msgs
    assert "has no opscope kernel" in msgs[0] and "OPSCOPE_STRICT" in msgs[0]


def test_boolean_masks_and_index_lists(dev):
    x = torch.randn(5, 4)
    d = x.to(dev)
    assert torch.equal(d[d > 0].cpu(), x[x > 0])
    idx = torch.tensor([3, 0, 3])
    assert torch.equal(d[idx.to(dev)].cpu(), x[idx])
    assert torch.equal(d[idx.to(dev), 1:].cpu(), x[idx, 1:])
    assert torch.equal(torch.where(d > 0, d, torch.zeros_like(d)).cpu(), torch.where(x > 0, x, torch.zeros_like(x)))
    assert torch.equal(d.masked_fill(d < 0, -1.0).cpu(), x.masked_fill(x < 0, -1.0))
    assert torch.equal(torch.index_select(d, 0, idx.to(dev)).cpu(), torch.index_select(x, 0, idx))
    zeros = torch.zeros(5, 1, dtype=torch.long)
    assert torch.equal(torch.gather(d, 1, zeros.to(dev)).cpu(), torch.gather(x, 1, zeros))


def test_fallback_inplace_and_views_keep_aliasing(dev):
    x = torch.randn(4, 6)
    d = x.to(dev)
    d[:, 1:3].digamma_()  # no opscope kernel: in place through a view
    x[:, 1:3].digamma_()
    assert torch.equal(d.cpu(), x)
    d.diagonal().zero_()  # diagonal is a view: the write reaches d
    x.diagonal().zero_()
    assert torch.equal(d.cpu(), x)


def test_fallback_out_argument_is_resized(dev):
    x = torch.randn(3, 4)
    out = torch.empty(0, device=dev)
    torch.cumprod(x.to(dev), 1, out=out)
    assert out.shape == (3, 4)
    assert torch.allclose(out.cpu(), torch.cumprod(x, 1))


def test_dtypes_without_opscope_kernels_fall_back(dev):
    z = torch.tensor([1 + 2j, 3 - 1j])
    assert torch.equal((z.to(dev) * 2).cpu(), z * 2)
    b = torch.tensor([1, -2, 3], dtype=torch.int8)
    assert torch.equal((b.to(dev) + b.to(dev)).cpu(), b + b)
    assert "aten::mul.Tensor" in fallbacks() and "aten::add.Tensor" in fallbacks()


def test_strict_mode_makes_a_fallback_an_error_naming_the_op():
    code = ("import torch, opscope\n"
            "d = torch.ones(4).to(opscope.device())\n"
            "print((d * 2).sum().item())\n"  # native: fine under strict
            "torch.cumprod(d, 0)\n")
    env = dict(os.environ, OPSCOPE_STRICT="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "8.0", r.stderr
    assert r.returncode != 0
    assert "OPSCOPE_STRICT=1" in r.stderr and "aten::cumprod" in r.stderr, r.stderr


def test_kernel_errors_surface_at_a_fallback(dev):
    x = torch.randn(8, device=dev)
    torch.ops.opscope._test_kernel(x, 0, True)
    with pytest.raises(RuntimeError, match=r"\[opscope::_test_kernel\]"):
        torch.cumprod(x, 0)  # the fallback synchronizes


def test_an_op_opscope_lacks_falls_back_and_writes_in_place(dev):
    # digamma_ has no opscope kernel: torch's CPU kernel runs on the device's memory, and its
    # in-place write reaches the device's tensor; masked_fill_ beside it runs natively.
    x = torch.rand(4, 5) * 4 - 2
    xd = x.to(dev)
    xd.digamma_()
    x.digamma_()
    torch.testing.assert_close(xd.cpu(), x)
    assert fallbacks()["aten::digamma.out"]["count"] == 1  # digamma_ reaches the device as its out= form
    xd.masked_fill_(xd < 0, 0.5)
    x.masked_fill_(x < 0, 0.5)
    torch.testing.assert_close(xd.cpu(), x)
    assert list(fallbacks()) == ["aten::digamma.out"]  # the mask and the fill ran natively
