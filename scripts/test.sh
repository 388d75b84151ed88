#!/usr/bin/env bash
# Every test: set up, build, run the C++ suite, the explorer's UI unit tests and its
# browser tests (headless Chromium); then the C++ suite again under AddressSanitizer +
# UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
OPSCOPE_TEST_DEPS=1 scripts/setup.sh
ctest --test-dir build --output-on-failure -j 2

echo "== explorer UI: unit tests"
(cd explorer/ui && npm ci --no-audit --no-fund --loglevel=error && npm test)
echo "== explorer UI: browser tests"
explorer/ui/run-e2e.sh build

echo "== C++ suite under AddressSanitizer + UndefinedBehaviorSanitizer"
OPSCOPE_BUILD_DIR=build-asan scripts/setup.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPSCOPE_SANITIZE=ON \
  -DOPSCOPE_BUILD_BENCH=OFF -DOPSCOPE_EXPLORER_UI=OFF
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j 2
