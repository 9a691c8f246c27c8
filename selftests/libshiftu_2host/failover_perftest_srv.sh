#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: unmodified ib_send_bw, ib_read_bw and ib_write_lat, with their
# default flags and libshiftu preloaded on both hosts, ride through the
# server's rail 0 going down from 5 s to about 8 s, by a pulled cable (QEMU's
# set_link) and by `ip link set eth0 down` in the server's guest: the
# client hears of it from its peer's failover (the handshake on the twins)
# or from its own QP's path, moves to rxe1, and both come back to rail 0
# after the repair.  Each run exits 0 with its result line, rail 1 carries
# host 1's packets while rail 0 is down and rail 0 after; the lab's
# kernel-log check fails the run on any WARN.  (The client's rail:
# failover_perftest.sh; ib_write_bw: failover_write.sh.)
#
#     host 1 (client)                                  host 2 (server)
#     PROG ─ rxe0 ─ eth0 ══ rail 0 ══════ (down 5-8 s) eth0 ─ rxe0 ─ PROG
#       └─ twin ─ rxe1 ─ eth1 ── rail 1 ──────────────────── eth1 ─ rxe1 ─ twin ┘
#     redis-server 10.0.2.1 ─────── mgmt ───────── (host 2's library;
#                                                    perftest's TCP)
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_ride_setup ib_send_bw ib_read_bw ib_write_lat

lu_rides 2 _srv
