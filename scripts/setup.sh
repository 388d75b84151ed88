#!/usr/bin/env bash
# Installs what opscope needs from Debian's packages (only what is missing), then
# configures and builds into build/ (or $OPSCOPE_BUILD_DIR) with any extra cmake flags given:
# every target, or only those in $OPSCOPE_BUILD_TARGETS (space-separated, e.g. opscope_cli).
# OPSCOPE_TEST_DEPS=1 also installs what the browser tests need (Chromium) and what the
# fuzzers need (clang-16 and its libFuzzer runtime: scripts/fuzz.sh). Then
# scripts/install.sh puts `opscope` on PATH and makes `import opscope` work from any folder
# under /usr/bin/python3 (OPSCOPE_INSTALL=0: not; scripts/uninstall.sh undoes it).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build ccache pkg-config
  libfmt-dev libcli11-dev nlohmann-json3-dev libsqlite3-dev libdnnl-dev libopenblas-dev libcpp-httplib-dev zlib1g-dev
  libsimdjson-dev libdw-dev libzydis-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev python3-torch pybind11-dev python3-dev python3-pytest python3-torchvision python3-numpy
  clang)
[ "${OPSCOPE_TEST_DEPS:-0}" = 1 ] && packages+=(chromium clang-16 libclang-rt-16-dev python3-torchaudio)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm build the explorer's UI; any install that provides the commands will do.
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

build=${OPSCOPE_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
targets=()
for t in ${OPSCOPE_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "$(nproc)" "${targets[@]}"
[ "${OPSCOPE_INSTALL:-1}" = 0 ] || OPSCOPE_BUILD_DIR="$build" scripts/install.sh
