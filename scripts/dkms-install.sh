#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Register shift_ft with DKMS and build and install it for kernels.
#
# usage: dkms-install.sh [--build-only] [KVER...]
#   --build-only  add and build, do not install (used by the selftest)
#   KVER...       kernel versions (default: $KVER, else scripts/kver.sh's)
set -e -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
action=install
if [ "$1" = --build-only ]; then
	action=build
	shift
fi
kvers=("$@")
[ ${#kvers[@]} -gt 0 ] || kvers=("${KVER:-$("$top/scripts/kver.sh")}")
ver=$("$top/scripts/version.sh")
src=/usr/src/shift-$ver

command -v dkms >/dev/null || { echo "dkms-install: dkms is not installed" >&2; exit 1; }
for kver in "${kvers[@]}"; do
	[ -d "/lib/modules/$kver/build" ] ||
		{ echo "dkms-install: no headers for kernel $kver (/lib/modules/$kver/build)" >&2; exit 1; }
done

# A fresh copy of the sources only, with the version frozen into it.
dkms remove -m shift -v "$ver" --all >/dev/null 2>&1 || true
rm -rf "$src"
mkdir -p "$src"
(cd "$top" && tar -cf - --exclude=kmod/compat_gen.h --exclude=kmod/version.h \
	Kbuild VERSION kmod/Kbuild kmod/compat-probe.sh kmod/*.c kmod/*.h \
	uapi scripts/version.sh) | tar -C "$src" -xf -
echo "$ver" > "$src/VERSION"
sed "s/@VERSION@/$ver/" "$top/dkms.conf" > "$src/dkms.conf"

dkms add -m shift -v "$ver"
for kver in "${kvers[@]}"; do
	dkms "$action" -m shift -v "$ver" -k "$kver"
done
