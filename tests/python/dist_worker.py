"""Ranks of a test_distributed.py job: python3 dist_worker.py OUT_DIR CASE[:ARG] ...

The cases run one after the other in the same processes (process start-up is most of a
test's time), each with its own init_process_group and destroy, the k-th at the k-th port
of DIST_TEST_PORTS. Ranks come from the environment as torchrun sets it (RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT). Each rank writes what it found in
each case to OUT_DIR/<case>/result-<rank>.json; the test compares. Every wait is bounded
by the group's timeout."""
import datetime
import json
import os
import signal
import sys
import time
import traceback

import torch
import torch.distributed as dist

RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))
TIMEOUT = datetime.timedelta(seconds=float(os.environ.get("DIST_TEST_TIMEOUT", "20")))


def dev():
    import opscope
    return opscope.device()


def base(shape, rank, dtype=torch.float32, offset=0):
    """The tensor rank `rank` contributes: small integers, exact in every dtype and reduction."""
    n = 1
    for d in shape:
        n *= d
    x = (torch.arange(n, dtype=torch.float64) % 7 + rank * 3 + offset + 1).reshape(shape)
    return x.to(dtype)


def close(got, want):
    return bool(torch.equal(got.cpu().double(), want.double()))


def collectives(out, dtype_names):
    """Every collective on device tensors against its CPU reference, per dtype."""
    import opscope  # noqa: F401
    dist.init_process_group("opscope", timeout=TIMEOUT)
    r, n = dist.get_rank(), dist.get_world_size()
    d = dev()
    res = {}
    for name in dtype_names.split(","):
        dt = getattr(torch, name)
        shape = (2, 3)
        mine = base(shape, r, dt)
        everyone = [base(shape, k, dt) for k in range(n)]
        stack = torch.stack([e.double() for e in everyone])

        for op, want in (("SUM", stack.sum(0)), ("MAX", stack.amax(0)), ("MIN", stack.amin(0)),
                         ("AVG", stack.mean(0)), ("PRODUCT", stack.prod(0))):
            if op == "AVG" and not dt.is_floating_point:
                continue  # an error for integers (bad_input checks it)
            x = mine.to(d)
            dist.all_reduce(x, op=getattr(dist.ReduceOp, op))
            res[f"{name} all_reduce {op}"] = close(x, want.to(dt))

        x = mine.to(d)
        dist.broadcast(x, src=n - 1)
        res[f"{name} broadcast"] = close(x, everyone[n - 1])

        x = mine.to(d)
        dist.reduce(x, dst=0)
        if r == 0:
            res[f"{name} reduce"] = close(x, stack.sum(0).to(dt))

        outs = [torch.zeros(shape, dtype=dt).to(d) for _ in range(n)]
        dist.all_gather(outs, mine.to(d))
        res[f"{name} all_gather"] = all(close(o, e) for o, e in zip(outs, everyone))

        big = torch.zeros((2 * n, 3), dtype=dt).to(d)
        dist.all_gather_into_tensor(big, mine.to(d))
        res[f"{name} all_gather_into_tensor"] = close(big, torch.cat(everyone))

        # reduce_scatter: rank k's input row block j goes to rank j.
        ins = [base(shape, r, dt, offset=j) for j in range(n)]
        o = torch.zeros(shape, dtype=dt).to(d)
        dist.reduce_scatter(o, [t.to(d) for t in ins])
        want = sum(base(shape, k, torch.float64, offset=r) for k in range(n))
        res[f"{name} reduce_scatter"] = close(o, want.to(dt))

        o = torch.zeros(shape, dtype=dt).to(d)
        dist.reduce_scatter_tensor(o, torch.cat(ins).to(d), op=dist.ReduceOp.MAX)
        want = torch.stack([base(shape, k, torch.float64, offset=r) for k in range(n)]).amax(0)
        res[f"{name} reduce_scatter_tensor MAX"] = close(o, want.to(dt))

        # all_to_all_single: rank r's row j goes to rank j.
        src = torch.stack([base((3,), r, dt, offset=j) for j in range(n)])
        dst = torch.zeros_like(src).to(d)
        dist.all_to_all_single(dst, src.to(d))
        want = torch.stack([base((3,), k, dt, offset=r) for k in range(n)])
        res[f"{name} all_to_all_single"] = close(dst, want)

        # all_to_all with tensors of different sizes per peer.
        ins = [base((j + 1,), r, dt, offset=j) for j in range(n)]
        outs = [torch.zeros((r + 1,), dtype=dt).to(d) for _ in range(n)]
        dist.all_to_all(outs, [t.to(d) for t in ins])
        res[f"{name} all_to_all"] = all(close(outs[k], base((r + 1,), k, dt, offset=r)) for k in range(n))

        g = [torch.zeros(shape, dtype=dt).to(d) for _ in range(n)] if r == 0 else None
        dist.gather(mine.to(d), g, dst=0)
        if r == 0:
            res[f"{name} gather"] = all(close(a, e) for a, e in zip(g, everyone))

        o = torch.zeros(shape, dtype=dt).to(d)
        dist.scatter(o, [e.to(d) for e in everyone] if r == 0 else None, src=0)
        res[f"{name} scatter"] = close(o, everyone[r])

        # send/recv around a ring (async, so no pair of ranks waits on the other)
        nxt, prv = (r + 1) % n, (r - 1) % n
        got = torch.zeros(shape, dtype=dt).to(d)
        reqs = [dist.isend(mine.to(d), nxt), dist.irecv(got, prv)]
        for q in reqs:
            q.wait()
        res[f"{name} send/recv"] = close(got, everyone[prv])

    # recv from any source: rank 0 hears from rank n-1
    if r in (0, n - 1) and n > 1:
        if r == n - 1:
            dist.send(base((4,), r).to(d), 0)
        else:
            got = torch.zeros(4).to(d)
            w = dist.irecv(got)
            w.wait()
            res["recv any source"] = close(got, base((4,), n - 1)) and w.source_rank() == n - 1
    dist.barrier()
    res["barrier"] = True
    opscope_fallbacks = {k: v for k, v in __import__("opscope").fallback_stats().items() if "c10d" in k}
    res["no c10d fallbacks"] = not opscope_fallbacks
    dist.destroy_process_group()
    return res


def init_method(out, method):
    """init_process_group with tcp:// or file://, then one all_reduce."""
    import opscope  # noqa: F401
    if method == "tcp":
        url = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    else:
        url = "file://" + os.path.join(out, "rendezvous")
    env = {k: os.environ.pop(k) for k in ("MASTER_ADDR", "MASTER_PORT") if k in os.environ}
    dist.init_process_group("opscope", init_method=url, rank=RANK, world_size=WORLD, timeout=TIMEOUT)
    os.environ.update(env)
    x = torch.full((5,), float(RANK + 1)).to(dev())
    dist.all_reduce(x)
    ok = close(x, torch.full((5,), float(sum(range(1, WORLD + 1)))))
    backend = dist.get_backend()
    dist.destroy_process_group()
    return {"all_reduce": ok, "backend": backend}


def subgroups(out):
    """Four ranks, two groups of two (new_group), plus the world group."""
    import opscope  # noqa: F401
    dist.init_process_group("opscope", timeout=TIMEOUT)
    r = dist.get_rank()
    a, b = dist.new_group([0, 1]), dist.new_group([2, 3])
    mine = a if r < 2 else b
    x = torch.full((3,), float(r)).to(dev())
    dist.all_reduce(x, group=mine)
    pair = [0, 1] if r < 2 else [2, 3]
    res = {"group all_reduce": close(x, torch.full((3,), float(sum(pair)))),
           "group size": dist.get_world_size(mine) == 2,
           "group rank": dist.get_rank(mine) == pair.index(r)}
    outs = [torch.zeros(3).to(dev()) for _ in range(2)]
    dist.all_gather(outs, torch.full((3,), float(r)).to(dev()), group=mine)
    res["group all_gather"] = all(close(o, torch.full((3,), float(p))) for o, p in zip(outs, pair))
    y = torch.ones(2).to(dev())
    dist.all_reduce(y)
    res["world all_reduce"] = close(y, torch.full((2,), 4.0))
    dist.barrier()
    dist.destroy_process_group()
    return res


def overlap(out):
    """A collective in flight while a kernel runs on the compute stream, seen in the profile.
    Rank 1 joins the all_reduce only after rank 0 has computed its matmuls (store-gated);
    several of them, so that the engine's thread, however late a loaded machine schedules it,
    has started the collective before the last one runs."""
    import opscope
    from opscope.profiler import Config, profile
    dist.init_process_group("opscope", timeout=TIMEOUT)
    store = dist.distributed_c10d._get_default_store()
    r = dist.get_rank()
    d = dev()
    a = torch.ones(1 << 16).to(d)
    m = torch.randn(256, 256).to(d)
    opscope.synchronize()
    res = {}
    with profile(experimental_config=Config(output_dir=os.path.join(out, "profile"))) as prof:
        if r == 1:
            store.wait(["computed"])
        work = dist.all_reduce(a, async_op=True)
        if r == 0:
            ys = [m @ m for _ in range(8)]
            ys[-1].cpu()  # the matmuls ran while the all_reduce waits for rank 1
            res["pending while computing"] = not work.is_completed()
            store.set("computed", "1")
        work.wait()
        res["result"] = close(a, torch.full((1 << 16,), 2.0))
        opscope.synchronize()
        res["completed"] = work.is_completed()
    events = prof.events()
    comm = [e for e in events if e[0] == "kernel" and e[1] == "all_reduce_f32"]
    mm = [e for e in events if e[0] == "kernel" and e[1].startswith(("matmul", "mm", "addmm", "gemm"))]
    ops = [e for e in events if e[0] == "op" and e[1] == "c10d::allreduce_"]
    res["comm kernel"] = len(comm) == 1
    res["framework op"] = len(ops) == 1
    res["comm track"] = bool(comm) and comm[0][7].startswith("cpu:0 stream ") and comm[0][7] != "cpu:0 stream 0"
    res["comm detail"] = bool(comm) and comm[0][8].startswith("collective all_reduce, in 65536 elements")
    if r == 0:
        res["overlap"] = bool(comm and mm) and any(comm[0][4] <= k[4] and k[5] <= comm[0][5] for k in mm)
    res["mm kernels"] = [e[1] for e in mm][:3]
    prof.export(opscope.distributed.rank_dir(os.path.join(out, "profile")))
    dist.destroy_process_group()
    return res


def stuck_peer(out, timeout_s):
    """The last rank never joins the second all_reduce (stuck, not dead): the others fail
    within the group's timeout naming it; it goes on once they have."""
    import opscope  # noqa: F401
    timeout = datetime.timedelta(seconds=float(timeout_s))
    dist.init_process_group("opscope", timeout=timeout)
    store = dist.distributed_c10d._get_default_store()
    r, n = dist.get_rank(), dist.get_world_size()
    x = torch.ones(8).to(dev())
    dist.all_reduce(x)
    x.cpu()
    res = {"error": None}
    if r == n - 1:
        store.wait([f"failed-{k}" for k in range(n - 1)], datetime.timedelta(seconds=30))
    else:
        t0 = time.monotonic()
        work = dist.all_reduce(x, async_op=True)
        try:
            work.wait()
            x.cpu()
        except RuntimeError as e:
            res["error"] = str(e)
        res["took_s"] = time.monotonic() - t0
        res["completed"] = work.is_completed()
        store.set(f"failed-{r}", "1")
    store.set(f"done-{r}", "1")
    if r == 0:  # rank 0 hosts the store: it leaves last
        store.wait([f"done-{k}" for k in range(n)], datetime.timedelta(seconds=30))
    dist.destroy_process_group()
    return res


def dead_peer(out):
    """Rank 1 dies between two all_reduces; the others fail within the timeout with an error
    naming the collective and rank 1, and still write their profile whole."""
    import opscope
    from opscope.profiler import Config, Exporter, profile
    dist.init_process_group("opscope", timeout=TIMEOUT)
    r = dist.get_rank()
    res = {}
    x = torch.ones(8).to(dev())
    cfg = Config(output_dir=os.path.join(out, "profile"))
    try:
        with profile(experimental_config=cfg, on_trace_ready=Exporter(cfg).export_trace):
            dist.all_reduce(x)
            x.cpu()
            if r == 1:
                os.kill(os.getpid(), signal.SIGKILL)
            t0 = time.monotonic()
            dist.all_reduce(x)
            x.cpu()
        res["error"] = None
    except RuntimeError as e:
        res["error"] = str(e)
    res["took_s"] = time.monotonic() - t0
    try:
        y = torch.ones(2).to(dev())
        dist.all_reduce(y)
        y.cpu()
        res["later"] = None
    except RuntimeError as e:
        res["later"] = str(e)
    res["profile"] = os.path.isfile(os.path.join(out, "profile", f"rank-{r}", "profile.db"))
    return res


def bad_input(out):
    """Errors that name the op: a CPU tensor, ranks that disagree on shapes, bad ranks."""
    import opscope
    opscope.distributed._register()  # registering again is harmless
    dist.init_process_group("opscope", timeout=TIMEOUT)
    r = dist.get_rank()
    res = {}

    def error_of(fn):
        try:
            fn()
            opscope.synchronize()
        except RuntimeError as e:
            return str(e)
        return None

    res["cpu tensor"] = error_of(lambda: dist.all_reduce(torch.ones(3)))
    res["mismatch"] = error_of(lambda: dist.all_reduce(torch.ones(4 + 4 * r).to(dev())))
    res["after mismatch"] = error_of(lambda: (lambda t: (dist.all_reduce(t), t.cpu()))(torch.ones(2).to(dev())))
    res["bad root"] = error_of(lambda: dist.broadcast(torch.ones(2).to(dev()), src=WORLD + 3))
    res["uneven all_gather"] = error_of(lambda: dist.all_gather_into_tensor(torch.ones(5).to(dev()),
                                                                            torch.ones(2).to(dev())))
    res["avg of ints"] = error_of(lambda: dist.all_reduce(torch.ones(2, dtype=torch.int32).to(dev()),
                                                          op=dist.ReduceOp.AVG))
    dist.barrier()
    dist.destroy_process_group()
    return res


def no_import(out):
    """Without `import opscope`, torch's own error."""
    try:
        dist.init_process_group("opscope", timeout=TIMEOUT)
        return {"error": None}
    except (ValueError, RuntimeError) as e:
        return {"error": f"{type(e).__name__}: {e}"}


CASES = {"collectives": collectives, "init_method": init_method, "subgroups": subgroups, "overlap": overlap,
         "dead_peer": dead_peer, "stuck_peer": stuck_peer, "bad_input": bad_input, "no_import": no_import}


def main():
    out = sys.argv[1]
    ports = os.environ.get("DIST_TEST_PORTS", "").split(",")
    for k, spec in enumerate(sys.argv[2:]):
        case, _, arg = spec.partition(":")
        where = os.path.join(out, spec.replace(":", "-").replace(",", "_"))
        os.makedirs(where, exist_ok=True)
        if k < len(ports) and ports[k]:
            os.environ["MASTER_PORT"] = ports[k]
        try:
            res = CASES[case](where, *([arg] if arg else []))
        except Exception:  # noqa: BLE001  (reported to the test, which fails with it)
            res = {"exception": traceback.format_exc()}
            if dist.is_initialized():
                dist.destroy_process_group()
        tmp = os.path.join(where, f".result-{RANK}.json")
        with open(tmp, "w") as f:
            json.dump(res, f)
        os.replace(tmp, os.path.join(where, f"result-{RANK}.json"))


if __name__ == "__main__":
    main()
