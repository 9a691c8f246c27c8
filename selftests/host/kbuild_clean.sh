#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kbuild_clean: the module builds against every installed kernel's headers
# with no warning, also with W=1 and with sparse (C=2 checks every file).
set -e -o pipefail

top=$(cd -P "$(dirname "$0")/../.." && pwd)
ksft_skip=4
mapfile -t kvers < <("$top/scripts/kver.sh" --all)

[ ${#kvers[@]} -gt 0 ] || { echo "# SKIP: no kernel headers in /lib/modules"; exit $ksft_skip; }
command -v sparse > /dev/null || { echo "# SKIP: sparse is not installed"; exit $ksft_skip; }

# a private copy, so that the tree's own objects are left alone
tmp=$(mktemp -d /tmp/kbuild_clean.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
(cd "$top" && tar -cf - Kbuild VERSION kmod/Kbuild kmod/compat-probe.sh \
	kmod/*.c kmod/*.h uapi scripts/version.sh) | tar -C "$tmp" -xf -
rm -f "$tmp"/kmod/*.mod.c "$tmp"/kmod/compat_gen.h "$tmp"/kmod/version.h

for kver in "${kvers[@]}"; do
	# each kernel from clean objects: no object of another is reused
	make -C "/lib/modules/$kver/build" M="$tmp" clean > /dev/null 2>&1
	make -C "/lib/modules/$kver/build" M="$tmp" W=1 C=2 modules > "$tmp/build.log" 2>&1 ||
		{ sed 's/^/# /' "$tmp/build.log"; echo "# $kver: build failed"; exit 1; }
	# kbuild's own progress lines (UPD: compat_gen.h or version.h
	# regenerated) and the BTF note are not warnings
	bad=$(grep -v -E '^ *(CC|LD|CHECK|MODPOST|BTF|PROBE|VERSION|UPD) |^make|^Skipping BTF generation' \
		"$tmp/build.log" || true)
	if [ -n "$bad" ]; then
		echo "$bad" | sed 's/^/# /'
		echo "# $kver: the build printed warnings"
		exit 1
	fi
	echo "# $kver: W=1 C=2 build: no warning"
done
