#!/usr/bin/env bash
# One-shot GPU check, for a machine with one NVIDIA GPU (an H200: sm_90), in 8 minutes at
# most: prints nvidia-smi, builds what it needs (Release, build-gpu/), runs the CUDA
# test suites, the RMSNorm bench (naive / fused / compiled against a device copy probe)
# and, where PyTorch with CUDA is installed, the same shapes in torch (eager, F.rms_norm,
# torch.compile). Writes OUT_DIR/results.md (one table per dtype, PASS/FAIL per target),
# and per step a log, steps.tsv, gtest-gpu.xml, bench.json, torch.json. It also measures the
# CPU device's scaling with cores: fused rms_norm against the copy probe (runtime_bench
# --rms-norm) at OPSCOPE_CPU_CORES = 2, 4, 8, 16 (cpu-cores-N.json). A machine whose
# nvidia-smi sees a GPU fails the check when every GPU test skips.
#
#   scripts/gpu-check.sh OUT_DIR
#
# With .gpu-bundle/bundle.tar.xz (scripts/gpu-bundle.sh, built where the dependencies are)
# it runs those binaries instead of building: the GPU machine of the `device` tool has CMake,
# nvcc and PyTorch but not fmt, OpenBLAS, SQLite or GTest. From a session with a GPU lent:
#   run(command="scripts/gpu-check.sh $OUT/gpu-check", carry=[".gpu-bundle"], timeout_s=540)
#
# Every step runs under `timeout` within the overall budget; a failed or timed-out step
# is recorded and the next one still runs. Exit 0 only when every step and target passed.
# Knobs: GPU_CHECK_BUILD_DIR (default build-gpu), GPU_CHECK_BUDGET_S (default 470),
# GPU_CHECK_JOBS (default nproc), GPU_CHECK_SHAPES / GPU_CHECK_DTYPES (bench and torch).
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: scripts/gpu-check.sh OUT_DIR" >&2
  exit 64
fi
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${GPU_CHECK_BUILD_DIR:-build-gpu}
BUDGET=${GPU_CHECK_BUDGET_S:-470}
JOBS=${GPU_CHECK_JOBS:-$(nproc)}
SHAPES=${GPU_CHECK_SHAPES:-1x4096,32x4096,4096x4096,16384x8192}
DTYPES=${GPU_CHECK_DTYPES:-f32,bf16}
START=$(date +%s)
REPORT_RESERVE=15  # seconds kept for the report at the end
: > "$OUT/steps.tsv"  # step, status, exit, seconds, log
rm -f "$OUT/bench.json" "$OUT/torch.json" "$OUT/results.md" "$OUT/gtest-gpu.xml"

left() { echo $((BUDGET - REPORT_RESERVE - ($(date +%s) - START))); }

# run_step NAME CAP_SECONDS CMD...: runs CMD under timeout (the smaller of CAP and what
# the budget has left), output to OUT/NAME.log and the console; records the outcome.
# Returns CMD's exit status (124: timed out) without stopping the script.
run_step() {
  local name=$1 cap=$2
  shift 2
  local t
  t=$(left)
  ((t > cap)) && t=$cap
  local log="$OUT/$name.log"
  if ((t < 5)); then
    echo "== $name: skipped, no time left in the ${BUDGET}s budget" | tee "$log"
    printf '%s\tskipped (no time)\t-\t0\t%s\n' "$name" "$name.log" >> "$OUT/steps.tsv"
    return 125
  fi
  echo "== $name (timeout ${t}s): $*"
  local s rc=0
  s=$(date +%s)
  set +e
  timeout -k 10 "$t" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  local took=$(($(date +%s) - s)) status=ok
  if ((rc == 124 || rc == 137)); then status="timeout (${t}s)"; elif ((rc != 0)); then status=failed; fi
  echo "== $name: $status (exit $rc, ${took}s)"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$status" "$rc" "$took" "$name.log" >> "$OUT/steps.tsv"
  return "$rc"
}

# Marks the last recorded step with another status (e.g. "no GPU" for an expected exit).
restatus() {
  local status=$1
  python3 - "$OUT/steps.tsv" "$status" <<'EOF' || true
import sys
p, status = sys.argv[1], sys.argv[2]
lines = open(p).read().splitlines()
if lines:
    f = lines[-1].split("\t")
    f[1] = status
    lines[-1] = "\t".join(f)
open(p, "w").write("\n".join(lines) + "\n")
EOF
}

echo "gpu-check: $(date -u +%FT%TZ) on $(hostname), ${JOBS} jobs, budget ${BUDGET}s, out $OUT"

# 1. The GPU as the driver sees it.
if command -v nvidia-smi > /dev/null; then
  run_step nvidia-smi 30 nvidia-smi || true
else
  run_step nvidia-smi 5 sh -c 'echo "nvidia-smi: not found (no NVIDIA driver on this machine)"; exit 127' || true
fi

# 2. The binaries: from .gpu-bundle/bundle.tar.xz when it was carried (scripts/gpu-bundle.sh
# builds it where the dependencies are; a GPU machine may lack fmt, OpenBLAS, SQLite, GTest),
# else configured and built here, only what the check runs.
TESTS="$BUILD/tests/opscope_tests"
BENCH="$BUILD/bench/gpu_rmsnorm_bench"
CPU_BENCH="$BUILD/bench/runtime_bench"
BUNDLE=${GPU_CHECK_BUNDLE:-.gpu-bundle/bundle.tar.xz}
built=0
if [[ -f "$BUNDLE" ]]; then
  UNPACK=$(mktemp -d)
  if run_step unpack 60 tar -C "$UNPACK" -xJf "$BUNDLE"; then
    cat "$UNPACK/opscope-gpu/COMMIT" >> "$OUT/unpack.log" || true
    TESTS="$UNPACK/opscope-gpu/bin/opscope_tests"
    BENCH="$UNPACK/opscope-gpu/bin/gpu_rmsnorm_bench"
    CPU_BENCH="$UNPACK/opscope-gpu/bin/runtime_bench"
    # CUDA's libraries: the toolkit's folder, else the pip wheels' (nvidia/*/lib).
    cuda_libs=$(python3 - 2> /dev/null <<'PY' || true
import glob, site
dirs = glob.glob("/usr/local/cuda/lib64") + glob.glob("/usr/local/cuda/targets/x86_64-linux/lib") + glob.glob("/usr/local/cuda/extras/CUPTI/lib64")
for p in site.getsitepackages():
    dirs += sorted(glob.glob(p + "/nvidia/*/lib")) + sorted(glob.glob(p + "/nvidia/cu13/lib"))
print(":".join(dirs))
PY
)
    export LD_LIBRARY_PATH="$UNPACK/opscope-gpu/lib${cuda_libs:+:$cuda_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "gpu-check: LD_LIBRARY_PATH=$LD_LIBRARY_PATH" | tee -a "$OUT/unpack.log"
    run_step ldd 20 sh -c "ldd '$TESTS' | grep -E 'not found|opscope|cuda|cublas|nvrtc|cupti' ; ! ldd '$TESTS' | grep -q 'not found'" && built=1
  fi
fi
GEN=()
command -v ninja > /dev/null && GEN=(-G Ninja)
if ((built == 0)) && run_step configure 120 cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DOPSCOPE_CUDA=ON -DOPSCOPE_BUILD_TESTS=ON -DOPSCOPE_BUILD_BENCH=ON; then
  targets=(opscope_tests runtime_bench)
  if grep -q 'building the CUDA device' "$OUT/configure.log"; then
    targets+=(gpu_rmsnorm_bench)
  else
    echo "gpu-check: CMake did not build the CUDA device (see configure.log): no bench" | tee -a "$OUT/configure.log"
  fi
  if run_step build 330 cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"; then
    built=1
    TESTS="$BUILD/tests/opscope_tests"
    BENCH="$BUILD/bench/gpu_rmsnorm_bench"
    CPU_BENCH="$BUILD/bench/runtime_bench"
  fi
fi

# 3. The CUDA test suites (they skip, with the reason, without a GPU). Where nvidia-smi saw a
# GPU, a run in which every test skipped is a failure: the device was not reached.
if ((built)); then
  run_step gpu-tests 120 "$TESTS" \
    '--gtest_filter=CudaDevice*:Cupti*:CompiledCuda*:CompilerCuda*' \
    "--gtest_output=xml:$OUT/gtest-gpu.xml" || true
  if grep -q $'^nvidia-smi\tok' "$OUT/steps.tsv" && [[ -f "$OUT/gtest-gpu.xml" ]] &&
    python3 scripts/gpu_check_report.py --all-skipped "$OUT/gtest-gpu.xml"; then
    echo "gpu-check: nvidia-smi sees a GPU but every GPU test skipped" | tee -a "$OUT/gpu-tests.log"
    restatus "failed (all skipped on a GPU machine)"
  fi
else
  printf 'gpu-tests\tskipped (no build)\t-\t0\t-\n' >> "$OUT/steps.tsv"
fi

# 4. The bench: exits 2 without a GPU.
gpu=0
if ((built)) && [[ -x "$BENCH" ]]; then
  rc=0
  mkdir -p "$ROOT/$BUILD"
  run_step bench 150 env OPSCOPE_CACHE_DIR="$ROOT/$BUILD/kernel-cache" "$BENCH" \
    --json "$OUT/bench.json" --shapes "$SHAPES" --dtypes "$DTYPES" || rc=$?
  if ((rc == 2)); then restatus "no GPU"; elif ((rc == 3)); then restatus "failed (results wrong)"; fi
  ((rc == 0 || rc == 3)) && gpu=1
else
  printf 'bench\tskipped (not built)\t-\t0\t-\n' >> "$OUT/steps.tsv"
fi

# 4b. The CPU device's scaling with cores: the probe and fused rms_norm at each core count
# the machine has (cpu-cores-N.json; the report's "CPU device" table).
if ((built)) && [[ -x "$CPU_BENCH" ]]; then
  for cores in 2 4 8 16; do
    ((cores > $(nproc))) && continue
    run_step "cpu-cores-$cores" 40 env OPSCOPE_CPU_CORES=$cores "$CPU_BENCH" --rms-norm \
      --json "$OUT/cpu-cores-$cores.json" || true
  done
else
  printf 'cpu-cores\tskipped (not built)\t-\t0\t-\n' >> "$OUT/steps.tsv"
fi

# 5. PyTorch on the same shapes, when it is here with CUDA.
if ((gpu)) && timeout 60 python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' \
    > "$OUT/torch-probe.log" 2>&1; then
  run_step torch 240 python3 scripts/gpu_torch_rmsnorm.py --json "$OUT/torch.json" \
    --shapes "$SHAPES" --dtypes "$DTYPES" || true
else
  why="no GPU for opscope"
  ((gpu)) && why="no PyTorch with CUDA"
  printf 'torch\tskipped (%s)\t-\t0\ttorch-probe.log\n' "$why" >> "$OUT/steps.tsv"
fi

# 6. The results table.
python3 scripts/gpu_check_report.py "$OUT" > /dev/null || echo "gpu-check: the report failed" >&2
echo
cat "$OUT/results.md" 2> /dev/null || echo "gpu-check: no results.md"
echo "gpu-check: done in $(($(date +%s) - START))s; results in $OUT/results.md"
grep -q '^Overall: \*\*PASS' "$OUT/results.md" 2> /dev/null
