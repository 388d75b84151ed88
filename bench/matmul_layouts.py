"""f32 matmuls whose b is plain (not transposed) on the device against torch's CPU, in one run.

    PYTHONPATH=build/python /usr/bin/python3 bench/matmul_layouts.py [--torch-threads N]

x @ w with a plain weight (as HF GPT-2's Conv1D computes) and attention's att @ v with v a
view of the fused qkv: b's rows lie a multiple of 1 KiB apart, which oneDNN's sgemm reads
through aliasing cache sets unless the device copies b first (kernels/cpu/sgemm.cpp). Best
of 20 calls each (device: through opscope.synchronize()); docs/BENCHMARKS.md has the figures.
"""
import argparse

import torch  # not through torch_peer: one OpenBLAS thread, best for whole models, would
# leave torch's lone matmul here on one core of two

import opscope
from best_of import best_seconds, parse_args


def best_us(f, sync):
    return best_seconds(f, sync, reps=20) * 1e6


def cases():
    """(name, a, b's storage, the view of it that is b), on the host."""
    for m, k, n in ((128, 512, 2048), (197, 768, 3072), (128, 2048, 512)):
        yield f"x @ w, {m}x{k} @ {k}x{n}", torch.randn(m, k), torch.randn(k, n), lambda w: w
    att = torch.softmax(torch.randn(1, 8, 128, 128), -1)
    yield ("att @ v, 8 heads, v in qkv", att, torch.randn(1, 128, 1536),
           lambda qkv: qkv[..., 1024:].view(1, 128, 8, 64).transpose(1, 2))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parse_args(p)
    dev = opscope.device()
    print(f"best of 20, torch CPU at {torch.get_num_threads()} threads")
    print(f"{'product':32} {'device us':>10} {'torch us':>10} {'device/torch':>13}")
    for name, a, base, view in cases():
        b, da, db = view(base), a.to(dev), view(base.to(dev))
        d = best_us(lambda: da @ db, opscope.synchronize)
        c = best_us(lambda: a @ b, lambda: None)
        print(f"{name:32} {d:10.0f} {c:10.0f} {d / c:13.2f}")


if __name__ == "__main__":
    main()
