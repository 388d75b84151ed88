"""opscope.compile's graph rewrites and per-call guard: an eval batch norm folded into the
convolution before it (and kept where folding would be wrong), intermediates dropped after
their last use, and the module's parameters read from where they live on every call."""
import warnings

import pytest
import torch

import opscope
from opscope.profiler import profile

from conftest import steady_call


def _randomize_norms(m):
    """Batch norms with statistics and affine parameters far from their defaults, so a
    folding that dropped any of them would show."""
    g = torch.Generator().manual_seed(0)
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            c = mod.num_features
            mod.running_mean.copy_(torch.randn(c, generator=g))
            mod.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            if mod.affine:
                mod.weight.data.copy_(torch.randn(c, generator=g))
                mod.bias.data.copy_(torch.randn(c, generator=g))
    return m


F_hardswish = torch.nn.functional.hardswish


def _eager(m, x):
    with torch.no_grad():
        return m(x)


def _close(got, want):
    torch.testing.assert_close(got.cpu(), want.cpu(), atol=1e-5, rtol=1e-5)


def _close_first_and_steady(c, x, want):
    """c's first call for x (its regions traced: their eager values) and a later one (the
    compiled plan), each against `want`."""
    _close(c(x), want)
    _close(steady_call(c, x), want)


def _kernels_and_ops(fn, *args):
    with torch.no_grad(), profile() as prof:
        fn(*args)
        opscope.synchronize()
    return [e.key for e in prof.key_averages()]


def test_eval_batch_norms_fold_into_the_convolutions_before_them(dev):
    m = _randomize_norms(torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, bias=False), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, groups=8), torch.nn.BatchNorm2d(8, eps=1e-3),   # depthwise, with a bias
        torch.nn.Conv2d(8, 4, 1), torch.nn.BatchNorm2d(4, affine=False))).eval().to(dev)
    x = torch.randn(2, 3, 12, 12).to(dev)
    c = opscope.compile(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "convolution runs eagerly": the library's kernel, not generated code
        _close_first_and_steady(c, x, _eager(m, x))
    keys = _kernels_and_ops(c, x)
    assert not any("batch_norm" in k for k in keys), keys
    assert sum(k.startswith("conv2d") for k in keys) == 3, keys
    # The folded weights read the norms' state: changed in place, or assigned anew, the
    # next call reads it without recompiling.
    with torch.no_grad():
        m[1].running_var.mul_(3.0)
        m[4].bias.add_(1.0)
    _close(c(x), _eager(m, x))
    m[6].running_mean = torch.randn(4).to(dev)
    _close(c(x), _eager(m, x))
    assert len(c.plans) == 1


def test_a_norm_whose_convolution_output_is_read_elsewhere_is_not_folded(dev):
    class Residual(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = torch.nn.Conv2d(4, 4, 3, padding=1), torch.nn.BatchNorm2d(4)

        def forward(self, x):
            y = self.conv(x)
            return self.bn(y) + y  # folding would change y as the add reads it

    m = _randomize_norms(Residual()).eval().to(dev)
    x = torch.randn(2, 4, 6, 6).to(dev)
    c = opscope.compile(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close_first_and_steady(c, x, _eager(m, x))
    assert any("batch_norm" in k for k in _kernels_and_ops(c, x))


def test_a_plan_drops_each_intermediate_after_its_last_use(dev):
    def chain(x):
        for _ in range(8):
            x = torch.cumsum(x, 0) * 0.5  # cumsum is not lowered: each step an eager op's output
        return x

    x = torch.randn(1 << 23).to(dev)  # 32 MiB a value
    size = x.numel() * x.element_size()
    c = opscope.compile(chain)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = chain(x).cpu()
        c(x)
    opscope.synchronize()
    base = opscope.memory_stats()["allocated_bytes"]
    opscope.reset_peak_memory_stats()
    got = c(x)
    opscope.synchronize()
    grew = opscope.memory_stats()["peak_allocated_bytes"] - base
    _close(got, want)
    # Held to the end, the 16 values would take 16 x 32 MiB; dropped, a few at a time.
    assert grew <= 4 * size, grew / size


def test_parameters_are_read_from_the_module_on_every_call(dev):
    m = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Tanh()).to(dev)
    x = torch.randn(4, 16).to(dev)
    c = opscope.compile(m)
    _close_first_and_steady(c, x, _eager(m, x))
    m[0].weight = torch.nn.Parameter(torch.randn(8, 16).to(dev))  # a new tensor in the slot
    _close(c(x), _eager(m, x))
    m[0].bias.data = torch.randn(8).to(dev)  # the same Parameter, new data
    _close(c(x), _eager(m, x))
    assert len(c.plans) == 1
    m[0].bias = None  # a parameter gone: the state is walked again and compiles anew
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = c(x)
    _close(got, _eager(m, x))
    _close(steady_call(c, x), _eager(m, x))  # the new signature's plan, as compiled
    assert len(c.plans) == 2
    assert any("parameters or buffers changed" in str(r.message) for r in w), [str(r.message) for r in w]


def test_convolutions_take_the_activation_after_them_as_their_epilogue(dev):
    m = _randomize_norms(torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, bias=False), torch.nn.BatchNorm2d(8), torch.nn.Hardswish(inplace=True),
        torch.nn.Conv2d(8, 8, 3, groups=8, padding=1), torch.nn.ReLU(),            # depthwise
        torch.nn.Conv2d(8, 8, 1), torch.nn.ReLU6(),                                 # 1x1, hardtanh(0, 6)
        torch.nn.Conv2d(8, 4, 3), torch.nn.SiLU(inplace=True),
        torch.nn.Conv2d(4, 4, 1), torch.nn.Hardtanh(-1.0, 1.0))).eval().to(dev)    # not ReLU6: stays
    x = torch.randn(2, 3, 14, 14).to(dev)
    c = opscope.compile(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close_first_and_steady(c, x, _eager(m, x))
    keys = _kernels_and_ops(c, x)
    fused = sorted(k for k in keys if k.startswith("conv2d"))
    assert fused == ["conv2d_1x1_f32", "conv2d_1x1_relu6_f32", "conv2d_depthwise_relu_f32", "conv2d_hardswish_f32",
                     "conv2d_silu_f32"], keys
    assert not any(k.split("_")[0] in ("relu", "hardswish", "silu") for k in keys), keys
    assert "opscope::conv2d_act" in keys


def test_a_residual_add_and_its_activation_join_the_convolution_before_them(dev):
    class Block(torch.nn.Module):  # torchvision's BasicBlock: out += identity, then relu
        def __init__(self):
            super().__init__()
            self.conv1, self.bn1 = torch.nn.Conv2d(4, 4, 3, padding=1, bias=False), torch.nn.BatchNorm2d(4)
            self.conv2, self.bn2 = torch.nn.Conv2d(4, 4, 3, padding=1, bias=False), torch.nn.BatchNorm2d(4)
            self.conv3 = torch.nn.Conv2d(4, 4, 1)

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += x
            out = torch.relu(out)
            y = x + self.conv3(out)  # identity first, out of place, no activation after
            return y, x  # x read again: the add must not have changed it

    m = _randomize_norms(Block()).eval().to(dev)
    x = torch.randn(2, 4, 7, 7).to(dev)
    c = opscope.compile(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first, got, want = c(x), steady_call(c, x), _eager(m, x)  # the first call traced; the later one compiled
    for out in (first, got):
        for g, w in zip(out, want):
            _close(g, w)
    keys = _kernels_and_ops(c, x)
    assert sorted(k for k in keys if k.startswith("conv2d")) == ["conv2d_1x1_add_f32", "conv2d_add_relu_f32",
                                                                 "conv2d_relu_f32"], keys
    assert not any(k.startswith(("add_", "relu_", "batch_norm")) for k in keys), keys


def test_the_fused_convolution_op_checks_its_activation_and_runs_on_cpu():
    x, w, b = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3), torch.randn(3)
    op = torch.ops.opscope.conv2d_act
    for act, f in (("relu", torch.relu), ("relu6", lambda t: t.clamp(0, 6)), ("hardswish", F_hardswish),
                   ("silu", torch.nn.functional.silu), ("", lambda t: t)):
        want = f(torch.nn.functional.conv2d(x, w, b, 1, 1))
        _close(op(x, w, b, [1, 1], [1, 1], [1, 1], 1, act), want)  # torch's CPU reference
        _close(op(x.to(opscope.device()), w.to(opscope.device()), b.to(opscope.device()), [1, 1], [1, 1], [1, 1], 1,
                  act), want)
    r = torch.randn(1, 3, 5, 5)  # and a residual, on both paths
    want = torch.relu(torch.nn.functional.conv2d(x, w, b, 1, 1) + r)
    _close(op(x, w, b, [1, 1], [1, 1], [1, 1], 1, "relu", r), want)
    d = opscope.device()
    _close(op(x.to(d), w.to(d), b.to(d), [1, 1], [1, 1], [1, 1], 1, "relu", r.to(d)), want)
    with warnings.catch_warnings(), pytest.raises(RuntimeError, match=r"must match the size"):
        warnings.simplefilter("ignore")  # opscope refuses it: torch's reference gives torch's error
        op(x.to(d), w.to(d), b.to(d), [1, 1], [1, 1], [1, 1], 1, "relu", r[..., :4].to(d))
    with pytest.raises(RuntimeError, match=r"opscope::conv2d_act.*unknown activation 'gelu'"):
        op(x.to(opscope.device()), w.to(opscope.device()), None, [1, 1], [0, 0], [1, 1], 1, "gelu")
    with pytest.raises(RuntimeError, match=r"opscope::conv2d_act.*unknown activation 'tanh'"):
        op(x, w, None, [1, 1], [0, 0], [1, 1], 1, "tanh")


def test_explain_says_what_each_rewrite_did(dev, capfd):
    m = _randomize_norms(torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                                             torch.nn.ReLU())).eval().to(dev)
    x = torch.randn(1, 3, 8, 8).to(dev)
    c = opscope.compile(m, explain=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close_first_and_steady(c, x, _eager(m, x))
    err = capfd.readouterr().err
    assert "[opscope.compile] Sequential: batch norm 1 folded into convolution 0" in err, err
    assert "[opscope.compile] Sequential: convolution 0 + relu: one kernel (opscope::conv2d_act)" in err, err
    assert "dropped" in err and "nodes nothing reads" in err, err
    plan = next(iter(c.plans.values()))
    assert plan.rewrites[-2:] == ["batch norm 1 folded into convolution 0",
                                  "convolution 0 + relu: one kernel (opscope::conv2d_act)"], plan.rewrites
