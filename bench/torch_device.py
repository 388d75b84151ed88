"""PyTorch on opscope's device vs torch's own CPU backend, measured in one run: every line
prints a ratio of two timings taken here, never a figure from another run.

    PYTHONPATH=build/python /usr/bin/python3 bench/torch_device.py [--quick]
"""
import argparse
import os
import time
import warnings

import torch_peer  # noqa: F401  (first: how torch's OpenBLAS threads, before torch loads it)

import torch
import torch.nn.functional as F

import opscope


def best_of(fn, reps, sync=None):
    """Best wall time of `reps` calls of fn (each ending with `sync`)."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        best = min(best, time.perf_counter() - t0)
    return best


def tiny_adds(dev, n=20000):
    x, y = torch.ones(8, device=dev), torch.ones(8, device=dev)

    def loop():
        z = x
        for _ in range(n):
            z = torch.add(x, y)
        return z
    return loop


def naive_rms_norm(x, w, eps=1e-6):
    # The case study's six-op form: pow, mean, add, rsqrt, mul, mul.
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, smaller models")
    ap.add_argument("--torch-threads", type=int, default=os.cpu_count(),
                    help="torch CPU's intra-op threads (default: all hardware threads, as opscope's cores)")
    args = ap.parse_args()
    torch.set_num_threads(args.torch_threads)
    reps = 3 if args.quick else 5
    dev = opscope.device()
    sync = opscope.synchronize
    warnings.simplefilter("ignore")
    torch.set_grad_enabled(False)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads; opscope device: "
          f"{opscope._C.device_description(0)}; load average {os.getloadavg()[0]:.1f}")

    # 1. Tiny ops through torch's dispatcher.
    cpu_t = best_of(tiny_adds("cpu"), reps)
    dev_t = best_of(tiny_adds(dev), reps, sync)
    print(f"tiny add (8 elements) x 20000: cpu {cpu_t / 20000 * 1e6:.2f} us/op, opscope {dev_t / 20000 * 1e6:.2f} "
          f"us/op  -> opscope/cpu time {dev_t / cpu_t:.2f}x")

    # 2. Naive RMSNorm 4096x4096 through torch's ops.
    x, w = torch.randn(4096, 4096), torch.randn(4096)
    xd, wd = x.to(dev), w.to(dev)
    cpu_t = best_of(lambda: naive_rms_norm(x, w), reps)
    dev_t = best_of(lambda: naive_rms_norm(xd, wd), reps, sync)
    print(f"naive RMSNorm 4096x4096 (6 ops): cpu {cpu_t * 1e3:.1f} ms, opscope {dev_t * 1e3:.1f} ms  -> "
          f"speedup {cpu_t / dev_t:.2f}x")

    # 3. The built-in fused kernel vs torch's own fused norm on CPU.
    fused_t = best_of(lambda: opscope.ops.rms_norm(xd, wd, 1e-6), reps, sync)
    ln_t = best_of(lambda: F.layer_norm(x, (4096,), w, w), reps)
    print(f"opscope.ops.rms_norm {fused_t * 1e3:.1f} ms vs torch CPU F.layer_norm {ln_t * 1e3:.1f} ms -> "
          f"speedup {ln_t / fused_t:.2f}x; vs naive on opscope {dev_t / fused_t:.2f}x")

    # 4. Models: forward on the device vs torch CPU, and the share of fallbacks.
    import torchvision
    for name, size in (("resnet18", 64 if args.quick else 224), ("vit_b_16", 224)):
        torch.manual_seed(0)
        m = getattr(torchvision.models, name)().eval()
        inp = torch.randn(1, 3, size, size)
        cpu_t = best_of(lambda: m(inp), reps)
        md, ind = m.to(dev), inp.to(dev)
        md(ind)
        sync()
        opscope.reset_fallback_stats()
        dev_t = best_of(lambda: md(ind), reps, sync)
        stats = opscope.fallback_stats()
        fb_ms = sum(s["time_ms"] for s in stats.values()) / reps
        top = sorted(stats.items(), key=lambda kv: -kv[1]["time_ms"])[:3]
        where = ", ".join(f"{k} {v['time_ms'] / reps:.1f} ms" for k, v in top) or "none"
        print(f"{name} 1x3x{size}x{size}: cpu {cpu_t * 1e3:.1f} ms, opscope {dev_t * 1e3:.1f} ms (best of {reps}) -> "
              f"opscope/cpu time {dev_t / cpu_t:.2f}x; fallbacks (synchronize + torch CPU kernel) {fb_ms:.1f} ms "
              f"per forward on average: {where}")
        m.cpu()


if __name__ == "__main__":
    main()
