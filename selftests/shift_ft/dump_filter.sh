#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a dump returns the rows that match every attribute of its
# request (uapi: "A dump's request filters"), on ports, pairs and paths:
# a device, a port by index or by name and number, a remote GID, and
# filters that match nothing give an empty dump, not an error.
#
#   rxe0 1 ── paths to G1, G2      (reported by an agent)
#   rxe1 1 ── path to G1
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
G1=fe80::f117:1
G2=fe80::f117:2
G1_TXT=fe80:0000:0000:0000:0000:0000:f117:0001

for p in "rxe0 1 $G1" "rxe0 1 $G2" "rxe1 1 $G1"; do
	ft_defer "'$FTNL' path-del $p 2> /dev/null"
	# shellcheck disable=SC2086 # the words of $p are the arguments
	"$FTNL" report $p down agent
done

# dump CMD FIELD FILTER...: FIELD of each row the filtered dump returns,
# one line each, sorted; only this test's paths for path dumps
dump()
{
	local cmd=$1 field=$2 out
	shift 2
	out=$("$FTNL" raw --dump "$cmd" "$@" -f "$field,remote_gid") ||
		fail "dump $cmd $*: refused"
	if [ "$cmd" = PATH_GET ]; then
		out=$(echo "$out" | grep 'remote_gid=fe80:0000:0000:0000:0000:0000:f117:' || true)
	fi
	echo "$out" | ft_field "$field" | sort | tr '\n' ' '
}

idx1=$(ft_nl rxe1 1 port_index)

ft_expect "ports of rxe1" "$(dump PORT_GET dev_name dev_name=str:rxe1)" "rxe1 "
ft_expect "port rxe0 1" "$(dump PORT_GET dev_name dev_name=str:rxe0 port_num=u32:1)" "rxe0 "
ft_expect "port @$idx1" "$(dump PORT_GET dev_name port_index=u32:"$idx1")" "rxe1 "
ft_expect "port rxe0 2 (none)" "$(dump PORT_GET dev_name dev_name=str:rxe0 port_num=u32:2)" ""
ft_expect "ports of a device that is not there" "$(dump PORT_GET dev_name dev_name=str:nosuch0)" ""
all=$(dump PORT_GET dev_name)
case "$all" in *rxe0*rxe1*) ;; *) fail "unfiltered port dump: $all" ;; esac
ft_expect "pairs of rxe0" "$(dump PAIR_GET dev_name dev_name=str:rxe0)" "rxe0 "

ft_expect "paths of rxe0" "$(dump PATH_GET dev_name dev_name=str:rxe0)" "rxe0 rxe0 "
ft_expect "paths to G1" "$(dump PATH_GET dev_name remote_gid=gid:$G1)" "rxe0 rxe1 "
ft_expect "paths of rxe1 to G1" \
	"$(dump PATH_GET remote_gid dev_name=str:rxe1 remote_gid=gid:$G1)" "$G1_TXT "
ft_expect "paths of @$idx1" "$(dump PATH_GET dev_name port_index=u32:"$idx1")" "rxe1 "
ft_expect "paths of rxe1 to G2 (none)" \
	"$(dump PATH_GET dev_name dev_name=str:rxe1 remote_gid=gid:$G2)" ""
ft_expect "all our paths" "$(dump PATH_GET dev_name)" "rxe0 rxe0 rxe1 "
log "port, pair and path dumps return the rows their filters match"
exit 0
