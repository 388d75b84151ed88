"""torchvision's deform_conv2d (DCN v2: offsets and a mask, 3x3, padding 1) on opscope's
device against torchvision's CPU kernel, torch given as many threads as the device has
cores; the two alternated, median of N calls each, in one run; the last column is the ratio.

    PYTHONPATH=build/python /usr/bin/python3 bench/deform_conv.py [--reps 9]
"""
import argparse
import os
import statistics
import time

import torch_peer  # noqa: F401  (first: how torch's OpenBLAS threads, before torch loads it)

import torch
from torchvision.ops import deform_conv2d

import opscope

# (batch, channels in = out, side): a DCN layer at ResNet's stages.
SHAPES = [(1, 64, 56), (4, 128, 28), (1, 256, 14)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=9)
    a = ap.parse_args()
    if a.reps < 1:
        raise SystemExit(f"[--reps] must be >= 1, got {a.reps}")
    torch.set_num_threads(os.cpu_count())
    torch.set_grad_enabled(False)
    dev = opscope.device()
    print(f"deform_conv2d f32 3x3 with a mask, median of {a.reps}, torch with {torch.get_num_threads()} threads")
    for n, c, side in SHAPES:
        cpu_args = [torch.randn(n, c, side, side), torch.randn(n, 18, side, side), torch.randn(c, c, 3, 3),
                    torch.randn(c), torch.rand(n, 9, side, side)]
        dev_args = [t.to(dev) for t in cpu_args]
        sides = {"cpu": (cpu_args, lambda: None), "opscope": (dev_args, opscope.synchronize)}
        times = {k: [] for k in sides}
        for i in range(a.reps + 1):
            for k in (list(sides) if i % 2 == 0 else list(sides)[::-1]):
                (x, off, w, b, m), sync = sides[k]
                t0 = time.perf_counter()
                deform_conv2d(x, off, w, b, padding=1, mask=m)
                sync()
                if i:  # the first call of each warms up
                    times[k].append((time.perf_counter() - t0) * 1e3)
        cpu, ops = statistics.median(times["cpu"]), statistics.median(times["opscope"])
        print(f"({n}, {c}, {side}, {side}) -> {c}: torchvision CPU {cpu:7.2f} ms, opscope {ops:7.2f} ms, "
              f"opscope / CPU {ops / cpu:5.2f}")


if __name__ == "__main__":
    main()
