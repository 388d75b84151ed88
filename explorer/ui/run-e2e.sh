#!/usr/bin/env bash
# The explorer's end-to-end tests in headless Chromium. Needs: a build with the explorer
# (BUILD, default build/), node + npm, and /usr/bin/chromium (Debian's `chromium`).
# Writes RMSNorm profiles (from `opscope profile rmsnorm` when the CLI has it, else from
# the synthetic generator), plus a corrupt one, and runs e2e/run.mjs on them.
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
cli="$build/tools/opscope"
if "$cli" profile --help >/dev/null 2>&1 &&
   "$cli" profile rmsnorm --impl all --shape 64x4096 --dtype f32 --device cpu --out "$work/real" >"$artifacts/profile.log" 2>&1; then
  mapfile -t dirs < <(find "$work/real" -name profile.db -printf '%h\n' | sort)
else
  dirs=()
  for impl in naive builtin compiled; do
    "$build/tools/explorer/opscope-synth" --rmsnorm "$impl" --shape 64x4096 --out "$work/rmsnorm-$impl" >/dev/null
    dirs+=("$work/rmsnorm-$impl")
  done
fi
mkdir -p "$work/corrupt"
printf 'not a database' >"$work/corrupt/profile.db"
dirs+=("$work/corrupt")
cd "$ui"
node e2e/run.mjs --server "$build/tools/explorer/opscope-explore" --out "$artifacts" -- "${dirs[@]}"
