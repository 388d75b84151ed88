"""Empty and zero-size tensors behave on the device as on torch CPU for every op opscope
runs natively: the same result (shape, dtype, values), or an error where torch's CPU
kernel raises one (Faster R-CNN's image without detections reaches many of these)."""
import pytest
import torch
import torch.nn.functional as F

import opscope


def outcome(fn, args):
    """('ok', result on the CPU) or ('error', message)."""
    try:
        r = fn(*args)
        if isinstance(r, (tuple, list)):
            return "ok", tuple(t.cpu() if isinstance(t, torch.Tensor) else t for t in r)
        return "ok", r.cpu() if isinstance(r, torch.Tensor) else r
    except (RuntimeError, IndexError, ValueError) as e:
        return "error", str(e)


def same_as_cpu(fn, *args):
    want = outcome(fn, args)
    dev = opscope.device()
    got = outcome(fn, [a.to(dev) if isinstance(a, torch.Tensor) else a for a in args])
    assert got[0] == want[0], f"device: {got}, cpu: {want}"
    if want[0] == "error":
        return
    g, w = got[1], want[1]
    for a, b in zip(g if isinstance(g, tuple) else (g,), w if isinstance(w, tuple) else (w,)):
        if isinstance(b, torch.Tensor):
            assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
            torch.testing.assert_close(a, b, equal_nan=True)
        else:
            assert a == b


E = torch.zeros(0)
E03, E30, E204 = torch.zeros(0, 3), torch.zeros(3, 0), torch.zeros(2, 0, 4)

UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "floor", "ceil",
         "round", "trunc", "sign", "log2", "reciprocal", "erf", "expm1", "log1p", "tan", "atan", "asin", "acos",
         "sinh", "cosh", "erfinv", "sgn", "frac", "atanh", "exp2", "log10"]


@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
    for x in (E, E03, E204):
        same_as_cpu(getattr(torch, name), x)
    same_as_cpu(F.silu, E03)
    same_as_cpu(F.gelu, E03)
    same_as_cpu(F.hardswish, E03)
    same_as_cpu(F.logsigmoid, E03)


CASES = {
    "add_broadcast": (lambda a, b: a + b, E03, torch.ones(3)),
    "mul_scalar": (lambda a: a * 2, E30),
    "pow": (lambda a: a ** 2, E204),
    "maximum": (torch.maximum, E03, E03),
    "sum_all": (torch.sum, E03),
    "sum_empty_dim": (lambda a: a.sum(1), E30),
    "mean_empty_dim": (lambda a: a.mean(1), E30),
    "mean_all": (torch.mean, E),
    "amax_empty_dim": (lambda a: a.amax(1), E30),
    "amax_kept_dim": (lambda a: a.amax(0), E30),
    "argmax": (lambda a: a.argmax(), E),
    "var": (lambda a: a.var(0), E03),
    "max_all": (torch.max, E),
    "max_dim_empty": (lambda a: torch.max(a, 1), E30),
    "max_dim": (lambda a: torch.max(a, 0), E30),
    "min_dim": (lambda a: torch.min(a, 1), E03),
    "mm_empty_k": (torch.mm, E30, torch.zeros(0, 4)),
    "mm_empty_m": (torch.mm, E03, torch.ones(3, 4)),
    "bmm": (torch.bmm, torch.zeros(0, 2, 3), torch.zeros(0, 3, 4)),
    "linear": (F.linear, E03, torch.ones(5, 3), torch.ones(5)),
    "linear_empty_in": (F.linear, E30, torch.ones(5, 0), torch.ones(5)),
    "softmax": (lambda a: a.softmax(-1), E03),
    "softmax_empty_row": (lambda a: a.softmax(-1), E30),
    "log_softmax": (lambda a: a.log_softmax(0), E03),
    "layer_norm": (lambda a: F.layer_norm(a, (3,)), E03),
    "batch_norm": (lambda a, m, v: F.batch_norm(a, m, v), torch.zeros(0, 3, 2), torch.zeros(3), torch.ones(3)),
    "embedding": (F.embedding, torch.zeros(0, 2, dtype=torch.long), torch.ones(4, 3)),
    "cat": (lambda a, b: torch.cat([a, b]), E03, torch.ones(2, 3)),
    "cat_all_empty": (lambda a: torch.cat([a, a], 1), E30),
    "conv2d": (lambda a, w: F.conv2d(a, w, padding=1), torch.zeros(0, 3, 5, 5), torch.ones(4, 3, 3, 3)),
    "conv1d": (F.conv1d, torch.zeros(0, 3, 5), torch.ones(4, 3, 3)),
    "conv3d": (F.conv3d, torch.zeros(0, 3, 2, 2, 2), torch.ones(4, 3, 1, 1, 1)),
    "conv_transpose2d": (F.conv_transpose2d, torch.zeros(0, 3, 4, 4), torch.ones(3, 2, 2, 2)),
    "conv_no_channels": (F.conv2d, torch.zeros(1, 0, 3, 3), torch.ones(2, 0, 1, 1), torch.ones(2)),
    "max_pool2d": (lambda a: F.max_pool2d(a, 2), torch.zeros(0, 3, 4, 4)),
    "avg_pool2d": (lambda a: F.avg_pool2d(a, 2), torch.zeros(0, 3, 4, 4)),
    "adaptive_avg_pool2d": (lambda a: F.adaptive_avg_pool2d(a, 2), torch.zeros(0, 3, 4, 4)),
    "adaptive_max_pool2d": (lambda a: F.adaptive_max_pool2d(a, 2), torch.zeros(0, 3, 4, 4)),
    "upsample_bilinear": (lambda a: F.interpolate(a, scale_factor=2, mode="bilinear"), torch.zeros(0, 3, 4, 4)),
    "upsample_nearest": (lambda a: F.interpolate(a, size=(3, 5)), torch.zeros(0, 3, 4, 4)),
    "eq": (lambda a: a == 0, E03),
    "lt_tensor": (torch.lt, E03, torch.ones(3)),
    "where": (lambda a: torch.where(a > 0, a, 0.0), E204),
    "masked_fill": (lambda a: a.masked_fill(a > 0, 1.0), E03),
    "clamp": (lambda a: a.clamp(0, 1), E03),
    "addcmul": (lambda a: torch.addcmul(a, a, a), E03),
    "logical_and": (lambda a: (a > 0) & (a < 1), E03),
    "index_empty_index": (lambda a: a[torch.zeros(0, dtype=torch.long, device=a.device)], torch.ones(4, 3)),
    "index_of_empty": (lambda a: a[:, torch.tensor([0], device=a.device)], E30),
    "index_mask_none_true": (lambda a: a[a > 5], torch.zeros(4, 3)),
    "index_select": (lambda a: a.index_select(0, torch.zeros(0, dtype=torch.long, device=a.device)), torch.ones(4, 3)),
    "gather": (lambda a: torch.gather(a, 1, torch.zeros(3, 0, dtype=torch.long, device=a.device)), torch.ones(3, 4)),
    "nonzero": (torch.nonzero, E03),
    "roll": (lambda a: torch.roll(a, 1, 0), E03),
    "flip": (lambda a: torch.flip(a, (0,)), E03),
    "sort": (lambda a: torch.sort(a, 0), E03),
    "topk_k0": (lambda a: torch.topk(a, 0), torch.ones(4)),
    "topk_empty": (lambda a: torch.topk(a, 1), E),
    "cumsum": (lambda a: torch.cumsum(a, 0), E03),
    "norm": (lambda a: torch.norm(a, 2, -1), E03),
    "glu": (lambda a: F.glu(a, 1), torch.zeros(0, 4)),
    "baddbmm": (torch.baddbmm, torch.zeros(0, 2, 4), torch.zeros(0, 2, 3), torch.zeros(0, 3, 4)),
    "baddbmm_empty_k": (torch.baddbmm, torch.ones(2, 2, 4), torch.zeros(2, 2, 0), torch.zeros(2, 0, 4)),
    "group_norm": (lambda a: F.group_norm(a, 2), torch.zeros(0, 4, 3)),
    "clone": (lambda a: a.clone(), E204),
    "copy_cast": (lambda a: a.to(torch.bfloat16), E03),
    "fill": (lambda a: a.fill_(2.0), E03),
    "arange": (lambda a: torch.arange(0, device=a.device), E),
}


@pytest.mark.parametrize("name", CASES)
def test_op(name):
    fn, *args = CASES[name]
    same_as_cpu(fn, *args)


def test_detection_ops_on_no_boxes():
    torchvision = pytest.importorskip("torchvision")
    same_as_cpu(lambda b, s: torchvision.ops.nms(b, s, 0.5), torch.zeros(0, 4), torch.zeros(0))
    same_as_cpu(lambda b, s, i: torchvision.ops.batched_nms(b, s, i, 0.5), torch.zeros(0, 4), torch.zeros(0),
                torch.zeros(0, dtype=torch.long))
    same_as_cpu(lambda x, r: torchvision.ops.roi_align(x, r, (2, 2), 1.0, 2), torch.ones(1, 3, 4, 4),
                torch.zeros(0, 5))


def test_faster_rcnn_without_detections_matches_cpu():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    m = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None,
                                                                             min_size=96, max_size=96).eval()
    x = torch.rand(3, 96, 96)
    with torch.no_grad():
        want = m([x])[0]
        got = m.to(opscope.device())([x.to(opscope.device())])[0]
    m.cpu()
    for k in ("boxes", "scores", "labels"):
        assert got[k].shape == want[k].shape and got[k].dtype == want[k].dtype
        torch.testing.assert_close(got[k].cpu(), want[k], atol=1e-4, rtol=1e-4)
