"""Elementwise ops on the device in f32, bf16 and f16, against torch's CPU in the same run.

    PYTHONPATH=build/python /usr/bin/python3 bench/elementwise_dtypes.py [--elements N]

Best of 15 calls each (device: through opscope.synchronize()), torch with as many threads
as the device has cores. A 16-bit op moves half an f32 op's bytes, so it should take no
longer; docs/BENCHMARKS.md ("f16 add, sub and mul in one pass") has the figures.
"""
import argparse

import torch_peer  # noqa: F401  (before torch: the peer's thread settings)
import torch

import opscope
from best_of import best_seconds, parse_args

OPS = {
    "a + b": lambda a, b: a + b,
    "a * b": lambda a, b: a * b,
    "a + 2.5": lambda a, b: a + 2.5,
    "a / b": lambda a, b: a / b,
    "max(a, b)": lambda a, b: torch.maximum(a, b),
    "a ** 3": lambda a, b: torch.pow(a, 3.0),
    "sqrt(|a|)": lambda a, b: torch.sqrt(a),  # a: the absolute values (below), sqrt's domain
    "exp(a)": lambda a, b: torch.exp(a),
    "gelu(a)": lambda a, b: torch.nn.functional.gelu(a),
    "silu(a)": lambda a, b: torch.nn.functional.silu(a),
    "sigmoid(a)": lambda a, b: torch.sigmoid(a),
    "tanh(a)": lambda a, b: torch.tanh(a),
    "leaky_relu(a)": lambda a, b: torch.nn.functional.leaky_relu(a),
    "elu(a)": lambda a, b: torch.nn.functional.elu(a),
    "softplus(a)": lambda a, b: torch.nn.functional.softplus(a),
    "mish(a)": lambda a, b: torch.nn.functional.mish(a),
    "logsigmoid(a)": lambda a, b: torch.nn.functional.logsigmoid(a),
    "frac(a)": lambda a, b: torch.frac(a),
    "atanh(a)": lambda a, b: torch.atanh(a.clamp(-0.99, 0.99)),
}
POSITIVE = {"sqrt(|a|)"}


def best_us(f, sync):
    return best_seconds(f, sync, reps=15) * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--elements", type=int, default=1 << 22, help="elements per operand (default 4M)")
    args = parse_args(p)
    if args.elements < 1:
        p.error(f"--elements must be >= 1, got {args.elements}")
    dev = opscope.device()
    print(f"{args.elements} elements, best of 15, torch CPU at {torch.get_num_threads()} threads")
    print(f"{'op':13} {'dtype':9} {'device us':>10} {'torch us':>10} {'device/torch':>13}")
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        a = torch.randn(args.elements).to(dt)
        b = torch.randn(args.elements).to(dt)
        da, db = a.to(dev), b.to(dev)
        for name, f in OPS.items():
            x, dx = (a.abs(), da.abs()) if name in POSITIVE else (a, da)
            d = best_us(lambda: f(dx, db), opscope.synchronize)
            try:
                c = best_us(lambda: f(x, b), lambda: None)
            except RuntimeError:  # torch 1.13's CPU has no f16 exp
                print(f"{name:13} {str(dt)[6:]:9} {d:10.0f} {'none':>10} {'':>13}")
                continue
            print(f"{name:13} {str(dt)[6:]:9} {d:10.0f} {c:10.0f} {d / c:13.2f}")


if __name__ == "__main__":
    main()
