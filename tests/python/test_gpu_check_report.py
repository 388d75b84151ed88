"""scripts/gpu_check_report.py, the GPU check's verdict, on hand-made result folders: an
all-skipped GPU test run fails on a machine whose nvidia-smi sees a GPU (and only there), and
the CPU device's scaling table reads the runtime_bench JSON."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = os.path.join(ROOT, "scripts", "gpu_check_report.py")

GTEST = """<?xml version="1.0"?><testsuites><testsuite name="CudaDevice">{}</testsuite></testsuites>"""
SKIPPED = '<testcase name="{}" classname="CudaDevice" result="skipped"><skipped message="no GPU"/></testcase>'
PASSED = '<testcase name="{}" classname="CudaDevice" result="completed"/>'


def write_run(tmp_path, smi_ok, cases):
    steps = "nvidia-smi\t%s\t0\t0\tnvidia-smi.log\ngpu-tests\tok\t0\t3\tgpu-tests.log\n" % (
        "ok" if smi_ok else "failed")
    (tmp_path / "steps.tsv").write_text(steps)
    (tmp_path / "gtest-gpu.xml").write_text(GTEST.format("".join(cases)))
    return tmp_path


def report(*args):
    return subprocess.run([sys.executable, REPORT, *map(str, args)], capture_output=True, text=True)


def test_all_skipped_mode_needs_tests_and_no_run(tmp_path):
    xml = write_run(tmp_path, True, [SKIPPED.format("A"), SKIPPED.format("B")]) / "gtest-gpu.xml"
    assert report("--all-skipped", xml).returncode == 0
    xml.write_text(GTEST.format(SKIPPED.format("A") + PASSED.format("B")))
    assert report("--all-skipped", xml).returncode == 1
    xml.write_text(GTEST.format(""))
    assert report("--all-skipped", xml).returncode == 1  # no tests at all is not "all skipped"


def test_all_skipped_on_a_gpu_machine_fails_the_report(tmp_path):
    out = write_run(tmp_path, True, [SKIPPED.format("A"), SKIPPED.format("B")])
    r = report(out)
    md = (out / "results.md").read_text()
    assert "all skipped on a machine whose nvidia-smi sees a GPU: FAIL" in md, md
    assert "Overall: **FAIL**" in md
    assert r.returncode == 0  # the report itself ran; its verdict is in results.md


def test_all_skipped_without_a_gpu_says_no_gpu(tmp_path):
    out = write_run(tmp_path, False, [SKIPPED.format("A")])
    report(out)
    md = (out / "results.md").read_text()
    assert "(all skipped: no GPU)" in md
    assert "nvidia-smi sees a GPU" not in md


def test_cpu_scaling_table_from_runtime_bench_json(tmp_path):
    out = write_run(tmp_path, True, [PASSED.format("A")])
    for cores, copy, big in ((2, 20.0, 15.0), (16, 100.0, 90.0)):
        (out / ("cpu-cores-%d.json" % cores)).write_text(json.dumps({
            "cores": cores, "copy_gbs": copy, "triad_gbs": copy, "probe_array_bytes": 512 << 20,
            "rms_norm": [{"shape": "4096x4096", "gbs": big * 1.5, "of_copy": 1.5 * big / copy},
                         {"shape": "16384x8192", "gbs": big, "of_copy": big / copy}]}))
    report(out)
    md = (out / "results.md").read_text()
    assert "512 MiB arrays" in md
    rows = [l for l in md.splitlines() if l.startswith("| 2 |") or l.startswith("| 16 |")]
    assert len(rows) == 2, md
    assert rows[1].endswith("| 5.00x | 6.00x |"), rows[1]  # copy 100/20, rms_norm 90/15
