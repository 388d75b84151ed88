"""opscope.explain: each region of a compiled graph, what it became and its times against its
eager ops; each eager node and why. Structure and behaviour only: the times are checked to
be there (positive), never against each other."""
import warnings

import pytest
import torch

import opscope


class MLPNorm(torch.nn.Module):
    """Two linears with a gelu, a residual add and a LayerNorm (one region), then cumsum
    (no lowering: eager) and a lone relu (one kernel either way: eager)."""

    def __init__(self, d=32):
        super().__init__()
        self.up = torch.nn.Linear(d, 2 * d)
        self.down = torch.nn.Linear(2 * d, d)
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x):
        h = self.down(torch.nn.functional.gelu(self.up(x)))
        return torch.relu(torch.cumsum(self.norm(h + x), -1))


@pytest.fixture
def model_and_input(dev):
    torch.manual_seed(0)
    return MLPNorm().to(dev).eval(), torch.randn(4, 32).to(dev)


def quiet_explain(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unlowered op's warning
        return opscope.explain(fn, *args, **kw)


def test_each_region_says_what_it_became_with_its_times(model_and_input):
    model, x = model_and_input
    e = quiet_explain(model, x, repeats=2)
    assert [r.kind for r in e.rows] == ["region", "eager", "eager"]
    region = e.regions[0]
    assert region.name == "region 0"
    assert region.ops == ["aten::addmm", "aten::gelu", "aten::addmm", "aten::add", "aten::native_layer_norm"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fused = [k for r in opscope.compile(model).report(x) for k in r.kernels]
    assert fused and set(fused) <= set(region.became), (fused, region.became)
    assert region.became.count("matmul") == 2  # the linears: library calls
    assert {"up", "down", "norm"} <= set(region.modules), region.modules
    for r in e.rows:
        assert r.predicted_ms > 0 and r.predicted_eager_ms > 0, r
        assert r.compiled_ms > 0 and r.eager_ms > 0 and r.ratio > 0, r
    totals = e.totals()
    assert totals["compiled_ms"] == pytest.approx(sum(r.compiled_ms for r in e.rows))
    assert totals["eager_ms"] == pytest.approx(sum(r.eager_ms for r in e.rows))
    # Where the region's time goes: its kernels from one profiled call, the fused ones with
    # their origins, most device time first, and under its row in the table.
    names = [k[0] for k in region.kernels]
    assert set(fused) <= set(names) and any(n.startswith("matmul") for n in names), names
    assert all(n >= 1 and ms >= 0 for _, n, ms, _ in region.kernels)
    assert [ms for _, _, ms, _ in region.kernels] == sorted((ms for _, _, ms, _ in region.kernels), reverse=True)
    assert all(origins for name, _, _, origins in region.kernels if name in fused)
    assert "kernels (one profiled call" in str(e) and fused[0] in str(e)


def test_eager_nodes_say_why(model_and_input):
    model, x = model_and_input
    e = quiet_explain(model, x, repeats=1)
    why = {r.ops[0]: r.reason for r in e.eager}
    assert why == {"aten::cumsum": "no lowering", "aten::relu": "one kernel either way"}
    assert all(r.became == [] and r.compiled_ms == r.eager_ms for r in e.eager)
    text = str(e)
    assert "region 0" in text and "eager: no lowering" in text and "eager: one kernel either way" in text
    assert text.splitlines()[-1].startswith("total")


def test_explain_does_not_change_results(model_and_input):
    model, x = model_and_input
    with torch.no_grad():
        want = model(x).cpu()
    e = quiet_explain(model, x, repeats=2)
    torch.testing.assert_close(e.output.cpu(), want, atol=1e-5, rtol=1e-5)
    with torch.no_grad():
        torch.testing.assert_close(model(x).cpu(), want, atol=0, rtol=0)  # nothing of the model changed


def test_an_op_that_writes_into_its_input_runs_once(dev):
    def f(x):
        y = x * 2 + 1
        y.add_(1)  # no lowering: eager, between two regions
        return (y.exp() * 3).sum(-1)

    x = torch.randn(4, 8).to(dev)
    e = quiet_explain(f, x, repeats=3)
    assert [r.name for r in e.rows] == ["region 0", "add_", "region 1"]
    torch.testing.assert_close(e.output.cpu(), f(x.cpu()), atol=1e-5, rtol=1e-5)


def test_a_function_or_a_compiled_function(dev):
    def rms(x, w):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w

    x, w = torch.randn(8, 64).to(dev), torch.rand(64).to(dev)
    c = opscope.compile(rms)
    for fn in (rms, c):
        e = opscope.explain(fn, x, w, repeats=1)
        assert len(e.rows) == 1 and e.rows[0].became[0].startswith("fused_"), e.rows
        torch.testing.assert_close(e.output.cpu(), rms(x.cpu(), w.cpu()), atol=1e-5, rtol=1e-5)
    assert e.name == "rms" and "float32(8, 64)" in str(e)


def test_compile_explain_prints_the_table_once_per_signature(dev, capsys):
    c = opscope.compile(lambda x: torch.exp(x) * 2 + 1, name="chain", explain=True)
    x = torch.randn(8, 16).to(dev)
    c(x)
    first = capsys.readouterr().err
    assert "opscope.explain: chain (float32(8, 16))" in first and "region 0" in first, first
    c(x)
    assert "opscope.explain" not in capsys.readouterr().err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the recompile's report
        c(torch.randn(4, 16).to(dev))
    assert "opscope.explain: chain (float32(4, 16))" in capsys.readouterr().err


@pytest.mark.parametrize("call,message", [
    (lambda x: opscope.explain(3, x), "expected a function or an nn.Module, got int"),
    (lambda x: opscope.explain(torch.exp), "no arguments"),
    (lambda x: opscope.explain(torch.add, x, 2.0), "every argument must be a tensor, or lists, tuples or dicts of tensors (got float)"),
])
def test_bad_input_says_what_is_wrong(dev, call, message):
    with pytest.raises(TypeError) as e:
        call(torch.randn(3).to(dev))
    assert str(e.value).startswith("[opscope.explain]") and message in str(e.value), str(e.value)


@pytest.mark.parametrize("repeats", [0, -1, 1.5, True, "3"])
def test_repeats_must_be_a_positive_int(dev, repeats):
    with pytest.raises(ValueError, match=r"^\[opscope.explain\] repeats: expected a positive int"):
        opscope.explain(torch.exp, torch.randn(3).to(dev), repeats=repeats)
