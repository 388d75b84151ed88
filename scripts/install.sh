#!/usr/bin/env bash
# Makes this checkout's build usable from any folder, as a user's own scripts expect:
# `import opscope` under Debian's /usr/bin/python3 with no PYTHONPATH (opscope.pth in its
# /usr/local site folder names BUILD/python), and `opscope` on PATH (a symlink in
# /usr/local/bin to BUILD/tools/opscope). So `OPSCOPE_PROFILE=1 python3 their_script.py`
# works from anywhere. scripts/setup.sh runs it after the build (OPSCOPE_INSTALL=0: not);
# scripts/uninstall.sh undoes it. PYTHONPATH=build/python still wins where it is set (it
# comes first on sys.path). Where each goes: OPSCOPE_BUILD_DIR (build), OPSCOPE_BIN_DIR
# (/usr/local/bin), OPSCOPE_SITE_DIR (/usr/local/lib/python3.X/dist-packages).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install_paths.sh
build=$(cd "${OPSCOPE_BUILD_DIR:-build}" && pwd)
run=""  # sudo only where this user cannot write the folders
if ! { mkdir -p "$bin_dir" "$site_dir" 2>/dev/null && [ -w "$bin_dir" ] && [ -w "$site_dir" ]; }; then
  run="sudo"
  $run mkdir -p "$bin_dir" "$site_dir"
fi
if [ -x "$build/tools/opscope" ]; then
  if [ -e "$bin_dir/opscope" ] && [ ! -L "$bin_dir/opscope" ]; then
    echo "install: $bin_dir/opscope is not a link opscope made: left as it is" >&2
  else
    $run ln -sfn "$build/tools/opscope" "$bin_dir/opscope"
    echo "install: opscope -> $build/tools/opscope ($bin_dir/opscope)"
  fi
fi
if [ -f "$build/python/opscope/__init__.py" ]; then
  tmp=$(mktemp)
  echo "$build/python" > "$tmp"
  chmod 644 "$tmp"
  $run mv -f "$tmp" "$site_dir/opscope.pth"
  echo "install: import opscope -> $build/python ($site_dir/opscope.pth)"
fi
echo "install: undo with scripts/uninstall.sh"
