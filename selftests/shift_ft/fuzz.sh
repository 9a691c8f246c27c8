#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: FT_FUZZ_MSGS (default 50,000) random and mutated requests of every
# command, attribute and flag of the family, three quarters as root and one
# as nobody, with /dev/shift_ft's read, ioctl and mmap abused by root and
# nobody and opened and closed meanwhile, while both rails flap and rxe2
# comes and goes, make no kernel warning, get only the errnos the ABI names
# (EPERM for every admin command from nobody, which changes nothing), leave
# the netlink dump and the page in agreement, and the module then unloads
# and loads again.
#
#   eth0 ── rxe0  ┐ ip link down/up          ┐
#   eth1 ── rxe1  ┘                          ├─ ftfuzz nl (root), then
#   eth2 ── rxe2    rdma link add/delete     ┘  ftfuzz nl -u nobody, the table still
#   ftfuzz dev (root) + ftfuzz dev -u nobody, throughout the first part
#
# FT_FUZZ_SEED (default: random, printed) makes a run reproducible: each
# program derives its own seed from it (root nl SEED, nobody nl SEED+1, dev
# SEED+2 and SEED+3); `ftfuzz nl -s S -n N -x I` prints message I.
# `make fuzz` runs 1,000,000 (selftests/lab/scenarios/fuzz.sh).
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
ft_rxe2_prepare
FTFUZZ=$FT_DIR/ftfuzz
[ -x "$FTFUZZ" ] || skip "ftfuzz not built (make -C $FT_DIR)"
NOBODY=65534
MSGS=${FT_FUZZ_MSGS:-50000}
SEED=${FT_FUZZ_SEED:-0x$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')}
SEED=$((SEED))
ROOT_MSGS=$((MSGS * 3 / 4))
NOBODY_MSGS=$((MSGS - ROOT_MSGS))
log "seed $(printf '%#x' "$SEED"), $MSGS messages (rerun: FT_FUZZ_SEED=$(printf '%#x' "$SEED") FT_FUZZ_MSGS=$MSGS)"

# rxe2_churn: every third round of the flapper, rxe2 comes and goes
rxe2_churn()
{
	i=$((${i:-0} + 1))
	[ $((i % 3)) = 0 ] || return 0
	rdma link add rxe2 type rxe netdev eth2 2> /dev/null || true
	sleep 0.2
	rdma link delete rxe2 2> /dev/null || true
}

# the rails flap and rxe2 comes and goes until told to stop
ft_flap_rails 0.1 rxe2_churn
flapper=$FT_FLAPPER

"$FTFUZZ" dev -n 100000000 -j 2 -s $((SEED + 2)) > "$FT_TMP/dev-root" 2>&1 &
dev_root=$!
"$FTFUZZ" dev -n 100000000 -j 2 -s $((SEED + 3)) -u "$NOBODY" > "$FT_TMP/dev-nobody" 2>&1 &
dev_nobody=$!
ft_defer "kill $dev_root $dev_nobody"

rc=0
"$FTFUZZ" nl -n "$ROOT_MSGS" -s "$SEED" -v > "$FT_TMP/nl-root" 2>&1 || rc=$?
grep '^# ' "$FT_TMP/nl-root" | tail -n 25

touch "$FT_TMP/stop"
wait "$flapper" || true
kill -TERM "$dev_root" "$dev_nobody" 2> /dev/null || true
dev_rc=0
wait "$dev_root" || dev_rc=$?
wait "$dev_nobody" || dev_rc=$?
for f in dev-root dev-nobody; do
	grep '^# FAIL' "$FT_TMP/$f" | head -n 10
	grep '^# ftfuzz' "$FT_TMP/$f"
done
[ "$rc" -eq 0 ] || fail "ftfuzz nl as root: exit $rc"
[ "$dev_rc" -eq 0 ] || fail "ftfuzz dev: exit $dev_rc"

# the table is quiet again: rails up, rxe2 gone
ip link set dev eth0 up
ip link set dev eth1 up
rdma link delete rxe2 2> /dev/null || true
ft_wait_port rxe0 1 ACTIVE
ft_wait_port rxe1 1 ACTIVE
ft_wait_port rxe2 1 absent
sleep 0.5

# nobody: reads answered, every admin command EPERM, nothing changes
gen0=$("$FTPAGE" gen)
paths0=$("$FTNL" paths | md5sum)
"$FTFUZZ" nl -n "$NOBODY_MSGS" -s $((SEED + 1)) -u "$NOBODY" -v > "$FT_TMP/nl-nobody" 2>&1 || rc=$?
grep '^# ' "$FT_TMP/nl-nobody" | tail -n 25
[ "$rc" -eq 0 ] || fail "ftfuzz nl as nobody: exit $rc"
ft_expect "generation after nobody's requests" "$("$FTPAGE" gen)" "$gen0"
ft_expect "paths after nobody's requests" "$("$FTNL" paths | md5sum)" "$paths0"

# The dump and the page agree, row by row (one generation on both sides:
# retried if something moved between the two reads).
PORT_F=generation,port_index,dev_name,dev_index,port_num,node_guid,link_layer,netdev,ifindex,numa_node,state,phys_state,speed,width,mtu,last_change,down_count,last_event,event_count,backup_index,pair_state,pair_flags
PATH_F=generation,path_index,port_index,dev_name,port_num,remote_gid,path_state,report_state,report_source,report_pid,report_time,last_change,down_count
PAIR_F=generation,port_index,dev_name,port_num,state,backup_index,pair_state,pair_flags
agree()
{
	local what=$1 nl=$2 pg=$3 i
	for i in $(seq 10); do
		"$FTNL" $nl > "$FT_TMP/a.nl"
		"$FTPAGE" $pg > "$FT_TMP/a.pg"
		cmp -s "$FT_TMP/a.nl" "$FT_TMP/a.pg" && return 0
		sleep 0.1
	done
	diff "$FT_TMP/a.nl" "$FT_TMP/a.pg" | head -n 10 | sed 's/^/# /'
	fail "$what: the netlink dump and the page disagree"
}
agree ports "ports -f $PORT_F" "ports -f $PORT_F"
agree paths "paths -f $PATH_F" "paths -f $PATH_F"
agree pairs "pairs -f $PAIR_F" "ports -f $PAIR_F"
log "table consistent: $("$FTNL" ports | wc -l) ports, $("$FTNL" paths | wc -l) paths, generation $("$FTPAGE" gen)"

# the module goes and comes back, with an empty path table
ft_unload
ft_loaded && fail "shift_ft still loaded after rmmod"
ft_load
ft_wait_port rxe0 1 ACTIVE
ft_wait_port rxe1 1 ACTIVE
ft_expect "paths after reload" "$("$FTNL" paths | wc -l)" 0
log "unloaded and loaded again"
exit 0
