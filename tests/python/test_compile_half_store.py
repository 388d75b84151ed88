"""A compiled kernel's bf16 and f16 results, converted 16 at a time by the hardware where it
can (vcvtneps2bf16, vcvtps2ph) and on the bits where it cannot: bit for bit torch's
conversion, for the values where the two ways could differ (denormals, which
vcvtneps2bf16 reads as 0; NaN, infinities, ties, overflow), in whole blocks, partial blocks
and a row's last few elements."""
import pytest
import torch

import opscope

from conftest import steady_call

SPECIAL = [1e-39, -1e-40, 1.17e-38, 1.00390625, 1.01171875, -1.00390625, 65519.0, 65520.0, 3.4e38,
           6e-8, 3e-8, float("inf"), float("-inf"), float("nan"), 0.0, 1.0]


def add_to(dtype):
    return lambda x, y: (x + y).to(dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(3, 1000), (4099,), (2, 256), (5, 17)])
def test_half_results_equal_torchs_conversion_bit_for_bit(dev, dtype, shape):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(shape, generator=g) * 100
    flat = x.view(-1)
    # Special values in the first block only, so that later blocks take the hardware's path.
    flat[:len(SPECIAL)] = torch.tensor(SPECIAL[:flat.numel()])[:min(len(SPECIAL), flat.numel())]
    y = torch.zeros(shape)
    want = x.to(dtype)
    f = opscope.compile(add_to(dtype))
    first = f(x.to(dev), y.to(dev)).cpu()  # traced: the eager ops' conversion
    got = steady_call(f, x.to(dev), y.to(dev)).cpu()  # the fused kernel's store
    for out in (first, got):
        assert out.dtype == dtype
        # NaN as NaN (torch 1.13 writes bf16 NaN as 0xffff, opscope as the quieted input's top half).
        assert torch.equal(out.isnan(), want.isnan())
        num = ~want.isnan()
        bits, want_bits = out.view(torch.int16)[num], want.view(torch.int16)[num]
        assert torch.equal(bits, want_bits), (bits != want_bits).nonzero()[:8]
    reports = f.report(x.to(dev), y.to(dev))
    assert any(k.startswith("fused_") for r in reports for k in r.kernels)
    store16 = "bf16_st16(a" if dtype == torch.bfloat16 else "f16_st16(a"
    assert any(store16 in r.source for r in reports), "the result is not converted 16 at a time"

