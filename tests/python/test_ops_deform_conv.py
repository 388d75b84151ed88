"""torchvision's deformable convolution (torchvision.ops.deform_conv2d, DCN v1 and v2) on the
device against torchvision's CPU kernel: groups, offset groups, a mask, strides, padding and
dilation, offsets that reach past the image's edges, bf16/f16, empty batches, NaN offsets
and the errors of bad shapes. Each runs natively."""
import pytest
import torch
import torchvision
from torchvision.ops import deform_conv2d

from conftest import assert_close, native


def operands(n, c, h, w, oc, k, groups=1, offset_groups=1, stride=(1, 1), padding=(0, 0), dilation=(1, 1),
             spread=2.0, seed=0):
    """x, offset, weight, bias and mask for an output the size conv2d gives."""
    g = torch.Generator().manual_seed(seed)
    kh, kw = k
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    x = torch.randn(n, c, h, w, generator=g)
    offset = torch.randn(n, 2 * offset_groups * kh * kw, oh, ow, generator=g) * spread
    weight = torch.randn(oc, c // groups, kh, kw, generator=g)
    bias = torch.randn(oc, generator=g)
    mask = torch.rand(n, offset_groups * kh * kw, oh, ow, generator=g)
    return x, offset, weight, bias, mask


CASES = [  # (n, c, h, w, oc, kernel, groups, offset_groups, stride, padding, dilation)
    (2, 4, 9, 8, 6, (3, 3), 1, 1, (1, 1), (1, 1), (1, 1)),
    (1, 6, 7, 10, 4, (3, 2), 2, 3, (2, 1), (0, 2), (1, 2)),    # groups, offset groups, odd sizes
    (3, 8, 12, 11, 8, (1, 1), 4, 2, (1, 1), (0, 0), (1, 1)),   # a 1x1 window
    (1, 3, 16, 16, 5, (5, 5), 1, 1, (3, 2), (2, 2), (2, 1)),   # a wide dilated window
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("modulated", [False, True], ids=["dcn", "dcn_v2_mask"])
@pytest.mark.parametrize("with_bias", [False, True], ids=["no_bias", "bias"])
def test_deform_conv2d_matches_torchvision(case, modulated, with_bias):
    n, c, h, w, oc, k, groups, og, stride, padding, dilation = case
    x, offset, weight, bias, mask = operands(n, c, h, w, oc, k, groups, og, stride, padding, dilation)

    def f(x, offset, weight, bias, mask):
        return deform_conv2d(x, offset, weight, bias if with_bias else None, stride, padding, dilation,
                             mask if modulated else None)
    got, want = native(f, x, offset, weight, bias, mask)
    assert got.shape == want.shape
    assert_close(got, want)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_deform_conv2d_in_16_bit_computes_in_f32(dtype):
    x, offset, weight, bias, mask = [t.to(dtype) for t in operands(2, 4, 9, 8, 6, (3, 3), padding=(1, 1))]
    f = lambda x, o, w, b, m: deform_conv2d(x, o, w, b, padding=(1, 1), mask=m)  # noqa: E731
    got, want = native(f, x, offset, weight, bias, mask)
    assert got.dtype == dtype
    assert_close(got, want.float(), dtype)


def test_taps_on_and_past_the_edges_sample_zeros_outside():
    # Offsets that land exactly on pixels, on the last row and column, half a pixel and a
    # whole pixel outside, and far away: the edge cases of the bilinear weights.
    x, _, weight, bias, _ = operands(1, 2, 5, 6, 3, (2, 2))
    oh, ow = 4, 5
    steps = torch.tensor([0.0, 1.0, 3.0, 4.0, -1.0, -0.5, 4.5, 5.0, -7.25, 40.0, 0.999, -0.999])
    offset = steps[torch.arange(8 * oh * ow) % len(steps)].reshape(1, 8, oh, ow)
    got, want = native(lambda x, o, w, b: deform_conv2d(x, o, w, b), x, offset, weight, bias)
    assert_close(got, want)


def test_a_strided_input_and_a_module():
    torch.manual_seed(3)
    layer = torchvision.ops.DeformConv2d(4, 6, 3, padding=1, groups=2).eval()
    x = torch.randn(2, 9, 8, 4).permute(0, 3, 1, 2)  # channels last in memory
    offset = torch.randn(2, 18, 9, 8)
    with torch.no_grad():
        want = layer(x, offset)
        got, _ = native(lambda x, o: layer.to(x.device)(x, o), x, offset)
    assert_close(got, want)


def test_an_empty_batch_gives_an_empty_output():
    x, offset, weight, bias, mask = operands(0, 4, 9, 8, 6, (3, 3), padding=(1, 1))
    got, want = native(lambda *a: deform_conv2d(a[0], a[1], a[2], a[3], padding=(1, 1), mask=a[4]),
                       x, offset, weight, bias, mask)
    assert got.shape == want.shape == (0, 6, 9, 8)


def test_a_nan_offset_gives_nan_where_it_samples_only():
    x, offset, weight, bias, _ = operands(1, 2, 6, 6, 3, (3, 3), padding=(1, 1))
    offset[0, 4, 2, 3] = float("nan")  # the dy of tap (0, 2) at output pixel (2, 3)
    got, _ = native(lambda x, o, w, b: deform_conv2d(x, o, w, b, padding=(1, 1)), x, offset, weight, bias)
    nan = got.cpu().isnan()
    assert nan[0, :, 2, 3].all() and nan.sum() == 3, nan.nonzero().tolist()


def test_bad_shapes_get_torchvisions_errors(dev):
    # The op itself (torchvision's Python wrapper checks some shapes before it): opscope's
    # kernel refuses, and torchvision's CPU kernel names what is wrong, as it would on the CPU.
    x, offset, weight, bias, mask = [t.to(dev) for t in operands(1, 4, 9, 8, 6, (3, 3), padding=(1, 1))]
    op = torch.ops.torchvision.deform_conv2d

    def call(offset=offset, mask=mask, pad=1, offset_groups=1):
        return op(x, weight, offset, mask, bias, 1, 1, pad, pad, 1, 1, 1, offset_groups, True)
    with pytest.raises(RuntimeError, match=r"offset.shape\[1\] is not valid: got: 17 expected: 18"):
        call(offset=offset[:, :17])
    with pytest.raises(RuntimeError, match=r"offset output dims: \(9, 8\) - computed output dims: \(7, 6\)"):
        call(pad=0)
    with pytest.raises(RuntimeError, match=r"mask.shape\[1\] is not valid: got: 8 expected: 9"):
        call(mask=mask[:, :8])
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        call(offset=offset.cpu())
