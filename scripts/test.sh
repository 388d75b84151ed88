#!/usr/bin/env bash
# Every test: set up, build every target with warnings as errors (OPSCOPE_WERROR: a new
# warning fails CI) and install (scripts/install.sh), run the explorer's UI unit tests and
# its browser tests (headless Chromium), the C++ suite, the PyTorch device's pytest suite
# (after each suite, every skipped test is listed and any skip other than "no GPU" or "no
# CUDA toolkit" fails the run: scripts/check_skips.py, docs/TESTING.md), then the C++
# suite again under AddressSanitizer + UndefinedBehaviorSanitizer (scripts/test-sanitizers.sh,
# its own build in build-asan/), and last the libFuzzer targets for a minute each
# (scripts/fuzz.sh, its own build in build-fuzz/).
set -euo pipefail
cd "$(dirname "$0")/.."
OPSCOPE_TEST_DEPS=1 scripts/setup.sh -DOPSCOPE_WERROR=ON
echo "== explorer UI: unit tests"
(cd explorer/ui && npm ci --no-audit --no-fund --loglevel=error && npm test)
echo "== explorer UI: browser tests"
explorer/ui/run-e2e.sh build
echo "== installed by setup: import opscope with no PYTHONPATH from another folder, opscope on PATH"
(cd / && env -u PYTHONPATH /usr/bin/python3 -c "import opscope; print('import opscope ->', opscope.__file__)")
(cd / && echo "opscope -> $(command -v opscope)" && opscope --help >/dev/null)
echo "== C++ suite"
ctest --test-dir build --output-on-failure -j 2 --output-junit "$PWD/build/ctest-junit.xml"
echo "== C++ suite: skipped tests (allowed only: GPU absent, CUDA toolkit absent; docs/TESTING.md)"
scripts/check_skips.py build/ctest-junit.xml
echo "== Python suite (the PyTorch device; Debian's interpreter, which has torch)"
PYTHONPATH=build/python /usr/bin/python3 -m pytest -q -rs tests/python --junitxml build/pytest-junit.xml
echo "== Python suite: skipped tests"
scripts/check_skips.py build/pytest-junit.xml
echo "== C++ suite under ASan + UBSan"
scripts/test-sanitizers.sh
echo "== fuzzing: the readers of untrusted input, 60 s a target (scripts/fuzz.sh, its own build in build-fuzz/)"
scripts/fuzz.sh 60
