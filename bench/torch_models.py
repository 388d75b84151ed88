"""Model families forward on opscope's device vs torch's own CPU backend, in one run: per
model the output's relative error, the device/CPU time ratio (median of alternated calls),
what fell back to torch's CPU kernels, and the geometric mean of the ratios.

    PYTHONPATH=build/python /usr/bin/python3 bench/torch_models.py [--quick] [--only resnet50,gru]
        [--reps 5] [--torch-threads 2]

Random weights, eval, no_grad. torch CPU runs with as many threads as opscope's device has
cores (--torch-threads, default: all hardware threads): Debian's torch picks 1 by default;
its OpenBLAS with one thread, its faster setting here (torch_peer.py).
"""
import argparse
import copy
import math
import os
import statistics
import sys
import time
import warnings

import torch_peer  # noqa: F401  (first: how torch's OpenBLAS threads, before torch loads it)

import torch

import opscope

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from model_zoo import tensors_of  # noqa: E402  (the model tests' comparison, shared)


# ---- the models: name -> (family, build(quick) -> (module, inputs tuple)) ----

def _tv(name, size, fixed=False, **kw):
    def build(quick):
        import torchvision
        m = getattr(torchvision.models, name)(**kw)
        if hasattr(m, "heads"):  # ViT's head starts at zero: its output would compare as 0 == 0
            torch.nn.init.normal_(m.heads.head.weight, std=0.02)
        s = size // 2 if quick and not fixed else size  # ViT's patch grid is fixed
        return m, (torch.randn(1, 3, s, s),)
    return build


def _tv_task(task, name, size, make_input):
    """torchvision.models.<task>.<name> without pretrained weights, on make_input(side)."""
    def build(quick):
        import torchvision
        m = getattr(getattr(torchvision.models, task), name)(weights=None, weights_backbone=None)
        return m, make_input(size // 2 if quick else size)
    return build


def _tv_video(name, frames, size):
    def build(quick):
        import torchvision
        m = getattr(torchvision.models.video, name)()
        f, s = (frames // 2, size // 2) if quick else (frames, size)
        return m, (torch.randn(1, 3, f, s, s),)
    return build


def _wav2vec2(kind):
    def build(quick):
        import torchaudio
        m = getattr(torchaudio.models, kind)()
        return m, (torch.randn(1, 8000 if quick else 16000),)
    return build


def _conformer(quick):
    import torchaudio
    m = torchaudio.models.Conformer(input_dim=80, num_heads=4, ffn_dim=256 if quick else 1024,
                                    num_layers=2 if quick else 4, depthwise_conv_kernel_size=31)
    t = 100 if quick else 400
    return m, (torch.randn(2, t, 80), torch.tensor([t, t * 3 // 4]))


def _rnn(cls):
    def build(quick):
        m = cls(input_size=128, hidden_size=256, num_layers=2, batch_first=True)
        return m, (torch.randn(4, 32 if quick else 128, 128),)
    return build


def _transformer(quick):
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024, batch_first=True)
    m = torch.nn.TransformerEncoder(layer, num_layers=2 if quick else 4, enable_nested_tensor=False)
    return m, (torch.randn(4, 32 if quick else 128, 256),)


class _MHA(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(256, 8, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


def _mha(quick):
    return _MHA(), (torch.randn(4, 32 if quick else 128, 256),)


MODELS = {
    "resnet50": ("classification", _tv("resnet50", 224)),
    "mobilenet_v3_large": ("classification", _tv("mobilenet_v3_large", 224)),
    "efficientnet_b0": ("classification", _tv("efficientnet_b0", 224)),
    "regnet_y_400mf": ("classification", _tv("regnet_y_400mf", 224)),
    "googlenet": ("classification", _tv("googlenet", 224, aux_logits=False, init_weights=True)),
    "densenet121": ("classification", _tv("densenet121", 224)),
    "convnext_tiny": ("classification", _tv("convnext_tiny", 224)),
    "swin_t": ("classification", _tv("swin_t", 224)),
    "shufflenet_v2_x1_0": ("classification", _tv("shufflenet_v2_x1_0", 224)),
    "vit_b_16": ("classification", _tv("vit_b_16", 224, fixed=True)),
    "deeplabv3_mobilenet_v3_large": ("segmentation", _tv_task("segmentation", "deeplabv3_mobilenet_v3_large", 224,
                                                     lambda s: (torch.randn(1, 3, s, s),))),
    "fasterrcnn_mobilenet_v3_large_320_fpn": ("detection", _tv_task("detection", "fasterrcnn_mobilenet_v3_large_320_fpn", 320,
                                                            lambda s: ([torch.rand(3, s, s)],))),
    "r3d_18": ("video", _tv_video("r3d_18", 8, 112)),
    "wav2vec2_base": ("audio", _wav2vec2("wav2vec2_base")),
    "hubert_base": ("audio", _wav2vec2("hubert_base")),
    "conformer": ("audio", _conformer),
    "lstm": ("nn", _rnn(torch.nn.LSTM)),
    "gru": ("nn", _rnn(torch.nn.GRU)),
    "rnn": ("nn", _rnn(torch.nn.RNN)),
    "transformer_encoder": ("nn", _transformer),
    "multihead_attention": ("nn", _mha),
}


# ---- comparing outputs ----

def rel_error(got, want):
    """Largest |got - want| over the largest |want|, across all output tensors."""
    g, w = tensors_of(got), tensors_of(want)
    if len(g) != len(w) or any(a.shape != b.shape for a, b in zip(g, w)):
        return float("inf")
    err = scale = 0.0
    for a, b in zip(g, w):
        if b.numel() == 0:
            continue
        a, b = a.cpu().double(), b.double()
        err = max(err, (a - b).abs().max().item())
        scale = max(scale, b.abs().max().item())
    return err / scale if scale else None  # nothing to compare: all outputs empty or zero


def to_device(x, dev):
    if isinstance(x, torch.Tensor):
        return x.to(dev)
    if isinstance(x, (list, tuple)):
        return type(x)(to_device(e, dev) for e in x)
    return x


SETTLE_S = 0.05  # idle before each timed call: past libgomp's spin (~ms) and the device's (50 us)


def timed(fn, sync=None):
    t0 = time.perf_counter()
    r = fn()
    if sync:
        sync()
    return time.perf_counter() - t0, r


def measure(name, build, quick, reps, dev):
    torch.manual_seed(0)
    model, inputs = build(quick)
    model.eval()
    model_cpu = copy.deepcopy(model)
    cpu_fn = lambda: model_cpu(*inputs)  # noqa: E731
    cpu_fn()  # warm-up
    want = cpu_fn()
    dmodel = model.to(dev)
    dinputs = to_device(inputs, dev)
    dev_fn = lambda: dmodel(*dinputs)  # noqa: E731
    opscope.reset_fallback_stats()
    got = dev_fn()
    opscope.synchronize()
    fallbacks = opscope.fallback_stats()
    err = rel_error(got, want)
    # Alternated, so that load drift hits both sides alike, each call after an idle gap:
    # torch's OpenMP threads spin for milliseconds after its last op, and on 2 CPUs they took
    # time slices from the device's cores in the call after (opscope's times here 10-40%
    # lower with them passive), as the device's polling cores could from torch's.
    cpu_t, dev_t = [], []
    for _ in range(reps):
        time.sleep(SETTLE_S)
        cpu_t.append(timed(cpu_fn)[0])
        time.sleep(SETTLE_S)
        dev_t.append(timed(dev_fn, opscope.synchronize)[0])
    return err, statistics.median(cpu_t), statistics.median(dev_t), fallbacks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller inputs and models")
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    ap.add_argument("--reps", type=int, default=5, help="alternated calls per side; the median is kept")
    ap.add_argument("--torch-threads", type=int, default=os.cpu_count(),
                    help="torch CPU's intra-op threads (default: all hardware threads, as opscope's cores)")
    args = ap.parse_args()
    if args.reps < 1:
        sys.exit(f"[torch_models] --reps must be >= 1, got {args.reps}")
    if args.torch_threads < 1:
        sys.exit(f"[torch_models] --torch-threads must be >= 1, got {args.torch_threads}")
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit(f"[torch_models] unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    torch.set_num_threads(args.torch_threads)
    torch.set_grad_enabled(False)
    warnings.simplefilter("ignore")
    dev = opscope.device()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads; opscope device: "
          f"{opscope._C.device_description(0)}; load average {os.getloadavg()[0]:.1f}; median of {args.reps} "
          f"alternated calls{' (quick sizes)' if args.quick else ''}")
    print(f"{'model':<40} {'family':<15} {'rel err':>9} {'cpu ms':>9} {'opscope ms':>11} {'ratio':>7}  fallbacks")
    ratios = []
    for name in names:
        family, build = MODELS[name]
        try:
            err, cpu_t, dev_t, fb = measure(name, build, args.quick, args.reps, dev)
        except Exception as e:  # a model that fails on the device is a row, not the end of the run
            msg = str(e).splitlines()[0][:100]
            print(f"{name:<40} {family:<15} FAILED: {type(e).__name__}: {msg}", flush=True)
            continue
        ratios.append(dev_t / cpu_t)
        fbs = ", ".join(f"{k.replace('aten::', '')} x{v['count']}" for k, v in
                        sorted(fb.items(), key=lambda kv: -kv[1]["time_ms"])) or "none"
        err_s = f"{err:>9.1e}" if err is not None else f"{'(zero)':>9}"
        print(f"{name:<40} {family:<15} {err_s} {cpu_t * 1e3:>9.1f} {dev_t * 1e3:>11.1f} {dev_t / cpu_t:>6.2f}x  "
              f"{fbs}", flush=True)
    if ratios:
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geometric mean of opscope/cpu time over {len(ratios)} models: {gm:.2f}x; "
              f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
