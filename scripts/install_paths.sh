# Where scripts/install.sh puts opscope and scripts/uninstall.sh removes it from (sourced).
bin_dir=${OPSCOPE_BIN_DIR:-/usr/local/bin}
# Debian's /usr/bin/python3 reads .pth files in /usr/local/lib/python3.X/dist-packages.
site_dir=${OPSCOPE_SITE_DIR:-/usr/local/lib/python3.$(/usr/bin/python3 -c 'import sys; print(sys.version_info.minor)')/dist-packages}
