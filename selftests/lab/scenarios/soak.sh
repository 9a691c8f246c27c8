#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# soak: libshiftu under SOAK_FAULTS (default 1000) faults at random moments
# on either host, with NCCL-like checked traffic in two processes of
# SOAK_CONNS (default 8) QPs each, their threads posting at once: rail-0
# pulls by QEMU set_link and by ip link, silent drops (netem loss 100%),
# flaps of 50-500 ms, and pulls of rail 1 while nothing rides it.  Zero
# lost, duplicated, reordered or corrupt notifications, no error, no kernel
# warning.  SOAK_PLAIN=1: the same without the library, the control.
# SOAK_KINDS=riding: set_link pulls and silent drops only, which plain
# Soft-RoCE rides (TORTURE_KINDS; the default, all, is every kind above).
# It is selftests/libshiftu_2host/torture.sh with the soak's
# knobs (TORTURE_*; see that script); `make soak` runs it.  Runs on host 1;
# host 2 is reached with lab-peer.

set -e
cd "$SHIFT_TOP/selftests/libshiftu_2host"
export TORTURE_PULLS=${SOAK_FAULTS:-1000}
export TORTURE_CONNS=${SOAK_CONNS:-8}
export TORTURE_OUT_MS="50 500"
export TORTURE_KINDS=${SOAK_KINDS:-all}
export TORTURE_PLAIN=${SOAK_PLAIN:-0}
exec bash ./torture.sh
