#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: with one cluster key on both hosts (SHIFTU_STORE_KEY_FILE for the
# libraries, --store-key-file for the agents), unmodified ib_write_bw under
# libshiftu still fails over when host 1's rail 0 is pulled and comes back
# after the plug, through records that the store holds signed (every
# shiftu:v1:* and shift:v1:host:* value), none of them dropped, and with no
# warning that records are unauthenticated.  (A key file that others may
# read is refused: selftests/host/shiftu_recsign.c for the library,
# ../shiftmon_2host/signed.sh for the agent.)
#
#     host 1 (client)                                   host 2 (server)
#     ib_write_bw ─ rxe0 ─ eth0 ══ rail 0 (pulled) ═══ eth0 ─ rxe0 ─ ib_write_bw
#          └─ twin ─ rxe1 ─ eth1 ── rail 1 ───────────────── eth1 ─ rxe1 ─ twin ┘
#     redis-server 10.0.2.1 ─────── mgmt ───────── (host 2's library)
#     shiftmon agent (key) ─────────────────────── shiftmon agent (key)
#     the key: $KEY on each host, mode 0600
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

[ -x "$SM" ] || skip "shiftmon not built (make -C $SHIFT_TOP/tools/shiftmon)"
ft_require_cmd openssl
lu_ride_setup ib_write_bw
"$SMR_PATHS_CLEAR"
lu_peer_run "$SMR_PATHS_CLEAR"
ft_defer "lu_peer_try $SMR_PATHS_CLEAR"
ft_defer "$SMR_PATHS_CLEAR"

# the same path on both hosts: the job's environment is the same on both
KEY=/tmp/libshiftu_2host.$FT_TEST.key
hex=$(openssl rand -hex 32)
install -m 0600 /dev/null "$KEY"
echo "$hex" > "$KEY"
ft_defer "rm -f $KEY"
lu_peer_run "install -m 0600 /dev/null $KEY && echo $hex > $KEY"
ft_defer "lu_peer_try 'rm -f $KEY'"
unset hex

smr_agent_start --store-key-file "$KEY"
smr_agent_peer_start --store-key-file "$KEY"
LU_ENV="SHIFTU_STORE_KEY_FILE=$KEY"

# the pull, then what the store holds while the QPs live (their records go
# when they are destroyed): every value signed.  A key whose value is gone
# by the time it is read (the pair ending: LU_RIDE_END) is left out: it
# read as an empty, unsigned value in a make check.
snapshot()
{
	local k v
	for k in $(rcli --scan --pattern 'shiftu:v1:*'); do
		v=$(rcli get "$k")
		[ -z "$v" ] || printf '%s\t%s\n' "$k" "$v"
	done > "$FT_TMP/store.lib"
	for k in $(rcli --scan --pattern 'shift:v1:host:*'); do
		rcli hvals "$k" | sed "s|^|$k\t|"
	done > "$FT_TMP/store.agents"
}
during() { lu_pull "$@" && snapshot; }
LU_DURING=during LU_PULL_AT=ready LU_RIDE_END=1
OWN=
[ "$LU_RXE_XMIT_FATAL" = 0 ] || OWN="|work request flushed"
tag=signed
lu_pair "$tag" 1 ib_write_bw -s 65536 -D 30 -f 2 -F
read -r s0 s1 < "$FT_TMP/$tag.outage"
read -r r0 r1 < "$FT_TMP/$tag.after"
log "$tag: rail 0 down on host 1; packets during the outage: rail 0 $s0, rail 1 $s1; after the repair: rail 0 $r0, rail 1 $r1"
lu_exited_ok "$tag"
grep -qE "(port down$OWN): failed over to qp [0-9]* on rxe1 port 1" "$FT_TMP/$tag.cli.shiftu" ||
	lu_fail "$tag" "the client's QP did not fail over"
grep -q 'protected by qp' "$FT_TMP/$tag.srv.shiftu" ||
	lu_fail "$tag" "the server's QP was not protected"
[ "$s1" -gt 100 ] || lu_fail "$tag" "rail 1 carried only $s1 packets during the outage"
lu_check_log "$tag" cli "failovers=1" "failbacks=1" "twin_wcs>0"
grep -q 'failed back from rxe1' "$FT_TMP/$tag.cli.shiftu" ||
	lu_fail "$tag" "the client's QP did not fail back"
[ "$r0" -gt 100 ] || lu_fail "$tag" "rail 0 carried only $r0 packets after the repair"
for side in cli srv; do
	! grep -qE 'UNAUTHENTICATED|store .*: dropped' "$FT_TMP/$tag.$side.shiftu" ||
		lu_fail "$tag" "$side: $(grep -E 'UNAUTHENTICATED|store .*: dropped' "$FT_TMP/$tag.$side.shiftu" | head -n 1)"
done
log "$tag: $(grep -oE "failed over to qp.*" "$FT_TMP/$tag.cli.shiftu")"
log "$tag: $(grep -o 'failed back from.*' "$FT_TMP/$tag.cli.shiftu")"

for f in lib agents; do
	n=$(grep -c . "$FT_TMP/store.$f") || true
	[ "$n" -ge 2 ] || fail "store: only ${n:-0} $f values during the ride"
	unsigned=$(grep -vE '[[:space:]]s1/[A-Za-z0-9._-]+/[0-9a-f]{16}/[0-9a-f]{64}$' "$FT_TMP/store.$f") || true
	[ -z "$unsigned" ] || { echo "$unsigned" | sed 's/^/# /'; fail "store: $f values not signed"; }
	log "store during the ride: $n $f values, every one signed, e.g. $(head -n 1 "$FT_TMP/store.$f" | cut -c1-160)"
done
! grep -q 'DROPPED\|UNAUTHENTICATED' "$SMR_LOG1" || smr_fail "host 1's agent dropped or warned"
