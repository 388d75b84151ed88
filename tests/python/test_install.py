"""scripts/install.sh and scripts/uninstall.sh, into a temporary bin and site folder (the
real /usr/local is setup's, and CI checks it after setup): `import opscope` from another
folder with no PYTHONPATH, through the .pth file as Debian's python3 reads it; an
unmodified script under OPSCOPE_PROFILE=1; `opscope` on PATH; and the uninstall step."""
import os
import subprocess
from pathlib import Path

import opscope

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(opscope.__file__).resolve().parents[2]  # BUILD/python/opscope/__init__.py
PYTHON = "/usr/bin/python3"


def script(name, tmp_path, **env):
    e = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    e.update(OPSCOPE_BUILD_DIR=str(BUILD), OPSCOPE_BIN_DIR=str(tmp_path / "bin"),
             OPSCOPE_SITE_DIR=str(tmp_path / "site"), **env)
    return subprocess.run([str(ROOT / "scripts" / name)], env=e, capture_output=True, text=True, timeout=60)


def python_in(folder, site, code, **env):
    """/usr/bin/python3 -c CODE in `folder`, with no PYTHONPATH and `site` read as the site
    folder is (site.addsitedir: the same .pth processing)."""
    e = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    e.update(env)
    prelude = f"import site; site.addsitedir({str(site)!r})\n"
    return subprocess.run([PYTHON, "-c", prelude + code], cwd=folder, env=e, capture_output=True, text=True,
                          timeout=300)


def test_install_puts_opscope_on_path_and_an_unmodified_script_runs_from_any_folder(tmp_path):
    r = script("install.sh", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "undo with scripts/uninstall.sh" in r.stdout
    pth = tmp_path / "site" / "opscope.pth"
    assert pth.read_text().strip() == str(BUILD / "python")
    link = tmp_path / "bin" / "opscope"
    assert link.is_symlink() and link.resolve() == (BUILD / "tools" / "opscope").resolve()

    work = tmp_path / "work"  # another folder, no PYTHONPATH
    work.mkdir()
    cli = subprocess.run(["opscope", "--help"], cwd=work, capture_output=True, text=True,
                         env={**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"})
    assert cli.returncode == 0 and "explore" in cli.stdout, cli.stdout + cli.stderr
    # The user's own script, as it is, under OPSCOPE_PROFILE=1 (one interpreter: torch's
    # import is most of this test's time).
    (work / "their_script.py").write_text(
        "import torch, opscope\n"
        "print('opscope from', opscope.__file__)\n"
        "x = torch.randn(16, 16).to(opscope.device())\n"
        "print((x * 2).sum().item())\n")
    p = python_in(work, tmp_path / "site", "exec(open('their_script.py').read())", OPSCOPE_PROFILE="1",
                  OPSCOPE_PROFILE_DIR=str(work / "prof"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"opscope from {BUILD / 'python' / 'opscope' / '__init__.py'}" in p.stdout, p.stdout
    assert (work / "prof" / "trace.json").is_file() and (work / "prof" / "profile.db").is_file()


def test_uninstall_removes_only_what_install_made(tmp_path):
    assert script("install.sh", tmp_path).returncode == 0
    r = script("uninstall.sh", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (tmp_path / "site" / "opscope.pth").exists()
    assert not (tmp_path / "bin" / "opscope").exists()
    # A file of the same name that install did not make is left alone, by both steps.
    (tmp_path / "bin" / "opscope").write_text("#!/bin/sh\necho someone else's\n")
    r = script("install.sh", tmp_path)
    assert "not a link opscope made: left as it is" in r.stderr
    r = script("uninstall.sh", tmp_path)
    assert r.returncode == 0 and "left as it is" in r.stderr
    assert (tmp_path / "bin" / "opscope").read_text().endswith("someone else's\n")
    # Uninstalling twice is fine.
    assert script("uninstall.sh", tmp_path).returncode == 0
