"""torch.unique (aten::_unique2) on the device against torch's CPU kernel: values, inverse
indices and counts, each flag on and off, integer and floating dtypes, any shape, empty
input, and NaNs. Each runs natively (no fallback counted). torchvision's batched_nms calls it
on the boxes' classes."""
import pytest
import torch

from conftest import native

FLAGS = [(False, False), (True, False), (False, True), (True, True)]


def inputs(dtype):
    torch.manual_seed(0)
    return [
        torch.tensor([3, 1, 2, 3, 1, 7]).to(dtype),
        torch.randint(-4, 5, (5, 7)).to(dtype),            # repeats, 2-d: inverse keeps the shape
        torch.randint(0, 1000, (3, 4, 513)).to(dtype),      # more than one block of elements
        torch.full((9,), 2).to(dtype),                      # one value
        torch.tensor([5]).to(dtype),
        torch.tensor([], dtype=dtype),
    ]


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32])
@pytest.mark.parametrize("inverse,counts", FLAGS)
def test_exactly_torch_cpu(dtype, inverse, counts):
    for x in inputs(dtype):
        got, want = native(lambda t: torch.unique(t, return_inverse=inverse, return_counts=counts), x)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (x.shape, g.shape, w.shape)
            assert torch.equal(g.cpu(), w), (x, g.cpu(), w)


def test_floats_signed_zero_and_nans():
    """Each NaN is its own value, sorted last (torch's CPU kernel leaves NaNs' order to its
    sort; torch.sort puts them last); -0.0 and 0.0 are one value."""
    x = torch.tensor([[2.5, float("nan"), 1.0], [2.5, float("nan"), -0.0], [0.0, -1e30, 1e-30]])
    (values, inverse, counts), (want, _, _) = native(
        lambda t: torch.unique(t, return_inverse=True, return_counts=True), x)
    values, inverse, counts = values.cpu(), inverse.cpu(), counts.cpu()
    assert torch.allclose(values, torch.sort(want).values, equal_nan=True), (values, want)
    assert values[-2:].isnan().all() and counts[-2:].tolist() == [1, 1]
    assert counts.sum().item() == x.numel() and inverse.shape == x.shape
    assert torch.allclose(values[inverse], x, equal_nan=True)  # each element's value is where inverse says
    zero = (values == 0).nonzero().flatten()
    assert zero.numel() == 1 and counts[zero].item() == 2


def test_batched_nms_runs_natively():
    """torchvision's batched_nms (its per-class path calls torch.unique) on device boxes."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(1)
    xy = torch.rand(200, 2) * 100
    boxes = torch.cat([xy, xy + torch.rand(200, 2) * 30 + 1], 1)
    scores, classes = torch.rand(200), torch.randint(0, 5, (200,))
    ops = torchvision.ops.boxes
    got, want = native(lambda b, s, c: ops._batched_nms_vanilla(b, s, c, 0.5), boxes, scores, classes)
    assert torch.equal(got.cpu(), want)
