"""Shared fixtures: the device, and a quiet fallback counter per test."""
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
