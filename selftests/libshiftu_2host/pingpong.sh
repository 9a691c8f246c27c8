#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: ibv_*_pingpong, which check every wr_id and status, run preloaded as without libshiftu (rc through a rail 0 pull).
#
#     host 1 (client)                                   host 2 (server, started first)
#     rxe0 ─ eth0 10.0.0.1 ══ rail 0: pulled 5 s to 8 s ═══ eth0 10.0.0.2 ─ rxe0
#     rxe1 ─ eth1 10.0.1.1 ─── rail 1 (the twins) ───────── eth1 10.0.1.2 ─ rxe1
#            eth2 10.0.2.1 ─── mgmt: the programs' TCP, ─── eth2 10.0.2.2
#     redis-server (store)      lu_peer_run's shell
#
# ibv_rc_pingpong's QP has one CQ for both queues and sq_sig_all set: every
# completion of the library's own requests on it (a control message, a
# control receive flushed, a drain's marker) would reach the program, which
# exits 1 on a wr_id it did not post ("Completion for unknown wr_id") or on
# an error status ("Failed status ... for wr_id").  Without the library the
# same run rides the pull on 6.1 (its retry count, 7, never runs out on
# Soft-RoCE: it stalls and goes on); on 6.12 it does unless the client's QP
# sends in the moment its qdisc refuses packets, which that kernel's
# Soft-RoCE takes as a failed send (lu_plain_rode, LU_RXE_XMIT_FATAL: then
# the control's client exits 1 on a flushed request, and the count of
# refused packets shows why).  With the library both ends must exit 0, on
# either kernel.  The client's QP fails over to rxe1, host 1 sends its RC packets
# on rail 1 during the outage, fails back once rail 0 is back, host 1 sends
# on rail 0 again, and neither log has a warning.  The QP grants no remote
# access, so its failback probes with an empty SEND, not an empty WRITE
# (which Soft-RoCE refuses then).  Each run is made long enough (about
# 14 s) to hold the pull and the failback, from a short unpulled run that
# measures the lab's pace first.
#
# ibv_srq_pingpong's QPs use an SRQ (failover_srq.sh pulls them) and
# ibv_ud_pingpong's is UD, which the library does not protect (UD is
# unreliable): they must run as they do without it.  They run unpulled (UD
# loses what is sent during an outage and waits for ever, with the library
# or without), the four pairs together.
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_ride_setup ibv_rc_pingpong ibv_srq_pingpong ibv_ud_pingpong

# The four ibv_rc_pingpong variants run together, each on its own port:
# first unpulled and without the library, 200 iterations each (500 took
# 14 s in make check), to measure the lab's pace with four pairs sharing
# the guests' CPUs; then all four through one pull without the library,
# and all four through another with it (lu_group_ride), each sized to
# RC_SECS (14) at its pace (in the lab, runs sized to 12 s so took 13 s to
# 16 s): the pairs start together, the pull comes 5 s in, the repair about
# 3 s later, the failbacks up to 3 s after that, and rail 0's packets are
# counted for 1.8 s after them.  The packet counts are the rails', the
# four pairs together; each client's own twin completions (twin_wcs) show
# its traffic on rail 1.
RC=("rc" "rc_events -e" "rc_newsend -N" "rc_chk -c")

# rc_start TAG PRE ARGS...: the ibv_rc_pingpong pair TAG, in the background
rc_start()
{
	local tag=$1 pre=$2
	shift 2
	lu_keep "$tag" pingpong
	LU_GIDX_OPT=-g LU_BG_PRE=$pre lu_bg_start "$tag" 60 ibv_rc_pingpong "$@"
}

declare -A ITERS_OF ITERS_PLAIN
tags=()
lu_group_gate
for v in "${RC[@]}"; do
	read -r tag args <<< "$v"
	# shellcheck disable=SC2086 # args: words
	rc_start "$tag.pace" 0 -n 200 $args
	tags+=("$tag.pace")
done
LU_GROUP_PULL=0 LU_BG_PRE=0 lu_group_ride "${tags[@]}"
for v in "${RC[@]}"; do
	read -r tag args <<< "$v"
	lu_exited_ok "$tag.pace"
	secs=${RC_SECS:-14}
	lu_pp_iters "$tag.pace" "$secs" 300
	ITERS_PLAIN[$tag]=$ITERS
	# -e with the library ran twice as fast as its pace (1874 against 3653
	# usec/iter without it): sized to 14 s, one such run ended 2.4 s after
	# the repair, before its failback.  Without the library it keeps its
	# pace, and twice that was a group's 14 s more to wait for.
	[ "$args" != -e ] || lu_pp_iters "$tag.pace" $((secs * 2)) 300
	ITERS_OF[$tag]=$ITERS
	log "$tag.pace: $(lu_pp_line "$tag.pace"), four pairs together: ${ITERS_PLAIN[$tag]} iterations for the pulled run without the library, $ITERS with it"
done

for pre in 0 1; do
	tags=()
	lu_group_gate
	for v in "${RC[@]}"; do
		read -r tag args <<< "$v"
		if [ "$pre" = 1 ]; then
			iters=${ITERS_OF[$tag]}
		else
			iters=${ITERS_PLAIN[$tag]}
		fi
		# shellcheck disable=SC2086 # args: words
		rc_start "$tag.$pre" "$pre" -n "$iters" $args
		tags+=("$tag.$pre")
	done
	LU_PULL_ON=1 LU_PULL_BY=link LU_BG_PRE=$pre lu_group_ride "${tags[@]}"
	for t in "${tags[@]}"; do
		read -r s0 s1 < "$FT_TMP/$t.outage"
		read -r r0 r1 < "$FT_TMP/$t.after"
		read -r off on < "$FT_TMP/$t.times"
		log "$t: rail 0 down from $off ms to $on ms; host 1's packets during the outage: rail 0 $s0, rail 1 $s1; after the repair: rail 0 $r0, rail 1 $r1; client: $(lu_pp_line "$t")"
		if [ "$pre" = 0 ]; then
			lu_plain_rode "$t" || continue
		else
			lu_exited_ok "$t"
		fi
		grep -q 'iters in' "$FT_TMP/$t.cli.out" || lu_fail "$t" "no result line from the client"
		[ "$pre" = 1 ] || continue
		grep -q 'failed over to qp [0-9]* on rxe1 port 1' "$FT_TMP/$t.cli.shiftu" ||
			lu_fail "$t" "the client's QP did not fail over"
		[ "$s1" -gt 100 ] || lu_fail "$t" "rail 1 carried only $s1 packets during the outage"
		lu_check_log "$t" cli "qps=1" "failovers>=1" "failbacks>=1" "twin_wcs>0"
		lu_check_log "$t" srv "qps=1"
		grep -q 'probe good (an empty SEND' "$FT_TMP/$t.cli.shiftu" "$FT_TMP/$t.srv.shiftu" ||
			lu_fail "$t" "no failback probed with an empty SEND"
		[ "$r0" -gt 100 ] || lu_fail "$t" "rail 0 carried only $r0 packets after the repair"
		log "$t: $(grep -ho 'failed back from.*' "$FT_TMP/$t.cli.shiftu" | tail -n 1)"
	done
done

# plain: ibv_srq_pingpong and ibv_ud_pingpong unpulled, without the
# library and with it, the four pairs together (one after the other they
# took a minute more of make check): each exits 0 on both ends, each
# preloaded side logs no warning and no failover.
plain()
{
	local v tag prog args pre tags=()

	lu_group_gate
	for v in "srq ibv_srq_pingpong -n 500" "ud ibv_ud_pingpong -n 500 -s 512"; do
		read -r tag prog args <<< "$v"
		for pre in 0 1; do
			lu_keep "$tag.$pre" pingpong
			# shellcheck disable=SC2086 # args: words
			LU_GIDX_OPT=-g LU_BG_PRE=$pre lu_bg_start "$tag.$pre" 60 "$prog" $args
			tags+=("$tag.$pre")
		done
	done
	LU_GROUP_PULL=0 lu_group_ride "${tags[@]}"
	for tag in "${tags[@]}"; do
		lu_exited_ok "$tag"
		grep -q 'iters in' "$FT_TMP/$tag.cli.out" ||
			lu_fail "$tag" "no result line from the client"
		log "$tag: client: $(lu_pp_line "$tag")"
		[ "${tag##*.}" = 1 ] || continue
		lu_check_log "$tag" cli "contexts>=1" "failovers=0"
		lu_check_log "$tag" srv "contexts>=1" "failovers=0"
	done
}

plain
