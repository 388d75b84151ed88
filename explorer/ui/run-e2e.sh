#!/usr/bin/env bash
# The explorer's end-to-end tests in headless Chromium. Needs: a build with the explorer
# (BUILD, default build/), node + npm, and /usr/bin/chromium (Debian's `chromium`).
# Writes synthetic RMSNorm profiles (naive, builtin, compiled) plus a corrupt one, and
# runs e2e/run.mjs on them.
# Screenshots: BUILD/e2e-artifacts/.
set -euo pipefail
ui="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$ui/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
artifacts="$build/e2e-artifacts"
rm -rf "$artifacts"
mkdir -p "$artifacts"
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "run-e2e: ${CHROMIUM:-/usr/bin/chromium} missing (apt-get install -y chromium)"; exit 1; }
[ -d "$ui/node_modules/playwright-core" ] || (cd "$ui" && npm ci --no-audit --no-fund --loglevel=error)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The tests expect naive, builtin and compiled profiles; `opscope profile rmsnorm` writes
# the first two today, so the synthetic generator makes all three (same event structure).
dirs=()
for impl in naive builtin compiled; do
  "$build/tools/explorer/opscope-synth" --rmsnorm "$impl" --shape 64x4096 --out "$work/rmsnorm-$impl" >/dev/null
  dirs+=("$work/rmsnorm-$impl")
done
mkdir -p "$work/corrupt"
printf 'not a database' >"$work/corrupt/profile.db"
dirs+=("$work/corrupt")
cd "$ui"
node e2e/run.mjs --server "$build/tools/explorer/opscope-explore" --out "$artifacts" -- "${dirs[@]}"
