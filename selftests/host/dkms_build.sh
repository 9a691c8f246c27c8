#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dkms_build: the module builds through DKMS against the installed headers
# and carries the project's one version string.  The module DKMS built is
# kept in build/dkms/ for the lab's dkms_load test to load in a guest.
set -e -o pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
ksft_skip=4
kver=${KVER:-$(ls /lib/modules | sort -V | tail -n 1)}

[ "$(id -u)" = 0 ] || { echo "# SKIP: needs root for dkms"; exit $ksft_skip; }
command -v dkms >/dev/null || { echo "# SKIP: dkms is not installed"; exit $ksft_skip; }
[ -d "/lib/modules/$kver/build" ] || { echo "# SKIP: no headers for $kver"; exit $ksft_skip; }

ver=$("$top/scripts/version.sh")
cleanup() {
	dkms remove -m shift -v "$ver" --all > /dev/null 2>&1 || true
	rm -rf "/usr/src/shift-$ver"
}
trap cleanup EXIT

"$top/scripts/dkms-install.sh" --build-only "$kver" | sed 's/^/# /'
ko=$(ls /var/lib/dkms/shift/"$ver"/"$kver"/*/module/shift_ft.ko* 2>/dev/null | head -n 1)
[ -n "$ko" ] || { echo "# DKMS left no shift_ft module for $ver/$kver"; exit 1; }

got=$(modinfo -F version "$ko")
echo "# built $ko, version $got"
[ "$got" = "$ver" ] || { echo "# version $got, expected $ver"; exit 1; }

mkdir -p "$top/build/dkms"
cp "$ko" "$top/build/dkms/"
echo "# ok: DKMS built shift_ft $ver for $kver"
