#!/usr/bin/env bash
# The method on a whole model: set up, build, and run examples/method.py: a GPT-2-style
# decoder profiled eager on opscope's device, the hotspot named from the table and
# confirmed in trace.json, the model compiled with opscope.compile and profiled again, and
# the two compared module by module (opscope diff); profiles in opscope-profile/method/
# {eager,compiled}. Extra arguments go to the example (--model llama, --iters, --out).
set -euo pipefail
cd "$(dirname "$0")/.."
OPSCOPE_BUILD_TARGETS="opscope_cli opscope_python" scripts/setup.sh
PYTHONPATH="${OPSCOPE_BUILD_DIR:-build}/python" exec /usr/bin/python3 -W ignore examples/method.py \
  --out opscope-profile/method "$@"
