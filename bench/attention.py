"""Attention compiled with and without the "attention" pass (one kernel for the two batched
matmuls, the scale and mask, and the softmax; kernels/cpu/attention.h), on opscope's device,
alternated in one run, median of R rounds of 20 calls: GPT-2's form (scores scaled, then a
causal mask as masked_fill) and MultiheadAttention's (q scaled first), at the heads and
lengths of the issue's 4-layer d=512 models and a longer one. Prints each side's time, the
fused/unfused ratio and the largest difference from torch's CPU result.

    PYTHONPATH=build/python /usr/bin/python3 bench/attention.py [--repeats 9]
"""
import argparse
import math
import os
import statistics
import time
import warnings

import torch

import opscope


class Gpt2Form(torch.nn.Module):
    """GPT-2's attention: the causal mask a buffer, as in the model (the compiled graph
    folds `mask == 0` into a multiply and an add of -inf)."""

    def __init__(self, t):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(t, t)).view(1, 1, t, t))

    def forward(self, q, k, v):
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias == 0, float("-inf"))
        return torch.softmax(att, dim=-1) @ v


class MhaForm(torch.nn.Module):
    """MultiheadAttention's: q scaled first, no mask."""

    def forward(self, q, k, v):
        return torch.softmax((q / math.sqrt(q.size(-1))) @ k.transpose(-2, -1), dim=-1) @ v


def timed(fn, args, calls=20):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    opscope.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    a = ap.parse_args()
    if a.repeats < 1:
        ap.error(f"--repeats: expected a positive count of rounds, got {a.repeats}")
    warnings.simplefilter("ignore")
    dev = opscope.device()
    unfused_passes = [p for p in opscope._compile.PASSES if p != "attention"]
    print(f"device: {opscope._C.device_description(0)}; load: {os.getloadavg()[0]:.2f}")
    print(f"{'form':10s} {'heads x T x d':>14s} {'fused us':>9s} {'unfused us':>10s} {'fused/unfused':>13s} {'max abs diff':>12s}")
    ratios = []
    for form_name, make in (("gpt2", Gpt2Form), ("mha", lambda t: MhaForm())):
        for heads, t, d in ((8, 128, 64), (8, 512, 64), (12, 197, 64)):
            torch.manual_seed(0)
            q, k, v = (torch.randn(1, heads, t, d) for _ in range(3))
            form = make(t)
            with torch.no_grad():
                want = form(q, k, v)
            form = form.to(dev)
            args = [x.to(dev) for x in (q, k, v)]
            fused, unfused = opscope.compile(form), opscope.compile(form, passes=unfused_passes)
            with torch.no_grad():
                diff = (fused(*args).cpu() - want).abs().max().item()
                sides = {"fused": [], "unfused": []}
                for f in (fused, unfused):
                    timed(f, args, 3)
                for r in range(a.repeats):  # alternated, so that drift in load hits both
                    order = (("fused", fused), ("unfused", unfused))
                    for name, f in order if r % 2 == 0 else order[::-1]:
                        sides[name].append(timed(f, args))
            tf, tu = statistics.median(sides["fused"]), statistics.median(sides["unfused"])
            ratios.append(tf / tu)
            print(f"{form_name:10s} {f'{heads}x{t}x{d}':>14s} {tf:9.1f} {tu:10.1f} {tf / tu:12.2f}x {diff:12.1e}")
    print(f"geomean fused/unfused: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}x")


if __name__ == "__main__":
    main()
