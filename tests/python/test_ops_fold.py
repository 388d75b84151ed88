"""F.unfold and F.fold (aten::im2col, col2im) on the device against torch CPU: kernel sizes,
dilations, paddings and strides per dim, unbatched inputs, views, halves, empty batches,
out= forms, and torch's own errors for windows that do not fit and for integers."""
import pytest
import torch
import torch.nn.functional as F

import opscope
from conftest import assert_close, native, tol

CASES = [  # input shape, kernel_size, dilation, padding, stride
    ((2, 3, 9, 11), (3, 2), (1, 2), (1, 0), (2, 1)),
    ((3, 8, 8), 3, 1, 1, 1),  # unbatched
    ((1, 4, 7, 7), (2, 2), 1, 0, 2),
    ((2, 1, 5, 5), 5, 1, 2, 1),  # the window as large as the padded input
    ((1, 2, 6, 5), 1, 1, 0, 1),
]


@pytest.mark.parametrize("shape,k,dil,pad,st", CASES, ids=[str(c[0]) + "-" + str(c[1]) for c in CASES])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_unfold_and_fold_equal_torch(shape, k, dil, pad, st, dtype):
    torch.manual_seed(0)
    x = torch.randn(*shape).to(dtype)
    cols, want = native(lambda t: F.unfold(t, k, dil, pad, st), x)
    assert torch.equal(cols.cpu(), want), "unfold copies values: exact"
    img, want_img = native(lambda t: F.fold(t, shape[-2:], k, dil, pad, st), want)
    assert_close(img, want_img)  # overlapping windows summed in another order


def test_unfold_of_a_view():
    x = torch.randn(2, 9, 3, 5).permute(0, 3, 1, 2)  # channels-last strides
    cols, want = native(lambda t: F.unfold(t, 3, padding=1), x)
    assert torch.equal(cols.cpu(), want)


def test_fold_sums_overlaps_as_torch_does():
    cols = torch.ones(1, 4 * 9, 16)  # 3x3 windows over a 6x6 image, stride 1: overlaps up to 9 deep
    img, want = native(lambda t: F.fold(t, (6, 6), 3), cols)
    assert torch.equal(img.cpu(), want)
    assert want.max() == 9


def test_empty_batch_and_out_forms():
    dev = opscope.device()
    x = torch.zeros(0, 2, 5, 5)
    cols, want = native(lambda t: F.unfold(t, 2), x)
    assert cols.shape == want.shape == (0, 8, 16)
    img, want = native(lambda t: F.fold(t, (5, 5), 2), want)  # crashed the copy kernel (SIGFPE)
    assert img.shape == want.shape == (0, 2, 5, 5)
    out = torch.empty(0).to(dev)
    torch._C._nn.im2col(torch.randn(1, 2, 4, 4).to(dev), [2, 2], [1, 1], [0, 0], [1, 1], out=out)
    assert out.shape == (1, 8, 9)
    c = torch.randn(1, 8, 9)
    out2 = torch.empty(0).to(dev)
    torch._C._nn.col2im(c.to(dev), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1], out=out2)
    atol, rtol = tol(torch.float32)
    torch.testing.assert_close(out2.cpu(), F.fold(c, (4, 4), 2), atol=atol, rtol=rtol)


def test_windows_that_do_not_fit_get_torchs_error():
    dev = opscope.device()
    with pytest.raises(RuntimeError, match="must be at least one"):
        F.unfold(torch.randn(1, 1, 3, 3).to(dev), 5)
    with pytest.raises(RuntimeError, match="Expected size of input's dimension 1"):
        F.fold(torch.randn(1, 7, 4).to(dev), (3, 3), 2)  # 7 rows are not C * 4
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):  # as on torch's CPU
        F.unfold(torch.arange(16).view(1, 1, 4, 4).to(dev), 2)
