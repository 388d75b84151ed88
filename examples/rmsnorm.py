"""The RMSNorm case study in PyTorch: the six-op naive RMSNorm (what a model's Python
writes) against the built-in fused kernel, both on opscope's device; results compared
and the time ratio printed (measured in this run).

    PYTHONPATH=build/python /usr/bin/python3 examples/rmsnorm.py [--rows 4096 --cols 4096]
"""
import argparse
import time

import torch

import opscope


def naive_rms_norm(x, weight, eps):
    # pow, mean, add, rsqrt, mul, mul: six launches, five intermediate tensors
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def timed(fn, reps):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        opscope.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    dev = opscope.device()
    torch.manual_seed(0)
    x = torch.randn(args.rows, args.cols).to(dev)
    w = torch.randn(args.cols).to(dev)
    eps = 1e-6

    naive = naive_rms_norm(x, w, eps)
    fused = opscope.ops.rms_norm(x, w, eps)
    err = (naive - fused).abs().max().item()
    print(f"max |naive - built-in| = {err:.3g}")

    t_naive = timed(lambda: naive_rms_norm(x, w, eps), args.reps)
    t_fused = timed(lambda: opscope.ops.rms_norm(x, w, eps), args.reps)
    gb = 2 * x.numel() * x.element_size() / 1e9  # the fused kernel's traffic: read x, write y
    print(f"naive (6 ops): {t_naive * 1e3:.2f} ms; built-in opscope.ops.rms_norm: {t_fused * 1e3:.2f} ms "
          f"({gb / t_fused:.1f} GB/s) -> built-in is {t_naive / t_fused:.2f}x faster")
    print(opscope.fallback_report())


if __name__ == "__main__":
    main()
