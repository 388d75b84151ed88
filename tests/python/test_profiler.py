"""opscope.profiler: torch.profiler's workflow over opscope's profiler — three layers linked,
key_averages with device time, schedules, exports the CLI reads, and bad input."""
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections import defaultdict

import pytest
import torch

import opscope
from opscope.profiler import Config, Exporter, ProfilerActivity, profile, schedule

CLI = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(opscope.__file__))), "tools", "opscope")


def naive_rms_norm(x, w, eps=1e-6):
    x_sq = x * x
    mean_sq = x_sq.mean(-1, keepdim=True)
    return x * torch.rsqrt(mean_sq + eps) * w


def by_kind(events):
    out = defaultdict(list)
    for e in events:
        out[e[0]].append(e)
    return out


def profiled_naive(dev, tmp_path, steps=1, **kw):
    x, w = torch.randn(32, 256).to(dev), torch.randn(256).to(dev)
    cfg = Config(output_dir=str(tmp_path / "prof"))
    with profile(experimental_config=cfg, **kw) as prof:
        for _ in range(steps):
            with torch.profiler.record_function("rmsnorm naive"):
                y = naive_rms_norm(x, w)
            prof.step()
    return prof, y, (x, w)


def test_every_device_aten_op_has_its_launches_and_kernels(dev, tmp_path):
    prof, y, (x, w) = profiled_naive(dev, tmp_path)
    ev = by_kind(prof.events())
    ops = {e[2]: e[1] for e in ev["op"]}
    names = sorted(n for n in ops.values() if n in ("aten::mul", "aten::mean", "aten::add", "aten::rsqrt"))
    # One framework op per aten call: the bridge's own op scope records no second one.
    assert names == ["aten::add", "aten::mean", "aten::mul", "aten::mul", "aten::mul", "aten::rsqrt"]
    # The bridge's kernels dispatch nothing of their own (no aten::result_type inside add).
    assert "aten::result_type" not in ops.values(), sorted(set(ops.values()))
    launches = defaultdict(list)
    for e in ev["launch"]:
        launches[e[3]].append(e[2])
    kernel_launches = {e[2] for e in ev["kernel"]}
    for op_id, name in ops.items():
        if name in ("aten::mul", "aten::mean", "aten::add", "aten::rsqrt"):
            assert launches[op_id], f"{name} has no launch"
            assert all(l in kernel_launches for l in launches[op_id]), f"{name}'s launch has no kernel"
    torch.testing.assert_close(y.cpu(), naive_rms_norm(x.cpu(), w.cpu()))


def chain(byid, e):
    """The names from an event up through its parents (byid: the ops and ranges by id)."""
    names = []
    while e is not None:
        names.append(e[1])
        e = byid.get(e[3])
    return names


def kernel_time_ns(kernels):
    """Device time of the kernels: per launch, from its first core's start to its last's end."""
    span = defaultdict(lambda: [None, None])
    for kind, name, lid, parent, t0, t1, *_ in kernels:
        s = span[lid]
        s[0] = t0 if s[0] is None else min(s[0], t0)
        s[1] = t1 if s[1] is None else max(s[1], t1)
    return sum(b - a for a, b in span.values())


def test_self_device_total_equals_the_kernels(dev, tmp_path):
    prof, _, _ = profiled_naive(dev, tmp_path, steps=2)
    ev = by_kind(prof.events())
    kernel_ns = kernel_time_ns(ev["kernel"])
    ka = prof.key_averages()
    rows_ns = sum(r.as_dict()["self_device_ns"] for r in ka)
    assert kernel_ns > 0
    assert rows_ns == kernel_ns
    assert ka.self_device_time_total == pytest.approx(kernel_ns / 1e3)
    # The aten ops carry it (correlate_device_time): kernel rows keep no self time.
    assert sum(r.as_dict()["self_device_ns"] for r in ka if r.kind == "kernel") == 0
    mul = next(r for r in ka if r.key == "aten::mul")
    assert mul.count == 6 and mul.self_device_time_total > 0 and mul.self_cuda_time_total == mul.self_device_time_total


def _kinds_recorded(dev, tmp_path, activities):
    x = torch.randn(64, device=dev)
    with profile(activities=activities, experimental_config=Config(output_dir=str(tmp_path / "a"))) as prof:
        (x * 2).cpu()
    return prof.layers, {e[0] for e in prof.events()}


def test_activities_cpu_is_the_framework_layer_device_the_runtime_and_device(dev, tmp_path):
    layers, kinds = _kinds_recorded(dev, tmp_path, [ProfilerActivity.CPU])
    assert layers == "framework" and "op" in kinds and not kinds & {"launch", "kernel"}, kinds
    layers, kinds = _kinds_recorded(dev, tmp_path, [ProfilerActivity.DEVICE])
    assert layers == "runtime,device" and {"launch", "kernel"} <= kinds and "op" not in kinds, kinds
    assert ProfilerActivity.PRIVATEUSE1 is ProfilerActivity.DEVICE  # torch 1.13's name for the device


def test_torchs_cuda_activity_profiles_this_device_unchanged(dev, tmp_path):
    """A script written for a GPU (activities=[CPU, CUDA]) profiles opscope's device as is."""
    torch_acts = torch.profiler.ProfilerActivity
    assert _kinds_recorded(dev, tmp_path, [torch_acts.CUDA]) == _kinds_recorded(dev, tmp_path,
                                                                                [ProfilerActivity.DEVICE])
    assert _kinds_recorded(dev, tmp_path, [torch_acts.CPU]) == _kinds_recorded(dev, tmp_path, [ProfilerActivity.CPU])
    layers, kinds = _kinds_recorded(dev, tmp_path, [torch_acts.CPU, torch_acts.CUDA])
    assert layers == "framework,runtime,device" and {"op", "launch", "kernel"} <= kinds, kinds
    with pytest.raises(ValueError, match=r"\[activities\] 'cuda' is not a profiler activity"):
        profile(activities=["cuda"])


def test_naive_table_is_sorted_by_device_time(dev, tmp_path):
    x, w = torch.randn(256, 4096).to(dev), torch.randn(4096).to(dev)
    naive_rms_norm(x, w).cpu()  # warm: the allocator's cache holds the intermediates' blocks
    with profile(experimental_config=Config(output_dir=str(tmp_path / "p"))) as prof:
        for _ in range(3):
            naive_rms_norm(x, w)
    ka = prof.key_averages()
    # Which op takes longest is a measurement (examples/rmsnorm.py prints it); the order
    # the table gives them in is not.
    by_time = {r.key: r.device_time_total for r in ka if r.key.startswith("aten::")}
    assert "aten::mul" in by_time
    table = ka.table(sort_by="device_time_total", row_limit=10)
    assert "Self Device" in table and "aten::mul" in table
    listed = [l.split()[0] for l in table.splitlines() if l.startswith("aten::")]
    assert listed, table
    times = [by_time[k] for k in listed]
    assert times == sorted(times, reverse=True), table
    # It fits a 160-column terminal; wide=True has every column, columns= picks them.
    assert max(len(l) for l in table.splitlines()) <= 160
    wide = ka.table(sort_by="device_time_total", wide=True)
    assert "Self Device Mem" in wide or "Device total" in wide
    assert max(len(l) for l in wide.splitlines()) > max(len(l) for l in table.splitlines())
    picked = ka.table(sort_by="device_time_total", columns="self_device,calls")
    assert "Self CPU" not in picked.splitlines()[1] and "Calls" in picked.splitlines()[1]
    with pytest.raises(ValueError, match=r"\[columns\] unknown column 'bogus'"):
        ka.table(columns=["bogus"])


def test_a_profiled_torchvision_model(dev, tmp_path):
    import warnings

    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = model(x)
        model.to(dev)
        model(x.to(dev)).cpu()  # warm: the allocator's cache and the roofline probe
        with profile(experimental_config=Config(output_dir=str(tmp_path))) as prof:
            got = model(x.to(dev)).cpu()
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    events = prof.events()
    ev = by_kind(events)
    byid = {e[2]: e for e in events if e[0] in ("op", "range")}

    # Every launch belongs to an aten op and ran as kernels; the ops opscope computes launch.
    kernel_launches = {e[2] for e in ev["kernel"]}
    launching = defaultdict(int)
    for e in ev["launch"]:
        op = byid.get(e[3])
        assert op is not None and op[0] == "op" and op[1].startswith("aten::"), (e[1], op)
        assert e[2] in kernel_launches, f"{op[1]}'s launch {e[1]} has no kernel"
        launching[op[1]] += 1
    assert {"aten::convolution", "aten::max_pool2d_with_indices", "aten::native_batch_norm", "aten::relu_", "aten::add_",
            "aten::addmm"} <= set(launching), dict(launching)
    # The device's time is the aten ops' Self Device time.
    ka = prof.key_averages()
    assert sum(r.as_dict()["self_device_ns"] for r in ka) == kernel_time_ns(ev["kernel"]) > 0
    # Module ranges nest by path; an op sits in its module's range, its kernel's launch under it.
    conv = next(e for e in ev["op"] if e[1] == "aten::convolution" and "layer3.1.conv2" in chain(byid, e))
    names = chain(byid, conv)
    assert names[names.index("layer3.1.conv2"):] == ["layer3.1.conv2", "layer3.1", "layer3", "ResNet"]
    assert any(e[1] == "conv2d_f32" and e[3] == conv[2] for e in ev["launch"])
    bn = [e for e in ev["op"] if e[1] == "aten::native_batch_norm" and "layer3.1.bn2" in chain(byid, e)]
    assert len(bn) == 1


def test_record_function_and_module_ranges_nest(dev, tmp_path):
    class Attn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q = torch.nn.Linear(16, 16)

        def forward(self, x):
            return torch.softmax(self.q(x), -1)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.self_attn = Attn()
            self.mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.SiLU(), torch.nn.Linear(32, 16))

        def forward(self, x):
            return self.mlp(self.self_attn(x)) + x

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([Block(), Block()])

        def forward(self, x):
            for l in self.layers:
                x = l(x)
            return x

    m = Model().to(dev)
    x = torch.randn(4, 16).to(dev)
    with profile(experimental_config=Config(output_dir=str(tmp_path / "p"))) as prof:
        with torch.profiler.record_function("forward pass"):
            y = m(x)
    ev = prof.events()
    byid = {e[2]: e for e in ev if e[0] in ("op", "range")}

    ranges = {e[1]: e for e in ev if e[0] == "range"}
    for name in ("Model", "layers.0", "layers.1", "layers.0.self_attn", "layers.0.self_attn.q", "layers.1.mlp.2"):
        assert name in ranges, sorted(ranges)
    assert chain(byid, ranges["layers.1.self_attn.q"])[:5] == ["layers.1.self_attn.q", "layers.1.self_attn", "layers.1",
                                                         "Model", "forward pass"]
    softmax = [e for e in ev if e[0] == "op" and e[1] == "aten::_softmax"]
    assert softmax and all("self_attn" in byid[e[3]][1] or "self_attn" in chain(byid, e)[2] for e in softmax)
    torch.testing.assert_close(y.cpu(), m.cpu()(x.cpu()), atol=1e-5, rtol=1e-5)


def test_cpu_ops_have_cpu_time_only_and_fallbacks_show(dev, tmp_path):
    a = torch.randn(64, 64)
    d = torch.randn(64, 64).to(dev)
    with profile(experimental_config=Config(output_dir=str(tmp_path / "p"))) as prof:
        (a @ a).sum()
        torch.cumprod(d, 0).cpu()  # no opscope kernel: torch's CPU kernel on the device's memory
    ka = {r.key: r for r in prof.key_averages()}
    assert ka["aten::mm"].cpu_time_total > 0 and ka["aten::mm"].device_time_total == 0
    assert "aten::cumprod" in ka and "opscope::cpu_fallback(aten::cumprod.out)" in ka, list(ka)
    ev = prof.events()
    cumprod = {e[2] for e in ev if e[0] == "op" and e[1] == "aten::cumprod"}  # cumprod and the cumprod.out it calls
    assert any(e[0] == "range" and e[1] == "opscope::cpu_fallback(aten::cumprod.out)" and e[3] in cumprod for e in ev)


def test_fallback_rows_come_first_whatever_the_sort(dev, tmp_path):
    """Each op that ran torch's CPU kernel is its own row, "opscope::cpu_fallback(aten::op)",
    and those rows lead the table (and the sorted rows) under every sort key, though they
    have no device time: they are what to fix before reading the device's times."""
    x = torch.randn(256, 256).to(dev)
    with profile(experimental_config=Config(output_dir=str(tmp_path / "p"))) as prof:
        for _ in range(2):
            y = torch.mm(x, x)          # the device's largest op
            torch.cumprod(y, 0)         # no opscope kernel: two fallbacks
            torch.cummax(y, 0)
        opscope.synchronize()
    ka = prof.key_averages()
    fallbacks = {"opscope::cpu_fallback(aten::cumprod.out)", "opscope::cpu_fallback(aten::_cummax_helper)"}
    for key in ("self_device_time_total", "device_time_total", "self_cpu_time_total", "count"):
        table = ka.table(sort_by=key, row_limit=5)
        names = [l.split()[0] for l in table.splitlines()[3:5]]  # long names end in "..." there
        assert len(set(names)) == 2 and all(n.startswith("opscope::cpu_fallback(aten::_cum") or
                                            n == "opscope::cpu_fallback(aten::cumprod.out)" for n in names), (key, table)
    rows = {r.key: r for r in ka}
    assert all(rows[f].count == 2 and rows[f].self_device_time_total == 0 and rows[f].cpu_time_total > 0
               for f in fallbacks), [rows[f] for f in fallbacks]
    assert ka.table().splitlines()[3].split()[0] == "aten::mm"  # no sort key: rows as first recorded


def test_schedule_gives_one_trace_per_active_window(dev, tmp_path):
    x = torch.randn(8, 64).to(dev)
    cfg = Config(output_dir=str(tmp_path / "out"))
    exporter = Exporter(cfg)
    ready = []

    def on_ready(p):
        ready.append(p.step_num)
        exporter.export_trace(p)

    with profile(experimental_config=cfg, schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=on_ready) as prof:
        for _ in range(10):
            (x * 2).sum()
            prof.step()
    assert prof.windows == [(2, 3), (6, 7)]
    assert ready == [4, 8]
    assert exporter.written == [cfg.output_dir, cfg.output_dir + "-1"]
    for k, d in enumerate(exporter.written):
        trace = json.load(open(os.path.join(d, "trace.json")))
        names = {e.get("name") for e in trace["traceEvents"]}
        first = prof.windows[k][0]
        assert f"ProfilerStep#{first}" in names and f"ProfilerStep#{first + 1}" in names
        assert f"ProfilerStep#{first + 2}" not in names and "aten::mul" in names
        db = sqlite3.connect(os.path.join(d, "profile.db"))
        assert db.execute("select count(*) from events where name = 'aten::mul'").fetchone()[0] == 2


def test_memory_events_with_profile_memory(dev, tmp_path):
    x = torch.randn(128, 128).to(dev)
    before = opscope.memory_stats()["allocated_bytes"]
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                 experimental_config=Config(output_dir=str(tmp_path / "p"))) as prof:
        y = x * 3
        # The block handed out: the size asked, or a cached block up to twice that.
        block = opscope.memory_stats()["allocated_bytes"] - before
        del y
        opscope.synchronize()
    assert 128 * 128 * 4 <= block <= 2 * 128 * 128 * 4
    kinds = {e[0] for e in prof.events()}
    assert "alloc" in kinds and "free" in kinds and "kernel" not in kinds
    mul = next(r for r in prof.key_averages() if r.key == "aten::mul")
    assert mul.self_device_memory_usage == block


def test_record_shapes_and_grouping(dev, tmp_path):
    a, b = torch.randn(4, 8).to(dev), torch.randn(2, 8).to(dev)
    with profile(record_shapes=True, experimental_config=Config(output_dir=str(tmp_path / "p"))) as prof:
        a * a
        b * b
        b * b
    rows = [r for r in prof.key_averages(group_by_input_shape=True) if r.key == "aten::mul"]
    assert sorted((r.input_shapes, r.count) for r in rows) == [("[(2, 8) f32, (2, 8) f32]", 2),
                                                                ("[(4, 8) f32, (4, 8) f32]", 1)]
    # The rows as plain dicts (for pandas): the same figures as the row objects.
    ka = prof.key_averages(group_by_input_shape=True)
    dicts = ka.rows()
    assert len(dicts) == len(ka) and all(type(d) is dict for d in dicts)
    for d, r in zip(dicts, ka):
        assert (d["name"], d["count"], d["input_shapes"]) == (r.key, r.count, r.input_shapes)
        assert d["self_device_ns"] / 1e3 == r.self_device_time_total and d["cpu_total_ns"] / 1e3 == r.cpu_time_total


def test_exports_round_trip_and_the_cli_reads_them(dev, tmp_path):
    prof, _, _ = profiled_naive(dev, tmp_path)
    d = prof.export(tmp_path / "exported")
    chrome = prof.export_chrome_trace(tmp_path / "chrome.json")
    events = json.load(open(chrome))["traceEvents"]
    assert sum(1 for e in events if e.get("name") == "aten::mul" and e.get("ph") == "X") == 3
    table = subprocess.run([CLI, "table", d, "--sort-by", "self_device_time_total"], capture_output=True, text=True)
    assert table.returncode == 0, table.stderr
    assert "aten::mul" in table.stdout
    q = subprocess.run([CLI, "query", d, "select count(*) from events where name = 'aten::rsqrt'"],
                       capture_output=True, text=True)
    assert q.returncode == 0 and "1" in q.stdout, q.stdout + q.stderr
    assert not [n for n in os.listdir(tmp_path / "exported") if n.startswith(".") or "tmp" in n]


def test_unmodified_script_under_opscope_profile(tmp_path):
    script = tmp_path / "script.py"
    script.write_text("import torch, opscope\n"
                      "x = torch.randn(16, 16).to(opscope.device())\n"
                      "print(float((x * x).sum().cpu()))\n")
    env = dict(os.environ, OPSCOPE_PROFILE="1", OPSCOPE_PROFILE_DIR=str(tmp_path / "auto"))
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "profile written to" in r.stderr
    trace = json.load(open(tmp_path / "auto" / "trace.json"))
    names = {e.get("name") for e in trace["traceEvents"]}
    assert {"aten::mul", "aten::sum", "mul_f32"} <= names


def test_config_from_the_environment_variables(monkeypatch, tmp_path):
    for k, v in (("OPSCOPE_PROFILE_LAYERS", "framework,device"), ("OPSCOPE_PROFILE_CORES", "0-1"),
                 ("OPSCOPE_PROFILE_DIR", str(tmp_path / "env")), ("OPSCOPE_PROFILE_MAX_EVENTS", "4096")):
        monkeypatch.setenv(k, v)
    c = Config.from_env()
    assert (c.layers, c.cores, c.output_dir, c.max_events) == ("framework,device", "0-1", str(tmp_path / "env"), 4096)
    for k, bad in (("OPSCOPE_PROFILE_LAYERS", "framework,gpu"), ("OPSCOPE_PROFILE_CORES", "one"),
                   ("OPSCOPE_PROFILE_MAX_EVENTS", "-3")):
        with monkeypatch.context() as m:
            m.setenv(k, bad)
            with pytest.raises(ValueError, match=rf"\[{k}\] '{bad}'"):
                Config.from_env()


def test_a_bad_profile_variable_is_reported_and_the_script_still_runs(tmp_path):
    code = "import torch, opscope\nprint((torch.ones(3).to(opscope.device()) * 2).sum().item())\n"
    for on in ("1", "0"):
        env = dict(os.environ, OPSCOPE_PROFILE=on, OPSCOPE_PROFILE_LAYERS="gpu", OPSCOPE_PROFILE_DIR=str(tmp_path))
        r = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0 and r.stdout.strip() == "6.0", r.stdout + r.stderr
        ignored = "opscope: OPSCOPE_PROFILE ignored: [OPSCOPE_PROFILE_LAYERS] 'gpu'"
        assert (ignored in r.stderr) == (on == "1"), r.stderr
    assert os.listdir(tmp_path) == []


def test_profiling_leaves_results_unchanged(dev, tmp_path):
    x, w = torch.randn(16, 128).to(dev), torch.randn(128).to(dev)
    plain = naive_rms_norm(x, w).cpu()
    with profile(record_shapes=True, profile_memory=True, experimental_config=Config(output_dir=str(tmp_path))):
        profiled = naive_rms_norm(x, w).cpu()
    assert torch.equal(plain, profiled)


# ---- bad input


def test_bad_config_values_name_the_argument(tmp_path):
    with pytest.raises(ValueError, match=r"\[layers\]"):
        Config(layers="framework,kernels")
    with pytest.raises(ValueError, match=r"\[cores\]"):
        Config(cores="0-x")
    with pytest.raises(TypeError, match="unexpected keyword argument 'layer'"):
        Config(layer="framework")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ValueError, match=r"\[output_dir\] .* is not a directory"):
        Config(output_dir=str(blocker / "sub"))
    assert not (blocker.is_dir())
    # A folder the process may not write, even as root (access() says yes to root there).
    with pytest.raises(ValueError, match=r"\[output_dir\] '/proc/opscope-profile' cannot be created: '/proc' is not writable"):
        Config(output_dir="/proc/opscope-profile")
    Config(output_dir=str(tmp_path / "a" / "b"))
    assert os.listdir(tmp_path) == ["file"]  # the check leaves nothing behind
    with pytest.raises(ValueError, match=r"\[schedule.wait\] must be >= 0"):
        schedule(wait=-1, warmup=0, active=1)
    with pytest.raises(ValueError, match=r"\[schedule.active\]"):
        schedule(wait=0, warmup=0, active=0)
    with pytest.raises(ValueError, match=r"\[activities\]"):
        profile(activities=["gpu"])
    with pytest.raises(ValueError, match=r"\[activities\] nothing to record"):
        profile(activities=[ProfilerActivity.CPU], experimental_config=Config(layers="device"))
    with pytest.raises(TypeError, match=r"\[record_shapes\]"):
        profile(record_shapes="yes")


def test_start_twice_and_step_outside(dev, tmp_path):
    p = profile(experimental_config=Config(output_dir=str(tmp_path)))
    with pytest.raises(RuntimeError, match=r"\[profile.step\] step\(\) called outside"):
        p.step()
    with p:
        with pytest.raises(RuntimeError, match=r"\[profile.start\] this profile is already running"):
            p.start()
        with pytest.raises(RuntimeError, match=r"another opscope profile is running"):
            profile(experimental_config=Config(output_dir=str(tmp_path))).start()
        (torch.ones(4).to(dev) * 2).cpu()
    with pytest.raises(RuntimeError, match=r"\[profile.step\]"):
        p.step()
    assert any(r.key == "aten::mul" for r in p.key_averages())
    # A new profile can run after the first ended.
    with profile(experimental_config=Config(output_dir=str(tmp_path))) as q:
        (torch.ones(4).to(dev) + 1).cpu()
    assert any(r.key == "aten::add" for r in q.key_averages())
    with pytest.raises(RuntimeError, match=r"\[key_averages\] no trace collected yet"):
        profile(experimental_config=Config(output_dir=str(tmp_path))).key_averages()


def test_a_forward_that_raises_leaves_the_ranges_balanced(dev, tmp_path):
    class Boom(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            raise ValueError("boom")

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Boom()

        def forward(self, x):
            try:
                return self.inner(x)
            except ValueError:
                return x + 1

    x = torch.randn(4).to(dev)
    with profile(experimental_config=Config(output_dir=str(tmp_path))) as prof:
        Outer()(x)
        (x - 1).cpu()
    ev = prof.events()
    byid = {e[2]: e for e in ev if e[0] in ("op", "range")}
    sub = next(e for e in ev if e[0] == "op" and e[1] == "aten::sub")
    # aten::sub runs after Outer returned: it must not sit inside Outer or inner.
    assert sub[3] == 0 or byid[sub[3]][1] not in ("Outer", "inner")


def test_advise_names_the_fused_fix_in_a_torch_profile(dev, tmp_path):
    x, w = torch.randn(64, 1024).to(dev), torch.randn(1024).to(dev)
    naive_rms_norm(x, w).cpu()
    cfg = Config(output_dir=str(tmp_path / "naive"))
    with profile(experimental_config=cfg, record_shapes=True, on_trace_ready=Exporter(cfg).export_trace):
        for _ in range(3):
            with torch.profiler.record_function("rmsnorm naive"):
                naive_rms_norm(x, w)
            opscope.synchronize()
    r = subprocess.run([CLI, "advise", cfg.output_dir], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "opscope.ops.rms_norm" in r.stdout and "6 ops" in r.stdout and "3 calls" in r.stdout, r.stdout


def test_the_explorer_serves_an_exported_torch_profile(dev, tmp_path):
    import urllib.request
    prof, _, _ = profiled_naive(dev, tmp_path)
    d = prof.export(tmp_path / "exported")
    server = subprocess.Popen([CLI, "explore", d, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        url = None
        for _ in range(50):
            line = server.stdout.readline()
            m = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
            if m:
                url = m.group(1)
                break
        assert url, "the explorer printed no URL"
        profiles = json.load(urllib.request.urlopen(url + "api/profiles", timeout=30))["profiles"]
        assert len(profiles) == 1 and profiles[0]["ok"], profiles
        summary = json.load(urllib.request.urlopen(url + f"api/profiles/{profiles[0]['id']}/summary", timeout=30))
        kernels = {k["name"]: k for k in summary["kernels"]}
        assert kernels["mul_f32"]["launches"] == 3 and kernels["mul_f32"]["device_ns"] > 0, kernels
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_with_stack_records_the_calling_python_line(dev, tmp_path):
    x = torch.randn(8, 16).to(dev)

    def model(t):
        y = t * 2  # the line each aten::mul names
        return y + 1

    with profile(with_stack=True, experimental_config=Config(output_dir=str(tmp_path))) as prof:
        model(x)
        model(x)
    line = model.__code__.co_firstlineno + 1
    d = prof.export(tmp_path / "stack")
    db = sqlite3.connect(os.path.join(d, "profile.db"))
    cols = [r[1] for r in db.execute("pragma table_info(events)")]
    src_col = "source" if "source" in cols else None
    rows = prof.key_averages(group_by_stack_n=1)
    mul = [r for r in rows if r.key == "aten::mul"]
    assert len(mul) == 1 and mul[0].count == 2, [(r.key, r.stack) for r in rows]
    assert mul[0].stack == [f"{__file__}:{line} (model)"], mul[0].stack
    add = next(r for r in rows if r.key == "aten::add")
    assert add.stack == [f"{__file__}:{line + 1} (model)"]
    if src_col:
        assert db.execute(f"select count(*) from events where name = 'aten::mul' and {src_col} like '%:{line} (model)'"
                          ).fetchone()[0] == 2
    # Without with_stack, no call sites (and nothing costs the GIL).
    with profile(experimental_config=Config(output_dir=str(tmp_path))) as plain:
        model(x)
    assert all(not r.stack for r in plain.key_averages(group_by_stack_n=1))


def test_aten_ops_carry_autograds_sequence_numbers(dev, tmp_path):
    # torch's own profiler, recording the same ops at the same time, is the reference.
    x = torch.randn(4, 8).to(dev).requires_grad_()
    with torch.autograd.profiler.profile() as theirs:
        with profile(experimental_config=Config(output_dir=str(tmp_path))) as ours:
            (x * 2).sum()
            with torch.no_grad():
                x * 3  # no autograd node: no sequence number
            (x + 1).mean()
    want = [(e.name, e.sequence_nr) for e in theirs.function_events
            if e.name in ("aten::mul", "aten::sum", "aten::add", "aten::mean")]
    got = [(e[1], e[9]) for e in ours.events() if e[0] == "op" and e[1] in ("aten::mul", "aten::sum", "aten::add",
                                                                            "aten::mean")]
    assert got == want and ("aten::mul", -1) in want, (got, want)
    events = json.load(open(ours.export_chrome_trace(tmp_path / "t.json")))["traceEvents"]
    in_trace = [(e["name"], e["args"].get("sequence_nr", -1)) for e in events
                if e.get("ph") == "X" and e.get("name") in ("aten::mul", "aten::sum", "aten::add", "aten::mean")]
    assert sorted(in_trace) == sorted(want)


def test_the_main_job_case_study(tmp_path):
    """examples/rmsnorm.py, the README's main command, at a small shape: three profiles,
    the naive table with aten::mul's three calls per RMSNorm, the comparison."""
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "rmsnorm.py")
    out = tmp_path / "main"
    r = subprocess.run([sys.executable, "-W", "ignore", example, "--shape", "256x2048", "--iters", "2", "--out",
                        str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    sections = r.stdout.split("\n== ")
    naive = next(s for s in sections if s.startswith("naive"))
    header = re.split(r"\s{2,}", next(l for l in naive.splitlines() if l.startswith("Name")).strip())
    aten = [re.split(r"\s{2,}", l.strip()) for l in naive.splitlines() if l.startswith("aten::")]
    mul = next(row for row in aten if row[0] == "aten::mul")  # (which op leads is a measurement)
    assert mul[header.index("Calls")] == "6", naive  # 3 per call, 2 calls
    compiled = next(s for s in sections if s.startswith("compiled"))
    names = [l.split()[0] for l in compiled.splitlines() if l.strip() and not l.startswith(("-", "Name"))]
    assert "fused_mul_mean_add_rsqrt_mul_mul_f32" in names and "aten::mul" not in names, compiled  # no eager op row
    assert any(s.startswith("comparison") for s in sections), r.stdout
    for name in ("naive", "builtin", "compiled"):
        assert (out / name / "trace.json").exists() and (out / name / "profile.db").exists()
