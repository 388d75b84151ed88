"""One compiler pass off against on, on the modules it is for, compiled both ways and
alternated in one run (median of R calls), with the ratio and the largest difference between
the two sides' outputs:
  - "residual" (a residual add or gate multiply inside the packed matmul): Linear chains
    x = x + lin(x) and x = x * lin(x) at GPT-2's, ViT-B/16's and a wider width;
  - "rotary" (RoPE as one kernel): Llama's q and k, x * cos + rotate_half(x) * sin on the
    heads of the projections, at the issue's decoder shape and TinyLlama's.

    PYTHONPATH=build/python /usr/bin/python3 bench/compile_pass.py [--passes residual,rotary] [--repeats 40]
"""
import argparse
import os
import statistics
import time

import torch

import opscope


class Chain(torch.nn.Module):
    def __init__(self, width, layers, gate):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(width, width) for _ in range(layers)])
        self.gate = gate

    def forward(self, x):
        for lin in self.layers:
            x = x * lin(x) if self.gate else x + lin(x)
        return x


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Rope(torch.nn.Module):
    """q and k of Llama's attention: the projections' heads, rotated."""

    def __init__(self, heads, kv_heads, head_dim):
        super().__init__()
        self.h, self.kv, self.d = heads, kv_heads, head_dim

    def forward(self, q, k, cos, sin):
        b, s, _ = q.shape
        q = q.view(b, s, self.h, self.d).transpose(1, 2)
        k = k.view(b, s, self.kv, self.d).transpose(1, 2)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def cases(name):
    """(label, module, inputs) for the pass `name`."""
    if name == "residual":
        for gate in (False, True):
            for rows, width, layers in [(128, 512, 8), (197, 768, 8), (128, 2048, 4)]:
                # a gate's product of layers of N(0, 1) values grows without end: keep it near 1
                x = torch.rand(1, rows, width) * 0.1 + (1.0 if gate else 0.0)
                yield f"{'mul' if gate else 'add'} {rows} x {width} x {layers}", Chain(width, layers, gate), [x]
    elif name == "rotary":
        for s, h, kv, d in [(128, 8, 4, 64), (512, 32, 4, 64)]:
            ins = [torch.randn(1, s, h * d), torch.randn(1, s, kv * d), torch.randn(s, d), torch.randn(s, d)]
            yield f"{s} tokens, {h}/{kv} heads of {d}", Rope(h, kv, d), ins
    else:
        raise SystemExit(f"compile_pass.py: --passes: no cases for pass {name!r} (residual, rotary)")


def flat(out):
    return torch.cat([t.reshape(-1) for t in (out if isinstance(out, tuple) else (out,))])


def compare(name, model, inputs, repeats):
    """ms per call with the pass off and on, and the largest relative difference."""
    without = [p for p in opscope._compile.PASSES if p != name]
    sides = [opscope.compile(model, passes=without), opscope.compile(model)]
    times, outs = [[], []], []
    with torch.no_grad():
        for f in sides:
            for _ in range(3):
                out = f(*inputs)
            outs.append(flat(out).cpu())
        opscope.synchronize()
        for r in range(repeats):
            for i in (0, 1) if r % 2 == 0 else (1, 0):
                t0 = time.perf_counter()
                sides[i](*inputs)
                opscope.synchronize()
                times[i].append(time.perf_counter() - t0)
    off, on = (statistics.median(t) * 1e3 for t in times)
    diff = ((outs[0] - outs[1]).abs().max() / outs[0].abs().max().clamp_min(1e-30)).item()
    return off, on, diff


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--passes", default="residual,rotary")
    ap.add_argument("--repeats", type=int, default=40)
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = opscope.device()
    print(f"device: {opscope._C.device_description(0)}; load: {os.getloadavg()[0]:.2f}")
    print(f"{'pass':9s} {'case':28s} {'off ms':>9s} {'on ms':>9s} {'on/off':>8s} {'max rel diff':>13s}")
    for name in args.passes.split(","):
        for label, model, inputs in cases(name):
            off, on, diff = compare(name, model.eval().to(dev), [x.to(dev) for x in inputs], args.repeats)
            print(f"{name:9s} {label:28s} {off:9.3f} {on:9.3f} {on / off:7.3f}x {diff:13.1e}")


if __name__ == "__main__":
    main()
