"""The method on a whole model: profile a decoder eager on opscope's device, let the table
name the hotspot, confirm it in the trace, compile with opscope.compile, profile again, and
compare the two per module (opscope diff).

    PYTHONPATH=build/python /usr/bin/python3 examples/method.py [--model gpt2|llama] [--size full|small]
        [--iters 3] [--out DIR] [--cli build/tools/opscope]

The models are plain PyTorch as others write them (nanoGPT's GPT-2, Meta's Llama naming),
from the test suite's model zoo (tests/python/model_zoo.py), with random weights. Then:
`opscope explore DIR/eager DIR/compiled` shows both, kernel by kernel.
"""
import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import warnings

import torch

import opscope
from opscope.profiler import Config, Exporter, ProfilerActivity, profile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import model_zoo  # noqa: E402


def profiled(name, fn, inputs, iters, out):
    """Profiles `iters` forwards of fn into out/name: (prof, folder). The warm-up runs them
    the same way first: forwards queued back to back keep more memory in flight than one
    forward does (a compiled model's host runs further ahead), and the first touch of each
    fresh page is paid inside a kernel. (The first call alone first: it compiles. Then two
    bursts: on this machine one left the profiled window up to 1.3x slower.)"""
    fn(*inputs)
    opscope.synchronize()
    for _ in range(2):
        for _ in range(iters):
            fn(*inputs)
        opscope.synchronize()
    cfg = Config(output_dir=os.path.join(out, name))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.DEVICE], experimental_config=cfg,
                 on_trace_ready=Exporter(cfg).export_trace) as prof:
        for _ in range(iters):
            fn(*inputs)
        opscope.synchronize()
    return prof, cfg.output_dir


def wall_ms(fns, inputs, repeats=7):
    """Median ms per forward of each fn, the calls alternated so that load hits all alike."""
    times = [[] for _ in fns]
    for _ in range(repeats):
        for t, fn in zip(times, fns):
            t0 = time.perf_counter()
            fn(*inputs)
            opscope.synchronize()
            t.append((time.perf_counter() - t0) * 1e3)
    return [statistics.median(t) for t in times]


def hotspot(averages):
    """The framework op with the most self device time: the table's first row."""
    ops = [r for r in averages if r.kind == "op"]
    return max(ops, key=lambda r: r.self_device_time_total)


def in_the_trace(folder, op):
    """The device time of op's kernels read from trace.json alone: its op events' correlation
    ids, the kernel slices (one per core a launch ran on) that carry them, and each launch's
    span from its first slice's start to its last slice's end (the table's device time)."""
    events = json.load(open(os.path.join(folder, "trace.json")))["traceEvents"]
    ids = {e["args"]["correlation_id"] for e in events if e.get("cat") == "op" and e.get("name") == op}
    spans = {}
    for e in events:
        if e.get("cat") == "kernel" and e.get("args", {}).get("correlation_id") in ids:
            t0, t1, _ = spans.get(e["args"]["launch_id"], (e["ts"], e["ts"] + e["dur"], e["name"]))
            spans[e["args"]["launch_id"]] = (min(t0, e["ts"]), max(t1, e["ts"] + e["dur"]), e["name"])
    kernels = collections.Counter(name for _, _, name in spans.values())
    return len(ids), kernels, sum(t1 - t0 for t0, t1, _ in spans.values())


def module_rows(averages, iters):
    """Device time per forward (ms) of each nn.Module row, by its path ("h.0.mlp")."""
    return {r.key: r.device_time_total / 1e3 / iters for r in averages
            if r.kind == "range" and r.key[:1].islower()}


def find_cli(given):
    """--cli, else the build's own CLI beside this opscope package (build/python/opscope ->
    build/tools/opscope), else `opscope` on PATH."""
    beside = os.path.join(os.path.dirname(os.path.abspath(opscope.__file__)), "..", "..", "tools", "opscope")
    for c in (given, beside, shutil.which("opscope")):
        if c and os.access(c, os.X_OK):
            return c
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="gpt2", choices=("gpt2", "llama"))
    ap.add_argument("--size", default="full", choices=("full", "small"))
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--out", default="opscope-profile/method")
    ap.add_argument("--cli", default=None, help="the opscope CLI for the diff (default: on PATH, or build/tools)")
    a = ap.parse_args()
    if a.iters < 1:
        raise SystemExit(f"method.py: [--iters] must be at least 1, got {a.iters}")

    model, inputs = model_zoo.make(a.model, a.size)
    dev = opscope.device()
    model = model.to(dev)
    xs = [x.to(dev) for x in inputs]
    torch.set_grad_enabled(False)

    # 1. Eager: the table names the hotspot.
    eager_prof, eager_dir = profiled("eager", model, xs, a.iters, a.out)
    eager = eager_prof.key_averages()
    print(f"== eager: {a.model} ({a.size}), {a.iters} forwards, profile in {eager_dir}")
    print(eager.table(sort_by="self_device_time_total", row_limit=10))
    hot = hotspot(eager)
    share = hot.self_device_time_total / eager.self_device_time_total
    print(f"\n== the hotspot: {hot.key}, {share:.0%} of the device time "
          f"({hot.self_device_time_total / 1e3:.1f} ms in {hot.count} calls)")
    modules = module_rows(eager, a.iters)
    leaves = [m for m in modules if not any(o.startswith(m + ".") for o in modules)]
    top = sorted(leaves, key=lambda m: -modules[m])[:5]
    print("modules with the most device time per forward: " + ", ".join(f"{m} {modules[m]:.2f} ms" for m in top))

    # 2. Confirm it in the trace: the same time, from trace.json's own events.
    calls, kernels, us = in_the_trace(eager_dir, hot.key)
    print(f"\n== confirmed in {os.path.join(eager_dir, 'trace.json')}: {hot.key}'s {calls} calls launched "
          + ", ".join(f"{k} x{n}" for k, n in kernels.most_common())
          + f"; from their first to their last slice on the device's cores: {us / 1e3:.1f} ms, the table's "
          f"{hot.self_device_time_total / 1e3:.1f} ms")

    # 3. Compile, profile again.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a recompile warning is the report's business, not the example's
        compiled = opscope.compile(model)
        comp_prof, comp_dir = profiled("compiled", compiled, xs, a.iters, a.out)
    comp = comp_prof.key_averages()
    print(f"\n== compiled: opscope.compile(model), profile in {comp_dir}")
    print(comp.table(sort_by="self_device_time_total", row_limit=10))
    torch.testing.assert_close(compiled(*xs).cpu(), model(*xs).cpu(), rtol=1e-5, atol=1e-5)

    # 4. Compare: the whole forward, then module by module.
    e_ms, c_ms = wall_ms([model, compiled], xs)
    e_dev = eager.self_device_time_total / 1e3 / a.iters
    c_dev = comp.self_device_time_total / 1e3 / a.iters
    print(f"\n== eager vs compiled, per forward: wall {e_ms:.2f} -> {c_ms:.2f} ms ({c_ms / e_ms:.2f}x), "
          f"device time {e_dev:.2f} -> {c_dev:.2f} ms ({c_dev / e_dev:.2f}x); outputs equal within 1e-5")
    after = module_rows(comp, a.iters)
    shared = [m for m in top if m in after]
    print("the hotspot's modules on both sides (device ms per forward): "
          + ", ".join(f"{m} {modules[m]:.2f} -> {after[m]:.2f}" for m in shared))
    cli = find_cli(a.cli)
    if cli is None:
        print("\n(the opscope CLI is not built: `opscope diff " + eager_dir + " " + comp_dir + " --kind range`)")
        return
    print(f"\n== opscope diff {eager_dir} {comp_dir} --kind range (module rows matched by path)")
    sys.stdout.flush()
    r = subprocess.run([cli, "diff", eager_dir, comp_dir, "--kind", "range", "--row-limit", "12"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"method.py: opscope diff failed: {r.stderr.strip()}")
    print(r.stdout)


if __name__ == "__main__":
    main()
