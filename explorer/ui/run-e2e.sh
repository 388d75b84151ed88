#!/usr/bin/env bash
# The explorer's end-to-end tests in headless Chromium. Needs: a build with the explorer
# (BUILD, default build/), node + npm, and /usr/bin/chromium (Debian's `chromium`).
# Profiles the RMSNorm case study (naive, builtin, compiled), adds a corrupt profile, and
# runs e2e/run.mjs on them; then e2e/hostile.mjs: traces whose names are HTML through every
# view, the Content-Security-Policy, and a server on a network address with its token.
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
# Real profiles of the case study: naive, built-in and compiled RMSNorm, as the README's
# main command writes them (the compiled one builds its kernel with the system compiler).
# 512x4096: 8 MiB tensors, so launches are big enough for every core (on a machine with as
# many cores as CPUs the last one joins only launches of 8 MiB or more) and the timeline
# has a track per core.
# With the instructions layer: the kernel view reads the samples.
OPSCOPE_CACHE_DIR="$work/cache" "$build/tools/opscope" profile rmsnorm --impl all --shape 512x4096 --iters 3 \
  --layers framework,runtime,device,instructions --sample-rate 10000 \
  --out "$work/rmsnorm" >"$artifacts/profile.txt"
dirs=("$work/rmsnorm/naive" "$work/rmsnorm/builtin" "$work/rmsnorm/compiled")
mkdir -p "$work/corrupt"
printf 'not a database' >"$work/corrupt/profile.db"
dirs+=("$work/corrupt")
cd "$ui"
node e2e/run.mjs --server "$build/tools/explorer/opscope-explore" --cli "$build/tools/opscope" --out "$artifacts" -- "${dirs[@]}"
node e2e/hostile.mjs --server "$build/tools/explorer/opscope-explore" --out "$artifacts"
