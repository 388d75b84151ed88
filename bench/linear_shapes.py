"""F.linear on opscope's device at a decoder's shapes (128 tokens, d=512) and beyond: device
time per call (synchronized, median of R calls) and GFLOP/s, with the relative error against
torch CPU's product in f32. For A/B runs of a kernel change, run it on each library
(LD_LIBRARY_PATH to a copy of the old libopscope.so) back to back.

    PYTHONPATH=build/python /usr/bin/python3 bench/linear_shapes.py [--dtype f32|bf16] [--repeats 50]
"""
import argparse
import time

import torch

import opscope

SHAPES = [(128, 512, 1536), (128, 512, 512), (128, 512, 2048), (128, 2048, 512), (128, 512, 1024),
          (512, 1024, 1024), (1024, 1024, 1024), (8, 4096, 4096)]  # (rows, in, out)


def median_s(f, repeats):
    f()
    opscope.synchronize()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        opscope.synchronize()
        ts.append(time.perf_counter() - t0)
    return sorted(ts)[len(ts) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--repeats", type=int, default=50)
    args = ap.parse_args()
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    dev = opscope.device()
    torch.manual_seed(0)
    print(f"F.linear, {args.dtype}, median of {args.repeats}")
    for m, k, n in SHAPES:
        x, w = torch.randn(m, k).to(dtype), torch.randn(n, k).to(dtype)
        want = x.float() @ w.float().t()
        xd, wd = x.to(dev), w.to(dev)
        s = median_s(lambda: torch.nn.functional.linear(xd, wd), args.repeats)
        got = torch.nn.functional.linear(xd, wd).cpu().float()
        err = ((got - want).abs().max() / want.abs().max()).item()
        print(f"{m:5d} x {k:5d} -> {n:5d}  {s * 1e3:8.3f} ms  {2 * m * n * k / s / 1e9:7.1f} GFLOP/s  rel err {err:.1e}")


if __name__ == "__main__":
    main()
