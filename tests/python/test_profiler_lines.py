"""The instructions layer from Python: Config(layers="...,instructions", sample_rate=...) and
prof.key_averages(group_by="line"), the hottest source lines across kernels with their kernel
and op (`opscope table --group-by-line`'s table); bad values name the argument."""
import subprocess

import pytest
import torch

import opscope
from conftest import opscope_cli
from opscope.profiler import Config, profile


def test_key_averages_by_line_names_the_sampled_kernels_lines(dev, tmp_path):
    x = torch.randn(512, 4096).to(dev)
    cfg = Config(layers="framework,runtime,device,instructions", sample_rate=20000, output_dir=str(tmp_path))
    assert cfg.sample_rate == 20000 and cfg.layers == "framework,runtime,device,instructions"
    with profile(experimental_config=cfg) as prof:
        for _ in range(20):
            torch.exp(x)
        opscope.synchronize()
    lines = prof.key_averages(group_by="line")
    assert lines.total_samples > 0 and len(lines) > 0
    assert lines.sampling["event"] in ("cycles", "cpu-clock") and lines.sampling["rate_hz"] == 20000
    assert sum(r["samples"] for r in lines) == lines.total_samples
    assert 0.99 <= sum(r["share"] for r in lines) <= 1.0 + 1e-9
    top = lines[0]
    assert top["kernel"] == "exp_f32" and top["op"] == "aten::exp", top  # the only kernel that ran long
    assert top["samples"] == max(r["samples"] for r in lines)
    assert any(r["file"].endswith((".cpp", ".inc", ".h")) and r["line"] > 0 for r in lines if r["kernel"] == "exp_f32")
    text = lines.table(row_limit=1)
    assert text.startswith("Hottest source lines: ") and "exp_f32" in text.splitlines()[2], text
    assert "more lines; row_limit=0 shows all" in text or len(lines) == 1
    # The same rows as the CLI's table from the saved profile.
    d = prof.export(tmp_path / "saved")
    cli = subprocess.run([opscope_cli(), "table", str(d), "--group-by-line", "--row-limit", "0"], capture_output=True,
                         text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout == lines.table(row_limit=0)


def test_the_default_rate_is_auto_and_said():
    assert Config().sample_rate == "auto"
    assert Config(sample_rate="auto").sample_rate == "auto"
    assert Config(sample_rate="2500").sample_rate == 2500


def test_bad_values_name_the_argument(dev, tmp_path):
    with pytest.raises(ValueError, match=r"\[sample_rate\] '50' is not a sample rate \(100\.\.100000 .*or auto\)"):
        Config(sample_rate=50)
    with pytest.raises(ValueError, match=r"\[sample_rate\] 'fast'"):
        Config(sample_rate="fast")
    with pytest.raises(TypeError, match=r"\[sample_rate\]"):
        Config(sample_rate=1.5)
    with pytest.raises(TypeError, match=r"\[sample_rate\]"):
        Config(sample_rate=True)
    with profile(experimental_config=Config(output_dir=str(tmp_path))) as prof:
        (torch.ones(8).to(dev) * 2).cpu()
    with pytest.raises(ValueError, match=r"\[group_by\] expected 'line' or None, got 'kernel'"):
        prof.key_averages(group_by="kernel")
    with pytest.raises(ValueError, match=r"\[group_by\] the profile: no instruction samples: the profile was taken "
                                         r"without the instructions layer"):
        prof.key_averages(group_by="line")


def test_sample_rate_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPSCOPE_PROFILE_SAMPLE_RATE", "1000")
    assert Config.from_env().sample_rate == 1000
    monkeypatch.setenv("OPSCOPE_PROFILE_SAMPLE_RATE", "auto")
    assert Config.from_env().sample_rate == "auto"
    monkeypatch.setenv("OPSCOPE_PROFILE_SAMPLE_RATE", "lots")
    with pytest.raises(ValueError, match=r"\[OPSCOPE_PROFILE_SAMPLE_RATE\] 'lots'"):
        Config.from_env()
