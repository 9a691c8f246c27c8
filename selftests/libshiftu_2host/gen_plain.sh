#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: shiftgen itself is right before the failover tests rely on it: without
# libshiftu, over rail 0, each mode (write_imm, send, write, atomic) runs for a
# few seconds and both sides end with exit 0 and a clean summary: the server
# saw every message the client sent, in order, once, with the right content,
# and the client's completions and the server's RESULT agree.
#
#     host 1 (client)                                   host 2 (server)
#     shiftgen -d rxe0 ... 10.0.2.2 ── rxe0 ─ eth0 ══ rail 0 ══ eth0 ─ rxe0 ── shiftgen -d rxe0 ...
#                  └──────────── TCP (QP exchange, DONE/RESULT) over eth2 (mgmt) ─┘
#
# Sizes suit TCG emulation (~0.1 Gb/s per rail): 4 KiB chunks, a few slots.
# One count-bound run with one 8-byte chunk and a single slot exercises the
# credit loop in lockstep (every message waits for the previous one's credit).
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

GEN=$LU_DIR/shiftgen
[ -x "$GEN" ] || skip "shiftgen not built (make -C $LU_DIR)"
# shellcheck disable=SC2119 # nothing to require beyond the lab itself
lu_setup

# summary TAG SIDE: the summary line of SIDE (cli or srv) of the pair TAG
summary()
{
	local role=client
	[ "$2" = srv ] && role=server
	grep -E "^shiftgen: role=$role mode=" "$FT_TMP/$1.$2.out" | tail -n 1 || true
}

# field LINE KEY: the value of KEY in a summary line
field()
{
	echo "$1" | awk -v k="$2" '{
		for (i = 2; i <= NF; i++)
			if (index($i, k "=") == 1) { print substr($i, length(k) + 2); exit }
	}'
}

# expect TAG LINE KEY=VALUE...: each KEY of LINE is VALUE
expect()
{
	local tag=$1 line=$2 kv got
	shift 2
	for kv in "$@"; do
		got=$(field "$line" "${kv%%=*}")
		[ "$got" = "${kv#*=}" ] ||
			lu_fail "$tag" "${kv%%=*} is '$got', expected '${kv#*=}' in: $line"
	done
}

# run TAG MODE ARGS...: a plain pair in MODE, judged clean on both sides
run()
{
	local tag=$1 mode=$2 cli srv sent
	shift 2

	lu_pair "$tag" 0 "$GEN" -m "$mode" "$@"
	lu_exited_ok "$tag"
	cli=$(summary "$tag" cli)
	srv=$(summary "$tag" srv)
	[ -n "$cli" ] || lu_fail "$tag" "no summary line from the client"
	[ -n "$srv" ] || lu_fail "$tag" "no summary line from the server"

	sent=$(field "$cli" sent)
	if ! [[ $sent =~ ^[0-9]+$ ]] || [ "$sent" -eq 0 ]; then
		lu_fail "$tag" "the client sent '$sent' messages"
	fi
	expect "$tag" "$cli" mode="$mode" completions="$sent" errors=0 corrupt=0 \
		peer=ok result=ok
	expect "$tag" "$srv" mode="$mode" msgs="$sent" lost=0 dup=0 reorder=0 corrupt=0 \
		errors=0 peer_errors=0 result=ok
	[ "$mode" != atomic ] || expect "$tag" "$srv" counter="$sent"
	log "$tag: $cli"
	log "$tag: $srv"
}

run write_imm write_imm -s 4096 -c 4 -q 8 -D 3
run send      send      -s 4096 -q 8 -D 3
run write     write     -s 4096 -c 4 -q 8 -D 3
run atomic    atomic    -D 3
run lockstep  write_imm -s 8 -c 1 -q 1 -n 300
expect lockstep "$(summary lockstep cli)" sent=300
