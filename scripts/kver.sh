#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# kver.sh: the kernel shift builds for and the lab boots when KVER does not
# name one, so that both always take the same: the running kernel if its
# headers are installed (a machine that runs Debian's kernel builds for
# itself), else the newest kernel with headers and an image in /boot (a
# build machine whose lab boots it), else the newest with headers.
#
# kver.sh --all: every kernel with headers installed, oldest first.

with_headers() {
	for v in $(ls /lib/modules 2>/dev/null | sort -V); do
		[ -d "/lib/modules/$v/build" ] && echo "$v"
	done
}

if [ "$1" = --all ]; then
	with_headers
	exit 0
fi

running=$(uname -r)
if [ -d "/lib/modules/$running/build" ]; then
	echo "$running"
	exit 0
fi
newest='' booted=''
for v in $(with_headers); do
	newest=$v
	[ -r "/boot/vmlinuz-$v" ] && booted=$v
done
echo "${booted:-$newest}"
