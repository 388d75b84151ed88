"""The README's Python examples, run as written: its ```python blocks, in order, in one
namespace (as a reader pastes them into one session), in a fresh folder. The README leaves
a few names to the reader (a model and its input, a hidden state and its weight, the
op-by-op RMSNorm); they are given here, and nothing else. Each block's claims are then
checked. The C++ example runs in tests/readme_test.cpp; docs/TESTING.md maps the README's
other claims to their tests."""
import contextlib
import io
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import opscope
from conftest import opscope_cli, steady_call

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def python_blocks():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) == 4, "the README's Python examples changed: update this test and docs/TESTING.md"
    return blocks


def naive_rms_norm(x, w, eps=1e-6):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def readers_names():
    """What the README's examples use without defining: the reader's own model and data."""
    torch.manual_seed(0)
    dev = opscope.device()
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64))
    return {
        "model": model,
        "x": torch.randn(8, 64),
        "h": torch.randn(8, 64).to(dev),
        "weight": (torch.rand(64) + 0.5).to(dev),
        "w": (torch.rand(64) + 0.5).to(dev),
        "naive_rms_norm": naive_rms_norm,
    }


def run(block, ns):
    """Runs one block as the README's own lines: a traceback points at README.md's line."""
    text = README.read_text()
    first_line = text[:text.index(block)].count("\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile("\n" * first_line + block, str(README), "exec"), ns)
    return out.getvalue()


def test_the_python_examples_run_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the profiler example writes opscope-profile/ here
    ns = readers_names()
    given = dict(ns)
    device_block, profiler_block, compile_block, _ = python_blocks()
    want = given["model"](given["x"]).detach()  # before the example moves the model

    # The device: the model runs on opscope's device, printing synchronizes, the fused kernel.
    printed = run(device_block, ns)
    assert ns["dev"] == torch.device("privateuseone:0")
    assert ns["model"][0].weight.device == ns["dev"]
    torch.testing.assert_close(ns["y"].cpu(), naive_rms_norm(ns["h"].cpu(), ns["weight"].cpu()), atol=1e-5, rtol=1e-5)
    assert "tensor(" in printed  # print(y.cpu())
    assert str(opscope.fallback_report()) in printed
    y_model = ns["model"](ns["x"]).cpu().detach()
    torch.testing.assert_close(y_model, want, atol=1e-5, rtol=1e-5)

    # The profiler: one window (steps 2-4 of 5) exported, its table printed by device time.
    printed = run(profiler_block, ns)
    assert "Self Device" in printed and "aten::" in printed, printed
    out = tmp_path / "opscope-profile"
    assert (out / "trace.json").is_file() and (out / "profile.db").is_file()
    assert not (tmp_path / "opscope-profile-1").exists()  # one active window
    kernels = [e for e in ns["prof"].events() if e[0] == "kernel"]
    assert kernels, "no device kernels recorded"

    # The compiler: the six-op RMSNorm is one fused kernel, named as the comment says.
    run(compile_block, ns)
    named = re.search(r"one kernel: (\w+)", compile_block).group(1)
    f, x = ns["f"], ns["x"]
    assert x.device == ns["dev"]  # the device example moved it
    assert [k for r in f.report(x, ns["w"]) for k in r.kernels] == [named]
    want = naive_rms_norm(x.cpu(), ns["w"].cpu())
    torch.testing.assert_close(ns["y"].cpu(), want, atol=1e-5, rtol=1e-5)
    # The block's y is the first call's (the trace's eager run); the fused kernel's is a later call's.
    torch.testing.assert_close(steady_call(f, x, ns["w"]).cpu(), want, atol=1e-5, rtol=1e-5)


def test_the_distributed_example_runs_as_written_on_two_ranks(tmp_path):
    """The torch.distributed block, as written, in two processes that torchrun's env://
    variables join: all_reduce of ones sums to 2 on each rank."""
    block = python_blocks()[3]
    script = tmp_path / "readme_dist.py"
    script.write_text(block)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(2):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2",
                   LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE="2",
                   PYTHONPATH=str(Path(opscope.__file__).resolve().parents[1]))  # this opscope, from any folder
        procs.append(subprocess.Popen([sys.executable, str(script)], env=env, cwd=tmp_path,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("the README's distributed example did not finish in 120 s")
        outs.append(out)
        assert p.returncode == 0, out
    for out in outs:
        assert "tensor([2., 2., 2., 2.])" in out, out


def test_the_files_and_folders_the_readme_names_exist():
    text = README.read_text()
    named = set(re.findall(r"`((?:scripts|examples|bench|docs|src|tests|tools|explorer)/[\w./-]*)`", text))
    named |= set(re.findall(r"\b((?:scripts|examples|bench|docs)/[\w-]+\.(?:sh|py|md))\b", text))
    assert len(named) >= 10, named
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"the README names files that are not there: {missing}"


def test_every_test_docs_testing_names_exists():
    """docs/TESTING.md's table (README claim -> test) names real tests: a renamed or deleted
    test fails here instead of leaving a claim that nothing checks."""
    doc = (ROOT / "docs" / "TESTING.md").read_text()
    cpp = "".join(p.read_text() for p in (ROOT / "tests").glob("*.cpp"))
    cpp_tests = set(re.findall(r"\bTEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)", cpp))
    suites = {s for s, _ in cpp_tests}
    py_tests = {p.name: set(re.findall(r"^def (test_\w+)", p.read_text(), re.M))
                for p in (ROOT / "tests" / "python").glob("*.py")}
    tests_column = [row.rstrip(" |").rsplit("|", 1)[-1] for row in doc.splitlines() if row.startswith("| ")]
    named, missing = 0, []
    for token in re.findall(r"`([^`\n]+)`", "\n".join(tests_column)):
        if m := re.fullmatch(r"([A-Z]\w+)\.(\w+|\*)", token):
            suite, test = m.groups()
            named += 1
            if (suite not in suites) if test == "*" else ((suite, test) not in cpp_tests):
                missing.append(token)
        elif m := re.fullmatch(r"(test_\w+\.py)(?:::(\w+|\*))?", token):
            file, test = m.groups()
            named += 1
            if file not in py_tests or (test not in (None, "*") and test not in py_tests[file]):
                missing.append(token)
    assert named >= 50, named
    assert not missing, f"docs/TESTING.md names tests that do not exist: {missing}"


def test_the_inside_a_kernel_commands_run_as_written(tmp_path):
    """The "Inside a kernel" block, line by line with this build's CLI, in a fresh folder:
    the profile is sampled, `opscope kernel` lists and annotates mul_f32, its JSON has the
    issue's shape, and the line table names kernel source lines."""
    text = README.read_text()
    block = re.search(r"### Inside a kernel\n.*?```sh\n(.*?)```", text, re.S).group(1)
    lines = [l.split("#")[0].strip() for l in block.splitlines() if l.strip()]
    assert len(lines) == 5 and all(l.startswith("build/tools/opscope ") for l in lines), lines
    cli = opscope_cli()
    outs = []
    for line in lines:
        args = line.split()[1:]
        if args[0] == "profile":
            # The README's default shape, smaller; at the auto rate (~700 Hz on a VM) so short a
            # run may sample mul_f32 a few times only: 10 kHz makes its samples certain.
            args += ["--shape", "256x4096", "--iters", "3", "--sample-rate", "10000"]
        r = subprocess.run([cli] + args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{line}\n{r.stdout}\n{r.stderr}"
        outs.append(r.stdout)
    assert "mul_f32" in outs[1], outs[1]
    assert outs[2].startswith("Kernel mul_f32: "), outs[2]
    import json
    j = json.loads(outs[3])
    assert j["kernel"] == "mul_f32" and j["samples"] > 0 and j["instructions"] and j["cores"], j.keys()
    assert re.search(r"\w+\.(cpp|h|inc):\d+", outs[4]), outs[4]  # a source line of a built-in kernel


def test_the_static_kernel_commands_run_as_written(tmp_path):
    """The second block of "Inside a kernel": compile prints the artifact's hash, and
    `opscope kernel --static HASH` reads that artifact's loops and verdicts (in a cache of
    the test's own, OPSCOPE_CACHE_DIR)."""
    text = README.read_text()
    section = re.search(r"### Inside a kernel\n(.*?)\n## ", text, re.S).group(1)
    block = re.findall(r"```sh\n(.*?)```", section, re.S)[1]
    lines = [l.split("#")[0].strip() for l in block.splitlines() if l.strip()]
    assert len(lines) == 2 and lines[1].endswith("--static HASH"), lines
    env = dict(os.environ, OPSCOPE_CACHE_DIR=str(tmp_path / "cache"))
    cli = opscope_cli()
    r = subprocess.run([cli] + lines[0].split()[1:], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    digest = re.search(r"hash ([0-9a-f]{16})", r.stdout).group(1)
    args = [digest if a == "HASH" else a for a in lines[1].split()[1:]]
    r = subprocess.run([cli] + args, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("Kernel fused_mul_mean_add_rsqrt_mul_mul_bf16 "), r.stdout
    assert "main loop kernels.cpp:" in r.stdout and "B / element" in r.stdout, r.stdout
    assert re.search(r"^  (WARN|verdict): ", r.stdout, re.M), r.stdout
