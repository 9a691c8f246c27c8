#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: being preloaded costs nothing when RDMA is not used: a program that
# never touches verbs runs with libshiftu mapped and the library says nothing,
# not even at level debug, and creates no log file; ibv_devices under it
# still lists both rails' devices.
#
#     host 1 (host 2 is not used)
#     LD_PRELOAD=libshiftu.so.0 SHIFTU_LOG=debug SHIFTU_LOG_FILE=$FT_TMP/...
#       /bin/true, cat /proc/self/maps     no verbs call: no log line
#       ibv_devices                        rxe0 (eth0), rxe1 (eth1)
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_require_lib
ft_require_cmd ibv_devices
ft_setup

# preloaded TAG CMD...: CMD with the library preloaded at level debug,
# logging to $FT_TMP/TAG.shiftu; stdout to TAG.out, stderr to TAG.err.
preloaded()
{
	local tag=$1
	shift
	env LD_PRELOAD="$LU_LIB" SHIFTU_LOG=debug SHIFTU_LOG_FILE="$FT_TMP/$tag.shiftu" \
		"$@" > "$FT_TMP/$tag.out" 2> "$FT_TMP/$tag.err"
}

# silent TAG: the run TAG wrote no log line (an empty or absent log file)
# and nothing on stderr.
silent()
{
	if [ -s "$FT_TMP/$1.shiftu" ]; then
		lu_show "$FT_TMP/$1.shiftu"
		fail "$1: the library logged without any RDMA use"
	fi
	if [ -s "$FT_TMP/$1.err" ]; then
		lu_show "$FT_TMP/$1.err"
		fail "$1: output on stderr"
	fi
	log "$1: no log line ($([ -e "$FT_TMP/$1.shiftu" ] && echo "empty log file" ||
		echo "no log file"))"
}

preloaded true /bin/true || fail "/bin/true exited $? with libshiftu preloaded"
silent true

# the same with proof that the library really was loaded into the process
preloaded maps cat /proc/self/maps || fail "cat exited $? with libshiftu preloaded"
grep -q "/libshiftu\.so" "$FT_TMP/maps.out" ||
	fail "libshiftu is not mapped in a preloaded process: LD_PRELOAD had no effect"
silent maps

# verbs without a device opened: the devices are all there
rc=0
preloaded devices ibv_devices || rc=$?
if [ "$rc" -ne 0 ]; then
	lu_show "$FT_TMP/devices.err"
	fail "ibv_devices exited $rc with libshiftu preloaded"
fi
sed 's/^/# ibv_devices: /' "$FT_TMP/devices.out"
for dev in rxe0 rxe1; do
	awk -v d="$dev" '$1 == d { found = 1 } END { exit !found }' "$FT_TMP/devices.out" ||
		fail "ibv_devices under libshiftu does not list $dev"
done
if grep -qE '^([0-9:.]+ )?libshiftu\[[0-9]+\]: (error|warn): ' "$FT_TMP/devices.shiftu" 2> /dev/null; then
	lu_show "$FT_TMP/devices.shiftu"
	fail "the library logged errors or warnings under ibv_devices"
fi
