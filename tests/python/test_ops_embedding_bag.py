"""nn.EmbeddingBag / F.embedding_bag on the device (aten::_embedding_bag_forward_only, and
aten::_embedding_bag, which a module's weight takes) in sum, mean and max modes against
torch CPU: per-sample weights, padding_idx, empty bags, int32 indices, ties and NaN in max
mode, and the op's three side outputs as torch's CPU kernel makes them.
include_last_offset and bad offsets take torch's kernel (its errors)."""
import pytest
import torch
import torch.nn.functional as F

import opscope
from conftest import native

OPS = [torch.ops.aten._embedding_bag_forward_only, torch.ops.aten._embedding_bag]


def case(int32=False):
    torch.manual_seed(6)
    w = torch.randn(10, 4)
    i = torch.tensor([1, 2, 4, 5, 4, 3, 9, 0])
    o = torch.tensor([0, 3, 3, 6])  # the second bag is empty
    return (w, i.int(), o.int()) if int32 else (w, i, o)


@pytest.mark.parametrize("op", OPS, ids=["forward_only", "embedding_bag"])
@pytest.mark.parametrize("mode", [0, 1, 2], ids=["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [-1, 4])
@pytest.mark.parametrize("int32", [False, True])
def test_all_four_outputs_equal_torchs(op, mode, padding_idx, int32):
    w, i, o = case(int32)
    got, want = native(lambda a, b, c: op(a, b, c, False, mode, False, None, False, padding_idx), w, i, o)
    torch.testing.assert_close(got[0].cpu(), want[0], rtol=1e-6, atol=1e-6)
    for g, t, name in zip(got[1:], want[1:], ("offset2bag", "bag_size", "max_indices")):
        assert g.dtype == t.dtype and torch.equal(g.cpu(), t), (name, g.cpu(), t)


def test_per_sample_weights_and_the_module(dev):
    w, i, o = case()
    psw = torch.rand(8)
    got, want = native(lambda a, b, c, p: F.embedding_bag(b, a, c, mode="sum", per_sample_weights=p), w, i, o, psw)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-6, atol=1e-6)
    bag = torch.nn.EmbeddingBag(10, 4, mode="mean").eval()
    x = torch.tensor([[1, 2, 3], [4, 5, 6]])  # 2-d: bags of 3
    with torch.no_grad():
        want = bag(x)
        opscope.reset_fallback_stats()
        got = bag.to(dev)(x.to(dev))
        assert opscope.fallback_stats() == {}
    torch.testing.assert_close(got.cpu(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", OPS, ids=["forward_only", "embedding_bag"])
def test_max_mode_takes_the_first_row_of_a_tie_and_nan_only_first(op):
    # torch's CPU kernel replaces a bag's maximum only with a greater value: of equal rows
    # the first position wins, and a NaN counts only as the bag's first value. A bag of
    # padding only is empty (0, row 0).
    nan = float("nan")
    w = torch.tensor([[1.0, 5.0], [3.0, 2.0], [3.0, 7.0], [0.0, 0.0], [nan, 1.0], [2.0, nan]])
    i = torch.tensor([2, 1, 0, 5, 4, 4, 1, 3, 3])
    o = torch.tensor([0, 3, 5, 7, 7])  # [2, 1, 0], [5, 4], [4, 1], [], [3, 3]
    got, want = native(lambda a, b, c: op(a, b, c, False, 2, False, None, False, 3), w, i, o)
    torch.testing.assert_close(got[0].cpu(), want[0], equal_nan=True)
    for g, t in zip(got[1:], want[1:]):
        assert g.dtype == t.dtype and torch.equal(g.cpu(), t), (g.cpu(), t)


def test_the_max_module_and_a_bad_index(dev):
    bag = torch.nn.EmbeddingBag(10, 4, mode="max").eval()
    x = torch.tensor([[1, 2, 3], [4, 5, 6]])
    with torch.no_grad():
        want = bag(x)
        opscope.reset_fallback_stats()
        got = bag.to(dev)(x.to(dev))
        assert opscope.fallback_stats() == {}
    torch.testing.assert_close(got.cpu(), want)
    with pytest.raises(RuntimeError, match="found idx to be 12"):  # torch's kernel names it
        F.embedding_bag(torch.tensor([1, 12]).to(dev), bag.weight.to(dev), torch.tensor([0]).to(dev), mode="max")


def test_what_falls_back_gets_torchs_result_or_error(dev):
    w, i, o = case()
    opscope.reset_fallback_stats()
    got = F.embedding_bag(i.to(dev), w.to(dev), o.to(dev), include_last_offset=True)  # torch's kernel
    torch.testing.assert_close(got.cpu(), F.embedding_bag(i, w, o, include_last_offset=True))
    assert "aten::_embedding_bag_forward_only" in opscope.fallback_stats()
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(i.to(dev), w.to(dev), torch.tensor([1, 3]).to(dev))
    with pytest.raises(RuntimeError, match="out of bounds|index_size|Index"):
        F.embedding_bag(torch.tensor([1, 12]).to(dev), w.to(dev), torch.tensor([0]).to(dev))


@pytest.mark.parametrize("mode", [0, 1, 2], ids=["sum", "mean", "max"])
def test_no_indices_gives_empty_bags(mode):
    w, _, _ = case()
    i, o = torch.tensor([], dtype=torch.long), torch.tensor([0, 0])
    got, want = native(lambda a, b, c: OPS[0](a, b, c, False, mode, False, None, False, -1), w, i, o)
    for g, t in zip(got, want):
        assert g.shape == t.shape and g.dtype == t.dtype and torch.equal(g.cpu(), t)
