#!/usr/bin/env python3
"""Lists every skipped test with its reason, from JUnit XML reports (ctest --output-junit,
pytest --junitxml), and fails when a skip is not in the allow-list below (docs/TESTING.md).

    scripts/check_skips.py build/ctest-junit.xml [build/pytest-junit.xml ...]

A C++ test's reason is the line test_main.cpp prints for it ("opscope-test skip: Suite.Name:
reason"); a pytest item's is its skip message. Exit 0: every skip allowed (or none); 1: a
skip not allowed, or one with no reason; 2: a report that cannot be read.
"""
import re
import sys
import xml.etree.ElementTree as ET

# The only reasons a test may skip in CI: the machine has no GPU, or the build has no CUDA
# toolkit. Anything else (no torch, no clang++, one CPU, no /dev/shm...) is a setup that
# CI must not have, so it fails the run.
ALLOWED = [
    ("GPU absent", re.compile(r"^no CUDA GPU: ")),
    ("CUDA toolkit absent", re.compile(r"^no CUDA toolkit: ")),
]

CXX_REASON = re.compile(r"^opscope-test skip: (?P<test>[^:]+): (?P<why>.*)$", re.M)


def skips(path):
    """(test, reason or None) for each skipped test case of one JUnit report."""
    root = ET.parse(path).getroot()
    out = []
    for case in root.iter("testcase"):
        skipped = case.find("skipped")
        if skipped is None and case.get("status") not in ("skipped", "notrun"):
            continue
        name = case.get("name", "?")
        if case.get("classname") and case.get("classname") not in name:
            name = f"{case.get('classname')}::{name}"
        text = "".join(e.text or "" for e in case.iter("system-out"))
        found = CXX_REASON.findall(text)
        if found:
            out.extend(found)
            continue
        why = skipped.get("message") if skipped is not None else None
        # pytest writes "Skipped: reason"; ctest a generic message with no reason in it.
        if why and why.startswith("Skipped: "):
            why = why[len("Skipped: "):]
        if why in (None, "", "skipped", "Skipped", "SKIP_REGULAR_EXPRESSION matched", "SKIP_RETURN_CODE=77"):
            why = None
        out.append((name, why))
    return out


def allowed(why):
    for label, rule in ALLOWED:
        if why and rule.search(why):
            return label
    return None


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rows = []
    for path in argv[1:]:
        try:
            rows.extend(skips(path))
        except (OSError, ET.ParseError) as e:
            print(f"check_skips: {path}: cannot read the report: {e}", file=sys.stderr)
            return 2
    bad = 0
    print(f"Skipped tests: {len(rows)}")
    for test, why in rows:
        label = allowed(why)
        if not label:
            bad += 1
        verdict = f"allowed ({label})" if label else "NOT ALLOWED"
        print(f"  {test}: {why or '(no reason given)'}  [{verdict}]")
    if bad:
        rules = "; ".join(f"{label}: '{rule.pattern}'" for label, rule in ALLOWED)
        print(f"check_skips: {bad} skip(s) outside the allow-list ({rules}); see docs/TESTING.md", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
