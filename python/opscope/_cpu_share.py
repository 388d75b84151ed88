"""Under a launcher that starts several ranks on one machine (torchrun sets LOCAL_RANK and
LOCAL_WORLD_SIZE), each rank's device takes its own share of the CPUs, as each rank of a
GPU job takes its own GPU: without it every rank's device pins its cores to the same CPUs.
Done before the device exists (its cores are pinned within the process's CPUs). Not done
when OPSCOPE_CPU_CORES is set or OPSCOPE_CPU_SHARE=0."""
import os


def cpus_of_local_rank(cpus, local_rank, local_world):
    """Local rank's share of `cpus` (sorted): a contiguous slice of len(cpus) // local_world,
    or one CPU shared round-robin when there are fewer CPUs than ranks."""
    if local_world <= 1:
        return list(cpus)
    if len(cpus) < local_world:
        return [cpus[local_rank % len(cpus)]]
    per = len(cpus) // local_world
    return list(cpus[local_rank * per:(local_rank + 1) * per])


def apply():
    if os.environ.get("OPSCOPE_CPU_CORES") or os.environ.get("OPSCOPE_CPU_SHARE", "1") == "0":
        return None
    try:
        local_rank = int(os.environ["LOCAL_RANK"])
        local_world = int(os.environ["LOCAL_WORLD_SIZE"])
    except (KeyError, ValueError):
        return None
    if local_world <= 1 or not 0 <= local_rank < local_world or not hasattr(os, "sched_setaffinity"):
        return None
    share = cpus_of_local_rank(sorted(os.sched_getaffinity(0)), local_rank, local_world)
    os.sched_setaffinity(0, share)
    return share
