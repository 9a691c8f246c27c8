#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# kver.sh: the kernel shift builds for and the lab boots when KVER does not
# name one, so that both always take the same: the running kernel if its
# headers are installed (a machine that runs Debian's kernel builds for
# itself), else the distribution's own, the one linux-image-amd64 depends
# on (Debian 12's 6.1), if its headers and image are installed, else the
# newest kernel with headers and an image in /boot, else the newest with
# headers.  Debian 12's 6.12, from its security suite, is then one of the
# others: check builds the module for it and runs its one-host tests there
# (libshiftu's two-host tests do not all pass on its Soft-RoCE yet:
# Documentation/lab.rst).
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
# "linux-image-6.1.0-56-amd64 (= 6.1.192-2)" -> 6.1.0-56-amd64
distro=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null |
	 sed -n 's/^linux-image-\([^ ,]*\).*/\1/p')
if [ -n "$distro" ] && [ -d "/lib/modules/$distro/build" ] &&
   [ -r "/boot/vmlinuz-$distro" ]; then
	echo "$distro"
	exit 0
fi
newest='' booted=''
for v in $(with_headers); do
	newest=$v
	[ -r "/boot/vmlinuz-$v" ] && booted=$v
done
echo "${booted:-$newest}"
