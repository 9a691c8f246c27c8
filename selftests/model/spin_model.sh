#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# spin_model: the failover protocol's spin model (model/shift.pml), failing
# over and back, runs the library's own decisions (userlib/proto.c), keeps
# every guarantee over its whole state space, and still catches each seeded
# defect and shows each open finding (so that a model that stopped seeing
# them fails).
#
#   configuration (model/shift.pml)       what it covers
#     M_L0=2 M_L1=0                       one side sends two requests; it
#                                         fails over and back, one-sided or
#                                         two-sided (the peer follows)
#     M_L0=1 M_L1=1                       both sides send, fail, answer,
#                                         fail back
#     M_FB=0 M_L0=2 M_L1=1                failover only, 2 + 1 requests
#     M_TD=1 M_L0=1 M_L1=0                one side sends a request; both
#                                         fail over, their twins fail
#                                         under the work, both go back
#   each: the clean model must finish its search with no error; in the
#   first, each of the seeds (glue.c: SEED_31BIT, SEED_NO_FENCE, SEED_ATOMIC,
#   SEED_GAP_WALK, SEED_ASK_UNHEARD, SEED_KEEP_REQ and SEED_ASKER_NO_CTRL,
#   the model's fourth, first, second and third findings on failback,
#   fixed; carried out by the model: SEED_STAY_SPEAKS, the library's defect
#   the model found first, and SEED_FAILBACK_NO_DRAIN) must make pan report
#   an error, and so must each open finding (OPEN_*: an assumption of the
#   model lifted, under which it shows a defect of the library's that is
#   not fixed yet; once it is, its assumption and its line here go; none
#   is open now); in the last, SEED_TWIN_ERRORS (a failed twin's errors
#   given to the application, as before session 28).
set -e -o pipefail

top=$(cd -P "$(dirname "$0")/../.." && pwd)
ksft_skip=4
depth=1000
confs=("-DM_L0=2 -DM_L1=0" "-DM_L0=1 -DM_L1=1" "-DM_FB=0 -DM_L0=2 -DM_L1=1"
       "-DM_TD=1 -DM_L0=1 -DM_L1=0")
# caught in each configuration (one verifier each, the model's pan.o shared)
seeds=("SEED_31BIT SEED_NO_FENCE SEED_ATOMIC SEED_STAY_SPEAKS SEED_FAILBACK_NO_DRAIN
	SEED_GAP_WALK SEED_ASK_UNHEARD SEED_KEEP_REQ SEED_ASKER_NO_CTRL"
       "" "" "SEED_TWIN_ERRORS")

command -v spin > /dev/null || { echo "# SKIP: spin is not installed (apt-get install spin)"; exit $ksft_skip; }
command -v "${CC:-cc}" > /dev/null || { echo "# SKIP: no C compiler"; exit $ksft_skip; }

tmp=$(mktemp -d /tmp/spin_model.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# pan's figures from its log $1: states, depth, seconds
figures()
{
	local states depth secs

	states=$(sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' "$1")
	depth=$(sed -n 's/.*depth reached \([0-9]*\),.*/\1/p' "$1")
	secs=$(sed -n 's/^pan: elapsed time \([0-9.e+-]*\) seconds/\1/p' "$1")
	echo "$states states, depth $depth, $secs s"
}

# build the verifier for model parameters $2 (seed $3) in $1, run it
verify()
{
	local out=$1 defs=$2 seed=$3 pan=pan${3:+-$3}

	make -s -C "$top/model" OUT="$out" DEFS="$defs" SEED="$seed" > "$out.build" 2>&1 ||
		{ sed 's/^/# /' "$out.build"; echo "# $defs $seed: cannot build the verifier"; return 1; }
	rm -f "$out"/*.trail
	# pan's exit status does not say whether it found an error: its log
	# does.  Not niced: at nice 19 beside a lab's guests, a 3 s search
	# took 92 s and the next ones ran out of their 100.
	(cd "$out" && timeout 100 "./$pan" -m$depth > "$pan.log" 2>&1) || true
	cp "$out/$pan.log" "$out.log"
}

# the counter-example of the verifier $2 in $1, if it wrote one
trail()
{
	local t

	t=$(ls "$1"/*.trail 2> /dev/null | head -1)
	[ -n "$t" ] || return 0
	echo "# the counter-example:"
	(cd "$1" && "./$2" -r "$t" 2>&1 | tail -40 | sed 's/^/# /')
}

# conf C SEEDS: the clean model of configuration C, and each of the words
# SEEDS; its lines on stdout, exit 1 if any failed
conf()
{
	local c=$1 out name log s what fail=0

	out=$tmp/out-$(echo "$c" | tr -dc '0-9')
	name="model ${c//-D/}"
	verify "$out" "$c" ""
	log=$out.log
	if ! grep -q 'errors: 0$' "$log" || grep -q -E 'Search not completed|depth too small|MEMLIM|out of memory' "$log"; then
		sed 's/^/# /' "$log"
		trail "$out" pan
		echo "# $name: the search found an error or did not finish"
		return 1
	fi
	echo "# $name: clean: $(figures "$log"), errors: 0"

	# what it must catch: the seeded defects, and the open findings
	for s in $2; do
		verify "$out" "$c" "$s"
		log=$out.log
		what=$(grep -m1 -E '^pan:[0-9]+: |invalid end state' "$log" || true)
		if grep -q -E 'errors: [1-9]' "$log" && [ -n "$what" ]; then
			echo "# $name: $s caught: $what ($(figures "$log"))"
		else
			sed 's/^/# /' "$log"
			echo "# $name: $s NOT caught: the model no longer sees that defect"
			fail=1
		fi
	done
	return $fail
}

# the configurations side by side (each its own directory): most of the
# time is spin's and the compiler's, one process each
fail=0 pids=()
for i in "${!confs[@]}"; do
	conf "${confs[$i]}" "${seeds[$i]}" > "$tmp/conf-$i.out" 2>&1 &
	pids+=($!)
done
for i in "${!confs[@]}"; do
	wait "${pids[$i]}" || fail=1
	cat "$tmp/conf-$i.out"
done
[ $fail = 0 ] || exit 1
echo "# the model holds, and catches each seeded defect and open finding"
