"""Depthwise convolutions on EfficientNet's shapes: opscope's device against torch CPU (given
as many threads as the device has cores), best of N calls each, in one run; the last column
is the ratio.

    PYTHONPATH=build/python /usr/bin/python3 bench/depthwise_conv.py [--reps 20]
"""
import argparse
import os

import torch_peer  # noqa: F401  (first: how torch's OpenBLAS threads, before torch loads it)

import torch
import torch.nn.functional as F

import opscope
from best_of import best_seconds

# (channels, side, kernel, stride): EfficientNet-B0's depthwise layers at 224x224.
SHAPES = [(32, 112, 3, 1), (96, 112, 3, 2), (144, 56, 3, 1), (144, 56, 5, 2), (240, 28, 5, 1),
          (240, 28, 3, 2), (480, 14, 3, 1), (672, 14, 5, 1), (672, 14, 5, 2), (1152, 7, 5, 1)]


def best_ms(fn, sync, reps):
    return best_seconds(fn, sync, reps, warmup=1) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    if a.reps < 1:
        raise SystemExit(f"[--reps] must be >= 1, got {a.reps}")
    torch.set_num_threads(os.cpu_count())
    torch.set_grad_enabled(False)
    dev = opscope.device()
    print(f"depthwise conv2d f32, best of {a.reps}, torch with {torch.get_num_threads()} threads")
    for c, side, k, s in SHAPES:
        x, w = torch.randn(1, c, side, side), torch.randn(c, 1, k, k)
        xd, wd = x.to(dev), w.to(dev)
        cpu = best_ms(lambda: F.conv2d(x, w, stride=s, padding=k // 2, groups=c), lambda: None, a.reps)
        ops = best_ms(lambda: F.conv2d(xd, wd, stride=s, padding=k // 2, groups=c), opscope.synchronize, a.reps)
        print(f"{c:5d} ch {side:3d}x{side:<3d} {k}x{k} stride {s}: torch CPU {cpu:7.3f} ms, opscope {ops:7.3f} ms, "
              f"opscope / CPU {ops / cpu:5.2f}")


if __name__ == "__main__":
    main()
