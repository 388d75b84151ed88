"""The wall time of each of a compiled model's first calls, on opscope's device: the first
traces and compiles, the second packs the weights of its matmuls (a one-time cost), the
rest are steady. Models are tests/python/model_zoo.py's (random weights), or
`linear_stack`: 12 × (Linear 768→3072, GELU, Linear 3072→768) on 197 rows, ViT-B/16's MLP
shapes. To compare two libraries, run it with LD_LIBRARY_PATH pointing at each in turn.

    PYTHONPATH=build/python /usr/bin/python3 bench/compile_calls.py [--models vit_b_16,gpt2] [--calls 5] [--dtype bf16]
"""
import argparse
import os
import sys
import time
import warnings

import torch

import opscope

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
import model_zoo  # noqa: E402


def linear_stack():
    torch.manual_seed(0)
    layers = []
    for _ in range(12):
        layers += [torch.nn.Linear(768, 3072), torch.nn.GELU(), torch.nn.Linear(3072, 768)]
    return torch.nn.Sequential(*layers), [torch.randn(197, 768)]


def call_ms(name, calls, dtype):
    model, inputs = linear_stack() if name == "linear_stack" else model_zoo.make(name, "full")
    dev = opscope.device()
    model = model.to(dtype).to(dev)
    xs = [(x.to(dtype) if x.is_floating_point() else x).to(dev) for x in inputs]
    compiled = opscope.compile(model)
    times = []
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(calls):
            t0 = time.perf_counter()
            compiled(*xs)
            opscope.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="vit_b_16,gpt2,llama,linear_stack")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    args = ap.parse_args()
    if args.calls < 3:
        ap.error(f"--calls: expected at least 3 (trace, pack, steady), got {args.calls}")
    unknown = [m for m in args.models.split(",") if m != "linear_stack" and m not in model_zoo.ALL]
    if unknown:
        ap.error(f"--models: unknown model {unknown[0]!r} (model_zoo's: {', '.join(model_zoo.ALL)}; or linear_stack)")
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    print(f"{args.dtype}; ms per call, calls 1..{args.calls} (1: trace + compile, 2: packs); "
          f"load {os.getloadavg()[0]:.2f}")
    for name in args.models.split(","):
        print(f"{name:14s} " + " ".join(f"{t:8.1f}" for t in call_ms(name, args.calls, dtype)), flush=True)


if __name__ == "__main__":
    main()
