#!/usr/bin/env python3
"""Merges what scripts/gpu-check.sh left in OUT_DIR into OUT_DIR/results.md: the steps
(steps.tsv), the opscope bench (bench.json) and the PyTorch peer (torch.json), one table
per dtype with a PASS/FAIL per target:

  fused >= 85% of probe   fused rms_norm's GB/s against the probe, for x of 64 MiB and more
  compiled <= 1.10 fused  compiled within 10% of fused
  ahead of torch.compile  fused and compiled both faster than torch.compile
  correct                 every opscope result within tolerance of the CPU device's

and a table of the CPU device's scaling with cores (cpu-cores-N.json: fused rms_norm f32
against the copy probe at each OPSCOPE_CPU_CORES), which has no target.

  gpu_check_report.py OUT_DIR
  gpu_check_report.py --all-skipped GTEST_XML   exit 0 when the report holds tests and
                                                every one of them skipped
"""
import json
import os
import sys

SHAPES = ["1x4096", "32x4096", "4096x4096", "16384x8192"]
DTYPES = ["f32", "bf16"]
ITEMSIZE = {"f32": 4, "bf16": 2, "f16": 2}
BIG = 64 << 20  # bytes of x from which the bandwidth target applies


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except Exception as e:  # a file cut short by a timeout
        return {"error": "%s is not valid JSON (%s)" % (os.path.basename(path), e)}


def steps_of(out):
    rows = []
    try:
        with open(os.path.join(out, "steps.tsv")) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 4:
                    rows.append(parts[:5] + [""] * (5 - len(parts[:5])))
    except FileNotFoundError:
        pass
    return rows


def gtest_cases(path):
    """(passed, failed, skipped) test names from a gtest XML report; None if unreadable."""
    try:
        import xml.etree.ElementTree as ET
        root = ET.parse(path).getroot()
    except Exception:
        return None
    passed, failed, skipped = [], [], []
    for case in root.iter("testcase"):
        name = "%s.%s" % (case.get("classname"), case.get("name"))
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(name)
        elif case.find("skipped") is not None or case.get("result") == "skipped":
            skipped.append(name)
        else:
            passed.append(name)
    return passed, failed, skipped


def gtest_summary(path, gpu_seen):
    """ "10 passed, 0 failed, 2 skipped" from a gtest XML report."""
    cases = gtest_cases(path)
    if cases is None:
        return None
    passed, failed, skipped = cases
    text = "%d passed, %d failed, %d skipped" % (len(passed), len(failed), len(skipped))
    if failed:
        text += "; failed: " + ", ".join(failed)
    if skipped and not passed and not failed:
        text += (" (all skipped on a machine whose nvidia-smi sees a GPU: FAIL)" if gpu_seen
                 else " (all skipped: no GPU)")
    return text


def cpu_scaling(out):
    """The CPU device table: one row per core count measured (cpu-cores-N.json)."""
    runs = []
    for name in sorted(os.listdir(out)):
        if name.startswith("cpu-cores-") and name.endswith(".json"):
            j = load(os.path.join(out, name))
            if j and "error" not in j:
                runs.append(j)
    if not runs:
        return []
    runs.sort(key=lambda j: j.get("cores", 0))
    base = runs[0]
    md = ["## CPU device: scaling with cores", "",
          "runtime_bench --rms-norm at each OPSCOPE_CPU_CORES: the copy probe (%d MiB arrays, read + "
          "write) and fused rms_norm f32 (best of 10), GB/s; speedup against %d cores." % (
              base.get("probe_array_bytes", 128 << 20) >> 20, base["cores"]), "",
          "| cores | copy GB/s | triad GB/s | rms_norm 4096x4096 GB/s | of copy | rms_norm 16384x8192 GB/s "
          "| of copy | copy speedup | rms_norm 16384x8192 speedup |",
          "|" + "---|" * 9]
    def big(j):
        rows = j.get("rms_norm", [])
        return rows[-1] if rows else {}
    for j in runs:
        small = (j.get("rms_norm") or [{}])[0]
        md.append("| %d | %.1f | %.1f | %.1f | %.2f | %.1f | %.2f | %.2fx | %.2fx |" % (
            j["cores"], j["copy_gbs"], j["triad_gbs"], small.get("gbs", 0), small.get("of_copy", 0),
            big(j).get("gbs", 0), big(j).get("of_copy", 0), j["copy_gbs"] / base["copy_gbs"],
            big(j).get("gbs", 0) / max(big(base).get("gbs", 0), 1e-9)))
    md.append("")
    return md


def index(results):
    by = {}
    for r in (results or {}).get("results", []):
        by[(r.get("dtype"), r.get("shape"), r.get("impl"))] = r
    return by


def us(r):
    if r is None:
        return None
    return r.get("us") if "error" not in r else None


def fmt_us(r, missing):
    if r is None:
        return missing
    if "error" in r:
        return "n/a (error)"
    return "%.2f" % r["us"]


def verdict(ok):
    return "PASS" if ok else "FAIL"


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--all-skipped":
        cases = gtest_cases(sys.argv[2])
        return 0 if cases and cases[2] and not cases[0] and not cases[1] else 1
    if len(sys.argv) != 2:
        print("usage: gpu_check_report.py OUT_DIR | --all-skipped GTEST_XML", file=sys.stderr)
        return 64
    out = sys.argv[1]
    bench = load(os.path.join(out, "bench.json"))
    torch = load(os.path.join(out, "torch.json"))
    steps = steps_of(out)
    # A machine without PyTorch is not a failure: its target is reported as not measured.
    failed = [s for s in steps if s[1] != "ok" and not s[1].startswith("skipped (no PyTorch")]
    md = ["# GPU check", ""]
    md.append("Device: %s" % ((bench or {}).get("device") or "(unknown)"))
    md.append("")
    md.append("## Steps")
    md.append("")
    md.append("| step | status | exit | seconds | log |")
    md.append("|---|---|---|---|---|")
    for s in steps:
        md.append("| %s | %s | %s | %s | %s |" % (s[0], s[1], s[2], s[3], s[4]))
    md.append("")
    if failed:
        md.append("Failed steps: %s (see their logs)." % ", ".join(s[0] for s in failed))
        md.append("")

    gpu_seen = any(s[0] == "nvidia-smi" and s[1] == "ok" for s in steps)
    tests = gtest_summary(os.path.join(out, "gtest-gpu.xml"), gpu_seen)
    cases = gtest_cases(os.path.join(out, "gtest-gpu.xml"))
    if gpu_seen and cases and cases[2] and not cases[0] and not cases[1] and \
            not any(s[0] == "gpu-tests" and s[1] != "ok" for s in failed):
        failed.append(["gpu-tests", "failed (all skipped on a GPU machine)", "", "", ""])
    if tests:
        md.append("GPU tests: " + tests)
        md.append("")
    bench_missing = "not run"
    if bench is None:
        bench_missing = "not run"
    elif "error" in bench:
        bench_missing = "n/a"
    torch_missing = "not run"
    if torch is None:
        torch_missing = "n/a"
    elif "error" in torch and not torch.get("results"):
        torch_missing = "n/a"
        md.append("**PyTorch: %s**" % torch["error"])
        md.append("")
    if bench and "error" in bench:
        md.append("**No results: %s**" % bench["error"])
        md.append("")
    probe = (bench or {}).get("probe", {})
    probe_gbs = probe.get("best_gbs")
    if probe:
        md.append("Probe (1 GiB, read + write): cudaMemcpyAsync D2D %.0f GB/s, copy kernel %.0f GB/s; "
                  "the better is the probe." % (probe["memcpy_d2d_gbs"], probe["copy_kernel_gbs"]))
        md.append("")
    if torch and torch.get("torch_version"):
        md.append("PyTorch %s%s." % (torch["torch_version"],
                                     ("; " + torch["f_rms_norm"]) if torch.get("f_rms_norm") else ""))
        md.append("")
    md.append("Times are µs per call (CUDA events around N calls after warm-up; naive, fused and compiled alternated, best of 5 rounds; PyTorch's likewise).")
    md.append("")

    b, t = index(bench if bench and "error" not in bench else None), index(torch)
    summary = {"fused_bw": [], "compiled_vs_fused": [], "vs_torch_compile": [], "correct": []}
    for dt in DTYPES:
        md.append("## %s" % dt)
        md.append("")
        md.append("| shape | probe GB/s | naive | fused | compiled | torch naive | F.rms_norm | torch.compile "
                  "| fused % of probe | compiled / fused | fused ≥ 85% probe | compiled ≤ 1.10 fused "
                  "| ahead of torch.compile | correct |")
        md.append("|" + "---|" * 14)
        for sh in SHAPES:
            rows, cols = (int(v) for v in sh.split("x"))
            naive, fused, comp = (b.get((dt, sh, i)) for i in ("naive", "fused", "compiled"))
            tn, tf, tc = (t.get((dt, sh, i)) for i in ("torch_naive", "F.rms_norm", "torch.compile"))
            cells = [sh, "%.0f" % probe_gbs if probe_gbs else "n/a"]
            cells += [fmt_us(naive, bench_missing), fmt_us(fused, bench_missing), fmt_us(comp, bench_missing)]
            cells += [fmt_us(tn, torch_missing), fmt_us(tf, torch_missing), fmt_us(tc, torch_missing)]
            pct = fused.get("pct_probe") if fused and us(fused) else None
            ratio = us(comp) / us(fused) if us(comp) and us(fused) else None
            cells.append("%.1f%%" % pct if pct is not None else "n/a")
            cells.append("%.3f" % ratio if ratio is not None else "n/a")
            # targets
            if rows * cols * ITEMSIZE[dt] < BIG:
                bw = "n/a (< 64 MiB)"
            elif pct is None:
                bw = "FAIL (no result)"
            else:
                bw = verdict(pct >= 85.0)
                summary["fused_bw"].append(pct >= 85.0)
            if ratio is None:
                cv = "FAIL (no result)" if b else "n/a"
                if b:
                    summary["compiled_vs_fused"].append(False)
            else:
                cv = verdict(ratio <= 1.10)
                summary["compiled_vs_fused"].append(ratio <= 1.10)
            if us(tc) is None:
                vt = "n/a (no torch.compile result)"
            elif us(fused) is None or us(comp) is None:
                vt = "FAIL (no result)"
                summary["vs_torch_compile"].append(False)
            else:
                ok = us(fused) < us(tc) and us(comp) < us(tc)
                vt = verdict(ok) + " (%.2fx / %.2fx)" % (us(tc) / us(fused), us(tc) / us(comp))
                summary["vs_torch_compile"].append(ok)
            corr = [r for r in (naive, fused, comp) if r is not None]
            if not corr:
                co = "n/a"
            else:
                ok = all("error" not in r and r.get("ok") for r in corr)
                co = verdict(ok)
                summary["correct"].append(ok)
            cells += [bw, cv, vt, co]
            md.append("| " + " | ".join(cells) + " |")
        md.append("")
    md += cpu_scaling(out)
    md.append("## Targets")
    md.append("")
    names = {"fused_bw": "fused rms_norm ≥ 85% of the probe on x ≥ 64 MiB",
             "compiled_vs_fused": "compiled within 10% of fused",
             "vs_torch_compile": "fused and compiled ahead of torch.compile",
             "correct": "opscope results match the CPU device"}
    overall, unmeasured = True, []
    for k, name in names.items():
        v = summary[k]
        if not v:
            md.append("- %s: n/a (not measured)" % name)
            unmeasured.append(k)
        else:
            md.append("- %s: %s (%d of %d rows)" % (name, verdict(all(v)), sum(v), len(v)))
            overall = overall and all(v)
    # Only torch.compile may be missing (no PyTorch here); the rest must have been measured.
    overall = overall and not failed and all(k == "vs_torch_compile" for k in unmeasured)
    md.append("")
    md.append("Overall: **%s**%s" % ("PASS" if overall else "FAIL",
                                     " (torch.compile not measured)" if overall and unmeasured else ""))
    md.append("")
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
