"""F.grid_sample on the device (grid_sampler_2d), against torch's CPU kernel: bilinear and
nearest, zeros / border / reflection padding, align_corners on and off, points inside,
on the edges and far outside, a strided grid, bf16; bicubic still reaches torch's kernel.
And a spatial transformer's grid (F.affine_grid, through linspace). Each native form runs
without a fallback counted."""
import itertools
import warnings

import pytest
import torch
import torch.nn.functional as F

import opscope
from conftest import assert_close, native


def grid(n, h, w, spread):
    """Points over [-spread, spread], with the corners, the edges' midpoints and exact
    pixel centres among them."""
    g = (torch.rand(n, h, w, 2) * 2 - 1) * spread
    g[:, 0, 0] = torch.tensor([-1.0, -1.0])
    g[:, 0, 1] = torch.tensor([1.0, 1.0])
    g[:, 0, 2] = torch.tensor([0.0, -1.0])
    g[:, 1, 0] = torch.tensor([1.0 / 3, -0.2])
    return g


@pytest.mark.parametrize("mode,padding,align_corners",
                         list(itertools.product(["bilinear", "nearest"], ["zeros", "border", "reflection"], [False, True])))
def test_equals_torch_cpu(mode, padding, align_corners):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 7)
    for spread in (0.9, 1.0, 2.7):  # inside, to the edges, and far outside (reflected twice and more)
        got, want = native(lambda t, g: F.grid_sample(t, g, mode=mode, padding_mode=padding,
                                                      align_corners=align_corners), x, grid(2, 4, 6, spread))
        assert_close(got, want)


def test_strided_inputs_bf16_and_one_pixel():
    x = torch.randn(1, 4, 6, 8)
    g = grid(1, 6, 5, 1.2).transpose(1, 2)  # a strided grid
    got, want = native(lambda t, gg: F.grid_sample(t[:, ::2], gg, align_corners=False), x, g)
    assert_close(got, want)
    got, want = native(lambda t, gg: F.grid_sample(t, gg, padding_mode="reflection", align_corners=False),
                       x.to(torch.bfloat16), grid(1, 3, 3, 1.5).to(torch.bfloat16))
    assert got.dtype == torch.bfloat16
    assert_close(got, want)
    one = torch.randn(1, 2, 1, 1)  # a 1x1 image: reflection's span is 0
    for padding in ("zeros", "border", "reflection"):
        for corners in (False, True):
            got, want = native(lambda t, gg: F.grid_sample(t, gg, padding_mode=padding, align_corners=corners), one,
                               grid(1, 2, 3, 1.5))
            assert_close(got, want)


def test_nan_and_far_points_as_torch():
    """NaN points: NaN bilinear, 0 nearest with zeros padding, pixel 0 once clipped by border
    or reflection; points 1e12 pixels away: 0, or the border's pixel."""
    x = torch.randn(1, 2, 4, 5)
    nan = float("nan")
    g = torch.tensor([[[[nan, 0.0], [0.0, nan], [1e20, 0.0], [-3e12, 2e12], [0.5, 0.5]]]])
    for mode in ("bilinear", "nearest"):
        for padding in ("zeros", "border", "reflection"):
            points = g if padding != "reflection" else g[..., [0, 1, 4], :]  # far and reflected: torch overflows an int
            got, want = native(lambda t, gg: F.grid_sample(t, gg, mode=mode, padding_mode=padding,
                                                           align_corners=False), x, points)
            torch.testing.assert_close(got.cpu(), want, equal_nan=True, rtol=1e-5, atol=1e-5)


def test_linspace_and_affine_grid_as_torch_to_the_ends_rounding():
    """linspace in f32: torch's halves (up from start, down from end), so the ends and the
    short ranges are exact and the rest within two ulps of the ends' magnitude (torch's vector
    loop rounds some values apart); 0 and 1 steps; then affine_grid, and grid_sample on its
    grid."""
    dev = opscope.device()
    for a, b, n in ((0.0, 1.0, 5), (-1.0, 1.0, 7), (3.3, -2.1, 100), (-1.0, 1.0, 1001), (2.5, 9.0, 1), (1.0, 2.0, 0)):
        got, want = native(lambda: torch.linspace(a, b, n, device=dev))[0], torch.linspace(a, b, n)
        assert got.shape == want.shape
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=2.4e-7 * max(abs(a), abs(b)))
        if n:
            assert got[0].item() == want[0].item() and got[-1].item() == want[-1].item()
    theta = torch.tensor([[[0.8, -0.3, 0.1], [0.25, 1.1, -0.2]]])
    for corners in (False, True):
        got, want = native(lambda th: F.affine_grid(th, (1, 3, 6, 7), align_corners=corners), theta)
        torch.testing.assert_close(got.cpu(), want, rtol=1e-6, atol=1e-6)
        x = torch.randn(1, 3, 6, 7)
        got, want = native(lambda t, th: F.grid_sample(t, F.affine_grid(th, (1, 3, 5, 4), align_corners=corners),
                                                       align_corners=corners), x, theta)
        assert_close(got, want)


def test_bicubic_still_runs_torchs_kernel():
    dev = opscope.device()
    x, g = torch.randn(1, 2, 4, 4), grid(1, 3, 3, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = F.grid_sample(x.to(dev), g.to(dev), mode="bicubic", align_corners=False)
    assert_close(got, F.grid_sample(x, g, mode="bicubic", align_corners=False))
    assert "aten::grid_sampler_2d" in opscope.fallback_stats()
