"""A compiled Linear's weight packed once for oneDNN's matmul (on its second call: the first,
traced, saw it; the pack is a launch of its own), its bias
and activation applied in the same launch, and never read stale: a weight changed in place on
the device, by a host copy into it (as load_state_dict does), through .data, or replaced by a
new Parameter, gives the product of the new values."""
import pytest
import torch
from torch import nn

import opscope
from opscope.profiler import Config, profile, schedule


def launches(fn, tmp_path):
    opscope.synchronize()
    with profile(experimental_config=Config(output_dir=str(tmp_path))) as prof:
        out = fn()
        opscope.synchronize()
    return out, [e[1] for e in prof.events() if e[0] == "launch"]


def test_a_compiled_linear_runs_on_its_packed_weight_and_is_never_stale(dev, tmp_path):
    torch.manual_seed(0)
    lin = nn.Sequential(nn.Linear(256, 512), nn.GELU()).eval()
    x = torch.randn(2, 64, 256)
    d = lin.to(dev)
    f = opscope.compile(d)

    def check(what):  # against torch's CPU ops on the weight's values now
        want = nn.functional.gelu(nn.functional.linear(x, d[0].weight.cpu(), d[0].bias.cpu()))
        torch.testing.assert_close(f(x.to(dev)).cpu(), want, rtol=1e-5, atol=1e-5, msg=what)

    with torch.no_grad():
        check("first call")  # traced: eager
        out, names = launches(lambda: f(x.to(dev)), tmp_path)
        assert names[:2] == ["pack_weights_f32", "matmul_packed_gelu_f32"], names  # the bias and the gelu in its launch
        check("packed")
        state = {k: v.cpu() for k, v in d.state_dict().items()}  # read to the host (a checkpoint): not a write
        out, names = launches(lambda: f(x.to(dev)), tmp_path)
        assert "matmul_packed_gelu_f32" in names and "pack_weights_f32" not in names, "packed once, kept when read"
        assert torch.equal(state["0.weight"], d[0].weight.cpu())

        d[0].weight.mul_(0.5)  # a launch on the device writes it
        out, names = launches(lambda: f(x.to(dev)), tmp_path)
        assert not any(n.startswith(("matmul_packed", "pack_weights")) for n in names), "packed before it held still"
        check("after an in-place op on the device")
        d[0].weight.copy_(torch.randn(512, 256))  # a host copy into it, as load_state_dict
        check("after a host copy")
        f(x.to(dev))
        d[0].weight.data.copy_(torch.randn(512, 256))  # through .data: torch's version counter misses it
        check("after a copy through .data")
        d[0].weight = nn.Parameter(torch.randn(512, 256).to(dev))
        check("after a new Parameter")
        f(x.to(dev))
        out, names = launches(lambda: f(x.to(dev)), tmp_path)
        assert "matmul_packed_gelu_f32" in names, "the new weight is packed once it holds still"


@pytest.mark.parametrize("act", [nn.ReLU(), nn.GELU(), nn.SiLU(), nn.Tanh(), nn.Sigmoid()], ids=lambda a: type(a).__name__)
@pytest.mark.parametrize("bias", [True, False])
def test_each_activation_in_the_matmuls_launch_equals_torch(dev, tmp_path, act, bias):
    torch.manual_seed(1)
    m = nn.Sequential(nn.Linear(384, 256, bias=bias), act).eval()
    x = torch.randn(3, 40, 384)
    with torch.no_grad():
        want = m(x)
        f = opscope.compile(m.to(dev))
        first = f(x.to(dev)).cpu()  # unpacked: matmul, then the activation's own launch
        f(x.to(dev))
        got, names = launches(lambda: f(x.to(dev)).cpu(), tmp_path)
    name = f"matmul_packed_{type(act).__name__.lower()}_f32"
    assert name in names, names
    torch.testing.assert_close(first, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("act", [None, nn.GELU(), nn.ReLU(), nn.SiLU()], ids=lambda a: type(a).__name__ if a else "none")
def test_a_bf16_linear_is_packed_with_its_bias_and_activation_where_the_cpu_has_the_kernel(dev, tmp_path, act):
    torch.manual_seed(2)
    layers = [nn.Linear(256, 512)] + ([act] if act else [])
    m = nn.Sequential(*layers).eval().to(torch.bfloat16)
    x = torch.randn(2, 64, 256).to(torch.bfloat16)
    with torch.no_grad():
        # oneDNN adds the bias and applies the activation to the f32 sums, then rounds once
        exact = nn.functional.linear(x.float(), m[0].weight.float(), m[0].bias.float())
        exact = act(exact) if act else exact
        want = m.to(dev)(x.to(dev)).float().cpu()  # eager on the device: a rounding per op
        f = opscope.compile(m)
        f(x.to(dev))
        got, names = launches(lambda: f(x.to(dev)).float().cpu(), tmp_path)
    model = [n for n in names if not n.startswith("cast_")]  # .float() after it is the test's
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
    if not opscope._C._packs_matmul(128, 256, 512, "bf16"):
        # oneDNN has only its reference bf16 matmul here (an AVX2 CPU): the eager ops run
        assert model[0] == "matmul_bf16" and "pack_weights_bf16" not in names, names
        return
    assert model[0] == "pack_weights_bf16", f"the second call packs the weight, in a launch of its own: {names}"
    model = model[1:]
    if isinstance(act, nn.SiLU):  # oneDNN's bf16 silu is slower than the fused kernel after the matmul
        assert model[0] == "matmul_packed_bf16" and len(model) == 2, names
    else:
        suffix = f"_{type(act).__name__.lower()}" if act else ""
        assert model == [f"matmul_packed{suffix}_bf16"], f"the bias and the activation run in the matmul's launch: {names}"
        torch.testing.assert_close(got, exact.to(torch.bfloat16).float(), rtol=8e-3, atol=1e-5)  # an ulp of bf16


def test_the_usual_profiler_schedule_sees_only_steady_steps(dev, tmp_path):
    # torch.profiler's schedule(wait=1, warmup=1, active=2) from a compiled model's first
    # call: the first traces, the second packs (inside warmup), the profiled two only run
    # the packed matmul.
    torch.manual_seed(3)
    f = opscope.compile(nn.Sequential(nn.Linear(256, 512), nn.ReLU()).eval().to(dev))
    x = torch.randn(128, 256).to(dev)
    with torch.no_grad(), profile(experimental_config=Config(output_dir=str(tmp_path)),
                                  schedule=schedule(wait=1, warmup=1, active=2)) as prof:
        for _ in range(4):
            f(x)
            opscope.synchronize()
            prof.step()
    assert prof.windows == [(2, 3)]
    launches = [e[1] for e in prof.events() if e[0] == "launch"]
    assert launches.count("matmul_packed_relu_f32") == 2, launches
    assert "pack_weights_f32" not in launches, launches


class _GatedResidual(nn.Module):
    """Llama's feed-forward, w2(silu(w1 x) * w3 x), then GPT-2's residual add: x + that."""

    def __init__(self, d=256, hidden=512):
        super().__init__()
        self.w1, self.w3 = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d)

    def forward(self, x):
        return x + self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))


def test_a_gate_product_and_a_residual_add_run_in_their_packed_matmuls(dev, tmp_path):
    torch.manual_seed(0)
    m = _GatedResidual().eval()
    x = torch.randn(2, 64, 256)
    with torch.no_grad():
        want = m(x)
        d = m.to(dev)
        for passes, joined in ((opscope._compile.PASSES, True), ([p for p in opscope._compile.PASSES if p != "residual"], False)):
            f = opscope.compile(d, passes=passes)
            f(x.to(dev))  # traced
            out, names = launches(lambda: f(x.to(dev)), tmp_path)  # packs, then runs packed
            torch.testing.assert_close(out.cpu(), want, rtol=1e-5, atol=1e-5)
            packed = sorted(n for n in names if n.startswith("matmul_packed"))
            if joined:  # w1 with its silu, w3 times that, w2 plus x: three launches, no mul or add of their own
                assert packed == ["matmul_packed_add_f32", "matmul_packed_mul_f32", "matmul_packed_silu_f32"], names
                assert not any(n.startswith(("mul_", "add_", "fused_")) for n in names), names
            else:
                assert packed == ["matmul_packed_f32", "matmul_packed_f32", "matmul_packed_silu_f32"], names
