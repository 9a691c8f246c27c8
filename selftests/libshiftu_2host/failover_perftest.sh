#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: unmodified perftest programs other than ib_write_bw ride through
# the client's rail 0 going down from 5 s to about 8 s, by a pulled cable
# (QEMU's set_link) and by `ip link set eth0 down` in the guest, with
# libshiftu preloaded on both hosts, each with its default flags:
# ib_send_bw (two-sided: the server's receives move to its twin by the
# handshake), ib_read_bw (READs replayed; the probe before failing back is
# an empty READ, see shiftu_probe()), ib_write_lat (both sides send), and
# ib_send_bw -e, whose both sides sleep in their completion channels: the
# completions their twins make must wake them (the library's bell).  Each
# run exits 0 with its result line, rail 1 carries its packets while rail
# 0 is down, and the QPs come back to rail 0 after; the lab's kernel-log
# check fails the run on any WARN (Soft-RoCE's too).  (The server's rail:
# failover_perftest_srv.sh; ib_write_bw: failover_write.sh.)
#
#     host 1 (client)                                  host 2 (server)
#     PROG ─ rxe0 ─ eth0 ══ rail 0 (down 5-8 s) ══ eth0 ─ rxe0 ─ PROG
#       └─ twin ─ rxe1 ─ eth1 ── rail 1 ──────────────────── eth1 ─ rxe1 ─ twin ┘
#     redis-server 10.0.2.1 ─────── mgmt ───────── (host 2's library;
#                                                    perftest's TCP)
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_ride_setup ib_send_bw ib_read_bw ib_write_lat

# the four programs ride together (lu_rides), each on its own port: the
# pull's packet counts are the rails', each client's twin completions its
# own
lu_rides 1 '' events
