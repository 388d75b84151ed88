"""More nn ops against torch CPU: LSTM/GRU/RNN layers (layers, bidirectional, batch_first,
no biases, given initial states, bf16), baddbmm/addbmm, glu, weight norm, group norm,
log_softmax, and torchvision's nms, roi_align, roi_pool and ps_roi_align. Each runs natively."""
import pytest
import torch
import torch.nn.functional as F
import torchvision  # registers torch.ops.torchvision; a test dependency (scripts/setup.sh)

import opscope
from conftest import assert_close, native, rand


def run_module(m, *inputs, dtype=torch.float32, rtol=2e-5):
    m = m.eval().to(dtype)
    with torch.no_grad():
        want = m.float()(*[i.float() if i.is_floating_point() else i for i in inputs])
        md = m.to(dtype).to(opscope.device())
        opscope.reset_fallback_stats()
        got = md(*[i.to(dtype).to(opscope.device()) for i in inputs])
        opscope.synchronize()
    assert opscope.fallback_stats() == {}, opscope.fallback_stats()
    flat = lambda o: [o] if isinstance(o, torch.Tensor) else [t for x in o for t in flat(x)]  # noqa: E731
    for g, w in zip(flat(got), flat(want)):
        assert g.shape == w.shape
        torch.testing.assert_close(g.cpu().float(), w, atol=rtol, rtol=rtol)


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_recurrent_layers(cls, bidirectional, batch_first):
    torch.manual_seed(0)
    m = cls(input_size=6, hidden_size=5, num_layers=2, bidirectional=bidirectional, batch_first=batch_first)
    x = torch.randn(3, 7, 6) if batch_first else torch.randn(7, 3, 6)
    run_module(m, x)


def test_recurrent_variants():
    torch.manual_seed(0)
    run_module(torch.nn.RNN(4, 3, nonlinearity="relu", bias=False), torch.randn(5, 2, 4))
    run_module(torch.nn.GRU(4, 3, bias=False), torch.randn(5, 2, 4))
    lstm = torch.nn.LSTM(4, 3, num_layers=2)
    h0, c0 = torch.randn(2, 2, 3), torch.randn(2, 2, 3)

    class WithState(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = lstm

        def forward(self, x, h, c):
            return self.lstm(x, (h, c))

    run_module(WithState(), torch.randn(6, 2, 4), h0, c0)
    run_module(torch.nn.LSTM(4, 3), torch.randn(6, 4))  # unbatched
    run_module(torch.nn.LSTM(8, 16, batch_first=True), torch.randn(2, 9, 8), dtype=torch.bfloat16, rtol=3e-2)


def test_baddbmm_addbmm_glu():
    a, b, c = rand(3, 4, 5), rand(3, 5, 6), rand(3, 4, 6)
    got, want = native(lambda p, q, r: torch.baddbmm(r, p, q, beta=0.5, alpha=2.0), a, b, c)
    assert_close(got, want)
    got, want = native(lambda p, q, r: torch.baddbmm(r[:, :1], p, q), a, b, c)  # a broadcast self
    assert_close(got, want)
    got, want = native(lambda p, q, r: torch.addbmm(r[0], p, q), a, b, c)
    torch.testing.assert_close(got.cpu(), want, atol=1e-4, rtol=1e-4)
    x = rand(2, 6, 5)
    for dim in (1, -1 if x.shape[-1] % 2 == 0 else 1):
        got, want = native(lambda t: F.glu(t, dim), x)
        assert_close(got, want)


def test_weight_norm_and_group_norm():
    torch.manual_seed(0)
    conv = torch.nn.utils.weight_norm(torch.nn.Conv1d(4, 6, 3, padding=1), dim=2)  # wav2vec2's positional conv
    run_module(conv, torch.randn(2, 4, 9))
    run_module(torch.nn.utils.weight_norm(torch.nn.Linear(5, 3)), torch.randn(4, 5))
    gn = torch.nn.GroupNorm(2, 6)
    with torch.no_grad():
        gn.weight.normal_(), gn.bias.normal_()
    run_module(gn, torch.randn(3, 6, 5, 4))
    run_module(torch.nn.GroupNorm(4, 4, affine=False), torch.randn(2, 4, 7))


def test_log_softmax():
    x = rand(3, 7, 5)
    for dim in (0, -1):
        got, want = native(lambda t: F.log_softmax(t, dim), x)
        assert_close(got, want)


def test_nms_matches_torchvision():
    torch.manual_seed(0)
    xy = torch.rand(60, 2) * 50
    boxes = torch.cat([xy, xy + torch.rand(60, 2) * 30 + 1], 1)
    scores = torch.rand(60)
    for thr in (0.3, 0.5, 0.9):
        got, _ = native(lambda b, s: torchvision.ops.nms(b, s, thr), boxes, scores)
        assert torch.equal(got.cpu(), torchvision.ops.nms(boxes, scores, thr))
    idx = torch.randint(0, 3, (60,))
    got, _ = native(lambda b, s, i: torchvision.ops.batched_nms(b, s, i, 0.5), boxes, scores, idx)
    assert torch.equal(got.cpu(), torchvision.ops.batched_nms(boxes, scores, idx, 0.5))
    empty = torch.zeros(0, 4)
    got, _ = native(lambda b, s: torchvision.ops.nms(b, s, 0.5), empty, torch.zeros(0))
    assert got.shape == (0,) and got.dtype == torch.int64


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [-1, 2])
def test_roi_align_matches_torchvision(aligned, sampling_ratio):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 16, 12)
    xy = torch.rand(7, 2) * 10 - 2  # some boxes reach outside the image
    rois = torch.cat([torch.randint(0, 2, (7, 1)).float(), xy, xy + torch.rand(7, 2) * 8], 1)
    fn = lambda t, r: torchvision.ops.roi_align(t, r, (5, 4), 0.5, sampling_ratio, aligned)  # noqa: E731
    got, want = native(fn, x, rois)
    torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_roi_pool_matches_torchvision_with_its_argmax(scale):
    torch.manual_seed(1)
    x = torch.randn(2, 3, 16, 12)
    x[0, 1, 3, 4] = float("nan")  # never wins a bin, as in torchvision's comparison
    xy = torch.rand(9, 2) * 14 - 3  # some boxes reach outside the image, some are under a pixel
    rois = torch.cat([torch.randint(0, 2, (9, 1)).float(), xy, xy + torch.rand(9, 2) * 9], 1)
    rois[0, 1:] = torch.tensor([30.0, 30.0, 40.0, 40.0])  # wholly outside: every bin empty, 0 and argmax -1
    op = torch.ops.torchvision.roi_pool
    dev = opscope.device()
    opscope.reset_fallback_stats()
    got, got_arg = op(x.to(dev), rois.to(dev), scale, 5, 4)
    assert opscope.fallback_stats() == {}
    want, want_arg = op(x, rois, scale, 5, 4)
    assert torch.equal(got_arg.cpu(), want_arg) and got_arg.dtype == torch.int32
    torch.testing.assert_close(got.cpu(), want, atol=0, rtol=0, equal_nan=True)
    assert (want_arg[0] == -1).all() and (want[0] == 0).all()
    got, _ = native(lambda t, r: torchvision.ops.roi_pool(t, r, (3, 3), scale), x.to(torch.bfloat16), rois.to(torch.bfloat16))
    assert got.dtype == torch.bfloat16 and got.shape == (9, 3, 3, 3)


def test_roi_pool_names_a_bad_batch_index(dev):
    x, rois = torch.randn(2, 1, 4, 4).to(dev), torch.tensor([[5.0, 0, 0, 2, 2]]).to(dev)
    with pytest.raises(RuntimeError, match=r"\[roi_pool\] roi 0 names batch index 5 of an input with 2 images"):
        torchvision.ops.roi_pool(x, rois, (2, 2)).cpu()


@pytest.mark.parametrize("sampling_ratio", [-1, 2])
def test_ps_roi_align_matches_torchvision_with_its_channel_mapping(sampling_ratio):
    torch.manual_seed(2)
    x = torch.randn(2, 3 * 2 * 2, 16, 12)  # 3 output channels of 2 x 2 bins
    xy = torch.rand(7, 2) * 14 - 3  # some boxes reach outside the image, some are small
    rois = torch.cat([torch.randint(0, 2, (7, 1)).float(), xy, xy + torch.rand(7, 2) * 9], 1)
    op = torch.ops.torchvision.ps_roi_align
    dev = opscope.device()
    opscope.reset_fallback_stats()
    got, got_map = op(x.to(dev), rois.to(dev), 0.5, 2, 2, sampling_ratio)
    assert opscope.fallback_stats() == {}
    want, want_map = op(x, rois, 0.5, 2, 2, sampling_ratio)
    assert got_map.dtype == want_map.dtype and torch.equal(got_map.cpu(), want_map)
    torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)
    with pytest.raises(RuntimeError, match="multiple"):  # 12 channels are not a multiple of 5 x 5 bins
        op(x.to(dev), rois.to(dev), 0.5, 5, 5, sampling_ratio)


def test_region_ops_on_an_image_with_no_rows_give_zeros(dev):
    # torchvision's CPU roi_align reads before the plane here (it segfaults); on the device
    # every sample of an empty image contributes 0, and a bad batch index is still named.
    x, rois = torch.randn(1, 4, 0, 5).to(dev), torch.tensor([[0, 0.0, 0, 3, 3]]).to(dev)
    out, mapping = torch.ops.torchvision.ps_roi_align(x, rois, 1.0, 2, 2, -1)
    assert torch.equal(out.cpu(), torch.zeros(1, 1, 2, 2))
    assert mapping.cpu().flatten().tolist() == [0, 1, 2, 3]
    assert torch.equal(torchvision.ops.roi_align(x, rois, (2, 2), 1.0, 2).cpu(), torch.zeros(1, 4, 2, 2))
    with pytest.raises(RuntimeError, match=r"\[roi_align\] roi 0 names batch index 3"):
        torchvision.ops.roi_align(x, torch.tensor([[3, 0.0, 0, 3, 3]]).to(dev), (2, 2), 1.0, 2).cpu()
