"""What the elementwise, matmul and pool benchmarks share: the best-of timing, a call's fastest wall
time, the device's side synchronized (opscope.synchronize) and torch CPU's not (sync is then a
no-op); and their arguments parsed with --torch-threads, torch CPU's threads as many as the
device's cores."""
import os
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


def parse_args(parser):
    """parser's arguments with --torch-threads added: torch CPU's threads, by default the CPUs
    this process may use (as many as the device's cores; Debian's torch takes 1 by default),
    checked (an error naming the flag) and given to torch."""
    parser.add_argument("--torch-threads", type=int, default=len(os.sched_getaffinity(0)),
                        help="torch CPU threads (default: the CPUs here, as many as the device's cores)")
    args = parser.parse_args()
    if args.torch_threads < 1:
        parser.error(f"--torch-threads must be >= 1, got {args.torch_threads}")
    import torch
    torch.set_num_threads(args.torch_threads)
    return args
