"""opscope.compile on whole models as others write them (tests/python/model_zoo.py, small
configs, random weights): the compiled model equals eager, and a profile of the compiled
model still shows its modules, with each kernel's origin ops."""
import json
import os
import warnings

import pytest
import torch

import opscope
from opscope.profiler import Config, profile

import model_zoo


def run_both(name, dev):
    model, inputs = model_zoo.make(name, "small")
    with torch.no_grad():
        want = model(*inputs)
    model = model.to(dev)
    xs = [x.to(dev) for x in inputs]
    compiled = opscope.compile(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ops opscope does not lower are named once; not under test here
        compiled(*xs)
        got = compiled(*xs)  # the second call runs the compiled plan (the first traced it)
    opscope.synchronize()  # nothing of these calls runs inside a profile the caller starts next
    return model, compiled, xs, want, got


def rel_error(got, want):
    return ((got.cpu().float() - want.float()).abs().max() / want.float().abs().max()).item()


@pytest.mark.parametrize("name", ["llama", "gpt2", "transformer_encoder", "vit_b_16", "mobilenet_v3_small"])
def test_compiled_model_equals_eager(name, dev):
    _, compiled, xs, want, got = run_both(name, dev)
    assert want.abs().max() > 0, "an all-zero reference proves nothing"
    assert rel_error(got, want) <= 1e-5
    if name in model_zoo.TRANSFORMERS:  # their norms, softmaxes and matmuls compile (CNNs' convs stay eager)
        assert compiled.report(*xs), "nothing was compiled"


@pytest.mark.parametrize("name", ["gpt2", "transformer_encoder", "vit_b_16"])
def test_compiled_attention_is_one_node_without_copies(name, dev):
    """Each layer's attention (two matmuls, scale, mask, softmax) is one attention node in the
    compiled graph, and no copy is left: MultiheadAttention's q/k/v `.contiguous()` heads
    are read strided, and the heads go back to token order as the kernel writes them."""
    _, compiled, xs, want, got = run_both(name, dev)
    graph = "\n".join(r.compiled_graph for r in compiled.report(*xs))
    assert graph.count("= attention(") == 2, graph  # the small configs have two layers
    assert "softmax(" not in graph and "= clone(" not in graph and "= contiguous(" not in graph, graph
    assert rel_error(got, want) <= 1e-5


def test_a_compiled_model_keeps_its_module_rows(dev, tmp_path):
    _, compiled, xs, _, _ = run_both("llama", dev)
    with profile(experimental_config=Config(output_dir=str(tmp_path))) as prof:
        compiled(*xs)
    ev = prof.events()
    parent = {e[2]: e for e in ev if e[0] in ("op", "range")}

    def chain(e):  # names of the ops and ranges around e, innermost first
        out = []
        while e[3] in parent:
            e = parent[e[3]]
            out.append(e[1])
        return out

    kernels = [e for e in ev if e[0] == "kernel"]
    assert kernels and all("Llama" in chain(k) for k in kernels)
    rows = {r.key: r for r in prof.key_averages()}
    # layers.1.attention_norm's kernel also computes layers.0's residual add: shared.
    shared = "layers.0 + layers.1.attention_norm"
    for module in ("layers.0.attention", "layers.0.feed_forward", "layers.0.attention_norm", "layers.1.ffn_norm", shared):
        assert module in rows, sorted(rows)
        # The row's device time is the time of the kernels that came from it, no more: each
        # launch's span, from its first core's start to its last core's end.
        spans = {}
        for k in kernels:
            if module in chain(k):
                start, end = spans.get(k[2], (k[4], k[5]))
                spans[k[2]] = (min(start, k[4]), max(end, k[5]))
        mine = sum(end - start for start, end in spans.values())
        assert mine > 0
        assert rows[module].device_time_total * 1e3 == pytest.approx(mine, rel=1e-3, abs=2)
    # Each kernel sits in one module path: a kernel shared by two modules is in a range
    # named after both (" + "), never silently in one of them.
    for k in kernels:
        names = [n for n in chain(k) if n.startswith("layers.")]
        for inner, outer in zip(names, names[1:]):
            assert inner.startswith(outer + ".") or " + " in inner, chain(k)
    # The kernel's origins (aten ops and modules) travel with the trace.
    d = prof.export(tmp_path / "exported")
    config = json.load(open(os.path.join(d, "trace.json")))["otherData"]["config"]
    origins = (json.loads(config) if isinstance(config, str) else config)["kernel_origins"]
    norm = next(v for k, v in origins.items() if "rsqrt" in k)
    assert {"aten::pow", "aten::mean", "aten::rsqrt", "aten::mul"} <= set(norm["ops"]), norm
    assert any(m.endswith("attention_norm") or m.endswith("ffn_norm") for m in norm["modules"]), norm
    # So do those of the attention kernel, one node made of attention's matmuls and softmax.
    att = origins["attention_f32"]
    assert {"aten::bmm", "aten::_softmax"} <= set(att["ops"]), att
    assert any(m.endswith(".attention") for m in att["modules"]), att
    # The table's row of that kernel names them: the Origins column.
    name = next(k for k in origins if "rsqrt" in k)
    table = prof.key_averages().table(sort_by="device_time_total", row_limit=0, wide=True)
    assert "Origins" in table.splitlines()[1], table
    line = next(l for l in table.splitlines() if l.startswith(name[:40]))
    assert "aten::rsqrt" in line and " in " in line, line  # the modules follow (the column is cut at 80)
    row = next(r for r in prof.key_averages() if r.key == name)
    assert row.kind == "kernel" and row.origins.startswith("aten::") and "norm" in row.origins, row.origins


def test_the_method_end_to_end_example(tmp_path):
    """examples/method.py at the small config: the eager table names the hotspot, trace.json
    gives the same device time for it, the compiled profile keeps the module rows, and
    `opscope diff` matches modules by path on both sides."""
    import re
    import subprocess
    import sys
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "method.py")
    out = tmp_path / "method"
    r = subprocess.run([sys.executable, "-W", "ignore", example, "--size", "small", "--iters", "2", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    text = r.stdout
    hot = re.search(r"== the hotspot: (\S+), (\d+)% of the device time \(([\d.]+) ms in (\d+) calls\)", text)
    assert hot, text
    eager_table = text.split("== eager:")[1].split("== the hotspot")[0]
    first_row = next(l for l in eager_table.splitlines() if l.startswith(("aten::", "opscope::")))
    assert first_row.split()[0] == hot.group(1), eager_table  # the table's first row, by self device time
    seen = re.search(r"== confirmed in .*trace\.json: (\S+)'s (\d+) calls launched .*: ([\d.]+) ms, the table's ([\d.]+) ms",
                     text)
    assert seen, text
    assert seen.group(1) == hot.group(1) and seen.group(2) == hot.group(4)
    assert seen.group(3) == seen.group(4), seen.group(0)  # the trace alone gives the table's time
    compiled_table = text.split("== compiled:")[1].split("== eager vs compiled")[0]
    assert "h.0.attn" in compiled_table or "h.0.mlp" in compiled_table, compiled_table  # module rows survive compile
    assert "outputs equal within 1e-5" in text
    both = re.search(r"the hotspot's modules on both sides \(device ms per forward\): (.*)", text)
    assert both and re.search(r"h\.\d\.\S+ [\d.]+ -> [\d.]+", both.group(1)), text
    diff = text.split("== opscope diff")[1]
    assert re.search(r"^h\.0\.attn\s+range\s+2\s+2\s", diff, re.M), diff  # matched by path, 2 calls a side
    for side in ("eager", "compiled"):
        assert (out / side / "trace.json").exists() and (out / side / "profile.db").exists()
