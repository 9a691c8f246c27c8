#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dkms_build: the module builds through DKMS against every installed
# kernel's headers and carries the project's one version string.  What DKMS
# built for each kernel is kept in build/dkms/KVER/ for the lab's dkms_load
# test to load in a guest running that kernel.
set -e -o pipefail

top=$(cd -P "$(dirname "$0")/../.." && pwd)
ksft_skip=4
mapfile -t kvers < <("$top/scripts/kver.sh" --all)

[ "$(id -u)" = 0 ] || { echo "# SKIP: needs root for dkms"; exit $ksft_skip; }
command -v dkms >/dev/null || { echo "# SKIP: dkms is not installed"; exit $ksft_skip; }
[ ${#kvers[@]} -gt 0 ] || { echo "# SKIP: no kernel headers in /lib/modules"; exit $ksft_skip; }

ver=$("$top/scripts/version.sh")
cleanup() {
	dkms remove -m shift -v "$ver" --all > /dev/null 2>&1 || true
	rm -rf "/usr/src/shift-$ver"
}
trap cleanup EXIT

"$top/scripts/dkms-install.sh" --build-only "${kvers[@]}" | sed 's/^/# /'
for kver in "${kvers[@]}"; do
	# shift_ft.ko, or .ko.xz where the kernel's own modules are (6.12)
	ko=$(ls /var/lib/dkms/shift/"$ver"/"$kver"/*/module/shift_ft.ko* 2>/dev/null | head -n 1)
	[ -n "$ko" ] || { echo "# DKMS left no shift_ft module for $ver/$kver"; exit 1; }
	got=$(modinfo -F version "$ko")
	magic=$(modinfo -F vermagic "$ko")
	echo "# built $ko, version $got, vermagic $magic"
	[ "$got" = "$ver" ] || { echo "# version $got, expected $ver"; exit 1; }
	[ "${magic%% *}" = "$kver" ] || { echo "# vermagic $magic, expected $kver"; exit 1; }
	rm -rf "$top/build/dkms/$kver"
	mkdir -p "$top/build/dkms/$kver"
	cp "$ko" "$top/build/dkms/$kver/"
done
echo "# ok: DKMS built shift_ft $ver for ${kvers[*]}"
