"""The "opscope" c10d backend across processes on loopback: every collective against its CPU
reference on 2 and 4 ranks, init methods, subgroups, a collective overlapping a kernel (in
the profile), a dead peer, bad input, the launcher, the tensor-parallel example and its job
profile. Each job is a set of subprocesses with a deadline; all are killed at the end."""
import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest
import torch

from conftest import opscope_cli

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "dist_worker.py")
DEADLINE_S = 120  # a job that has not ended by then is killed and the test fails


def free_ports(n):
    """n distinct free ports (each socket held open until all are picked)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def env_for(rank, world, ports, extra=None):
    env = dict(os.environ)
    env.update({"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
                "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(ports[0]),
                "DIST_TEST_PORTS": ",".join(map(str, ports)),
                "PYTHONPATH": os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(
                    __import__("opscope").__file__)), env.get("PYTHONPATH", "")] if p)})
    env.pop("OPSCOPE_PROFILE", None)
    env.update(extra or {})
    return env


def wait_all(procs, deadline_s):
    """Waits for every process until the deadline; kills the rest. Returns their outputs."""
    end = time.monotonic() + deadline_s
    outs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=max(0.1, end - time.monotonic()))
            outs.append(out)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the job did not end within {deadline_s} s")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return outs


class Job:
    """`world` ranks of dist_worker.py running `cases` one after the other (one process
    start-up for all of them); each case's per-rank results, read by the tests."""

    def __init__(self, out_dir, world, *cases, extra_env=None, deadline_s=DEADLINE_S):
        self.out_dir, self.world, self.cases = out_dir, world, cases
        ports = free_ports(len(cases))
        self.procs = [subprocess.Popen([sys.executable, WORKER, str(out_dir), *cases],
                                       env=env_for(r, world, ports, extra_env),
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                      for r in range(world)]
        self.outputs = wait_all(self.procs, deadline_s)

    def dir(self, case):
        return self.out_dir / case.replace(":", "-").replace(",", "_")

    def results(self, case, expect_rc=None):
        """Each rank's result dict of `case` (None for the ranks whose exit code `expect_rc` names)."""
        assert case in self.cases
        results = []
        for r, (p, out) in enumerate(zip(self.procs, self.outputs)):
            if expect_rc is not None and r in expect_rc:
                assert p.returncode == expect_rc[r], out
                results.append(None)
                continue
            path = self.dir(case) / f"result-{r}.json"
            assert path.exists(), f"rank {r} wrote no result for {case} (exit {p.returncode}):\n{out}"
            res = json.loads(path.read_text())
            assert "exception" not in res, f"rank {r}:\n{res['exception']}\n{out}"
            results.append(res)
        return results


def assert_all_true(results, skip=()):
    for r, res in enumerate(results):
        bad = {k: v for k, v in res.items() if k not in skip and v is not True}
        assert not bad, f"rank {r}: {bad}"


COLLECTIVES_2 = "collectives:float32,bfloat16,int64"
COLLECTIVES_4 = "collectives:float32,float16"


@pytest.fixture(scope="module")
def job2(tmp_path_factory):
    """Two ranks: every collective, bad input, the tcp:// and file:// init methods, a
    collective overlapping a kernel."""
    return Job(tmp_path_factory.mktemp("job2"), 2, COLLECTIVES_2, "bad_input", "init_method:tcp",
               "init_method:file", "overlap")


@pytest.fixture(scope="module")
def job4(tmp_path_factory):
    """Four ranks: every collective, two groups of two."""
    return Job(tmp_path_factory.mktemp("job4"), 4, COLLECTIVES_4, "subgroups")


def test_every_collective_matches_its_cpu_reference_on_2_ranks(job2):
    assert_all_true(job2.results(COLLECTIVES_2))


def test_every_collective_matches_its_cpu_reference_on_4_ranks(job4):
    assert_all_true(job4.results(COLLECTIVES_4))


@pytest.mark.parametrize("method", ["tcp", "file"])
def test_init_methods(job2, method):
    for res in job2.results(f"init_method:{method}"):
        assert res == {"all_reduce": True, "backend": "opscope"}


def test_two_groups_of_two_in_four_ranks(job4):
    assert_all_true(job4.results("subgroups"))


def test_a_collective_overlaps_a_kernel_in_the_profile(job2):
    results = job2.results("overlap")
    assert_all_true(results, skip=("mm kernels",))
    assert results[0]["overlap"] is True, results[0]["mm kernels"]
    # The two ranks' profiles open as one job, both ranks on one timeline.
    job = job2.dir("overlap") / "profile"
    assert sorted(os.listdir(job)) == ["rank-0", "rank-1"]
    cli = opscope_cli()
    out = subprocess.run([cli, "table", str(job), "--by-rank"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "rank 0 us" in out.stdout and "rank 1 us" in out.stdout, out.stdout
    assert "all_reduce_f32" in out.stdout and "all_reduce, in 65536 elements" in out.stdout, out.stdout


DEAD_TIMEOUT_S = 6  # the group's timeout in the dead-peer case
STUCK_TIMEOUT_S = 4  # and in the stuck-peer case


@pytest.fixture(scope="module")
def job3(tmp_path_factory):
    """Three ranks: the last one stuck (it skips a collective), then rank 1 killed."""
    return Job(tmp_path_factory.mktemp("job3"), 3, f"stuck_peer:{STUCK_TIMEOUT_S}", "dead_peer",
               extra_env={"DIST_TEST_TIMEOUT": str(DEAD_TIMEOUT_S)})


SCHED_SLACK_S = 8  # a loaded machine may not run a rank's threads for seconds


def missing_ranks(err):
    """The ranks an error names as not taking part."""
    m = re.search(r"ranks? ([0-9, and]+) did not take part", err)
    assert m, err
    return {int(x) for x in re.findall(r"[0-9]+", m.group(1))}


def test_a_dead_peer_fails_the_others_naming_the_collective_and_the_rank(job3):
    results = job3.results("dead_peer", expect_rc={1: -9})
    for r in (0, 2):
        err = results[r]["error"]
        assert err is not None, results[r]
        assert err.startswith("[c10d::allreduce_] all_reduce_f32 #2 of group 0 failed: "), err
        # The dead rank, never the rank itself (a live peer that reports late may be named too).
        assert 1 in missing_ranks(err) and r not in missing_ranks(err), err
        # Within the group's timeout; later collectives fail at the call.
        assert results[r]["took_s"] < DEAD_TIMEOUT_S + SCHED_SLACK_S, results[r]
        assert results[r]["later"].startswith("[c10d::allreduce_] group 0 broke at an earlier collective"), \
            results[r]["later"]
        assert results[r]["profile"] is True
    out = subprocess.run([opscope_cli(), "table", str(job3.dir("dead_peer") / "profile")], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "no profile of rank 1" in out.stderr, out.stderr


def test_a_stuck_peer_fails_the_others_within_the_timeout(job3):
    results = job3.results(f"stuck_peer:{STUCK_TIMEOUT_S}")
    assert results[2] == {"error": None}
    for r in (0, 1):
        err = results[r]["error"]
        assert err is not None and err.startswith("[c10d::allreduce_] all_reduce_f32 #2 of group 0 failed: "), err
        assert 2 in missing_ranks(err) and r not in missing_ranks(err), err
        assert results[r]["completed"] is True
        # Gloo gives up at 80% of the group's timeout, the ranks that took part are known by 95%.
        assert results[r]["took_s"] < STUCK_TIMEOUT_S + SCHED_SLACK_S, results[r]


def test_bad_input_gets_errors_that_name_the_op(job2):
    results = job2.results("bad_input")
    for r, res in enumerate(results):
        assert res["cpu tensor"].startswith("[c10d::allreduce_] the tensor is on cpu"), res["cpu tensor"]
        mm = res["mismatch"]
        assert mm.startswith("[c10d::allreduce_] all_reduce_f32 #"), mm
        assert "rank 0 calls all_reduce of (4) f32 with SUM, rank 1 calls all_reduce of (8) f32 with SUM" in mm, mm
        assert res["after mismatch"] is None, res["after mismatch"]  # the group goes on
        assert res["bad root"].startswith("[c10d::broadcast_] root rank 5 is not in the group"), res["bad root"]
        assert res["uneven all_gather"].startswith("[c10d::_allgather_base_] the output has 5 elements"), \
            res["uneven all_gather"]
        assert res["avg of ints"].startswith("[c10d::allreduce_] ReduceOp.AVG needs a floating dtype"), \
            res["avg of ints"]


def test_without_import_torch_says_the_backend_is_unknown(tmp_path):
    res = Job(tmp_path, 1, "no_import").results("no_import")[0]
    assert res["error"] == "ValueError: Invalid backend: 'opscope'", res


def test_registering_twice_is_harmless():
    import opscope
    opscope.distributed._register()
    opscope.distributed._register()
    assert torch.distributed.Backend("opscope") == "opscope"


def test_launcher_fixes_std_from_str():
    from torch.distributed.elastic.multiprocessing.api import Std
    from opscope import run
    run.patch()
    assert Std.from_str("0") is Std.NONE
    assert Std.from_str("3") is Std.ALL
    assert Std.from_str("0:3,1:0") == {0: Std.ALL, 1: Std.NONE}
    assert not run.needs_patch()
    with pytest.raises(ValueError):
        Std.from_str("9")


def test_cpu_share_of_each_local_rank():
    from opscope._cpu_share import cpus_of_local_rank
    assert cpus_of_local_rank([0, 1, 2, 3], 1, 2) == [2, 3]
    assert cpus_of_local_rank([0, 1], 3, 4) == [1]
    assert cpus_of_local_rank([4, 5, 6], 0, 1) == [4, 5, 6]


def test_tensor_parallel_decoder_equals_one_process_and_profiles_each_rank(tmp_path):
    """examples/tp_llama.py under `python3 -m opscope.run --nproc_per_node 2`: each rank checks
    its output against the whole model run in one process; each writes its profile."""
    port = free_ports(1)[0]
    env = env_for(0, 1, [port])
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "DIST_TEST_PORTS"):
        env.pop(k)
    cmd = [sys.executable, "-m", "opscope.run", "--nproc_per_node", "2", "--master_port", str(port),
           os.path.join(ROOT, "examples", "tp_llama.py"), "--check", "--steps", "2", "--out", str(tmp_path / "job")]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = wait_all([p], DEADLINE_S)[0]
    assert p.returncode == 0, out
    assert out.count("matches one process") == 2, out
    job = tmp_path / "job"
    assert sorted(os.listdir(job)) == ["rank-0", "rank-1"]
    for r in (0, 1):
        trace = json.loads((job / f"rank-{r}" / "trace.json").read_text())
        assert trace["distributedInfo"] == {"backend": "opscope", "rank": r, "world_size": 2}
        dist_meta = trace["otherData"]["config"]["distributed"]
        assert dist_meta["clock"]["shared"] is True and dist_meta["clock"]["offset_ns"] == 0
        comm = [e for e in trace["traceEvents"] if e.get("name") == "all_reduce_f32" and e.get("cat") == "kernel"]
        assert comm and all(e["args"]["group size"] == 2 and e["args"]["busbw (GB/s)"] >= 0 for e in comm)
    cli = subprocess.run([opscope_cli(), "table", str(job), "--by-rank"], capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    assert "all_reduce_f32" in cli.stdout and "rank 1 us" in cli.stdout, cli.stdout
    # opscope analyze DIR: the job per rank, the collectives as communication.
    an = subprocess.run([opscope_cli(), "analyze", str(job), "--json"], capture_output=True, text=True, timeout=60)
    assert an.returncode == 0, an.stderr
    report = json.loads(an.stdout)
    assert report["ranks"] == [0, 1], an.stdout[:2000]
    for r in report["kernels"]["per_rank"]:
        comm = [k for k in r["top"] if k["name"] == "all_reduce_f32"]
        assert r["comm_count"] > 0 and comm and comm[0]["kind"] == "COMM", r
