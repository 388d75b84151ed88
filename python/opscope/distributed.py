"""opscope devices under torch.distributed: the "opscope" c10d backend.

    import torch, torch.distributed as dist, opscope
    dist.init_process_group("opscope")          # env:// as torchrun sets it; tcp:// and file:// too
    x = torch.ones(4, device=opscope.device())
    dist.all_reduce(x)                           # queued on the group's communication stream
    print(x.cpu())                               # a read waits for it

`import opscope` registers the backend (importing again is harmless). Each collective is one
launch on its group's communication stream, run by a host engine of its own with Gloo's TCP
transport over the device's memory, after the kernels its caller's stream queued before it.
work.wait() makes the caller's stream wait for it, as NCCL's does (dist.barrier() and
work.wait(timeout) wait on the host). A failed collective names itself and the ranks that did
not take part; its error surfaces at wait() or at the next read or synchronize.

Supported: all_reduce (SUM, AVG, PRODUCT, MIN, MAX, bitwise for integers), broadcast, reduce,
all_gather, all_gather_into_tensor, gather, scatter, reduce_scatter, reduce_scatter_tensor,
all_to_all, all_to_all_single, send/recv (isend/irecv, recv from any source), barrier; on
f32, bf16, f16, i32 and i64 device tensors. Before each collective the ranks compare what
they call (kind, dtype, sizes): a mismatch is an error naming each rank's call.
OPSCOPE_DIST_CHECK=0 skips that check (one small all-gather per collective).

Profiles: every collective is a framework op (c10d::allreduce_), a launch on the
communication stream and a device event ("all_reduce_f32" on "cpu:0 stream N") whose
description carries the group size and sequence number (bandwidths follow). Each profile's
config carries "distributed" (rank, world size, backend, the clock's offset to rank 0, the
groups), and opscope.profiler writes each rank's profile to OUTPUT_DIR/rank-N, which
`opscope table|explore OUTPUT_DIR` open as one job.
"""
import json
import os
import socket
import time
import uuid

import torch
import torch.distributed as dist

from . import _C
from ._device import Stream

__all__ = ["BACKEND", "communication_stream", "rank_dir"]

BACKEND = "opscope"
_GLOO_SHARE = 0.8  # of the group's timeout: the rest is for naming the ranks that did not take part
_CLOCK_ROUNDS = 8
_CLOCK_TAG = 0x6f70  # Gloo tag of the clock's ping-pong


def _boot_id():
    """Processes of one boot share CLOCK_MONOTONIC (containers too: one kernel)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return socket.gethostname()


def _measure_clock(gloo, rank, size):
    """Offset of this rank's CLOCK_MONOTONIC to rank 0's: ping-pongs with rank 0, the round
    with the smallest round trip kept; offset = t_rank0 - (t_send + t_recv) / 2, within half
    that round trip. Rank 0 answers each rank in turn."""
    t = torch.zeros(1, dtype=torch.int64)
    if rank == 0:
        for peer in range(1, size):
            for _ in range(_CLOCK_ROUNDS):
                gloo.recv([t], peer, _CLOCK_TAG).wait()
                t[0] = time.monotonic_ns()
                gloo.send([t], peer, _CLOCK_TAG).wait()
        return 0, 0
    best = None
    for _ in range(_CLOCK_ROUNDS):
        t1 = time.monotonic_ns()
        t[0] = t1
        gloo.send([t], 0, _CLOCK_TAG).wait()
        gloo.recv([t], 0, _CLOCK_TAG).wait()
        t3 = time.monotonic_ns()
        rtt = t3 - t1
        if best is None or rtt < best[0]:
            best = (rtt, int(t[0]) - (t1 + t3) // 2)
    return best[1], best[0] // 2


def _shared_value(store, key, rank, make):
    """Rank 0's value of `key` (made by `make`), read by every rank through the store."""
    if rank == 0:
        store.set(key, make())
    return store.get(key).decode()


def _describe_job(store, gloo, rank, size, timeout):
    """The job's metadata for every profile this process writes."""
    job_id = _shared_value(store, "opscope/job_id", rank, lambda: f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    boot0 = _shared_value(store, "opscope/boot_id", rank, _boot_id)
    offset, error = _measure_clock(gloo, rank, size)
    shared = _boot_id() == boot0
    clock = {"reference_rank": 0, "shared": shared, "offset_ns": 0 if shared else offset,
             "measured_offset_ns": offset, "error_ns": error, "rounds": _CLOCK_ROUNDS,
             "method": "ranks of rank 0's boot share its CLOCK_MONOTONIC (offset 0); others: ping-pong with "
                       "rank 0 when the group was made, offset = t_rank0 - (t_send + t_recv) / 2 of the round "
                       "with the smallest round trip, error = half that round trip"}
    info = {"backend": BACKEND, "rank": rank, "world_size": size, "job_id": job_id,
            "local_rank": int(os.environ.get("LOCAL_RANK", rank)), "hostname": socket.gethostname(),
            "pid": os.getpid(), "timeout_s": timeout.total_seconds(), "clock": clock}
    _C._c10d_set_job(json.dumps(info))


def _create(opts, pg_options):
    """torch.distributed's creator of an "opscope" group (Backend.register_backend, extended API)."""
    if pg_options is not None:
        raise ValueError("[init_process_group] the opscope backend takes no pg_options")
    store, rank, size, timeout = opts.store, opts.group_rank, opts.group_size, opts.timeout
    ranks = list(opts.global_ranks_in_group) or list(range(size))
    gloo = dist.ProcessGroupGloo(dist.PrefixStore("opscope-gloo/", store), rank, size, timeout * _GLOO_SHARE)
    if not opts.global_ranks_in_group:  # the default group: the job itself
        _describe_job(store, gloo, rank, size, timeout)
    check = os.environ.get("OPSCOPE_DIST_CHECK", "1") != "0"
    return _C._c10d_new_group(gloo, store, rank, size, int(timeout.total_seconds() * 1000), str(opts.group_id),
                              ranks, check)


def _register():
    plugins = getattr(dist.Backend, "_plugins", {})
    if BACKEND.upper() in plugins:
        return
    dist.Backend.register_backend(BACKEND, _create, extended_api=True)


def communication_stream(group=None):
    """The opscope.Stream a group's collectives run on (the default group when None)."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    return Stream(_stream=_C._c10d_group_stream(pg))


def rank_dir(output_dir):
    """Where this process writes its profile: OUTPUT_DIR/rank-N in a job of several ranks
    (torch.distributed initialized, or RANK and WORLD_SIZE set as torchrun sets them), else
    OUTPUT_DIR."""
    rank, world = None, 1
    if dist.is_available() and dist.is_initialized():
        rank, world = dist.get_rank(), dist.get_world_size()
    elif "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        try:
            rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        except ValueError:
            return output_dir
    return os.path.join(output_dir, f"rank-{rank}") if world > 1 else output_dir


_register()
