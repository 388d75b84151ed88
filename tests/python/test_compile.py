"""opscope.compile: aten graphs from make_fx through opscope's compiler — equal to eager,
fused where the compiler fuses, cached per signature and across processes, visible in
profiles, and eager (with a warning) where it cannot lower."""
import json
import os
import random
import subprocess
import sys
import warnings

import pytest
import torch

import opscope
from opscope.profiler import Config, profile

from conftest import steady_call


def naive_rms_norm(x, w, eps=1e-6):
    x_sq = x * x
    mean_sq = x_sq.mean(-1, keepdim=True)
    return x * torch.rsqrt(mean_sq + eps) * w


def softmax_by_hand(x):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def layer_norm_by_hand(x, w, b):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) * (x - mu)).mean(-1, keepdim=True)
    return (x - mu) * torch.rsqrt(var + 1e-5) * w + b


def silu_mul(a, b):
    return torch.nn.functional.silu(a) * b


def kernels(compiled, *args):
    return [k for r in compiled.report(*args) for k in r.kernels]


def eager_nodes(compiled, *args):
    return sum(r.eager_nodes for r in compiled.report(*args))


@pytest.mark.parametrize("fn,shapes", [
    (naive_rms_norm, [(32, 256), (256,)]),
    (softmax_by_hand, [(16, 100)]),
    (layer_norm_by_hand, [(8, 64), (64,), (64,)]),
    (silu_mul, [(4, 3, 33), (4, 3, 33)]),
])
def test_known_patterns_compile_to_one_kernel(dev, fn, shapes):
    args = [torch.randn(s) for s in shapes]
    dargs = [a.to(dev) for a in args]
    c = opscope.compile(fn)
    want = fn(*args)
    # The first call (its trace's eager run) and a later one (the fused kernel).
    torch.testing.assert_close(c(*dargs).cpu(), want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(steady_call(c, *dargs).cpu(), want, atol=1e-5, rtol=1e-5)
    ks = kernels(c, *dargs)
    assert len(ks) == 1 and ks[0].startswith("fused_"), ks
    assert eager_nodes(c, *dargs) == 0


_UNARY = [torch.exp, torch.tanh, torch.sigmoid, torch.nn.functional.silu, torch.relu, torch.neg, torch.abs]
_BINARY = [torch.add, torch.sub, torch.mul, torch.maximum, torch.minimum]


def random_program(rng, rank):
    """A random chain over two inputs: elementwise ops, broadcasting, scalars, a reduction
    over some axes, views."""
    steps = []
    for _ in range(rng.randint(3, 7)):
        kind = rng.choice(["unary", "binary", "scalar", "broadcast", "view"])
        steps.append((kind, rng.randrange(len(_UNARY)), rng.randrange(len(_BINARY)), rng.uniform(0.5, 2.0)))
    axes = sorted(rng.sample(range(rank), rng.randint(1, rank)))
    keep = rng.random() < 0.5

    def f(x, y):
        v = x
        for kind, u, b, s in steps:
            if kind == "unary":
                v = _UNARY[u](v)
            elif kind == "binary":
                v = _BINARY[b](v, y)
            elif kind == "scalar":
                v = v * s + 1.0
            elif kind == "broadcast":
                v = v + y.mean(0, keepdim=True)
            else:
                v = v.transpose(0, -1).contiguous().transpose(0, -1)
        return v.sum(axes, keepdim=keep) / 4.0
    return f


@pytest.mark.parametrize("seed", range(6))
def test_random_graphs_equal_eager(dev, seed):
    rng = random.Random(seed)
    rank = rng.choice([2, 3])
    shape = [rng.choice([1, 3, 8, 33]) for _ in range(rank)]
    f = random_program(rng, rank)
    x, y = torch.randn(shape), torch.randn(shape)
    c = opscope.compile(f)
    first = c(x.to(dev), y.to(dev))
    got = steady_call(c, x.to(dev), y.to(dev))  # the generated kernels' values (the first call's are eager)
    want_cpu = f(x, y)
    want_dev = f(x.to(dev), y.to(dev))
    for out in (first, got):
        torch.testing.assert_close(out.cpu(), want_cpu, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(out.cpu(), want_dev.cpu(), atol=1e-4, rtol=1e-4)


def test_mixed_dtypes_and_casts(dev):
    def f(x, h):
        return (x.to(torch.bfloat16) * h).float().sum(-1) + 1.0

    x, h = torch.randn(8, 64), torch.randn(8, 64).to(torch.bfloat16)
    c = opscope.compile(f)
    torch.testing.assert_close(c(x.to(dev), h.to(dev)).cpu(), f(x, h), atol=5e-2, rtol=2e-2)  # traced: eager
    got = steady_call(c, x.to(dev), h.to(dev))  # the compiled casts
    torch.testing.assert_close(got.cpu(), f(x, h), atol=5e-2, rtol=2e-2)


def test_new_shape_recompiles_a_changed_weight_does_not(dev):
    m = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.SiLU()).to(dev)
    c = opscope.compile(m)
    x = torch.randn(4, 32).to(dev)
    c(x)
    c(x)
    assert len(c.plans) == 1
    with torch.no_grad():
        m[0].weight.mul_(2.0)
    got = c(x)
    assert len(c.plans) == 1
    torch.testing.assert_close(got.cpu(), m.cpu()(x.cpu()), atol=1e-5, rtol=1e-5)
    m.to(dev)
    c(torch.randn(6, 32).to(dev))
    assert len(c.plans) == 2


def test_unlowered_nodes_run_eagerly_with_one_warning(dev):
    def f(x):
        y = x * 2 + 1
        z = torch.cumsum(y, -1)  # no lowering: eager on the device
        return torch.exp(z) * 0.5 + z

    x = torch.randn(4, 16)
    c = opscope.compile(f)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        first = c(x.to(dev))
        got = steady_call(c, x.to(dev))  # the regions around cumsum as compiled
    ours = [str(m.message) for m in w if "opscope.compile" in str(m.message)]
    assert len(ours) == 1 and "cumsum" in ours[0], ours
    torch.testing.assert_close(first.cpu(), f(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.cpu(), f(x), atol=1e-5, rtol=1e-5)


def test_a_compiled_call_is_one_op_named_after_the_function(dev, tmp_path):
    x, w = torch.randn(16, 128).to(dev), torch.randn(128).to(dev)
    c = opscope.compile(naive_rms_norm)
    c(x, w)
    opscope.synchronize()  # the first call's kernels finish before the profile starts
    with profile(experimental_config=Config(output_dir=str(tmp_path))) as prof:
        c(x, w)
    ev = prof.events()
    ops = {e[2]: e[1] for e in ev if e[0] == "op"}
    fused = [e for e in ev if e[0] == "launch" and e[1].startswith("fused_")]
    assert len(fused) == 1
    assert ops[fused[0][3]] == "naive_rms_norm"
    assert not any(n in ("aten::mul", "aten::rsqrt") for n in ops.values())
    row = next(r for r in prof.key_averages() if r.key == "naive_rms_norm")
    assert row.self_device_time_total > 0
    # The profile carries the kernel's artifact, as the C++ path's does.
    d = prof.export(tmp_path / "exported")
    config = json.load(open(os.path.join(d, "trace.json")))["otherData"]["config"]
    config = json.loads(config) if isinstance(config, str) else config
    art = config["artifacts"][fused[0][1]]
    assert art["hash"] and "extern \"C\"" in art["source"] and art["manifest"], sorted(art)


def test_a_call_with_eager_nodes_is_still_one_op(dev, tmp_path):
    def f(x):
        y = x * 2 + 1
        z = torch.cumsum(y, -1)  # eager: the graph has a region before it and one after
        return torch.exp(z) * 0.5 + z

    x = torch.randn(4, 16).to(dev)
    c = opscope.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(experimental_config=Config(output_dir=str(tmp_path))) as prof:
            c(x)  # the first call for this signature: traced and built
            c(x)
            c(x)
    ev = prof.events()
    byid = {e[2]: e for e in ev if e[0] in ("op", "range")}

    def outermost(e):
        while e[3] in byid:
            e = byid[e[3]]
        return e

    calls = [e for e in ev if e[0] == "op" and e[3] not in byid]
    assert [e[1] for e in calls] == ["compile:f", "f", "f"], [e[1] for e in calls]
    assert not any(e[0] == "op" and e[1] in ("f", "compile:f") and e[3] in byid for e in ev)
    fused = [e for e in ev if e[0] == "launch" and e[1].startswith("fused_")]
    assert len(fused) == 4 and all(byid[e[3]][1] == "f" for e in fused[2:]), [(e[1], byid[e[3]][1]) for e in fused]
    # The eager node between the regions sits inside the call's op (the first call's
    # tracing records its fake aten ops there too).
    cumsum = [e for e in ev if e[0] == "op" and e[1] == "aten::cumsum"]
    assert all(outermost(e) in calls for e in cumsum)
    assert sum(1 for e in cumsum if byid.get(e[3], ("", ""))[1] == "f") == 2
    row = next(r for r in prof.key_averages() if r.key == "f")
    assert row.count == 2 and row.self_device_time_total > 0


def test_the_cache_serves_a_second_process(tmp_path):
    eps = 1e-6 + random.random() * 1e-7  # a graph no earlier run compiled
    script = tmp_path / "s.py"
    script.write_text(
        "import json, sys, torch, opscope\n"
        f"def f(x):\n    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + {eps!r})\n"
        "x = torch.randn(4, 64).to(opscope.device())\n"
        "c = opscope.compile(f)\n"
        "r = c.report(x)[0]\n"
        "print(json.dumps({'hit': r.cache_hit, 'hash': r.hash, 'kernels': r.kernels}))\n")
    env = dict(os.environ, OPSCOPE_CACHE_DIR=str(tmp_path / "cache"))
    runs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=180)
        assert p.returncode == 0, p.stderr
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    assert runs[0]["hit"] is False and runs[1]["hit"] is True
    assert runs[0]["hash"] == runs[1]["hash"] and len(runs[0]["kernels"]) == 1


class RMSNorm(torch.nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d) + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


class DecoderBlock(torch.nn.Module):
    """A Llama-style block as Hugging Face writes it: RMSNorm, attention with a causal
    mask and softmax, SwiGLU MLP, residuals."""

    def __init__(self, d=64, heads=4, ff=128):
        super().__init__()
        self.heads = heads
        self.input_layernorm = RMSNorm(d)
        self.q_proj, self.k_proj = torch.nn.Linear(d, d, bias=False), torch.nn.Linear(d, d, bias=False)
        self.v_proj, self.o_proj = torch.nn.Linear(d, d, bias=False), torch.nn.Linear(d, d, bias=False)
        self.post_attention_layernorm = RMSNorm(d)
        self.gate_proj, self.up_proj = torch.nn.Linear(d, ff, bias=False), torch.nn.Linear(d, ff, bias=False)
        self.down_proj = torch.nn.Linear(ff, d, bias=False)

    def forward(self, x, mask):
        b, s, d = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, s, self.heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(b, s, self.heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(b, s, self.heads, -1).transpose(1, 2)
        att = torch.matmul(q, k.transpose(2, 3)) / (d // self.heads) ** 0.5 + mask
        att = torch.softmax(att, dim=-1)
        o = torch.matmul(att, v).transpose(1, 2).reshape(b, s, d)
        x = x + self.o_proj(o)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(torch.nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))


def test_a_decoder_block_compiled_equals_eager(dev):
    torch.manual_seed(0)
    block = DecoderBlock().eval()
    x = torch.randn(2, 8, 64)
    mask = torch.triu(torch.full((8, 8), -1e9), 1)
    want = block(x, mask)
    block.to(dev)
    c = opscope.compile(block)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = c(x.to(dev), mask.to(dev))
        got = steady_call(c, x.to(dev), mask.to(dev))  # the compiled plan (the first call's values are eager)
    torch.testing.assert_close(first.cpu(), want, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got.cpu(), want, atol=1e-4, rtol=1e-4)
    ks = kernels(c, x.to(dev), mask.to(dev))
    assert any("rsqrt" in k for k in ks) and any("silu_mul" in k for k in ks), ks


def test_passes_choose_what_the_compiler_runs(dev):
    x, w = torch.randn(8, 64).to(dev), torch.randn(64).to(dev)
    unfused = opscope.compile(naive_rms_norm, passes=("dce", "cse", "fold"))
    torch.testing.assert_close(unfused(x, w).cpu(), naive_rms_norm(x.cpu(), w.cpu()), atol=1e-5, rtol=1e-5)
    # A later call runs the compiled graph (op by op), not the first call's trace.
    torch.testing.assert_close(steady_call(unfused, x, w).cpu(), naive_rms_norm(x.cpu(), w.cpu()), atol=1e-5,
                               rtol=1e-5)
    assert kernels(unfused, x, w) == [] and eager_nodes(unfused, x, w) == 6
    assert len(kernels(opscope.compile(naive_rms_norm), x, w)) == 1
    with pytest.raises(ValueError, match=r"passes: unknown pass 'fusion'"):
        opscope.compile(naive_rms_norm, passes=("fusion",))


def test_operands_of_two_dtypes_run_eagerly_and_promote_as_torch(dev):
    # A Llama-style rope in a bf16 model: f32 positions times its bf16 inv_freq buffer.
    def f(pos, inv_freq):
        return torch.cat([pos[:, None].float() * inv_freq[None, :]] * 2, -1).cos()

    pos, inv = torch.arange(5), (1.0 / 10000 ** (torch.arange(0, 8, 2) / 8)).to(torch.bfloat16)
    c = opscope.compile(f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = c(pos.to(dev), inv.to(dev))
        got = steady_call(c, pos.to(dev), inv.to(dev))  # the compiled plan around the eager mul
    want = f(pos, inv)
    for out in (first, got):
        assert out.dtype == want.dtype == torch.float32
        torch.testing.assert_close(out.cpu(), want, rtol=1e-5, atol=1e-5)
    assert any("aten.mul.Tensor runs eagerly (operands of dtypes torch.float32 and torch.bfloat16)" in str(w.message)
               for w in caught), [str(w.message) for w in caught]


def test_bad_input():
    with pytest.raises(TypeError, match=r"\[opscope.compile\] expected a function or an nn.Module"):
        opscope.compile(3)
    with pytest.raises(TypeError, match=r"\[opscope.compile\] dynamic: expected True or False, got 'yes'"):
        opscope.compile(naive_rms_norm, dynamic="yes")
    c = opscope.compile(lambda x, n: x * n)
    with pytest.raises(TypeError, match=r"every argument must be a tensor"):
        c(torch.ones(2).to(opscope.device()), 3)


def test_the_dynamo_backend_registers_where_dynamo_exists_and_runs_an_fx_graph(dev, monkeypatch):
    import importlib.util
    import types
    registered = {}

    def register_backend(name):
        def keep(fn):
            registered[name] = fn
            return fn
        return keep

    # torch 1.13 has no dynamo: importing opscope registered nothing and failed on nothing.
    assert not hasattr(torch, "_dynamo")
    monkeypatch.setattr(torch, "_dynamo", types.SimpleNamespace(register_backend=register_backend), raising=False)
    spec = importlib.util.find_spec("opscope._compile")
    fresh = importlib.util.module_from_spec(spec)  # a second copy: opscope.compile stays as it was
    spec.loader.exec_module(fresh)
    assert set(registered) == {"opscope"}
    # What dynamo hands a backend: a torch-level FX GraphModule and example inputs.
    gm = torch.fx.symbolic_trace(naive_rms_norm)
    x, w = torch.randn(8, 64), torch.randn(64)
    run = registered["opscope"](gm, [x.to(dev), w.to(dev)])
    torch.testing.assert_close(run(x.to(dev), w.to(dev)).cpu(), naive_rms_norm(x, w), atol=1e-5, rtol=1e-5)
    # Its first call traced the region eagerly; a later one runs the fused kernel.
    torch.testing.assert_close(steady_call(run, x.to(dev), w.to(dev)).cpu(), naive_rms_norm(x, w), atol=1e-5,
                               rtol=1e-5)


def test_a_new_shape_recompiles_with_a_report_and_the_limit_falls_back_to_eager(dev):
    def f(x):
        return torch.exp(x * 2 + 1) * 0.5

    c = opscope.compile(f, recompile_limit=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c(torch.randn(1, 12).to(dev))
        assert not caught, [str(w.message) for w in caught]  # the first signature is no recompile
        c(torch.randn(1, 13).to(dev))
        assert len(c.plans) == 2
        assert [str(w.message) for w in caught] == [
            "[opscope.compile] f: recompiling (2 of at most 2) for argument 0: shape (1, 12) -> (1, 13), "
            "stride (12, 1) -> (13, 1); dynamic=True makes one plan for every size"]
        x = torch.randn(1, 14).to(dev)
        got = c(x)  # past the limit: eager, with one warning, and no third plan
        c(torch.randn(1, 15).to(dev))
    limit = [str(w.message) for w in caught[1:]]
    assert len(limit) == 1 and "recompile_limit=2" in limit[0] and "new ones run eagerly" in limit[0], limit
    assert len(c.plans) == 2
    torch.testing.assert_close(got.cpu(), f(x.cpu()))
    with pytest.raises(ValueError, match=r"\[opscope.compile\] recompile_limit"):
        opscope.compile(f, recompile_limit=0)
