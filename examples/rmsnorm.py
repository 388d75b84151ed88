"""The RMSNorm case study in PyTorch, profiled: the six-op RMSNorm a model's Python writes
(x_sq and mean_sq materialized), the built-in fused kernel (opscope.ops.rms_norm), and
the six-op version compiled (opscope.compile) — each profiled with opscope.profiler on
opscope's device, its key_averages table printed, its profile saved, then the three
compared (device time per call, peak device memory) in this run.

    PYTHONPATH=build/python /usr/bin/python3 examples/rmsnorm.py [--shape 4096x4096] [--iters 5] [--out DIR]

Then: `build/tools/opscope table DIR/naive`, `opscope diff DIR/naive DIR/builtin`,
`opscope advise DIR/naive`, `opscope explore DIR/naive DIR/builtin DIR/compiled`.
"""
import argparse
import os
import sys

import torch

import opscope
from opscope.profiler import Config, Exporter, ProfilerActivity, profile


def naive_rms_norm(x, weight, eps=1e-6):
    x_sq = x * x                                # 1: mul
    mean_sq = x_sq.mean(-1, keepdim=True)       # 2: mean
    r = torch.rsqrt(mean_sq + eps)              # 3: add, 4: rsqrt
    return x * r * weight                       # 5: mul, 6: mul


def builtin_rms_norm(x, weight, eps=1e-6):
    return opscope.ops.rms_norm(x, weight, eps)


def parse_shape(s):
    try:
        dims = [int(d) for d in s.lower().split("x")]
    except ValueError:
        dims = []
    if len(dims) != 2 or min(dims) < 1:
        raise SystemExit(f"rmsnorm.py: [--shape] '{s}' is not ROWSxCOLS with both at least 1")
    return dims


def profile_version(name, fn, x, w, iters, out):
    """Profiles `iters` calls of fn (after one warm call) and saves the profile to out/name."""
    fn(x, w)
    opscope.synchronize()
    cfg = Config(output_dir=os.path.join(out, name))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.DEVICE], experimental_config=cfg,
                 on_trace_ready=Exporter(cfg).export_trace, profile_memory=True, record_shapes=True) as prof:
        for _ in range(iters):
            with torch.profiler.record_function(f"rmsnorm {name}"):
                y = fn(x, w)
            opscope.synchronize()
    return prof, y, cfg.output_dir


def peak_bytes(prof):
    peak = 0
    for kind, _, _, _, _, _, _, _, _, value in prof.events():
        if kind == "alloc":
            peak = max(peak, value)
    return peak


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="4096x4096", help="ROWSxCOLS of x (f32)")
    ap.add_argument("--iters", type=int, default=5, help="profiled calls of each version")
    ap.add_argument("--out", default="opscope-profile", help="folder for the three profiles")
    ap.add_argument("--rows", type=int, default=12, help="rows of each table")
    args = ap.parse_args()
    if args.iters < 1:
        raise SystemExit(f"rmsnorm.py: [--iters] must be at least 1, got {args.iters}")
    rows, cols = parse_shape(args.shape)
    dev = opscope.device()
    torch.manual_seed(0)
    x = torch.randn(rows, cols).to(dev)
    w = torch.randn(cols).to(dev)
    versions = [("naive", naive_rms_norm), ("builtin", builtin_rms_norm),
                ("compiled", opscope.compile(naive_rms_norm, name="rms_norm_compiled"))]

    print(f"RMSNorm {rows}x{cols} f32 on {opscope._C.device_description(0)}, {args.iters} calls per version\n")
    results, outputs = {}, {}
    for name, fn in versions:
        prof, y, folder = profile_version(name, fn, x, w, args.iters, args.out)
        ka = prof.key_averages()
        print(f"== {name} (profile: {folder})")
        print(ka.table(sort_by="device_time_total", row_limit=args.rows))
        results[name] = (ka.self_device_time_total / args.iters, peak_bytes(prof))
        outputs[name] = y.cpu()

    for name in ("builtin", "compiled"):
        torch.testing.assert_close(outputs[name], outputs["naive"], atol=1e-4, rtol=1e-4)
    base = results["naive"][0]
    mib = 1 << 20
    print("== comparison (device time per call, from each profile's kernels; peak device memory)")
    for name, (us, peak) in results.items():
        print(f"  {name:9s} {us / 1e3:9.3f} ms   {base / us:5.2f}x of naive   peak {peak / mib:8.1f} MiB")
    print(f"  results agree (max |builtin - naive| = {(outputs['builtin'] - outputs['naive']).abs().max().item():.3g})")
    fallbacks = opscope.fallback_stats()
    if fallbacks:
        print(opscope.fallback_report(), file=sys.stderr)


if __name__ == "__main__":
    main()
