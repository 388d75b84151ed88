"""A residual add joined to its packed matmul (the "residual" pass) against the same add as a
launch of its own: a chain of Linear layers with residuals, x = x + linear(x), compiled both
ways, alternated in one run (median of R calls); also x = x * linear(x), a gate's product.
Prints the ratio and the largest difference between the two sides' outputs.

    PYTHONPATH=build/python /usr/bin/python3 bench/matmul_residual.py [--repeats 40]
"""
import argparse
import os
import statistics
import time

import torch

import opscope

SHAPES = [(128, 512, 8), (197, 768, 8), (128, 2048, 4)]  # (rows, width, layers): GPT-2's, ViT-B/16's, wider


class Chain(torch.nn.Module):
    def __init__(self, width, layers, gate):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(width, width) for _ in range(layers)])
        self.gate = gate

    def forward(self, x):
        for lin in self.layers:
            x = x * lin(x) if self.gate else x + lin(x)
        return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=40)
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = opscope.device()
    print(f"device: {opscope._C.device_description(0)}; load: {os.getloadavg()[0]:.2f}")
    separate = [p for p in opscope._compile.PASSES if p != "residual"]
    print(f"{'op':5s} {'rows x width x layers':22s} {'separate ms':>12s} {'joined ms':>10s} {'joined/separate':>16s} {'max rel diff':>13s}")
    for gate in (False, True):
        for rows, width, layers in SHAPES:
            model = Chain(width, layers, gate).eval().to(dev)
            # a gate's product of layers of N(0, 1) values grows without end: keep it near 1
            x = (torch.rand(1, rows, width) * 0.1 + (1.0 if gate else 0.0)).to(dev)
            sides = [opscope.compile(model, passes=separate), opscope.compile(model)]
            times, outs = [[], []], []
            with torch.no_grad():
                for f in sides:
                    for _ in range(3):
                        out = f(x)
                    outs.append(out.cpu())
                opscope.synchronize()
                for r in range(args.repeats):
                    for i in (0, 1) if r % 2 == 0 else (1, 0):
                        t0 = time.perf_counter()
                        sides[i](x)
                        opscope.synchronize()
                        times[i].append(time.perf_counter() - t0)
            a, b = (statistics.median(t) * 1e3 for t in times)
            diff = ((outs[0] - outs[1]).abs().max() / outs[0].abs().max().clamp_min(1e-30)).item()
            print(f"{'mul' if gate else 'add':5s} {f'{rows} x {width} x {layers}':22s} {a:12.3f} {b:10.3f} {b / a:15.3f}x {diff:13.1e}")


if __name__ == "__main__":
    main()
