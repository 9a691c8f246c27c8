#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: every malformed or impossible request (an attribute its command
# does not take included) is refused with the errno the ABI names (EINVAL,
# ERANGE, EOPNOTSUPP, ENODEV, ENOENT, ENOSPC) and changes nothing, a full
# path table (max_paths=4) refuses a fifth row and stays intact, and none
# of it makes the kernel complain.
#
#   ftnl raw/report/pair-set ──(bad requests)──> shift_ft   (rxe0, rxe1)
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
G=fe80::bad:1
PORT_ATTRS="dev_name=str:rxe0 port_num=u32:1"
REPORT_OK="$PORT_ATTRS remote_gid=gid:$G report_state=u8:UP report_source=u8:APP"
ncheck=0

# E ERRNO[,ERRNO] ARGS...: ftnl must fail with one of those errnos.
E()
{
	local want=$1
	shift
	"$FTNL" --expect-errno "$want" "$@" 2> "$FT_TMP/err" || {
		cat "$FT_TMP/err" >&2
		fail "ftnl $*: expected $want"
	}
	ncheck=$((ncheck + 1))
}

"$FTNL" pair-clear rxe0 1 2> /dev/null || true
"$FTNL" path-del rxe0 1 "$G" 2> /dev/null || true
FIELDS=port_index,dev_name,dev_index,port_num,node_guid,state,down_count,backup_index,pair_state,pair_flags
ports_before=$("$FTNL" ports -f "$FIELDS")
paths_before=$("$FTNL" paths)
pairs_before=$("$FTNL" pairs -f port_index,backup_index,pair_flags)

# attribute ids outside the family's space, and UNSPEC
# shellcheck disable=SC2086 # the attribute lists are word lists
{
E EINVAL raw PORT_GET max+1=u32:1
E EINVAL raw PORT_GET max+200=u32:1
E EINVAL raw PORT_GET 0=u32:1
E EINVAL raw --dump PORT_GET max+1=u32:1
E EINVAL raw PATH_REPORT $REPORT_OK max+1=u32:0

# wrong types and lengths
E EINVAL raw PORT_GET dev_name=str:rxe0 port_num=u8:1
E EINVAL raw PORT_GET dev_name=str:rxe0 port_num=u64:1
E EINVAL raw PORT_GET port_index=u16:0
E EINVAL raw PORT_GET dev_name=strn:rxe0 port_num=u32:1
E EINVAL raw PATH_REPORT $PORT_ATTRS remote_gid=gid:$G report_state=u32:1 report_source=u8:APP
E EINVAL raw PATH_REPORT $PORT_ATTRS remote_gid=gid:$G report_state=u8:UP report_source=u16:2
E EINVAL raw PATH_REPORT $REPORT_OK flags=u8:0

# names: < 64 bytes with the NUL
long=$(printf 'a%.0s' $(seq 1000))
n64=$(printf 'b%.0s' $(seq 64))
n63=$(printf 'c%.0s' $(seq 63))
E ERANGE,EINVAL port "$long" 1
E ERANGE,EINVAL port "$n64" 1
E ENODEV port "$n63" 1
E ERANGE,EINVAL report "$long" 1 "$G" up app
E ERANGE,EINVAL pair-set "$long" 1 rxe1 1
E ERANGE,EINVAL pair-set rxe0 1 "$long" 1
E ERANGE,EINVAL pair-clear "$long" 1

# port numbers are 1..255
E ERANGE,EINVAL port rxe0 0
E ERANGE,EINVAL port rxe0 256
E ERANGE,EINVAL report rxe0 0 "$G" up app

# GIDs are 16 bytes (NLA_POLICY_EXACT_LEN answers ERANGE on 6.1)
E EINVAL,ERANGE raw PATH_REPORT $PORT_ATTRS remote_gid=bin:fe800000000000000000000000000b report_state=u8:UP report_source=u8:APP
E EINVAL,ERANGE raw PATH_REPORT $PORT_ATTRS remote_gid=bin:fe8000000000000000000000000000000b report_state=u8:UP report_source=u8:APP
E EINVAL,ERANGE raw PATH_REPORT $PORT_ATTRS remote_gid=flag: report_state=u8:UP report_source=u8:APP
E EINVAL,ERANGE raw PATH_DEL $PORT_ATTRS remote_gid=bin:fe800000000000000000000000000b

# an attribute of the family that the command does not take (each command
# has its own policy): PAIR_SET names no path, a GET reports nothing
E EINVAL raw PAIR_SET $PORT_ATTRS backup_dev_name=str:rxe1 backup_port_num=u32:1 remote_gid=gid:$G
E EINVAL raw PAIR_SET $PORT_ATTRS backup_dev_name=str:rxe1 backup_port_num=u32:1 flags=u32:0
E EINVAL raw PAIR_CLEAR $PORT_ATTRS backup_port_num=u32:1
E EINVAL raw PORT_GET $PORT_ATTRS report_state=u8:UP
E EINVAL raw PAIR_GET $PORT_ATTRS remote_gid=gid:$G
E EINVAL raw PATH_GET $PORT_ATTRS remote_gid=gid:$G flags=u32:0
E EINVAL raw PATH_DEL $PORT_ATTRS remote_gid=gid:$G report_state=u8:UP
E EINVAL raw --dump PATH_GET report_state=u8:UP

# flags
E EOPNOTSUPP report rxe0 1 "$G" up app --flags 4
E EOPNOTSUPP report rxe0 1 "$G" up app --flags 0x80000000
E EOPNOTSUPP report rxe0 1 "$G" up app --flags 0xffffffff
E ENOENT report rxe0 1 "$G" up app --flags 1

# report state is UP or DOWN, source APP or AGENT
# (a policy range answers ERANGE, a hand check EINVAL: both say "invalid")
for st in 0 3 255; do
	E EINVAL,ERANGE raw PATH_REPORT $PORT_ATTRS remote_gid=gid:$G report_state=u8:$st report_source=u8:APP
done
for src in 0 1 4 255; do
	E EINVAL,ERANGE raw PATH_REPORT $PORT_ATTRS remote_gid=gid:$G report_state=u8:UP report_source=u8:$src
	E EINVAL,ERANGE raw PATH_DEL $PORT_ATTRS remote_gid=gid:$G report_source=u8:$src
done

# missing attributes
E EINVAL raw PATH_REPORT $PORT_ATTRS report_state=u8:UP report_source=u8:APP
E EINVAL raw PATH_REPORT $PORT_ATTRS remote_gid=gid:$G report_source=u8:APP
E EINVAL raw PATH_REPORT $PORT_ATTRS remote_gid=gid:$G report_state=u8:UP
E EINVAL raw PATH_REPORT remote_gid=gid:$G report_state=u8:UP report_source=u8:APP
E EINVAL raw PAIR_SET $PORT_ATTRS
E EINVAL raw PAIR_SET $PORT_ATTRS backup_dev_name=str:rxe1
E EINVAL raw PAIR_CLEAR dev_name=str:rxe0
E EINVAL raw PORT_GET dev_name=str:rxe0
E EINVAL raw PATH_GET $PORT_ATTRS

# ports that do not exist
E ENODEV report nosuchdev 1 "$G" up app
E ENODEV report rxe0 2 "$G" up app
E ENODEV report rxe0 255 "$G" up app
E ENODEV report @63 "$G" up app
E ENODEV,ERANGE,EINVAL report @4294967295 "$G" up app
E ENODEV,ENOENT port nosuchdev 1
E ENODEV,ENOENT port @63
E ENODEV,ENOENT path-del nosuchdev 1 "$G"
E ENOENT path-del rxe0 1 "$G"
E ENOENT path rxe0 1 "$G"

# pairs
E EINVAL pair-set rxe0 1 rxe0 1
E EINVAL pair-set nosuchdev 1 nosuchdev 1
E ENOENT pair-clear rxe0 1
E ENOENT pair-clear nosuchdev 7

# commands that are not requests, or do not exist
E EOPNOTSUPP raw UNSPEC
E EOPNOTSUPP raw PORT_NEW
E EOPNOTSUPP raw PORT_DEL
E EOPNOTSUPP raw PAIR_NEW
E EOPNOTSUPP raw PATH_NEW
E EOPNOTSUPP raw 12
E EOPNOTSUPP raw 255
}
log "$ncheck bad requests refused with the documented errno"

ft_expect "ports after bad input" "$("$FTNL" ports -f "$FIELDS")" "$ports_before"
ft_expect "paths after bad input" "$("$FTNL" paths)" "$paths_before"
ft_expect "pairs after bad input" "$("$FTNL" pairs -f port_index,backup_index,pair_flags)" "$pairs_before"
ft_expect "page ports after bad input" "$("$FTPAGE" ports -f "$FIELDS")" "$ports_before"

# A full path table: max_paths=4, no row kept for F_WITHDRAW reports
# (reserve.sh tests the reserve).
ft_load max_paths=4 reserved_paths=0
ft_defer "rmmod shift_ft; insmod '$FT_KO'"
pm=$("$FTPAGE" info | sed -n 's/.*\tpath_max=\([0-9]*\)\t.*/\1/p' | head -n 1)
ft_expect "path_max with max_paths=4" "$pm" 4
"$FTNL" report rxe0 1 fe80::f:1 up app --count 3
"$FTNL" report rxe1 1 fe80::f:4 down agent
"$FTNL" --expect-errno ENOSPC report rxe0 1 fe80::f:5 up app 2> "$FT_TMP/err" ||
	fail "fifth path: $(cat "$FT_TMP/err")"
grep -q "path table full" "$FT_TMP/err" ||
	fail "ENOSPC without the extack 'path table full': $(cat "$FT_TMP/err")"
E ENOSPC report rxe1 1 fe80::f:6 down agent
E ENOSPC report rxe0 1 fe80::f:7 up app
ft_expect "rows when full (netlink)" "$("$FTNL" paths | wc -l)" 4
ft_expect "rows when full (page)" "$("$FTPAGE" paths | wc -l)" 4
gids=$("$FTNL" paths -f remote_gid | sort | tr '\n' ' ')
ft_expect "gids when full" "$gids" "remote_gid=fe80:0000:0000:0000:0000:0000:000f:0001 remote_gid=fe80:0000:0000:0000:0000:0000:000f:0002 remote_gid=fe80:0000:0000:0000:0000:0000:000f:0003 remote_gid=fe80:0000:0000:0000:0000:0000:000f:0004 "
ft_expect "states when full" "$("$FTNL" paths -f path_state | sort | uniq -c | awk '{print $1 $2}' | tr '\n' ' ')" "1path_state=DOWN 3path_state=UP "
# an existing row still takes reports; a freed slot takes a new row
"$FTNL" report rxe0 1 fe80::f:1 down app
ft_expect "update when full" "$("$FTNL" path rxe0 1 fe80::f:1 -f path_state)" "path_state=DOWN"
"$FTNL" path-del rxe0 1 fe80::f:2
"$FTNL" report rxe0 1 fe80::f:5 up app
E ENOSPC report rxe0 1 fe80::f:2 up app
ft_expect "rows at the end" "$("$FTNL" paths | wc -l)" 4
ft_expect "page rows at the end" "$("$FTPAGE" paths | wc -l)" 4
"$FTPAGE" torture 0.5 > /dev/null || fail "inconsistent page with a full path table"
log "max_paths=4: four rows, ENOSPC with 'path table full' for more, table intact"
exit 0
