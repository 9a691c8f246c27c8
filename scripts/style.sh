#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# checkpatch (from Debian's linux-source-6.1, which ships it) over the
# kernel code and the UAPI header.  Generated headers are left out.
set -e

top=$(cd "$(dirname "$0")/.." && pwd)
cp_dir=$top/build/checkpatch
tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1)

if [ ! -x "$cp_dir/scripts/checkpatch.pl" ]; then
	[ -n "$tarball" ] || { echo "style: linux-source is not installed" >&2; exit 1; }
	mkdir -p "$cp_dir"
	tar -C "$cp_dir" -xf "$tarball" --strip-components=1 --wildcards \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch'
fi

cd "$top"
files=$(ls kmod/*.c kmod/*.h | grep -v -e compat_gen.h -e version.h -e '\.mod\.c$')
# BIT() does not exist for userspace, so the UAPI header cannot use it.
perl "$cp_dir/scripts/checkpatch.pl" --no-tree --strict --terse --show-types \
	--ignore BIT_MACRO,MACRO_WITH_FLOW_CONTROL -f $files uapi/shift_ft.h
