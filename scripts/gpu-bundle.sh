#!/usr/bin/env bash
# Builds the GPU check's binaries on this machine (baseline x86-64 ISA, CUDA sm_90) and packs
# them with the shared libraries a bare GPU machine lacks (OpenBLAS, fmt, SQLite, ...) into
# .gpu-bundle/bundle.tar.xz. The GPU machine has CUDA's libraries and a newer glibc and
# libstdc++, so those stay behind. scripts/gpu-check.sh uses the bundle when it is there:
#
#   scripts/gpu-bundle.sh                       # here, before the GPU session's one call
#   run(command="scripts/gpu-check.sh $OUT/gpu-check", carry=[".gpu-bundle"], timeout_s=540)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${GPU_BUNDLE_BUILD_DIR:-build-gpu-bundle}
mkdir -p "$B"
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOPSCOPE_NATIVE=OFF -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DOPSCOPE_EXPLORER_UI=OFF > "$B/gpu-bundle.cmake.log" 2>&1 || { cat "$B/gpu-bundle.cmake.log"; exit 1; }
grep -q 'building the CUDA device' "$B/gpu-bundle.cmake.log" || { echo "gpu-bundle: CMake found no CUDA toolkit: nothing to bundle" >&2; exit 1; }
ninja -C "$B" -j "${GPU_BUNDLE_JOBS:-2}" opscope_tests gpu_rmsnorm_bench runtime_bench

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/opscope-gpu/bin" "$stage/opscope-gpu/lib"
cp "$B/tests/opscope_tests" "$B/bench/gpu_rmsnorm_bench" "$B/bench/runtime_bench" "$stage/opscope-gpu/bin/"
cp -L "$B/libopscope.so" "$stage/opscope-gpu/lib/"
# What the binaries load from this system, less glibc, the C++ runtime and CUDA's own.
ldd "$B/tests/opscope_tests" "$B/bench/gpu_rmsnorm_bench" "$B/bench/runtime_bench" | awk '/=> \//{print $3}' | sort -u |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|libutil|libstdc\+\+|libgcc_s)\.so|/ld-linux|/cuda|libopscope' |
  while read -r lib; do cp -L "$lib" "$stage/opscope-gpu/lib/"; done
git rev-parse HEAD > "$stage/opscope-gpu/COMMIT"
git status --short >> "$stage/opscope-gpu/COMMIT"
mkdir -p .gpu-bundle
tar -C "$stage" -cJf .gpu-bundle/bundle.tar.xz.tmp opscope-gpu
mv .gpu-bundle/bundle.tar.xz.tmp .gpu-bundle/bundle.tar.xz
ls -la .gpu-bundle/bundle.tar.xz
tar -tJvf .gpu-bundle/bundle.tar.xz
