#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rxeretry: ask the lab's Soft-RoCE, without the library, whether its
# requester sends an empty SEND when an ACK of a whole message meets that
# message being sent again (`lab.sh scenario rxeretry two`).  See
# selftests/libshiftu_2host/rxeretry.c for the exchange: host 1's QP sends,
# host 2 plays its responder by hand.  Host 1's egress is slowed (a token
# bucket; not netem, whose rate orphans the packets it holds) so that the
# retry waits for its sent packets to drain (rxe's 64 packets in flight a
# QP), as a loaded guest's does, and the ACK meets the message half sent.
# RXERETRY_MODES (default "send write_imm": the requests SENDs, or
# WRITE_WITH_IMMs), each RXERETRY_ROUNDS (default 3) rounds of each kind:
# the control first, where netem's rate holds the packets as long but
# lets the requester send on, then the token bucket's.  Exits 1 when a
# kind of round never got its answer (the fake saw no retry after its
# ACK).

set -e
. lab-lib.sh

ROUNDS=${RXERETRY_ROUNDS:-3}
BIN=$SHIFT_TOP/selftests/libshiftu_2host/rxeretry
GIX=$(lab_gid_index rxe0)
[ -x "$BIN" ] || { echo "rxeretry not built (make selftests)"; exit 1; }

trap 'tc qdisc del dev eth0 root 2> /dev/null || :' EXIT
# round I of MODE with QDISC: how many asked, and how many met an empty
# request at the next request's PSN
asked=0 empty=0 i=0 ok=1
round()
{
	local mode=$1 line port=$((18700 + i))

	shift
	tc qdisc replace dev eth0 root "$@"
	lab-peer --bg "$BIN fake -i eth0 -p $port -D 40 > /tmp/rxeretry.$i 2>&1" > /dev/null
	lab_nap 1
	"$BIN" req -d rxe0 -x "$GIX" -p "$port" -m "$mode" 10.0.2.2 ||
		echo "round $i: the requester failed"
	lab_nap 1
	line=$(lab-peer "cat /tmp/rxeretry.$i" | grep 'role=fake packets=' || :)
	echo "round $i ($mode, $*): ${line:-the fake said nothing}"
	case "$line" in
	'') ;;
	*empty=yes*) asked=$((asked + 1)) empty=$((empty + 1)) ;;
	*) asked=$((asked + 1)) ;;
	esac
}

for mode in ${RXERETRY_MODES:-send write_imm}; do
	# the control: netem's rate holds the packets as long, but orphans
	# them, so the requester never waits and the ACK finds the request
	# sent whole
	asked=0 empty=0
	for ((n = 0; n < ROUNDS; n++)); do
		i=$((i + 1))
		round "$mode" netem rate 5mbit
	done
	c_asked=$asked c_empty=$empty asked=0 empty=0
	for ((n = 0; n < ROUNDS; n++)); do
		i=$((i + 1))
		round "$mode" tbf rate 5mbit burst 4k limit 1m
	done
	echo "rxeretry: $(uname -r), $mode: the ACK met the request sent whole: an empty one at the next PSN in $c_empty of $c_asked rounds; half sent: in $empty of $asked rounds"
	[ "$asked" -gt 0 ] && [ "$c_asked" -gt 0 ] || ok=0
done
[ "$ok" = 1 ]
