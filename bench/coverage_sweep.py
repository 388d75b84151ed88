"""What runs natively on opscope's device beyond bench/torch_models.py's 21 models (issue
#32): torchvision models of every family with random weights, and torch.nn.functional and
tensor-op forms, each compared with torch CPU; prints each one's largest relative error and
the ops that fell back to torch's CPU kernel (opscope.fallback_stats()).

    PYTHONPATH=build/python /usr/bin/python3 bench/coverage_sweep.py [--part models|ops|all] [--only NAME,...]

Each model runs in its own process (a timeout each, --timeout seconds). Detection outputs may
differ where the random model's scores tie (docs/BENCHMARKS.md, "Coverage").
"""
import argparse
import os
import subprocess
import sys
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from model_zoo import tensors_of as flat  # noqa: E402  (the outputs' tensors, in a fixed order)

MODELS = {  # name -> family
    "alexnet": "cls", "efficientnet_v2_s": "cls", "inception_v3": "cls", "maxvit_t": "cls", "mnasnet0_5": "cls",
    "mobilenet_v2": "cls", "regnet_x_400mf": "cls", "resnext50_32x4d": "cls", "squeezenet1_0": "cls",
    "swin_v2_t": "cls", "vgg11_bn": "cls", "vit_b_32": "cls", "wide_resnet50_2": "cls", "shufflenet_v2_x0_5": "cls",
    "fcn_resnet50": "seg", "lraspp_mobilenet_v3_large": "seg", "deeplabv3_resnet50": "seg",
    "mc3_18": "video", "r2plus1d_18": "video", "s3d": "video", "mvit_v2_s": "video",
    "ssdlite320_mobilenet_v3_large": "det", "ssd300_vgg16": "det", "retinanet_resnet50_fpn": "det",
    "fcos_resnet50_fpn": "det", "maskrcnn_resnet50_fpn": "det", "keypointrcnn_resnet50_fpn": "det",
    "fasterrcnn_resnet50_fpn_v2": "det", "raft_small": "flow",
}


def rel_error(got, want):
    """The largest relative error over the outputs (integers: the count that differ)."""
    if len(got) != len(want):
        return float("nan")
    err = 0.0
    for g, w in zip(got, want):
        g = g.cpu()
        if g.shape != w.shape:
            return float("nan")
        if w.numel() == 0:
            continue
        if w.is_floating_point():
            err = max(err, ((g.double() - w.double()).abs().max() / w.double().abs().max().clamp_min(1e-30)).item())
        else:
            err = max(err, float((g != w).sum().item()))
    return err


def run_model(name, family):
    """One model on torch CPU and on the device (the child process's job)."""
    import torchvision

    import opscope
    torch.manual_seed(0)
    mods = {"cls": torchvision.models, "det": torchvision.models.detection, "seg": torchvision.models.segmentation,
            "video": torchvision.models.video, "flow": torchvision.models.optical_flow}
    kw = {"weights": None}
    if family in ("seg", "det"):
        kw["weights_backbone"] = None
    if name in ("googlenet", "inception_v3"):
        kw.update(aux_logits=False, init_weights=True)
    m = getattr(mods[family], name)(**kw).eval()
    big = any(k in name for k in ("vit", "swin", "maxvit"))
    side = 299 if name == "inception_v3" else 224 if big else 128
    if family == "video":
        frames, side = (16, 224) if name in ("s3d", "mvit_v2_s") else (8, 112)
        x = [torch.randn(1, 3, frames, side, side)]
    elif family == "det":
        x = [[torch.rand(3, 320, 320)]]
    elif family == "flow":
        x = [torch.rand(1, 3, 128, 128), torch.rand(1, 3, 128, 128)]
    else:
        x = [torch.randn(1, 3, side, side)]
    want = flat(m(*x))
    dev = opscope.device()
    to_dev = lambda v: [to_dev(t) for t in v] if isinstance(v, list) else v.to(dev)  # noqa: E731
    opscope.reset_fallback_stats()
    got = flat(m.to(dev)(*[to_dev(v) for v in x]))
    opscope.synchronize()
    fb = {k: v["count"] for k, v in opscope.fallback_stats().items()}
    print(f"{name:<32} {family:<6} {rel_error(got, want):>9.1e}  {fb or 'none'}", flush=True)


def op_cases():
    import torch.nn as nn
    import torch.nn.functional as F
    import torchvision

    def t(*s, dt=torch.float32):
        return torch.randn(*s).to(dt)
    cases = {
     "nn.Transformer": (lambda m, a, b: m(a, b), [nn.Transformer(d_model=32, nhead=4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=64, batch_first=True).eval()], [t(2, 5, 32), t(2, 4, 32)]),
     "mha_kpm": (lambda m, a, k: m(a, a, a, key_padding_mask=k, need_weights=True)[0], [nn.MultiheadAttention(16, 4, batch_first=True).eval()], [t(2, 5, 16), torch.tensor([[False]*5, [False, False, False, True, True]])]),
     "interp_bicubic": (lambda x: F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False), [], [t(1, 2, 5, 6)]),
     "interp_bicubic_ac": (lambda x: F.interpolate(x, size=(7, 9), mode="bicubic", align_corners=True), [], [t(1, 2, 5, 6)]),
     "interp_trilinear": (lambda x: F.interpolate(x, scale_factor=2, mode="trilinear"), [], [t(1, 2, 3, 4, 5)]),
     "interp_nearest3d": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), [], [t(1, 2, 3, 4, 5)]),
     "interp_linear1d": (lambda x: F.interpolate(x, scale_factor=2, mode="linear"), [], [t(1, 2, 5)]),
     "interp_nearest_exact": (lambda x: F.interpolate(x, scale_factor=1.7, mode="nearest-exact"), [], [t(1, 2, 5, 6)]),
     "interp_area": (lambda x: F.interpolate(x, size=(3, 4), mode="area"), [], [t(1, 2, 7, 9)]),
     "avg_pool1d": (lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), [], [t(1, 3, 10)]),
     "avg_pool3d": (lambda x: F.avg_pool3d(x, 2), [], [t(1, 2, 4, 6, 6)]),
     "max_pool3d": (lambda x: F.max_pool3d(x, 3, 2, 1), [], [t(1, 2, 5, 6, 6)]),
     "max_pool1d": (lambda x: F.max_pool1d(x, 3, 2), [], [t(1, 2, 11)]),
     "adaptive_max2d": (lambda x: F.adaptive_max_pool2d(x, (3, 2)), [], [t(1, 2, 7, 9)]),
     "adaptive_avg3d": (lambda x: F.adaptive_avg_pool3d(x, 1), [], [t(1, 2, 3, 4, 5)]),
     "adaptive_avg1d": (lambda x: F.adaptive_avg_pool1d(x, 4), [], [t(1, 2, 9)]),
     "conv_transpose2d": (lambda m, x: m(x), [nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1).eval()], [t(1, 3, 5, 5)]),
     "conv_transpose1d": (lambda m, x: m(x), [nn.ConvTranspose1d(3, 4, 4, stride=2).eval()], [t(1, 3, 7)]),
     "conv_transpose3d": (lambda m, x: m(x), [nn.ConvTranspose3d(2, 3, 3, stride=2).eval()], [t(1, 2, 3, 4, 4)]),
     "conv1d_groups_dil": (lambda m, x: m(x), [nn.Conv1d(4, 8, 3, dilation=2, groups=2, padding="same").eval()], [t(1, 4, 11)]),
     "gather": (lambda x, i: x.gather(1, i), [], [t(3, 5), torch.randint(0, 5, (3, 4))]),
     "scatter_add": (lambda x, i, s: x.scatter_add(1, i, s), [], [t(3, 5), torch.randint(0, 5, (3, 4)), t(3, 4)]),
     "scatter_reduce": (lambda x, i, s: x.scatter_reduce(1, i, s, "amax"), [], [t(3, 5), torch.randint(0, 5, (3, 4)), t(3, 4)]),
     "index_add": (lambda x, i, s: x.index_add(0, i, s), [], [t(5, 3), torch.tensor([0, 2, 2]), t(3, 3)]),
     "index_put_acc": (lambda x, i, s: x.index_put((i,), s, accumulate=True), [], [t(5, 3), torch.tensor([0, 2, 2]), t(3, 3)]),
     "masked_select": (lambda x: x.masked_select(x > 0), [], [t(4, 5)]),
     "masked_scatter": (lambda x, s: x.masked_scatter(x > 0, s), [], [t(4, 5), t(20)]),
     "where_scalar": (lambda x: torch.where(x > 0, x, 0.0), [], [t(4, 5)]),
     "roll2": (lambda x: torch.roll(x, (1, -2), (0, 1)), [], [t(4, 5)]),
     "roll_flat": (lambda x: torch.roll(x, 3), [], [t(4, 5)]),
     "flip": (lambda x: torch.flip(x, (0, 1)), [], [t(4, 5)]),
     "cmp": (lambda x, y: torch.stack([(x < y).float(), (x >= y).float(), (x == y).float(), (x != 0.5).float()]), [], [t(4, 5), t(4, 5)]),
     "baddbmm": (lambda a, b, c: torch.baddbmm(a, b, c, beta=0.5, alpha=2), [], [t(2, 3, 4), t(2, 3, 5), t(2, 5, 4)]),
     "addbmm": (lambda a, b, c: torch.addbmm(a, b, c), [], [t(3, 4), t(2, 3, 5), t(2, 5, 4)]),
     "addmv": (lambda a, m, v: torch.addmv(a, m, v), [], [t(3), t(3, 4), t(4)]),
     "glu": (lambda x: F.glu(x, 1), [], [t(2, 6, 3)]),
     "weight_norm": (lambda m, x: m(x), [nn.utils.weight_norm(nn.Conv1d(3, 4, 3)).eval()], [t(1, 3, 8)]),
     "lstm_cell": (lambda m, x: m(x)[0], [nn.LSTMCell(4, 6).eval()], [t(3, 4)]),
     "gru_cell": (lambda m, x: m(x), [nn.GRUCell(4, 6).eval()], [t(3, 4)]),
     "rnn_cell": (lambda m, x: m(x), [nn.RNNCell(4, 6).eval()], [t(3, 4)]),
     "lstm_bi_2l": (lambda m, x: m(x)[0], [nn.LSTM(4, 6, 2, bidirectional=True, batch_first=True).eval()], [t(2, 5, 4)]),
     "gru_packed": (lambda m, x: nn.utils.rnn.pad_packed_sequence(m(nn.utils.rnn.pack_padded_sequence(x, torch.tensor([5, 3]), batch_first=True))[0], batch_first=True)[0], [nn.GRU(4, 6, batch_first=True).eval()], [t(2, 5, 4)]),
     "topk_small": (lambda x: torch.topk(x, 3, largest=False).values, [], [t(4, 9)]),
     "sort_desc": (lambda x: torch.sort(x, descending=True).values, [], [t(4, 9)]),
     "argsort": (lambda x: torch.argsort(x, dim=0), [], [t(4, 9)]),
     "nms": (lambda b, s: torchvision.ops.nms(b, s, 0.5), [], [torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30.]]), torch.tensor([0.9, 0.8, 0.7])]),
     "batched_nms": (lambda b, s, i: torchvision.ops.batched_nms(b, s, i, 0.5), [], [torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30.]]), torch.tensor([0.9, 0.8, 0.7]), torch.tensor([0, 1, 0])]),
     "roi_align_aligned": (lambda f, b: torchvision.ops.roi_align(f, b, (3, 3), 0.5, 2, aligned=True), [], [t(1, 2, 8, 8), torch.tensor([[0, 1.0, 1.0, 9.0, 7.0]])]),
     "roi_pool": (lambda f, b: torchvision.ops.roi_pool(f, b, (3, 3), 0.5), [], [t(1, 2, 8, 8), torch.tensor([[0, 1.0, 1.0, 9.0, 7.0]])]),
     "ps_roi_align": (lambda f, b: torchvision.ops.ps_roi_align(f, b, (2, 2), 0.5), [], [t(1, 8, 8, 8), torch.tensor([[0, 1.0, 1.0, 9.0, 7.0]])]),
     "deform_conv2d": (lambda x, o, w: torchvision.ops.deform_conv2d(x, o, w, padding=1), [], [t(1, 2, 5, 5), t(1, 18, 5, 5) * 0.5, t(3, 2, 3, 3)]),
     "grid_sample": (lambda x, g: F.grid_sample(x, g, align_corners=False), [], [t(1, 2, 5, 6), torch.rand(1, 4, 3, 2) * 2 - 1]),
     "affine_grid": (lambda th: F.affine_grid(th, (1, 2, 4, 5), align_corners=False), [], [t(1, 2, 3)]),
     "instance_norm": (lambda x: F.instance_norm(x), [], [t(2, 3, 5, 5)]),
     "group_norm": (lambda x: F.group_norm(x, 3), [], [t(2, 6, 5, 5)]),
     "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2), [], [t(1, 8, 3, 3)]),
     "unfold": (lambda x: F.unfold(x, 3, padding=1), [], [t(1, 2, 5, 5)]),
     "fold": (lambda x: F.fold(x, (5, 5), 3, padding=1), [], [t(1, 18, 25)]),
     "cumsum": (lambda x: torch.cumsum(x, 1), [], [t(3, 7)]),
     "logsumexp": (lambda x: torch.logsumexp(x, 1), [], [t(3, 7)]),
     "log_softmax": (lambda x: F.log_softmax(x, 1), [], [t(3, 7)]),
     "embedding_bag": (lambda w, i, o: F.embedding_bag(i, w, o, mode="mean"), [], [t(10, 3), torch.tensor([1, 2, 4, 5, 4, 3]), torch.tensor([0, 3])]),
     "embedding_bag_max": (lambda w, i, o: F.embedding_bag(i, w, o, mode="max"), [], [t(10, 3), torch.tensor([1, 2, 4, 5, 4, 3]), torch.tensor([0, 3])]),
     "one_hot": (lambda i: F.one_hot(i, 5), [], [torch.tensor([0, 3, 4])]),
     "clamp_t": (lambda x, lo: torch.clamp(x, min=lo), [], [t(3, 4), t(3, 4)]),
     "erfinv_etc": (lambda x: torch.stack([x.sigmoid().erfinv(), x.exp().log1p(), x.expm1(), x.atan(), x.sinh()]), [], [t(3, 4)]),
     "pad_reflect": (lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"), [], [t(1, 2, 5, 5)]),
     "pad_replicate": (lambda x: F.pad(x, (1, 2, 2, 1), mode="replicate"), [], [t(1, 2, 5, 5)]),
     "pad_circular": (lambda x: F.pad(x, (1, 2), mode="circular"), [], [t(1, 2, 5)]),
     "bucketize": (lambda x, b: torch.bucketize(x, b), [], [t(3, 4), torch.tensor([-1.0, 0.0, 1.0])]),
     "nonzero_empty": (lambda x: torch.nonzero(x > 100), [], [t(3, 4)]),
     "unique": (lambda x: torch.unique(x, return_counts=True)[1], [], [torch.tensor([3, 1, 3, 2, 1, 3])]),
    }
    return cases


def run_ops(only):
    import opscope
    dev = opscope.device()
    for name, (fn, mods, args) in op_cases().items():
        if only and name not in only:
            continue
        opscope.reset_fallback_stats()
        try:
            want = fn(*mods, *args)
            got = fn(*[m.to(dev) for m in mods], *[a.to(dev) for a in args])
            opscope.synchronize()
            for m in mods:
                m.cpu()
            err = rel_error(flat(got), flat(want))
            fb = {k: v["count"] for k, v in opscope.fallback_stats().items()}
            print(f"{name:<32} {'op':<6} {err:>9.1e}  {fb or 'none'}", flush=True)
        except Exception as e:  # noqa: BLE001 -- a sweep reports each failure and goes on
            print(f"{name:<32} {'op':<6} {'FAILED':>9}  {type(e).__name__}: {str(e)[:160]}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("models", "ops", "all"), default="all")
    ap.add_argument("--only", default="", help="comma-separated model or op names")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.timeout < 1:
        ap.error(f"--timeout: expected a positive number of seconds, got {args.timeout}")
    warnings.simplefilter("ignore")
    torch.set_grad_enabled(False)
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    if args.child:
        return run_model(*args.child)
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    known = set(MODELS) | set(op_cases())
    if only - known:
        ap.error(f"--only: unknown name {sorted(only - known)[0]!r}")
    print(f"{'name':<32} {'family':<6} {'rel error':>9}  fallbacks")
    if args.part in ("models", "all"):
        for name, family in MODELS.items():
            if only and name not in only:
                continue
            try:
                subprocess.run([sys.executable, __file__, "--child", name, family], timeout=args.timeout, check=True,
                               stderr=subprocess.DEVNULL)
            except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as e:
                print(f"{name:<32} {family:<6} {'FAILED':>9}  {type(e).__name__}", flush=True)
    if args.part in ("ops", "all"):
        run_ops(only)


if __name__ == "__main__":
    main()
