#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# get-ynl.sh OUTDIR: extract the kernel's YNL tools (tools/net/ynl: cli.py,
# ynl-gen-c.py and their lib/) and the netlink spec schemas with upstream's
# specs (Documentation/netlink) from Debian's linux-source-6.12 tarball into
# OUTDIR, for the tests that check and use Documentation/netlink/specs/
# shift_ft.yaml.  Runs once, like get-kselftest.sh: a stamp file records the
# tarball it came from.  Without the tarball it says so and succeeds: the
# module, the tools and every other test build without YNL, and the YNL
# tests skip with that reason.

set -e

TARBALL=${YNL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}

main()
{
	local out=$1 stamp top

	if [ -z "$out" ]; then
		echo "usage: $0 OUTDIR" >&2
		return 2
	fi
	stamp=$out/.ynl-stamp
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(stat -c '%n %s %Y' "$TARBALL")" ]; then
		return 0
	fi
	if [ ! -r "$TARBALL" ]; then
		echo "get-ynl: $TARBALL missing (apt-get install linux-source-6.12): the YNL tests will skip" >&2
		return 0
	fi
	top=$(basename "$TARBALL" .tar.xz)
	rm -rf "$out/tools/net/ynl" "$out/Documentation/netlink"
	mkdir -p "$out"
	echo "get-ynl: extracting tools/net/ynl and Documentation/netlink from $TARBALL"
	tar -xJf "$TARBALL" -C "$out" --strip-components=1 \
		"$top/tools/net/ynl" "$top/Documentation/netlink"
	stat -c '%n %s %Y' "$TARBALL" >"$stamp"
}

main "$@"
