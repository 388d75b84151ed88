#!/usr/bin/env bash
# The main job: set up, build, and profile the RMSNorm case study on the CPU device
# (naive six-op version vs the built-in fused kernel; profiles saved to opscope-profile/).
set -euo pipefail
cd "$(dirname "$0")/.."
# Only the CLI and its library: the tests and benchmarks build in scripts/test.sh.
OPSCOPE_BUILD_TARGETS=opscope_cli scripts/setup.sh
exec "${OPSCOPE_BUILD_DIR:-build}/tools/opscope" profile rmsnorm --impl all --shape 4096x4096 --dtype f32 --device cpu --out opscope-profile "$@"
