"""A compiled Linear's weight packed once for oneDNN's matmul (from its second call) and never
read stale: a weight changed in place on the device, by a host copy into it (as
load_state_dict does), through .data, or replaced by a new Parameter, gives the product of
the new values."""
import torch
from torch import nn

import opscope
from opscope.profiler import Config, profile


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
        check("first call")
        out, names = launches(lambda: f(x.to(dev)), tmp_path)
        assert "matmul_packed_f32" not in names, "packed before the weight held still for a call"
        out, names = launches(lambda: f(x.to(dev)), tmp_path)
        assert "matmul_packed_f32" in names, names
        check("packed")

        d[0].weight.mul_(0.5)  # a launch on the device writes it
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
        assert "matmul_packed_f32" in names, "the new weight is packed once it holds still"
