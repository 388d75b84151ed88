"""Shared fixtures: the device, and a quiet fallback counter per test; helpers that run an op
natively and compare it with torch CPU, and the path of this build's CLI."""
import os
import warnings

import pytest
import torch

import opscope


@pytest.fixture
def dev():
    return opscope.device()


@pytest.fixture(autouse=True)
def _fresh_fallback_counts():
    opscope.reset_fallback_stats()
    yield
    opscope.synchronize()


class Gate:
    """A gate for torch.ops.opscope._test_kernel(x, gate.id, fail): the kernel copies x only
    once the test opens the gate, so what a test checks while it runs does not depend on
    timing."""

    def __init__(self):
        self.id = opscope._C._test_gate_new()

    def open(self):
        opscope._C._test_gate_open(self.id)


def tol(dtype):
    """Absolute/relative tolerance of a dtype's rounding (opscope computes in f32 and rounds once)."""
    return {torch.float32: (1e-5, 1e-5), torch.bfloat16: (2e-2, 2e-2), torch.float16: (2e-3, 2e-3)}[dtype]


def assert_close(got, want, dtype=None):
    atol, rtol = tol(dtype or want.dtype)
    assert got.device.type == "privateuseone", got.device
    torch.testing.assert_close(got.cpu().float(), want.float(), atol=atol, rtol=rtol)


def fallbacks():
    return opscope.fallback_stats()


@pytest.fixture
def no_fallback_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def reference(fn, *args):
    """fn on CPU, computed in f32 for bf16/f16 inputs and rounded once (as opscope does;
    torch 1.13's CPU kernels lack most f16 ops)."""
    low = [a.dtype for a in args if isinstance(a, torch.Tensor) and a.dtype in (torch.bfloat16, torch.float16)]
    if not low:
        return fn(*args)
    up = [a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
    r = fn(*up)
    lower = lambda t: t.to(low[0]) if t.is_floating_point() else t  # noqa: E731
    return tuple(map(lower, r)) if isinstance(r, tuple) else lower(r)


def native(fn, *cpu_args):
    """fn on device copies of the args, with no fallback counted; returns (device result, cpu reference)."""
    dev = opscope.device()
    dargs = [a.to(dev) if isinstance(a, torch.Tensor) else a for a in cpu_args]
    opscope.reset_fallback_stats()
    got = fn(*dargs)
    opscope.synchronize()
    assert fallbacks() == {}, fallbacks()
    return got, reference(fn, *cpu_args)


def steady_call(compiled, *args):
    """A call of an opscope.compile'd function after its first one. The first call of an input
    signature traces each region by running its ops eagerly and returns those values; only
    later calls run the generated kernels, so a test of the kernels' values reads a later one."""
    compiled(*args)
    return compiled(*args)


def rand(*shape, dtype=torch.float32, positive=False):
    x = torch.randn(*shape)
    if positive:
        x = x.abs() + 0.1
    return x.to(dtype)


def opscope_cli():
    """This build's `opscope` CLI (BUILD/tools/opscope beside BUILD/python/opscope); the test
    fails naming the path when it is not built."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(opscope.__file__))))
    cli = os.path.join(build, "tools", "opscope")
    if not os.path.exists(cli):
        pytest.fail(f"the opscope CLI is not built at {cli}")
    return cli
