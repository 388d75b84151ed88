"""What the host running ahead of the device costs when the allocator's cache is cold.

Python queues N calls at once, each dropping the last call's output while its kernel has not
run yet. Before the allocator reused blocks in stream order (runtime/allocator.h), each
launch kept its tensors' blocks until it had run, so each queued call's output was a fresh
block from the OS until the cache held N of them, and every page of it faulted inside a
kernel. Now a block the host dropped goes to the next allocation on the same stream at once,
as in CUDA's caching allocator. This prints, in one process and one run: the first burst of N
queued calls (cold), a second burst (warm), and N calls each followed by a synchronize; the
ratio cold / warm is what a cold cache costs, and the memory held from the OS.

    PYTHONPATH=build/python /usr/bin/python3 bench/alloc_runahead.py [--calls 40] [--shape 1024x4096]
"""
import argparse
import time

import torch

import opscope


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--shape", default="1024x4096")
    a = ap.parse_args()
    if a.calls < 1:
        raise SystemExit("[--calls] must be >= 1")
    try:
        rows, cols = (int(v) for v in a.shape.split("x"))
    except ValueError:
        raise SystemExit(f"[--shape] expected ROWSxCOLS such as 1024x4096, got {a.shape!r}")
    if rows < 1 or cols < 1:
        raise SystemExit(f"[--shape] rows and columns must be >= 1, got {a.shape!r}")
    dev = opscope.device()
    x = torch.randn(rows, cols).to(dev)
    w, b = torch.ones(cols).to(dev), torch.zeros(cols).to(dev)

    def burst(sync_each):
        t0 = time.perf_counter()
        for _ in range(a.calls):
            torch.nn.functional.layer_norm(x, (cols,), w, b)
            if sync_each:
                opscope.synchronize()
        opscope.synchronize()
        return (time.perf_counter() - t0) / a.calls * 1e3

    cold = burst(False)
    warm = burst(False)
    synced = burst(True)
    stats = opscope.memory_stats()
    mb = rows * cols * 4 / 2**20
    print(f"layer_norm {rows}x{cols} f32 ({mb:.0f} MiB out), {a.calls} calls a burst, ms per call:")
    print(f"  first burst, queued (cold cache): {cold:8.3f}")
    print(f"  second burst, queued (warm):      {warm:8.3f}")
    print(f"  synchronized after each call:     {synced:8.3f}")
    print(f"  cold / warm: {cold / warm:.1f}x; the allocator holds {stats['reserved_bytes'] / 2**20:.0f} MiB from the OS "
          f"({stats['reserved_bytes'] / 2**20 / mb:.0f} outputs' worth), {stats['num_os_allocs']} OS allocations")


if __name__ == "__main__":
    main()
