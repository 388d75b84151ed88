"""What profiling costs a torch program, measured in one run:
  1. opscope.profiler's added time per aten op on the device (20,000 adds of 8 elements,
     profiled vs not, record_shapes off and on), beside torch.profiler's own added time per
     op on CPU tensors (the same loop; Debian's torch 1.13 has no Kineto, so that is the
     legacy autograd profiler torch.profiler falls back to);
  2. key_averages + table over 1M recorded aten ops.

    PYTHONPATH=build/python /usr/bin/python3 bench/torch_profiler_overhead.py [--ops N] [--repeats R]
"""
import argparse
import contextlib
import statistics
import time

import torch

import opscope
from opscope.profiler import Config, ProfilerActivity, profile


def loop(a, b, n):
    for _ in range(n):
        torch.add(a, b)


def per_op_ns(loop, n, repeats, context=None):
    """Medians over repeats of the loop's (wall, host-thread CPU) time per op, the device
    drained before and after, timed inside the profile `context()` makes: a window's start
    and collection are not counted. The thread's CPU time is what the profiler adds to the
    calling thread, and is what stays steady while other work shares the cores."""
    wall, cpu = [], []
    for _ in range(repeats):
        with context() if context else contextlib.nullcontext():
            opscope.synchronize()
            t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            loop()
            opscope.synchronize()
            wall.append((time.perf_counter_ns() - t0) / n)
            cpu.append((time.thread_time_ns() - c0) / n)
    return statistics.median(wall), statistics.median(cpu)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--table-ops", type=int, default=1_000_000)
    args = ap.parse_args()
    n = args.ops
    cfg = Config(output_dir="/tmp/opscope-bench-profile", max_events=4 * n + 1024)
    dev = opscope.device()
    a, b = torch.randn(8).to(dev), torch.randn(8).to(dev)
    ca, cb = torch.randn(8), torch.randn(8)
    loop(a, b, 2000)
    loop(ca, cb, 2000)

    dev_loop = lambda: loop(a, b, n)  # noqa: E731
    cpu_loop = lambda: loop(ca, cb, n)  # noqa: E731
    ours_ctx = lambda shapes: (lambda: profile(experimental_config=cfg, record_shapes=shapes,  # noqa: E731
                                               with_modules=False))
    torch_ctx = lambda: torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])  # noqa: E731

    base = per_op_ns(dev_loop, n, args.repeats)
    ours = per_op_ns(dev_loop, n, args.repeats, ours_ctx(False))
    ours_shapes = per_op_ns(dev_loop, n, args.repeats, ours_ctx(True))
    cpu_base = per_op_ns(cpu_loop, n, args.repeats)
    theirs = per_op_ns(cpu_loop, n, args.repeats, torch_ctx)
    print(f"{n} torch.add of 8 elements, median of {args.repeats}, ns per op (wall / calling thread's CPU), "
          f"timed inside a running profile")
    rows = [("opscope device, unprofiled", base, None), ("opscope device, opscope.profiler", ours, base),
            ("opscope device, + record_shapes", ours_shapes, base), ("torch CPU, unprofiled", cpu_base, None),
            ("torch CPU, torch.profiler", theirs, cpu_base)]
    for name, (w, c), ref in rows:
        added = f"   added {w - ref[0]:6.0f} / {c - ref[1]:6.0f}" if ref else ""
        print(f"  {name:36s} {w:7.0f} / {c:7.0f}{added}")
    ours_added, theirs_added = ours[1] - base[1], theirs[1] - cpu_base[1]
    print(f"  added CPU per op, torch.profiler / opscope.profiler: {theirs_added / max(ours_added, 1):.2f}x")

    # key_averages over many recorded aten ops (CPU tensors: framework events only).
    m = args.table_ops
    big = Config(output_dir="/tmp/opscope-bench-profile", max_events=m + 1024)
    with profile(activities=[ProfilerActivity.CPU], experimental_config=big, with_modules=False) as prof:
        loop(ca, cb, m)
    recorded = sum(1 for e in prof.events() if e[0] == "op")
    t0 = time.perf_counter()
    ka = prof.key_averages()
    table = ka.table(sort_by="self_cpu_time_total", row_limit=10)
    t1 = time.perf_counter()
    assert "aten::add" in table
    print(f"key_averages + table over {recorded} recorded aten ops: {t1 - t0:.3f} s (dropped {prof.dropped})")


if __name__ == "__main__":
    main()
