#!/usr/bin/env bash
# The advisor's check, as docs/BENCHMARKS.md records it: the RMSNorm case study at 4096x4096
# and 32x4096 and the decoder (tinyllama shapes, 2 layers) profiled once each, then
# `opscope advise --verify` twice on each profile, printing predicted against realized
# savings of each top suggestion's fix. Run after scripts/setup.sh, on a quiet machine:
#   bench/advisor_check.sh [OUT]      (OUT: where the profiles go; default /tmp/advm)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/advm}
mkdir -p "$OUT"
export OPSCOPE_CACHE_DIR=$OUT/cache
opscope=build/tools/opscope

# Runs a command quietly; on failure shows what it printed and stops.
quiet() {
  "$@" > "$OUT/last.log" 2>&1 || { cat "$OUT/last.log"; echo "advisor_check: failed: $*" >&2; exit 1; }
}
# The verification table of `advise --verify` (its rows, without the legend).
verify() {
  quiet "$opscope" advise "$@" --verify --reps 5
  sed -n '/^region /,/^profile:/p' "$OUT/last.log" | grep -v '^profile:'
}

uptime
for shape in 4096x4096 32x4096; do
  quiet "$opscope" profile rmsnorm --impl naive --shape $shape --iters 5 --out "$OUT/rms_$shape"
  for run in 1 2; do
    echo "== RMSNorm $shape, run $run"
    verify "$OUT/rms_$shape/naive" --top 1
  done
done
quiet "$opscope" profile llama --preset tinyllama --layers 2 --vocab 4096 --tokens 128 \
  --decode 8 --mode eager --iters 3 --out "$OUT/tl"
for run in 1 2; do
  echo "== decoder, run $run"
  verify "$OUT/tl/eager" --top 5
done
uptime
