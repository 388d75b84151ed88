"""The best-of timing the elementwise and matmul benchmarks share: a call's fastest wall time,
the device's side synchronized (opscope.synchronize) and torch CPU's not (sync is then a no-op)."""
import time


def best_seconds(fn, sync, reps, warmup=3):
    """The least wall time of `reps` calls of fn() each followed by sync(), after `warmup` calls."""
    for _ in range(warmup):
        fn()
    sync()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best
