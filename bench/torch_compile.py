"""opscope.compile measured in one run:
  1. the naive six-op RMSNorm compiled vs opscope.ops.rms_norm (the built-in fused kernel)
     vs the naive version eager, on the device, at 4096x4096 and 32x4096 (f32);
  2. tracing + compile time of a new graph, cold (empty cache dir) and warm (cached artifact);
  3. a Llama-style decoder block (tests/python/test_compile.py's) eager vs compiled.

    PYTHONPATH=build/python /usr/bin/python3 bench/torch_compile.py [--repeats R]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import torch

import opscope

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from test_compile import DecoderBlock, naive_rms_norm  # noqa: E402


def median_ms(fn, repeats, inner=1):
    fn()
    opscope.synchronize()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        opscope.synchronize()
        ts.append((time.perf_counter() - t0) * 1e3 / inner)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()
    dev = opscope.device()
    print(f"device: {opscope._C.device_description(0)}")
    for shape, inner in (((4096, 4096), 1), ((32, 4096), 50)):
        x, w = torch.randn(*shape).to(dev), torch.randn(shape[-1]).to(dev)
        compiled = opscope.compile(naive_rms_norm)
        fused = median_ms(lambda: opscope.ops.rms_norm(x, w, 1e-6), args.repeats, inner)
        comp = median_ms(lambda: compiled(x, w), args.repeats, inner)
        naive = median_ms(lambda: naive_rms_norm(x, w), args.repeats, inner)
        torch.testing.assert_close(compiled(x, w).cpu(), opscope.ops.rms_norm(x, w, 1e-6).cpu(), atol=1e-5, rtol=1e-5)
        print(f"RMSNorm {shape[0]}x{shape[1]} f32 (median ms per call): built-in {fused:.3f}, compiled {comp:.3f}, "
              f"naive eager {naive:.3f}; compiled / built-in = {comp / fused:.2f}, naive / compiled = {naive / comp:.2f}")

    # Cold and warm first calls, each in a fresh process sharing one new cache folder.
    probe = ("import json, time, torch, opscope\n"
             "x = torch.randn(32, 1024).to(opscope.device())\n"
             "f = lambda t: t * torch.rsqrt((t * t).mean(-1, keepdim=True) + 1e-6)\n"
             "c = opscope.compile(f)\n"
             "t0 = time.perf_counter(); c(x); opscope.synchronize(); first = time.perf_counter() - t0\n"
             "t0 = time.perf_counter(); c(x); opscope.synchronize(); later = time.perf_counter() - t0\n"
             "r = c.report(x)[0]\n"
             "print(json.dumps([first, later, r.cache_hit, r.build_ms]))\n")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, OPSCOPE_CACHE_DIR=cache)
        runs = [json.loads(subprocess.run([sys.executable, "-c", probe], env=env, check=True, capture_output=True,
                                          text=True).stdout.splitlines()[-1]) for _ in range(2)]
    (cold, later, hit0, build_ms), (warm, _, hit1, _) = runs
    print(f"first call of a new graph (32x1024 RMSNorm, fresh process each): cold {cold * 1e3:.0f} ms "
          f"(trace + passes + C++ build {build_ms:.0f} ms + load; cache hit {hit0}), warm {warm * 1e3:.0f} ms "
          f"(cache hit {hit1}); the next call {later * 1e3:.2f} ms")

    torch.manual_seed(0)
    block = DecoderBlock(d=512, heads=8, ff=1376).eval().to(dev)
    xb = torch.randn(1, 128, 512).to(dev)
    mask = torch.triu(torch.full((128, 128), -1e9), 1).to(dev)
    cb = opscope.compile(block)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            eager = median_ms(lambda: block(xb, mask), args.repeats)
            comp = median_ms(lambda: cb(xb, mask), args.repeats)
    print(f"decoder block (d=512, 8 heads, ff=1376, 128 tokens): eager {eager:.2f} ms, compiled {comp:.2f} ms, "
          f"eager / compiled = {eager / comp:.2f}")


if __name__ == "__main__":
    main()
