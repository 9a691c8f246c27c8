#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# torture: libshiftu under TORTURE_PULLS (default 50) rail-0 pulls at random
# moments on either host, with NCCL-style checked traffic
# (selftests/libshiftu_2host/torture.sh, also part of `make check`;
# TORTURE_PULLS and LU_LOG are passed on): `make torture` runs it alone.
# See that script for what it proves.  Runs on host 1; host 2 is reached
# with lab-peer.

set -e
cd "$SHIFT_TOP/selftests/libshiftu_2host"
exec bash ./torture.sh
