"""max_pool2d on the device against torch's CPU, in one run: the pools of ResNet and GoogLeNet.

    PYTHONPATH=build/python /usr/bin/python3 bench/max_pool.py [--torch-threads N]

Device: 30 calls queued back to back, then one opscope.synchronize(), best of 5 such bursts
(a single call with a synchronize also times the helper core's wake-up). torch: best of 20
calls, as many threads as the device has cores. GB/s counts the input, the output and the
int64 indices that torch's max_pool2d asks for. docs/BENCHMARKS.md has the figures.
"""
import argparse
import time

import torch_peer  # noqa: F401  (before torch: the peer's thread settings)
import torch
import torch.nn.functional as F

import opscope
from best_of import best_seconds, parse_args

# (input shape, kernel, stride, padding, ceil_mode)
POOLS = [
    ((1, 64, 112, 112), 3, 2, 1, False),  # ResNet's stem
    ((1, 64, 56, 56), 3, 1, 1, False),
    ((1, 192, 56, 56), 3, 2, 0, True),  # GoogLeNet's
    ((1, 512, 14, 14), 3, 1, 1, True),
    ((1, 832, 7, 7), 3, 1, 1, True),
]


def device_us(f, x, bursts=5, calls=30):
    best = float("inf")
    for _ in range(bursts):
        f(x)
        opscope.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            f(x)
        opscope.synchronize()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parse_args(p)
    dev = opscope.device()
    print(f"torch CPU at {torch.get_num_threads()} threads")
    print(f"{'pool':30} {'dtype':9} {'device us':>10} {'GB/s':>6} {'torch us':>10} {'device/torch':>13}")
    for shape, k, s, pad, ceil in POOLS:
        f = lambda t: F.max_pool2d(t, k, s, pad, ceil_mode=ceil)  # noqa: E731
        for dt in (torch.float32, torch.bfloat16, torch.float16):
            x = torch.randn(*shape).to(dt)
            d = device_us(f, x.to(dev))
            out = f(x.float())
            gb = (x.numel() * x.element_size() + out.numel() * (x.element_size() + 8)) / d / 1e3
            name = f"{shape[1]}x{shape[2]}x{shape[3]} {k}x{k}/{s}{' ceil' if ceil else ''}"
            try:
                c = best_seconds(lambda: f(x), lambda: None, reps=20) * 1e6
            except RuntimeError:  # torch 1.13's CPU has no f16 max_pool2d
                print(f"{name:30} {str(dt)[6:]:9} {d:10.0f} {gb:6.1f} {'none':>10}")
                continue
            print(f"{name:30} {str(dt)[6:]:9} {d:10.0f} {gb:6.1f} {c:10.0f} {d / c:13.2f}")


if __name__ == "__main__":
    main()
