#!/usr/bin/env bash
# The C++ suite built and run under AddressSanitizer + UndefinedBehaviorSanitizer
# (without the CUDA device: the CUDA runtime and ASan's shadow memory do not mix; and
# without the PyTorch device: ASan and a Python extension do not mix).
set -euo pipefail
cd "$(dirname "$0")/.."
# -O1 -g1 (line tables: the reports' stack traces keep file and line): the build takes less
# than half the time of -O2 -g (advise_test.cpp: 17 s against 39 s here), and CI has 90 minutes.
# A unity build (CMakeLists.txt says which files stay out): the library, CLI and tools in
# about 1850 s of compile instead of 3050 s file by file (Zen 5).
OPSCOPE_INSTALL=0 OPSCOPE_BUILD_DIR=build-asan scripts/setup.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DOPSCOPE_SANITIZE=ON -DCMAKE_UNITY_BUILD=ON \
  -DOPSCOPE_BUILD_BENCH=OFF -DOPSCOPE_EXPLORER_UI=OFF -DOPSCOPE_CUDA=OFF -DOPSCOPE_TORCH=OFF
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j 2 --output-junit "$PWD/build-asan/ctest-junit.xml"
scripts/check_skips.py build-asan/ctest-junit.xml
