"""The opscope c10d backend on 2 processes of this machine, measured in one run.

busbw: all_reduce of f32 tensors from 8 B to 64 MiB, nccl-tests' table (size, count, time,
algbw, busbw), for three groups of the same two processes, alternated size by size:
opscope device tensors (the default: each collective first compares its signature across
ranks), opscope with that check off (OPSCOPE_DIST_CHECK=0), and Gloo on CPU tensors.
Time per collective: rank 0's host clock over `--iters` back-to-back collectives ended by a
read, median of `--rounds`. algbw = size / time; busbw = algbw x 2(n-1)/n (= algbw for n=2).

tp: examples/tp_llama.py under opscope.run (2 ranks), profiled; each rank's device time
split from its profile: compute (the union of its cores' kernels), communication (its
collectives' kernels), the part of communication no compute kernel overlaps (exposed), and
the window's span.

    PYTHONPATH=build/python /usr/bin/python3 bench/distributed_bench.py busbw [--rounds 5] [--iters 20]
    PYTHONPATH=build/python /usr/bin/python3 bench/distributed_bench.py tp [--steps 8]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = [8 << (2 * k) for k in range(13)]  # 8 B .. 128 MiB in steps of 4x
SIZES = [s for s in SIZES if s <= 64 << 20]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(args):
    """One of the two processes of `busbw`."""
    import torch
    import torch.distributed as dist
    import opscope
    dist.init_process_group("opscope")
    os.environ["OPSCOPE_DIST_CHECK"] = "0"
    unchecked = dist.new_group(backend="opscope")
    os.environ["OPSCOPE_DIST_CHECK"] = "1"
    gloo = dist.new_group(backend="gloo")
    n = dist.get_world_size()
    dev = opscope.device()
    sides = [("opscope", None, dev), ("opscope unchecked", unchecked, dev), ("gloo cpu", gloo, torch.device("cpu"))]
    results = {}
    for size in SIZES:
        count = size // 4
        bufs = {name: torch.ones(count, device=d) if d.type == "cpu" else torch.ones(count).to(d) for name, _, d in sides}
        iters = max(2, min(args.iters, int(args.iters * (1 << 20) / max(size, 1 << 20))))
        times = {name: [] for name, _, _ in sides}
        for _ in range(args.rounds):
            for name, group, d in sides:
                x = bufs[name]
                dist.barrier(group=gloo)
                dist.all_reduce(x, group=group)  # warm: connections, buffers
                x.cpu() if d.type != "cpu" else None
                dist.barrier(group=gloo)
                t0 = time.perf_counter_ns()
                for _ in range(iters):
                    dist.all_reduce(x, group=group)
                x[:1].cpu()  # the last one done (the device's are queued)
                times[name].append((time.perf_counter_ns() - t0) / iters)
        results[size] = {name: statistics.median(v) for name, v in times.items()}
    if dist.get_rank() == 0:
        with open(args.out, "w") as f:
            json.dump({"n": n, "results": {str(k): v for k, v in results.items()}}, f)
    dist.barrier(group=gloo)
    dist.destroy_process_group()


def human(b):
    for unit, k in (("MiB", 20), ("KiB", 10)):
        if b >= 1 << k:
            return f"{b >> k} {unit}"
    return f"{b} B"


def busbw(args):
    port = free_port()
    out = tempfile.mktemp(suffix=".json")
    procs = []
    for r in range(2):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r), LOCAL_WORLD_SIZE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, __file__, "_rank", "--out", out, "--rounds", str(args.rounds),
                                       "--iters", str(args.iters)], env=env))
    try:
        for p in procs:
            p.wait(timeout=3600)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    with open(out) as f:
        data = json.load(f)
    os.unlink(out)
    n = data["n"]
    factor = 2 * (n - 1) / n
    print(f"all_reduce, f32, sum, {n} processes on one machine (load {os.getloadavg()[0]:.1f}); "
          f"median of {args.rounds} rounds, the three alternated per size")
    head = f"{'size':>9} {'count':>9} |"
    names = ["opscope", "opscope unchecked", "gloo cpu"]
    for nm in names:
        head += f" {nm + ' us':>20} {'busbw GB/s':>10} |"
    print(head + f" {'opscope/gloo':>12} {'unchecked/gloo':>14}")
    for size, row in sorted(((int(k), v) for k, v in data["results"].items())):
        line = f"{human(size):>9} {size // 4:>9} |"
        for nm in names:
            us = row[nm] / 1e3
            line += f" {us:>20.1f} {size / row[nm] * factor:>10.3f} |"
        line += f" {row['opscope'] / row['gloo cpu']:>12.2f} {row['opscope unchecked'] / row['gloo cpu']:>14.2f}"
        print(line)
    print("time: per collective (lower is better); the ratios are time over Gloo's time on CPU tensors.")


# ---- tp: the tensor-parallel decoder's per-rank split
def union(intervals):
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def length(ivs):
    return sum(b - a for a, b in ivs)


def overlap(a, b):
    """Length of the intersection of two unions of intervals."""
    i = j = 0
    total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def split_of(trace_path):
    with open(trace_path) as f:
        doc = json.load(f)
    compute, comm = [], []
    t_min, t_max = None, None
    for e in doc["traceEvents"]:
        if e.get("ph") != "X" or e.get("cat") != "kernel":
            continue
        iv = (e["ts"], e["ts"] + e["dur"])
        (comm if "collective" in e.get("args", {}) else compute).append(iv)
        t_min = iv[0] if t_min is None else min(t_min, iv[0])
        t_max = iv[1] if t_max is None else max(t_max, iv[1])
    cu, mu = union(compute), union(comm)
    return {"span": t_max - t_min, "compute": length(cu), "comm": length(mu), "exposed": length(mu) - overlap(cu, mu),
            "collectives": len(comm)}


def tp(args):
    out = tempfile.mkdtemp(prefix="tp-bench-")
    cmd = [sys.executable, "-m", "opscope.run", "--nproc_per_node", "2", "--master_port", str(free_port()),
           os.path.join(ROOT, "examples", "tp_llama.py"), "--steps", str(args.steps), "--out", out,
           "--dim", str(args.dim), "--hidden", str(args.dim * 3), "--layers", str(args.layers)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=3600)
    print(f"examples/tp_llama.py, 2 ranks, dim {args.dim}, {args.layers} layers, prefill + {args.steps} decode "
          f"steps (load {os.getloadavg()[0]:.1f}); from each rank's profile in {out}")
    print(f"{'rank':>4} {'span ms':>8} {'compute ms':>10} {'comm ms':>8} {'exposed comm ms':>15} "
          f"{'comm/span':>9} {'exposed/comm':>12} {'collectives':>11}")
    for r in range(2):
        s = split_of(os.path.join(out, f"rank-{r}", "trace.json"))
        print(f"{r:>4} {s['span'] / 1e3:>8.2f} {s['compute'] / 1e3:>10.2f} {s['comm'] / 1e3:>8.2f} "
              f"{s['exposed'] / 1e3:>15.2f} {s['comm'] / s['span']:>9.2f} {s['exposed'] / max(s['comm'], 1e-9):>12.2f} "
              f"{s['collectives']:>11}")
    print("compute: union of the cores' kernels; comm: the collectives' kernels on the communication stream;\n"
          "exposed: communication time no compute kernel overlaps (a rank waiting for its peer counts).")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["busbw", "tp", "_rank"])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--out")
    args = p.parse_args()
    {"busbw": busbw, "tp": tp, "_rank": rank_main}[args.mode](args)


if __name__ == "__main__":
    main()
