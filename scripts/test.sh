#!/usr/bin/env bash
# Every test: set up, build every target with warnings as errors (OPSCOPE_WERROR: a new
# warning fails CI), run the C++ suite, the PyTorch device's pytest suite, the explorer's
# UI unit tests and its browser tests (headless Chromium), then the C++ suite again under
# AddressSanitizer +
# UndefinedBehaviorSanitizer (scripts/test-sanitizers.sh, its own build in build-asan/), and
# last the libFuzzer targets for a minute each (scripts/fuzz.sh, its own build in build-fuzz/).
set -euo pipefail
cd "$(dirname "$0")/.."
OPSCOPE_TEST_DEPS=1 scripts/setup.sh -DOPSCOPE_WERROR=ON
echo "== explorer UI: unit tests"
(cd explorer/ui && npm ci --no-audit --no-fund --loglevel=error && npm test)
echo "== explorer UI: browser tests"
explorer/ui/run-e2e.sh build
echo "== C++ suite"
ctest --test-dir build --output-on-failure -j 2
echo "== Python suite (the PyTorch device; Debian's interpreter, which has torch)"
PYTHONPATH=build/python /usr/bin/python3 -m pytest -q tests/python
echo "== C++ suite under ASan + UBSan"
scripts/test-sanitizers.sh
echo "== fuzzing: the readers of untrusted input, 60 s a target (scripts/fuzz.sh, its own build in build-fuzz/)"
scripts/fuzz.sh 60
