#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# spin_model: the failover protocol's spin model (model/shift.pml), which
# runs the library's own decisions (userlib/proto.c), keeps every guarantee
# over its whole state space, and still catches each seeded defect, among
# them the library's own one it found (so that a model that stopped
# catching them fails).
#
#   two scripts' sizes          side 0's requests, side 1's
#     2, 1                      both sides send, fail, answer
#     3, 0                      one side sends longer scripts
#   each: the clean model must finish its search with no error; each of
#   SEED_31BIT, SEED_NO_FENCE, SEED_ATOMIC (glue.c) and SEED_STAY_SPEAKS
#   (shift.pml: a side that answered and stayed speaks again when it moves,
#   the library's defect the model found) must make pan report an error.
set -e -o pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
ksft_skip=4
depth=1000
confs=("-DM_L0=2 -DM_L1=1" "-DM_L0=3 -DM_L1=0")
seeds=(SEED_31BIT SEED_NO_FENCE SEED_ATOMIC)

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
	# pan's exit status does not say whether it found an error: its log does
	(cd "$out" && nice -n 19 timeout 50 "./$pan" -m$depth > "$pan.log" 2>&1) || true
	cp "$out/$pan.log" "$out.log"
}

fail=0
for c in "${confs[@]}"; do
	out=$tmp/out-$(echo "$c" | tr -dc '0-9')
	name="model ${c//-D/}"

	verify "$out" "$c" ""
	log=$out.log
	if ! grep -q 'errors: 0$' "$log" || grep -q -E 'Search not completed|depth too small|MEMLIM|out of memory' "$log"; then
		sed 's/^/# /' "$log"
		if [ -f "$out/pan.trail" ]; then
			echo "# the counter-example:"
			(cd "$out" && ./pan -r 2>&1 | tail -40 | sed 's/^/# /')
		fi
		echo "# $name: the search found an error or did not finish"
		fail=1
		continue
	fi
	echo "# $name: clean: $(figures "$log"), errors: 0"

	# what it must catch: the seeded defects (glue.c, and shift.pml's)
	for s in "${seeds[@]}" SEED_STAY_SPEAKS; do
		if [ "$s" = SEED_STAY_SPEAKS ]; then
			verify "$out-stay" "$c -DSEED_STAY_SPEAKS" ""
			log=$out-stay.log
		else
			verify "$out" "$c" "$s"
			log=$out.log
		fi
		what=$(grep -m1 -E '^pan:[0-9]+: |invalid end state' "$log" || true)
		if grep -q -E 'errors: [1-9]' "$log" && [ -n "$what" ]; then
			echo "# $name: $s caught: $what ($(figures "$log"))"
		else
			sed 's/^/# /' "$log"
			echo "# $name: $s NOT caught: the model no longer sees that defect"
			fail=1
		fi
	done
done
[ $fail = 0 ] || exit 1
echo "# the model holds, and catches each seeded defect"
