"""scripts/check_skips.py, CI's list of skipped tests: on JUnit reports as ctest and pytest
write them, it passes allowed skips (GPU absent, CUDA toolkit absent) and fails any other,
and any skip with no reason."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_skips.py"


def ctest_case(name, status, out=""):
    return (f'<testcase name="{name}" classname="opscope_tests" time="0.1" status="{status}">'
            + ('<skipped message="SKIP_RETURN_CODE=77"/>' if status == "notrun" else "")
            + f"<system-out>{out}</system-out></testcase>")


def report(tmp_path, name, *cases):
    p = tmp_path / name
    p.write_text('<?xml version="1.0" encoding="UTF-8"?><testsuite name="x" tests="%d">%s</testsuite>'
                 % (len(cases), "".join(cases)))
    return str(p)


def check(*reports):
    return subprocess.run([sys.executable, str(SCRIPT), *reports], capture_output=True, text=True)


def test_allowed_skips_pass_and_are_listed(tmp_path):
    gpu = ctest_case("CudaDevice.Elementwise", "notrun",
                     "[ RUN ] CudaDevice.Elementwise\nopscope-test skip: CudaDevice.Elementwise: no CUDA GPU: "
                     "cudaGetDeviceCount: no CUDA-capable device is detected\nopscope-test: every test skipped")
    nvrtc = ctest_case("CompilerCuda.Ptx", "notrun",
                       "opscope-test skip: CompilerCuda.Ptx: no CUDA toolkit: CMake did not find it")
    passed = ctest_case("Runtime.EventsOrderStreams", "run", "[ OK ]")
    r = check(report(tmp_path, "c.xml", gpu, nvrtc, passed))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Skipped tests: 2" in r.stdout
    assert "CudaDevice.Elementwise: no CUDA GPU: cudaGetDeviceCount" in r.stdout and "allowed (GPU absent)" in r.stdout
    assert "allowed (CUDA toolkit absent)" in r.stdout


def test_a_skip_outside_the_allow_list_fails(tmp_path):
    torchless = ctest_case("ImportTorch.Legacy", "notrun",
                           "opscope-test skip: ImportTorch.Legacy: /usr/bin/python3 has no torch")
    r = check(report(tmp_path, "c.xml", torchless))
    assert r.returncode == 1
    assert "ImportTorch.Legacy: /usr/bin/python3 has no torch  [NOT ALLOWED]" in r.stdout
    assert "1 skip(s) outside the allow-list" in r.stderr


def test_a_skip_with_no_reason_fails(tmp_path):
    r = check(report(tmp_path, "c.xml", ctest_case("Mystery.Test", "notrun", "nothing said")))
    assert r.returncode == 1 and "Mystery.Test: (no reason given)  [NOT ALLOWED]" in r.stdout


def test_pytest_reports_give_their_skip_message(tmp_path):
    ok = ('<testcase classname="tests.python.test_gpu" name="test_on_gpu">'
          '<skipped type="pytest.skip" message="no CUDA GPU: torch.cuda.is_available() is False">x</skipped></testcase>')
    bad = ('<testcase classname="tests.python.test_x" name="test_y">'
           '<skipped type="pytest.skip" message="Skipped: flaky on this machine">x</skipped></testcase>')
    assert check(report(tmp_path, "p.xml", ok)).returncode == 0
    r = check(report(tmp_path, "p.xml", ok, bad))
    assert r.returncode == 1 and "test_y: flaky on this machine  [NOT ALLOWED]" in r.stdout


def test_an_unreadable_report_is_an_error(tmp_path):
    r = check(str(tmp_path / "missing.xml"))
    assert r.returncode == 2 and "missing.xml: cannot read the report" in r.stderr


def test_ctest_counts_a_skip_by_exit_code_only():
    """The build's ctest list (tests/ctest_skip_rule.cmake ran after discovery): no test is
    skipped for printing "[  SKIPPED ]" (a failed suite setup prints it and exits 1); each
    one is skipped only by exiting 77."""
    import opscope  # where the build is: BUILD/python/opscope
    build = Path(opscope.__file__).resolve().parents[2]
    lists = list((build / "tests").glob("opscope_tests*_tests.cmake"))
    assert lists, f"no discovered test list in {build / 'tests'}"
    text = "".join(p.read_text() for p in lists)
    props = [line for line in text.splitlines() if line.startswith("set_tests_properties(")]
    assert len(props) > 400, len(props)
    assert "SKIP_REGULAR_EXPRESSION" not in text
    assert all("SKIP_RETURN_CODE 77" in line and "OPSCOPE_TEST_SKIP_EXIT=77" in line for line in props)
