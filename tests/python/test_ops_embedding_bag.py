"""nn.EmbeddingBag / F.embedding_bag on the device (aten::_embedding_bag_forward_only, and
aten::_embedding_bag, which a module's weight takes) in sum and mean modes against torch CPU: per-sample weights, padding_idx, empty bags, int32
indices, and the op's three side outputs as torch's CPU kernel makes them. max mode,
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
@pytest.mark.parametrize("mode", [0, 1])
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


def test_what_falls_back_gets_torchs_result_or_error(dev):
    w, i, o = case()
    opscope.reset_fallback_stats()
    got = F.embedding_bag(i.to(dev), w.to(dev), o.to(dev), mode="max")  # max: torch's kernel
    torch.testing.assert_close(got.cpu(), F.embedding_bag(i, w, o, mode="max"))
    assert "aten::_embedding_bag_forward_only" in opscope.fallback_stats()
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(i.to(dev), w.to(dev), torch.tensor([1, 3]).to(dev))
    with pytest.raises(RuntimeError, match="out of bounds|index_size|Index"):
        F.embedding_bag(torch.tensor([1, 12]).to(dev), w.to(dev), torch.tensor([0]).to(dev))


@pytest.mark.parametrize("mode", [0, 1])
def test_no_indices_gives_empty_bags(mode):
    w, _, _ = case()
    i, o = torch.tensor([], dtype=torch.long), torch.tensor([0, 0])
    got, want = native(lambda a, b, c: OPS[0](a, b, c, False, mode, False, None, False, -1), w, i, o)
    for g, t in zip(got, want):
        assert g.shape == t.shape and g.dtype == t.dtype and torch.equal(g.cpu(), t)
