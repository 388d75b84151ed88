"""Pooling, interpolation and convolution over 1-3 spatial axes against torch CPU: avg pooling
(ceil_mode, count_include_pad, divisor_override, padding), adaptive avg/max pooling,
max_pool3d, nearest/nearest-exact/linear/bilinear/trilinear/bicubic interpolation
(align_corners, scale factors, down- and upsampling), 1-d/3-d/transposed/grouped/dilated
convolutions; f32/bf16/f16, odd sizes, non-contiguous inputs. Each runs natively."""
import pytest
import torch
import torch.nn.functional as F

from conftest import assert_close, native, rand

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool2d(dtype, ceil_mode, count_include_pad):
    x = rand(2, 3, 11, 8, dtype=dtype)
    for k, s, p in ((2, 2, 0), (3, 2, 1), ((3, 2), (2, 1), (1, 0)), (3, 1, 1)):
        fn = lambda t: F.avg_pool2d(t, k, s, p, ceil_mode=ceil_mode, count_include_pad=count_include_pad)  # noqa: E731
        got, want = native(fn, x)
        assert got.shape == want.shape
        assert_close(got, want)


def test_avg_pool_divisor_1d_3d_unbatched_and_views():
    x = rand(2, 4, 9, 7)
    got, want = native(lambda t: F.avg_pool2d(t, 3, 2, 1, divisor_override=5), x)
    assert_close(got, want)
    got, want = native(lambda t: F.avg_pool2d(t.transpose(2, 3), 2), x)  # a non-contiguous input
    assert_close(got, want)
    got, want = native(lambda t: F.avg_pool2d(t, 2), rand(3, 6, 5))  # unbatched (C, H, W)
    assert_close(got, want)
    got, want = native(lambda t: F.avg_pool1d(t, 3, 2, 1, ceil_mode=True), rand(2, 3, 10))
    assert_close(got, want)
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
               dict(kernel_size=(1, 3, 3), stride=(1, 2, 2), ceil_mode=True)):
        got, want = native(lambda t: F.avg_pool3d(t, **kw), rand(1, 2, 5, 7, 6))
        assert_close(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_pools(dtype):
    x = rand(2, 3, 10, 7, dtype=dtype)
    for size in ((3, 3), (7, 7), (1, 4), (10, 7), (13, 2)):
        got, want = native(lambda t: F.adaptive_avg_pool2d(t, size), x)
        assert_close(got, want)
        (gv, gi), (wv, wi) = native(lambda t: F.adaptive_max_pool2d(t, size, return_indices=True), x)
        assert_close(gv, wv)
        assert torch.equal(gi.cpu(), wi)
    got, want = native(lambda t: F.adaptive_avg_pool1d(t, 4), rand(2, 3, 9, dtype=dtype))
    assert_close(got, want)
    got, want = native(lambda t: F.adaptive_avg_pool3d(t, (2, 3, 1)), rand(1, 2, 5, 6, 4, dtype=dtype))
    assert_close(got, want)
    (gv, gi), (wv, wi) = native(lambda t: F.adaptive_max_pool3d(t, 2, return_indices=True), rand(1, 2, 5, 6, 4))
    assert_close(gv, wv)
    assert torch.equal(gi.cpu(), wi)


def test_max_pool3d_and_1d_with_indices_and_nan():
    x = rand(2, 3, 6, 7, 5)
    x[0, 0, 1, 1, 1] = float("nan")
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=(1, 3, 3), stride=1,
               padding=(0, 1, 1), dilation=(1, 2, 1)), dict(kernel_size=2, ceil_mode=True)):
        (gv, gi), (wv, wi) = native(lambda t: F.max_pool3d(t, return_indices=True, **kw), x)
        torch.testing.assert_close(gv.cpu(), wv, equal_nan=True)
        assert torch.equal(gi.cpu(), wi)
    got, want = native(lambda t: F.max_pool1d(t, 3, 2, 1), rand(2, 4, 11))
    assert_close(got, want)


INTERP = [("nearest", {}), ("nearest-exact", {}), ("bilinear", {"align_corners": False}),
          ("bilinear", {"align_corners": True}), ("bicubic", {"align_corners": False}),
          ("bicubic", {"align_corners": True})]


@pytest.mark.parametrize("mode,kw", INTERP)
@pytest.mark.parametrize("dtype", DTYPES)
def test_interpolate_2d(mode, kw, dtype):
    x = rand(2, 3, 7, 5, dtype=dtype)
    for size in ((14, 10), (3, 4), (7, 5), (1, 1), (9, 13)):
        got, want = native(lambda t: F.interpolate(t, size=size, mode=mode, **kw), x)
        assert got.shape == want.shape
        assert_close(got, want)
    for sf in (2.0, 0.5, 1.7):  # scale factors move the source positions too
        got, want = native(lambda t: F.interpolate(t, scale_factor=sf, mode=mode, **kw), x)
        assert_close(got, want)


@pytest.mark.parametrize("mode,kw", [("nearest", {}), ("nearest-exact", {}), ("linear", {"align_corners": False}),
                                     ("linear", {"align_corners": True})])
def test_interpolate_1d(mode, kw):
    x = rand(2, 3, 9)
    for size in (18, 4, 1, 9):
        got, want = native(lambda t: F.interpolate(t, size=size, mode=mode, **kw), x)
        assert_close(got, want)


@pytest.mark.parametrize("mode,kw", [("nearest", {}), ("trilinear", {"align_corners": False}),
                                     ("trilinear", {"align_corners": True})])
def test_interpolate_3d(mode, kw):
    x = rand(1, 2, 3, 5, 4)
    for size in ((6, 10, 8), (2, 3, 3), (3, 5, 4)):
        got, want = native(lambda t: F.interpolate(t, size=size, mode=mode, **kw), x)
        assert_close(got, want)


def test_interpolate_a_non_contiguous_input():
    x = rand(2, 6, 5, 3)
    got, want = native(lambda t: F.interpolate(t.permute(0, 3, 1, 2), scale_factor=2, mode="bilinear"), x)
    assert_close(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv1d(dtype):
    x = rand(2, 6, 23, dtype=dtype)
    for w_shape, kw in (((8, 6, 3), dict(padding=1)), ((8, 3, 5), dict(stride=2, groups=2, dilation=2)),
                        ((6, 1, 7), dict(padding=3, groups=6)), ((4, 6, 1), {})):
        w, b = rand(*w_shape, dtype=dtype), rand(w_shape[0], dtype=dtype)
        got, want = native(lambda t, ww, bb: F.conv1d(t, ww, bb, **kw), x, w, b)
        assert_close(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv3d(dtype):
    x = rand(2, 4, 5, 9, 7, dtype=dtype)
    for w_shape, kw in (((6, 4, 3, 3, 3), dict(padding=1)), ((6, 2, 1, 3, 3), dict(stride=(1, 2, 2), groups=2)),
                        ((5, 4, 1, 1, 1), dict(stride=2)), ((3, 4, 2, 3, 2), dict(dilation=(2, 1, 2), padding=(1, 0, 2)))):
        w, b = rand(*w_shape, dtype=dtype), rand(w_shape[0], dtype=dtype)
        got, want = native(lambda t, ww, bb: F.conv3d(t, ww, bb, **kw), x, w, b)
        assert_close(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv_transpose(dtype):
    x2 = rand(2, 4, 5, 6, dtype=dtype)
    for w_shape, kw in (((4, 3, 3, 3), dict(stride=2, padding=1, output_padding=1)),
                        ((4, 2, 2, 2), dict(stride=2, groups=2)),
                        ((4, 5, 3, 2), dict(padding=(1, 0), dilation=(2, 1))),
                        ((4, 3, 4, 4), dict(stride=(1, 3), padding=(2, 1)))):
        w, b = rand(*w_shape, dtype=dtype), rand(w_shape[1] * kw.get("groups", 1), dtype=dtype)
        got, want = native(lambda t, ww, bb: F.conv_transpose2d(t, ww, bb, **kw), x2, w, b)
        assert_close(got, want)
    got, want = native(lambda t, ww: F.conv_transpose1d(t, ww, stride=3, padding=1), rand(2, 4, 7, dtype=dtype),
                       rand(4, 3, 5, dtype=dtype))
    assert_close(got, want)
    got, want = native(lambda t, ww: F.conv_transpose3d(t, ww, stride=2), rand(1, 2, 3, 4, 3, dtype=dtype),
                       rand(2, 3, 2, 3, 2, dtype=dtype))
    assert_close(got, want)


def test_conv_padding_same_and_unbatched():
    got, want = native(lambda t, w: F.conv1d(t, w, padding="same"), rand(3, 10), rand(5, 3, 4))  # unbatched, even kernel
    assert_close(got, want)
    got, want = native(lambda t, w: F.conv3d(t, w, padding="same"), rand(1, 2, 4, 5, 6), rand(3, 2, 3, 3, 3))
    assert_close(got, want)
