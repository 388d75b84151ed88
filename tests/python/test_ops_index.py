"""Indexing and sorting against torch CPU: advanced indexing (integer tensors, bool masks,
broadcast indices, non-adjacent indexed dims, negative indices, CPU index tensors),
index_put_ (accumulate, through views), index_select, gather, scatter/scatter_add, nonzero,
roll, flip, sort, topk, max/min with indices, cumsum, norm. Each runs natively."""
import pytest
import torch

import opscope
from conftest import assert_close, native, rand


def exact(got, want):
    assert got.device.type == "privateuseone"
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_advanced_indexing(dtype):
    x = (torch.randn(5, 6, 7) * 5).to(dtype)
    i = torch.tensor([4, 0, -1, 2])
    j = torch.tensor([[1], [5]])
    cases = [
        lambda t, a, b: t[a],
        lambda t, a, b: t[:, a],
        lambda t, a, b: t[a, b],           # broadcast (2, 4)
        lambda t, a, b: t[a, :, b],        # non-adjacent: the index dims go first
        lambda t, a, b: t[1:, a, 2:4],
        lambda t, a, b: t.transpose(0, 2)[a],
    ]
    for fn in cases:
        got, _ = native(fn, x, i, j)
        exact(got, fn(x, i, j))


def test_mask_indexing_and_cpu_indices(dev):
    x = rand(5, 6)
    m = x > 0
    got, _ = native(lambda t, k: t[k], x, m)
    exact(got, x[m])
    got, _ = native(lambda t, k: t[:, k[0]], x, m)
    exact(got, x[:, m[0]])
    d = x.to(dev)
    opscope.reset_fallback_stats()
    exact(d[torch.tensor([3, 1])], x[torch.tensor([3, 1])])  # a CPU index tensor for a device tensor
    assert opscope.fallback_stats() == {}


def test_index_put(dev):
    x = torch.zeros(6, 5)
    i = torch.tensor([0, 2, 2, 5])
    v = torch.arange(4.0).reshape(4, 1)
    for accumulate in (False, True):
        d = x.to(dev)
        d.index_put_((i.to(dev),), v.to(dev), accumulate=accumulate)
        want = x.clone().index_put_((i,), v, accumulate=accumulate)
        exact(d, want)
    d, want = x.to(dev), x.clone()
    m = torch.rand(6, 5) > 0.5
    d[m.to(dev)] = 3.0  # a mask and a number (Faster R-CNN's labels)
    want[m] = 3.0
    exact(d, want)
    d[:, 1:4][torch.tensor([1, 3]).to(dev)] = torch.tensor([7.0, 8.0, 9.0]).to(dev)  # through a view
    want[:, 1:4][torch.tensor([1, 3])] = torch.tensor([7.0, 8.0, 9.0])
    exact(d, want)
    t = torch.zeros(3, 4, 5)
    dt = t.to(dev)
    dt[torch.tensor([0, 2]).to(dev), :, torch.tensor([1, 4]).to(dev)] = 1.5  # non-adjacent
    t[torch.tensor([0, 2]), :, torch.tensor([1, 4])] = 1.5
    exact(dt, t)
    assert opscope.fallback_stats() == {}


def test_index_select_gather_scatter():
    x = rand(4, 7)
    idx = torch.tensor([6, 0, 3, 3])
    got, _ = native(lambda t, k: torch.index_select(t, 1, k), x, idx)
    exact(got, torch.index_select(x, 1, idx))
    g = torch.randint(0, 7, (4, 3))
    got, _ = native(lambda t, k: torch.gather(t, 1, k), x, g)
    exact(got, torch.gather(x, 1, g))
    got, _ = native(lambda t, k: torch.gather(t.t(), 0, k.t()[:2]), x, g)  # views
    exact(got, torch.gather(x.t(), 0, g.t()[:2]))
    src = rand(4, 3)
    s = torch.stack([torch.randperm(7)[:3] for _ in range(4)])  # no repeats per row: a defined result
    got, _ = native(lambda t, k, v: t.scatter(1, k, v), x, s, src)
    exact(got, x.scatter(1, s, src))
    got, _ = native(lambda t, k: t.scatter(1, k, 2.5), x, s)
    exact(got, x.scatter(1, s, 2.5))
    got, want = native(lambda t, k, v: t.scatter_add(1, k, v), x, g, src)  # repeats add up
    assert_close(got, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bool])
def test_nonzero(dtype):
    x = (torch.rand(7, 5, 3) > 0.6).to(dtype)
    got, _ = native(torch.nonzero, x)
    exact(got, torch.nonzero(x))
    got, _ = native(lambda t: torch.where(t), x)  # the tuple form
    for g, w in zip(got, torch.where(x)):
        exact(g, w)
    big = (torch.rand(70000) > 0.999).float()  # several blocks
    got, _ = native(torch.nonzero, big)
    exact(got, torch.nonzero(big))


def test_roll_and_flip():
    x = rand(4, 5, 6)
    for shifts, dims in ((2, 0), ((1, -2), (1, 2)), ((3, 3), (0, 0)), (-7, None), ((-4, 5), (2, 1)), (0, 1)):
        got, _ = native(lambda t: torch.roll(t, shifts, dims), x)
        exact(got, torch.roll(x, shifts, dims))
    got, _ = native(lambda t: torch.roll(t.transpose(0, 2), (1, 2), (0, 1)), x)
    exact(got, torch.roll(x.transpose(0, 2), (1, 2), (0, 1)))
    for dims in ((0,), (1, 2), (0, 1, 2), (-1,)):
        got, _ = native(lambda t: torch.flip(t, dims), x)
        exact(got, torch.flip(x, dims))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_triu_and_tril(dtype):
    x = (torch.randn(2, 3, 5, 7) * 4).to(dtype)
    for k in (0, 1, -2, 6, 7, -5, -9):  # diagonals inside, on the edge of and past the matrix
        for f in (torch.triu, torch.tril):
            got, want = native(lambda t: f(t, k), x)
            exact(got, want)
    got, want = native(lambda t: torch.triu(t.transpose(-1, -2), 1), x)  # a strided input
    exact(got, want)
    got, want = native(lambda t: torch.tril(t[0, 0], -1), x)  # one matrix
    exact(got, want)
    # in place and into an out tensor, as the causal mask of a decoder's prefill builds it
    want = torch.triu(torch.full((4, 6), -3.0), diagonal=3)
    got, _ = native(lambda t: torch.triu(t, diagonal=3, out=torch.empty_like(t)), torch.full((4, 6), -3.0))
    exact(got, want)
    got, _ = native(lambda t: t.tril_(-1), x.clone())
    exact(got, torch.tril(x, -1))
    got, _ = native(lambda t: torch.triu(t), torch.empty(0, 3, dtype=dtype))
    assert got.shape == (0, 3)


def test_triu_of_a_vector_fails_as_on_torch_cpu(dev):
    # opscope refuses it ([triu] x has shape (5) ...), and torch's kernel gives its own error
    with pytest.raises(IndexError, match=r"Dimension out of range"):
        torch.triu(torch.randn(5))
    with pytest.raises(IndexError, match=r"Dimension out of range"):
        torch.triu(torch.randn(5).to(dev)).cpu()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_sort_topk_and_extremes(dtype):
    x = torch.randperm(120).reshape(4, 5, 6).to(dtype)  # distinct values: the indices are defined
    for dim in (0, 1, -1):
        for desc in (False, True):
            (gv, gi), _ = native(lambda t: torch.sort(t, dim, descending=desc), x)
            wv, wi = torch.sort(x, dim, descending=desc)
            exact(gv, wv)
            exact(gi, wi)
        for largest in (True, False):
            (gv, gi), _ = native(lambda t: torch.topk(t, 3, dim, largest=largest), x)
            wv, wi = torch.topk(x, 3, dim, largest=largest)
            exact(gv, wv)
            exact(gi, wi)
        for fn in (torch.max, torch.min):
            (gv, gi), _ = native(lambda t: fn(t, dim, keepdim=dim == 1), x)
            wv, wi = fn(x, dim, keepdim=dim == 1)
            exact(gv, wv)
            exact(gi, wi)
        got, _ = native(lambda t: torch.argsort(t, dim), x)
        exact(got, torch.argsort(x, dim))
    got, _ = native(torch.max, x)
    exact(got, torch.max(x))


def test_sort_is_stable_and_nan_sorts_last():
    x = torch.tensor([3.0, float("nan"), 1.0, 3.0, -1.0, float("nan"), 1.0])
    for desc in (False, True):
        (gv, gi), _ = native(lambda t: torch.sort(t, stable=True, descending=desc), x)
        wv, wi = torch.sort(x, stable=True, descending=desc)
        exact(gv, wv)
        exact(gi, wi)
    (gv, gi), _ = native(lambda t: torch.max(t, 0), x)
    assert torch.isnan(gv.cpu()) and gi.item() == 1  # the first NaN wins
    (gv, gi), _ = native(lambda t: torch.topk(t, 2), x)
    assert torch.isnan(gv.cpu()).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.bool])
def test_cumsum(dtype):
    x = (torch.randn(3, 9) * 3).to(dtype)
    for dim in (0, 1):
        got, want = native(lambda t: torch.cumsum(t, dim), x)
        assert got.dtype == want.dtype
        if want.is_floating_point():
            assert_close(got, want)
        else:
            exact(got, want)
    got, want = native(lambda t: torch.cumsum(t, 1, dtype=torch.float32), x)
    assert_close(got, want, torch.float32 if not x.is_floating_point() else None)


def test_norm():
    x = rand(4, 5, 6)
    for p, dim, keep in ((2, -1, True), (1, (0, 2), False), (float("inf"), 1, False), (3, None, False)):
        got, want = native(lambda t: torch.norm(t, p, dim, keep), x)
        assert_close(got, want)
    got, want = native(lambda t: torch.nn.functional.normalize(t, dim=-1), x)  # Swin V2's attention
    assert_close(got, want)


def test_index_errors_name_the_op(dev):
    x = torch.randn(4, device=dev)
    with pytest.raises(RuntimeError, match=r"out of bounds for dimension 0 with size 4"):
        x[torch.tensor([4], device=dev)].cpu()
    with pytest.raises(RuntimeError, match=r"gather"):
        torch.gather(x, 0, torch.tensor([9], device=dev)).cpu()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_index_add_sums_repeated_indices_along_any_dim(dtype):
    """GNN message passing: source rows added at their index, repeats summed, along dim 0 and
    an inner dim, with alpha, in the functional, in-place and out= forms."""
    x = (torch.randn(5, 4, 3) * 4).to(dtype)
    idx, idx1 = torch.tensor([0, 2, 2, 4, 0, 2]), torch.tensor([0, 3, 3, 1, 0, 3])
    src0, src1 = (torch.randn(6, 4, 3) * 4).to(dtype), (torch.randn(5, 6, 3) * 4).to(dtype)
    alpha = 2 if dtype == torch.int64 else 0.5

    def check(got, want):
        if dtype == torch.int64:
            assert torch.equal(got.cpu(), want)
        else:
            assert_close(got, want)
    got, want = native(lambda t, i, s: t.index_add(0, i, s), x, idx, src0)
    check(got, want)
    got, want = native(lambda t, i, s: t.index_add(1, i, s, alpha=alpha), x, idx1, src1)
    check(got, want)
    got, want = native(lambda t, i, s: t.clone().index_add_(-2, i, s), x, idx1, src1)
    check(got, want)
    got, want = native(lambda t, i, s: torch.index_add(t, 0, i, s, out=torch.empty_like(t)), x, idx, src0)
    check(got, want)


def test_masked_select_broadcasts_the_mask():
    x = torch.randn(3, 4, 5)
    got, want = native(lambda t: t.masked_select(t > 0.3), x)
    assert torch.equal(got.cpu(), want)
    mask = torch.rand(4, 1) > 0.5  # broadcast against x
    got, want = native(lambda t, m: torch.masked_select(t, m), x, mask)
    assert torch.equal(got.cpu(), want)
    got, want = native(lambda t: t.masked_select(t > 100), x)  # nothing selected
    assert got.shape == want.shape == (0,)


def test_addmv_with_beta_alpha_and_a_broadcast_self():
    m, v = torch.randn(6, 5), torch.randn(5)
    got, want = native(lambda s, a, b: torch.addmv(s, a, b, beta=0.5, alpha=2), torch.randn(6), m, v)
    assert_close(got, want)
    got, want = native(lambda s, a, b: torch.addmv(s, a, b), torch.randn(1), m, v)
    assert_close(got, want)
    nan = torch.full((6,), float("nan"))
    got, want = native(lambda s, a, b: torch.addmv(s, a, b, beta=0), nan, m, v)  # beta 0 ignores self
    assert_close(got, want)
    got, want = native(lambda s, a, b: s.clone().addmv_(a, b), torch.randn(6), m, v)
    assert_close(got, want)


# Integer means (torch floors them) are left to torch's kernel: tested below.
SCATTER_REDUCE = [(r, d) for r in ["sum", "prod", "mean", "amax", "amin"]
                  for d in [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int32]
                  if r != "mean" or d.is_floating_point]


@pytest.mark.parametrize("reduce,dtype", SCATTER_REDUCE)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_equals_torch(reduce, include_self, dtype):
    torch.manual_seed(4)
    x, src = (torch.randn(5, 6) * 4).to(dtype), (torch.randn(5, 9) * 4).to(dtype)
    idx = torch.randint(0, 6, (5, 9))  # along dim 1, repeats in every row; column 5 of some rows untouched
    got, want = native(lambda a, i, s: a.scatter_reduce(1, i, s, reduce, include_self=include_self), x, idx, src)
    if dtype.is_floating_point:
        assert_close(got, want)
    else:
        exact(got, want)


def test_scatter_reduce_nan_wins_and_integer_limits_start_empty_reductions(dev):
    x = torch.tensor([1.0, 2.0, 3.0])
    src, idx = torch.tensor([float("nan"), 5.0, -1.0]), torch.tensor([0, 1, 0])
    for reduce in ("amax", "amin"):
        got, want = native(lambda a, i, s: a.scatter_reduce(0, i, s, reduce), x, idx, src)
        exact(got, want)
        assert got.cpu()[0].isnan()
    xi = torch.zeros(3, dtype=torch.long)  # 0 must not join the min: the start is INT64_MAX
    got, want = native(lambda a, i, s: a.scatter_reduce(0, i, s, "amin", include_self=False), xi,
                       torch.tensor([0, 0]), torch.tensor([5, 3]))
    exact(got, want)
    assert got.cpu().tolist() == [3, 0, 0]


def test_scatter_reduce_in_place_out_and_what_falls_back(dev):
    x, src, idx = torch.randn(4), torch.randn(6), torch.tensor([0, 1, 1, 3, 3, 3])
    want = x.scatter_reduce(0, idx, src, "mean")
    xd = x.to(dev)
    xd.scatter_reduce_(0, idx.to(dev), src.to(dev), "mean")
    assert_close(xd, want)
    out = torch.empty(0).to(dev)
    torch.scatter_reduce(x.to(dev), 0, idx.to(dev), src.to(dev), "amax", out=out)
    assert_close(out, x.scatter_reduce(0, idx, src, "amax"))
    with pytest.raises(RuntimeError, match="reduce argument must be either"):  # torch's own error
        x.to(dev).scatter_reduce(0, idx.to(dev), src.to(dev), "max")
    xi = torch.tensor([1, 2, 3, 4])
    opscope.reset_fallback_stats()
    got = xi.to(dev).scatter_reduce(0, idx.to(dev), torch.arange(6).to(dev), "mean")  # integer mean: torch's kernel
    assert torch.equal(got.cpu(), xi.scatter_reduce(0, idx, torch.arange(6), "mean"))
    assert "aten::scatter_reduce.two" in opscope.fallback_stats()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int32])
@pytest.mark.parametrize("right", [False, True])
def test_bucketize_equals_torch(dtype, right):
    boundaries = torch.tensor([-3.0, -1.0, 0.0, 0.0, 2.0, 5.0]).to(dtype)  # a repeated boundary
    x = torch.tensor([[-4.0, -3.0, -2.5, 0.0], [1.0, 2.0, 5.0, 9.0]]).to(dtype)
    if dtype.is_floating_point:
        x = torch.cat([x, torch.tensor([[float("nan"), float("inf"), float("-inf"), 4.9]]).to(dtype)])
    for out_int32 in (False, True):
        fn = lambda t, b: torch.bucketize(t, b, right=right, out_int32=out_int32)  # noqa: E731
        dev = opscope.device()
        opscope.reset_fallback_stats()
        got = fn(x.to(dev), boundaries.to(dev))
        assert opscope.fallback_stats() == {}
        want = fn(x.float(), boundaries.float()) if dtype == torch.float16 else fn(x, boundaries)  # torch: no f16 kernel
        exact(got, want)


def test_bucketize_out_and_what_falls_back(dev):
    b = torch.tensor([1.0, 2.0, 4.0])
    x = torch.rand(3, 7) * 5
    out = torch.empty(0, dtype=torch.long).to(dev)
    torch.bucketize(x.to(dev), b.to(dev), out=out)
    exact(out, torch.bucketize(x, b))
    opscope.reset_fallback_stats()  # boundaries of another dtype: torch promotes, in its own kernel
    got = torch.bucketize(x.to(dev), torch.tensor([1, 2, 4]).to(dev))
    assert torch.equal(got.cpu(), torch.bucketize(x, torch.tensor([1, 2, 4])))
    assert "aten::bucketize.Tensor" in opscope.fallback_stats()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_masked_scatter_fills_the_mask_in_order(dtype):
    torch.manual_seed(5)
    x = (torch.randn(4, 5) * 10).to(dtype)
    src = (torch.randn(3, 7) * 10).to(dtype)  # more elements than the mask needs: the first ones are taken
    for mask in (torch.rand(4, 5) > 0.5, torch.tensor([True, False, True, False, True])):  # broadcast rows
        got, want = native(lambda a, m, s: a.clone().masked_scatter_(m, s), x, mask, src)
        exact(got, want)
        got, want = native(lambda a, m, s: a.masked_scatter(m, s), x, mask, src)
        exact(got, want)


def test_masked_scatter_errors_are_torchs(dev):
    x, src = torch.zeros(2, 3).to(dev), torch.ones(2).to(dev)
    with pytest.raises(RuntimeError, match="source < number of ones in mask"):  # three trues, two source elements
        x.masked_scatter_(torch.tensor([[True, True, True], [False, False, False]]).to(dev), src)
    with pytest.raises(RuntimeError):  # a mask that does not broadcast to self
        x.masked_scatter_(torch.ones(4, dtype=torch.bool).to(dev), torch.ones(8).to(dev))
