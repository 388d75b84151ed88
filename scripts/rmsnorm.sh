#!/usr/bin/env bash
# The main job: set up, build, and run the RMSNorm case study through PyTorch on opscope's
# device, profiled with opscope.profiler: the six-op version, the built-in fused kernel and
# the six-op version compiled; each key_averages table, the comparison, and the profiles
# in opscope-profile/{naive,builtin,compiled}. Extra arguments go to examples/rmsnorm.py
# (--shape, --iters, --out). The C++ case study: build/tools/opscope profile rmsnorm.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only the CLI, its library and the PyTorch extension: tests and benchmarks build in scripts/test.sh.
OPSCOPE_BUILD_TARGETS="opscope_cli opscope_python" scripts/setup.sh
PYTHONPATH="${OPSCOPE_BUILD_DIR:-build}/python" exec /usr/bin/python3 examples/rmsnorm.py --out opscope-profile "$@"
