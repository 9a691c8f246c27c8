#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kbuild_clean: the module builds against the installed headers with no
# warning, also with W=1 and with sparse (C=2 checks every file).
set -e -o pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
ksft_skip=4
kver=${KVER:-$(ls /lib/modules | sort -V | tail -n 1)}
kdir=/lib/modules/$kver/build

[ -d "$kdir" ] || { echo "# SKIP: no headers for $kver"; exit $ksft_skip; }
command -v sparse > /dev/null || { echo "# SKIP: sparse is not installed"; exit $ksft_skip; }

# a private copy, so that the tree's own objects are left alone
tmp=$(mktemp -d /tmp/kbuild_clean.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
(cd "$top" && tar -cf - Kbuild VERSION kmod/Kbuild kmod/compat-probe.sh \
	kmod/*.c kmod/*.h uapi scripts/version.sh) | tar -C "$tmp" -xf -
rm -f "$tmp"/kmod/*.mod.c "$tmp"/kmod/compat_gen.h "$tmp"/kmod/version.h

make -C "$kdir" M="$tmp" W=1 C=2 modules > "$tmp/build.log" 2>&1 ||
	{ sed 's/^/# /' "$tmp/build.log"; echo "# build failed"; exit 1; }
# kbuild's own progress lines (UPD: compat_gen.h or version.h regenerated)
# and the BTF note are not warnings
bad=$(grep -v -E '^ *(CC|LD|CHECK|MODPOST|BTF|PROBE|VERSION|UPD) |^make|^Skipping BTF generation' \
	"$tmp/build.log" || true)
if [ -n "$bad" ]; then
	echo "$bad" | sed 's/^/# /'
	echo "# the build printed warnings"
	exit 1
fi
echo "# W=1 C=2 build: no warning"
