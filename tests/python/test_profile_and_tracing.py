"""What other layers see of a torch program: opscope's profile names each kernel's
framework op by its aten op, and fake-mode tracing touches no device memory."""
import json
import os
import subprocess
import sys

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import opscope


def test_profile_links_aten_ops_to_their_launches_and_kernels(dev):
    x = torch.randn(64, 64).to(dev)

    def program():
        y = x * x
        z = torch.cumprod(y, 0)  # a fallback
        return (z + 1).cpu()

    events = opscope._C._profile_events(program)
    ops = {eid: name for kind, name, eid, parent, *_ in events if kind == "op"}
    mul_ids = [eid for eid, name in ops.items() if name == "aten::mul"]
    assert len(mul_ids) == 1, ops
    launches = [(name, parent) for kind, name, _, parent, *_ in events if kind == "launch"]
    kernels = [(name, parent) for kind, name, _, parent, *_ in events if kind == "kernel"]
    assert ("mul_f32", mul_ids[0]) in launches
    assert ("mul_f32", mul_ids[0]) in kernels
    # No nested opscope op inside the aten op: its kernels' innermost op is aten::mul itself.
    assert "mul" not in ops.values()
    # The fallback is the aten op with a range marking it.
    cumprod = [eid for eid, name in ops.items() if name == "aten::cumprod"]
    assert cumprod, ops
    assert any(kind == "range" and name.startswith("opscope::cpu_fallback(aten::cumprod") and parent == cumprod[0]
               for kind, name, _, parent, *_ in events)


def test_fake_mode_tracing_touches_no_device_memory(dev):
    x, w = torch.randn(4, 8).to(dev), torch.randn(8).to(dev)

    def f(a, b):
        return torch.softmax(a * b + 1, -1).sum(0) + torch.cumsum(a, 0)[0]

    opscope.synchronize()
    before = opscope.memory_stats()["num_allocs"]
    g = make_fx(f, tracing_mode="fake")(x, w)
    assert opscope.memory_stats()["num_allocs"] == before
    assert opscope.fallback_stats() == {}
    code = g.code
    assert "aten.mul.Tensor" in code and "aten._softmax" in code and "aten.cumsum" in code
    torch.testing.assert_close(g(x, w).cpu(), f(x.cpu(), w.cpu()))


@pytest.mark.parametrize("op", [torch.abs, torch.relu, torch.exp, torch.neg, torch.sigmoid, torch.tanh])
def test_fake_mode_traces_every_unary_op(dev, op):
    x = torch.randn(3, 8).to(dev).t()  # a strided view: the result's layout comes from it
    g = make_fx(lambda a: op(a) * 2, tracing_mode="fake")(x)
    torch.testing.assert_close(g(x).cpu(), op(x.cpu()) * 2)
    assert g(x).stride() == op(x).stride()


def test_opscope_profile_env_writes_a_profile_of_a_torch_program(tmp_path):
    code = ("import torch, opscope\n"
            "d = torch.randn(64, 64).to(opscope.device())\n"
            "print((d * d + 1).sum().item())\n")
    env = dict(os.environ, OPSCOPE_PROFILE="1", OPSCOPE_PROFILE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    trace = json.loads((tmp_path / "trace.json").read_text())
    names = {e.get("name") for e in trace["traceEvents"]}
    assert {"aten::mul", "aten::add", "aten::sum", "mul_f32", "aten::copy_"} <= names, sorted(n for n in names if n)
    assert (tmp_path / "profile.db").exists()
