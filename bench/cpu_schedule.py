"""How the CPU device shares a launch among its cores, measured in one run: the RMSNorm
case study (six ops, and the built-in fused kernel) per call through PyTorch, at sizes
from cache-resident to DRAM-bound, under the default schedule (`steal`: own slices, free
cores take what late ones left, the core on the host's CPU only for launches of 8 MiB or
more), the static one (every core its slice of every launch) and one core. Each schedule
runs in its own process (the device is made once per process); the rounds alternate them,
so drift in the machine's speed falls on all alike. Prints each median and the ratios to
the default.

    PYTHONPATH=build/python /usr/bin/python3 bench/cpu_schedule.py [--rounds N] [--calls N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CONFIGS = [("steal", {}), ("static", {"OPSCOPE_CPU_SCHEDULE": "static"}), ("1 core", {"OPSCOPE_CPU_CORES": "1"})]
ROWS = [8, 32, 128, 512, 2048]


def child(calls):
    import time
    import torch
    import opscope
    torch.set_grad_enabled(False)
    dev = opscope.device()

    def naive(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    def fused(x, w):
        return opscope.ops.rms_norm(x, w, 1e-6)

    out = {}
    for rows in ROWS:
        x, w = torch.randn(rows, 4096).to(dev), torch.randn(4096).to(dev)
        n = max(5, calls * 8 // rows)  # fewer calls of the big shapes
        for name, f in (("naive", naive), ("fused", fused)):
            for _ in range(3):
                f(x, w)
            opscope.synchronize()
            ts = []
            for _ in range(n):
                t0 = time.perf_counter()
                f(x, w)
                opscope.synchronize()
                ts.append(time.perf_counter() - t0)
            out[f"{rows} {name}"] = statistics.median(ts) * 1e6
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3, help="alternated rounds of every schedule (median)")
    ap.add_argument("--calls", type=int, default=200, help="timed calls at 8 rows (fewer at larger shapes)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.calls)
    runs = {name: [] for name, _ in CONFIGS}
    for _ in range(args.rounds):
        for name, env in CONFIGS:
            p = subprocess.run([sys.executable, __file__, "--child", "--calls", str(args.calls)],
                               env={**os.environ, **env}, capture_output=True, text=True)
            if p.returncode:
                sys.exit(f"cpu_schedule: the {name} run failed:\n{p.stderr}")
            runs[name].append(json.loads(p.stdout.strip().splitlines()[-1]))
    med = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}
    print(f"RMSNorm per call (us, median of {args.rounds} alternated rounds); load average {os.getloadavg()[0]:.1f}")
    print(f"{'shape':>12} {'impl':>6} " + " ".join(f"{n:>8}" for n, _ in CONFIGS) + "   static/steal  1core/steal")
    for key in med["steal"]:
        rows, impl = key.split()
        vals = [med[n][key] for n, _ in CONFIGS]
        print(f"{rows + 'x4096':>12} {impl:>6} " + " ".join(f"{v:8.0f}" for v in vals) +
              f"   {vals[1] / vals[0]:12.2f} {vals[2] / vals[0]:12.2f}")


if __name__ == "__main__":
    main()
