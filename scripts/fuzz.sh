#!/usr/bin/env bash
# Fuzzes the readers of untrusted input with clang's libFuzzer under AddressSanitizer +
# UndefinedBehaviorSanitizer (fuzz/: the Kineto reader, .json and .json.gz; saved profiles,
# profile.db and trace.json; safetensors; the explorer's HTTP requests and API queries),
# each target for SECONDS (default 60, as CI runs it; longer on demand), as many at once as
# the machine has cores. Its own build in build-fuzz/ (clang-16, which has _Float16).
#   scripts/fuzz.sh [SECONDS] [TARGET...]     TARGET: kineto_json, safetensors, ...
# Seeds: fuzz/corpus/, the inputs opscope-fuzz-seeds writes (saved profiles, safetensors,
# the big quirks), and the traces the import tests write (when build/ has the test suite).
# What a run finds is kept in build-fuzz/corpus/TARGET, so longer runs build on shorter
# ones. A finding (crash, sanitizer report, leak, hang over 10 s, an allocation over 2 GB,
# a broken rule of fuzz/fuzz_util.h) fails the script and is left in
# build-fuzz/findings/TARGET/; reproduce with build-fuzz/fuzz/fuzz_TARGET FILE, and turn it
# into a regression test in the normal suite.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
all=(kineto_json kineto_gzip saved_profile safetensors explorer_request explorer_query)
targets=("$@")
((${#targets[@]})) || targets=("${all[@]}")

build=build-fuzz
bins=(opscope_fuzz_seeds)
for t in "${targets[@]}"; do bins+=("fuzz_$t"); done
# -O1 -g1: the sanitizers' reports keep file and line; -O2 would cost build time for little.
# A unity build, as the sanitizer suite's (scripts/test-sanitizers.sh).
OPSCOPE_INSTALL=0 OPSCOPE_TEST_DEPS=1 OPSCOPE_BUILD_DIR=$build OPSCOPE_BUILD_TARGETS="${bins[*]}" scripts/setup.sh \
  -DCMAKE_CXX_COMPILER=clang++-16 -DOPSCOPE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DOPSCOPE_BUILD_TESTS=OFF -DOPSCOPE_BUILD_BENCH=OFF \
  -DOPSCOPE_EXPLORER_UI=OFF -DOPSCOPE_CUDA=OFF -DOPSCOPE_TORCH=OFF

# ---- seeds, afresh each run
seeds=$build/seeds
rm -rf "$seeds"
for t in "${all[@]}"; do mkdir -p "$seeds/$t"; done
"$build/fuzz/opscope-fuzz-seeds" "$seeds"
cp fuzz/corpus/kineto/*.json "$seeds/kineto_json/"
cp fuzz/corpus/explorer_request/* "$seeds/explorer_request/"
cp fuzz/corpus/explorer_query/* "$seeds/explorer_query/"
if [ -x build/tests/opscope_tests ]; then
  # The import tests' traces (tests/import_util.h copies each one it writes); the few big
  # ones (the streaming tests') would only slow every run down.
  OPSCOPE_TEST_TRACES_OUT="$(pwd)/$seeds/kineto_json" build/tests/opscope_tests --gtest_filter='Import*' \
    >"$build/seed-tests.log" 2>&1 || echo "fuzz: the import tests failed writing seeds (see $build/seed-tests.log)"
  find "$seeds/kineto_json" -type f -size +1M -delete
fi
# The same traces as opscope's saved trace.json would be, and gzipped (torch's .json.gz);
# the gzip target gzips plain input itself, so the plain ones seed it too.
cp "$seeds"/kineto_json/* "$seeds/saved_profile/"
cp "$seeds"/kineto_json/* "$seeds/kineto_gzip/"
for f in "$seeds"/kineto_json/*.json; do gzip -c "$f" >"$seeds/kineto_gzip/$(basename "$f").gz"; done
echo "fuzz: seeds: $(for t in "${all[@]}"; do printf '%s %s  ' "$t" "$(ls "$seeds/$t" | wc -l)"; done)"

# ---- run, as many targets at once as there are cores
dict() { case $1 in kineto_*|saved_profile) echo fuzz/kineto.dict ;; explorer_*) echo "fuzz/$1.dict" ;; esac; }
run() {
  local t=$1 d
  mkdir -p "$build/corpus/$t" "$build/findings/$t"
  d=$(dict "$t")
  "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    ${d:+-dict=$d} -artifact_prefix="$build/findings/$t/" "$build/corpus/$t" "$seeds/$t" >"$build/findings/$t.log" 2>&1
}
rm -rf "$build/findings"
pids=()
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= $(nproc))); do wait -n || true; done
  echo "fuzz: $t for ${seconds} s"
  run "$t" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done

failed=0
for t in "${targets[@]}"; do
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/findings/$t.log" | grep -o '[0-9]*$' || echo 0)
  found=$(find "$build/findings/$t" -type f | sort)
  if [ -n "$found" ]; then
    failed=1
    echo "fuzz: $t FOUND (after ${runs:-0} runs):"
    echo "$found" | sed 's/^/  /'
    grep -m1 -A25 -E 'ERROR: |runtime error|opscope fuzz finding|==[0-9]+== ' "$build/findings/$t.log" | sed 's/^/    /' || true
  elif ! grep -q 'Done [0-9]* runs' "$build/findings/$t.log"; then
    failed=1
    echo "fuzz: $t did not finish:"
    tail -20 "$build/findings/$t.log" | sed 's/^/    /'
  else
    echo "fuzz: $t ok: ${runs:-0} runs, corpus $(ls "$build/corpus/$t" | wc -l) inputs"
  fi
done
exit $failed
