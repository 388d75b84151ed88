#!/usr/bin/env bash
# Undoes scripts/install.sh: removes the `opscope` link from /usr/local/bin (only a link
# to some checkout's tools/opscope) and opscope.pth from Debian python3's /usr/local site
# folder. The build itself stays. Same knobs as install.sh (OPSCOPE_BIN_DIR, OPSCOPE_SITE_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install_paths.sh
run=""  # sudo only where this user cannot write the folders
for d in "$bin_dir" "$site_dir"; do
  [ ! -d "$d" ] || [ -w "$d" ] || run="sudo"
done
link="$bin_dir/opscope"
if [ -L "$link" ] && [[ "$(readlink "$link")" == */tools/opscope ]]; then
  $run rm -f "$link"
  echo "uninstall: removed $link"
elif [ -e "$link" ]; then
  echo "uninstall: $link is not a link opscope made: left as it is" >&2
fi
if [ -f "$site_dir/opscope.pth" ]; then
  $run rm -f "$site_dir/opscope.pth"
  echo "uninstall: removed $site_dir/opscope.pth"
fi
