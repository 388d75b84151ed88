"""opscope.compile(..., dynamic=True): one plan for every size of a dimension that changes
between calls (opscope/_dynamic.py) — KV-cache decode without a compile per token, equal
to eager; and where the sizes do not fit one plan, each size compiles on its own, with a
warning that says why."""
import warnings

import torch

import opscope
from opscope._compile import _flat_args
import llama_hf
from conftest import steady_call


def traced(c):
    """Counts c's traces (make_fx runs)."""
    calls = []
    trace = c._trace

    def counting(*a):
        calls.append(1)
        return trace(*a)

    c._trace = counting
    return calls


def small_decoder(dev, seed):
    """(a 2-layer Llama-style decoder on the device, it compiled with dynamic=True, the
    list its traces append to)."""
    torch.manual_seed(seed)
    model = llama_hf.Llama(vocab=128, dim=64, n_layers=2, n_heads=4, n_kv_heads=2, hidden=96).to(dev).eval()
    c = opscope.compile(model, dynamic=True)
    return model, c, traced(c)


def close(got, want):
    torch.testing.assert_close(got.cpu(), want.cpu(), rtol=1e-5, atol=1e-5)


def first_and_steady(c, *args):
    """(c's first call at these arguments' size, a later one). A new size may trace a plan
    whose first call returns its regions' eager values; the call after it runs that plan as
    compiled (it neither traces nor compiles: same signature, size already checked)."""
    return c(*args), steady_call(c, *args)


def test_decode_with_a_growing_cache_is_one_plan_equal_to_eager(dev):
    model, c, calls = small_decoder(dev, 0)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        logits, cache = model(torch.randint(0, 128, (1, 9)).to(dev))
        nxt = logits[:, -1:].argmax(-1)
        for step in range(14):  # cache lengths 9 to 22
            if step == 8:
                before = (len(calls), len(caught))
            calls_at_size = first_and_steady(c, nxt, cache)
            want, cache = model(nxt, cache)
            for got, got_cache in calls_at_size:
                close(got, want)
                for (gk, gv), (wk, wv) in zip(got_cache, cache):
                    close(gk, wk)
                    close(gv, wv)
            nxt = want[:, -1:].argmax(-1)
    messages = [str(w.message) for w in caught]
    # Learning takes a few traces (the prefill's cache is a view, a step's a new tensor: the
    # first two sizes do not fit one plan), then no step traces, compiles or warns, 16 (a
    # power of two) excepted: it is traced once to check the plan.
    assert len(calls) <= 6, messages
    assert (len(calls), len(caught)) == (before[0], before[1]), messages[before[1]:]
    assert c._dyn is not None and c._dyn_off is None
    fit, plan = c._dyn
    assert 16 in fit.checked
    assert len(c.plans) <= 2 and not any("recompile_limit" in m for m in messages), messages
    dynamic = [m for m in messages if "dynamic: one plan for every size s of argument leaf" in m]
    assert len(dynamic) == 1 and "aten.bmm.default" in dynamic[-1] and "aten.cat.default" in dynamic[-1], messages
    # The projections and the MLP compiled; the attention over the cache runs eagerly.
    compiled = {str(n.target) for r in plan.regions for n in r.nodes}
    assert {"aten.mm.default", "aten.silu.default", "aten.rsqrt.default"} <= compiled, compiled
    eager = {str(n.target) for n, why in plan.eager_reasons.items() if "dynamic size" in why}
    assert "aten.bmm.default" in eager and "aten._softmax.default" in eager
    assert all("aten.bmm" not in str(n.target) for r in plan.regions for n in r.nodes)


def test_a_size_that_is_not_affine_gives_up_and_stays_correct(dev):
    def f(x):
        n = x.shape[0]
        return x * x.reshape(-1)[: n * n].sum()  # n * n: no a * n + b

    c = opscope.compile(f, dynamic=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (2, 3, 4, 5, 6):
            x = torch.randn(n, 8)
            for got in first_and_steady(c, x.to(dev)):
                close(got, f(x))
    gave_up = [str(w.message) for w in caught if "dynamic=True gave up" in str(w.message)]
    assert len(gave_up) == 1 and "not the one the sizes before it predict" in gave_up[0], gave_up
    assert c._dyn is None


def test_a_branch_on_the_size_is_caught_at_a_power_of_two(dev):
    def f(x):
        return x * 2 if x.shape[0] > 6 else x + 1  # the graph changes between 6 and 7

    c = opscope.compile(f, dynamic=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (3, 4, 5, 8, 9):  # 8: a power of two, checked against a fresh trace
            x = torch.randn(n, 4)
            for got in first_and_steady(c, x.to(dev)):
                close(got, f(x))
    assert any("dynamic=True gave up: the graph at size 8" in str(w.message) for w in caught)


def test_an_input_of_another_rank_compiles_on_its_own(dev):
    c = opscope.compile(lambda x: x * 2 + 1, dynamic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # s is dim 1; a 1-d input has none
        for x in (torch.randn(4, 3), torch.randn(4, 5), torch.randn(4, 6), torch.randn(7), torch.randn(2, 3, 4)):
            for got in first_and_steady(c, x.to(dev)):
                close(got, x * 2 + 1)
    assert c._dyn is not None and len(c.plans) == 3  # (4, 3), then (7) and (2, 3, 4) on their own


def test_static_sizes_compile_as_before(dev):
    c = opscope.compile(lambda x: torch.exp(x * 2 + 1), dynamic=True)
    x = torch.randn(4, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            close(c(x.to(dev)), torch.exp(x * 2 + 1))
    assert not caught and len(c.plans) == 1 and c._dyn is None


def test_prompts_of_several_lengths_share_one_plan(dev):
    # Prefill: the causal mask (full + triu), rope's positions and the attention all follow
    # the prompt's length.
    model, c, calls = small_decoder(dev, 1)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (5, 6, 7, 9, 10, 11, 12):
            tokens = torch.randint(0, 128, (1, n)).to(dev)
            want, _ = model(tokens)
            for got, _ in first_and_steady(c, tokens):
                close(got, want)
    messages = [str(w.message) for w in caught]
    assert c._dyn is not None and not any("gave up" in m or "recompiling" in m for m in messages), messages
    # Every activation of a prefill has s rows: nothing compiles, and the warning says so.
    assert not c._dyn[1].regions
    assert any("every op follows s, so the plan runs eagerly" in m for m in messages), messages
    assert len(calls) == 3, messages  # 5 and 6 fitted, 7 checked; 8, a power of two, never called


def learnt(model, c, dev):
    """(a token, its cache) after a 9-token prefill and six compiled steps, by which c's
    dynamic plan is learnt."""
    logits, cache = model(torch.randint(0, 128, (1, 9)).to(dev))
    nxt = logits[:, -1:].argmax(-1)
    for _ in range(6):
        _, cache = c(nxt, cache)
    return nxt, cache


def test_explain_runs_the_dynamic_plan_a_decode_step_takes(dev):
    """opscope.explain on a learnt dynamic plan: the KV cache (a list of pairs) is taken as
    compile takes it, the plan is the one the call runs (no trace), its eager steps run at
    this call's size s, and the steps' output is the decoder's."""
    model, c, calls = small_decoder(dev, 3)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nxt, cache = learnt(model, c, dev)
        assert c._dyn is not None
        traces = len(calls)
        e = opscope.explain(c, nxt, cache, repeats=1)
        want, _ = model(nxt, cache)
    assert len(calls) == traces, "explain traced again instead of taking the dynamic plan"
    s = cache[0][0].shape[2]
    assert f"the dynamic plan at s = {s}" in str(e)
    assert e.regions and any("dynamic size" in r.reason for r in e.eager)
    close(e.output[0], want)


def test_a_parameter_with_another_layout_is_not_taken_by_the_plan(dev):
    """The plan checks the inputs that do not follow s once per layout (by their signature
    key): a weight replaced by one of another layout after that is checked again, refused,
    and the call compiles for it, equal to eager."""
    model, c, _ = small_decoder(dev, 4)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nxt, cache = learnt(model, c, dev)
        assert c._dyn is not None
        fit, _ = c._dyn
        _, state = c._state()
        leaves, _ = _flat_args((nxt, cache))
        assert fit.accepts(state + leaves)
        w = model.lm_head.weight
        model.lm_head.weight = torch.nn.Parameter(w.t().contiguous().t())  # the same values, column-major
        _, state = c._state()
        assert not fit.accepts(state + leaves)
        outs = first_and_steady(c, nxt, cache)  # the second runs the plan compiled for the new layout
        want, _ = model(nxt, cache)
    for got, _ in outs:
        close(got, want)
