#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a program that reaches libibverbs as NCCL does (dlopen, then each
# verb looked up by that handle with dlvsym: shiftgen_dl), run under
# shiftu-run on both hosts, is protected: its checked NCCL-like traffic
# (bulk WRITEs closed by a WRITE_WITH_IMM, one-sided credits) rides host
# 1's rail 0 pulled by the cable and host 2's taken down by ip link, with
# no message lost, doubled, reordered or corrupt, rail 1 carrying it during
# the outage and rail 0 after.  And that shiftu-run is what reaches such a
# program: with libshiftu only preloaded, the same run never goes through
# the library (it opens no context there).
#
#     host 1 (shiftu-run shiftgen_dl client)         host 2 (shiftu-run shiftgen_dl server)
#     dlopen("libibverbs.so") = shim: libshiftu, then libibverbs (dlvsym by handle)
#     rxe0 ─ eth0 ══ rail 0 (down 5-8 s) ══════════ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ─────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

GENDL=$LU_DIR/shiftgen_dl
[ -x "$GENDL" ] || skip "shiftgen_dl not built (make -C $LU_DIR)"
[ -x "$LU_RUN" ] || skip "shiftu-run not built (make -C $SHIFT_TOP lib)"
lu_ride_setup "$GENDL"
if nm -D --undefined-only "$GENDL" 2> /dev/null | grep -q ' ibv_'; then
	fail "shiftgen_dl is linked against libibverbs: it would not test NCCL's way"
fi

# The control: preloaded only.  The traffic is clean, and the library
# never saw a device.
lu_keep preload dlopen
lu_pair preload 1 "$GENDL" -m write_imm -n 2000
lu_gen_clean preload
if grep -q 'interposed' "$FT_TMP/preload.cli.shiftu" 2> /dev/null; then
	lu_fail preload "preloaded alone, libshiftu interposed a program that dlopens libibverbs: this test could not tell what shiftu-run adds"
fi
log "preload: libshiftu preloaded alone did not reach shiftgen_dl (as expected): $(grep '^shiftgen: role=server' "$FT_TMP/preload.srv.out")"

# dl_ride TAG ON BY: the pair TAG under shiftu-run through rail 0 of host ON
# going down by BY (lu_pull), judged as lu_ride_ok judges perftest's: the
# pull once its QP is protected and moving data (lu_pull_ready), the run
# ended once the pull is over (lu_end; -D only bounds it).
dl_ride()
{
	local tag=$1
	LU_PULL_ON=$2 LU_PULL_BY=$3

	lu_keep "$tag" dlopen
	LU_DURING=lu_pull LU_PULL_AT=ready LU_RIDE_END=1 lu_pair "$tag" run "$GENDL" -m write_imm -D 30
	lu_rode "$tag"
	lu_gen_clean "$tag"
	log "$tag: $(grep '^shiftgen: role=server' "$FT_TMP/$tag.srv.out")"
}

dl_ride cable1 1 link
dl_ride ip2 2 ip
