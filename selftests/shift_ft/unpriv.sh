#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: any user can map the page and run netlink gets and dumps, while
# PAIR_SET, PAIR_CLEAR, PATH_REPORT and PATH_DEL fail with EPERM without
# CAP_NET_ADMIN, both for user nobody and for root without that capability,
# and leave the table as it was.
#
#   root ── ftnl report/pair-set (allowed)
#   nobody, root-CAP_NET_ADMIN ── ftnl/ftpage reads (allowed), changes (EPERM)
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
ft_require_cmd setpriv
G=fe80::ab:1
G2=fe80::ab:2

as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
as_noadmin() { setpriv --inh-caps=-net_admin --bounding-set=-net_admin -- "$@"; }

[ "$(as_nobody id -u)" = 65534 ] || skip "setpriv cannot switch to nobody"
as_nobody test -x "$FTNL" || skip "$FTNL not executable by nobody"

# a row for nobody to read, and to fail to delete
"$FTNL" report rxe0 1 "$G" up app
ft_defer "'$FTNL' path-del rxe0 1 $G"
"$FTNL" pair-clear rxe0 1 2> /dev/null || true
before=$("$FTNL" pairs -f dev_name,port_num,backup_dev_name,pair_flags)
paths_before=$("$FTNL" paths -f remote_gid,report_state,report_source,report_pid)

for who in as_nobody as_noadmin; do
	# reads
	$who "$FTPAGE" info > /dev/null || fail "$who: ftpage info"
	$who "$FTPAGE" gen > /dev/null || fail "$who: ftpage gen"
	pg=$($who "$FTPAGE" ports -f port_index,dev_name,port_num,state) ||
		fail "$who: ftpage ports"
	nl=$($who "$FTNL" ports -f port_index,dev_name,port_num,state) ||
		fail "$who: ftnl ports"
	ft_expect "$who: ports (page vs netlink)" "$pg" "$nl"
	$who "$FTNL" pairs > /dev/null || fail "$who: ftnl pairs"
	$who "$FTNL" paths | grep -q "remote_gid=" || fail "$who: ftnl paths"
	$who "$FTNL" port rxe0 1 > /dev/null || fail "$who: ftnl port"
	$who "$FTNL" pair rxe0 1 > /dev/null || fail "$who: ftnl pair"
	$who "$FTNL" path rxe0 1 "$G" > /dev/null || fail "$who: ftnl path"
	$who "$FTPAGE" torture 0.5 > /dev/null || fail "$who: ftpage torture"

	# changes
	$who "$FTNL" --expect-errno EPERM pair-set rxe0 1 rxe1 1
	$who "$FTNL" --expect-errno EPERM pair-clear rxe0 1
	$who "$FTNL" --expect-errno EPERM report rxe0 1 "$G2" up app
	$who "$FTNL" --expect-errno EPERM report rxe0 1 "$G" down agent
	$who "$FTNL" --expect-errno EPERM path-del rxe0 1 "$G"
	# refused before validation: even nonsense gets EPERM, not EINVAL
	$who "$FTNL" --expect-errno EPERM report nosuchdev 1 "$G" up app
	log "$who: reads work, changes get EPERM"

	# the multicast group: not specified as privileged; report what happens
	if $who "$FTNL" monitor -T 0.2 > /dev/null 2>&1; then
		log "$who: monitor subscribes"
	else
		log "$who: monitor refused"
	fi
done

ft_expect "pairs unchanged" "$("$FTNL" pairs -f dev_name,port_num,backup_dev_name,pair_flags)" "$before"
ft_expect "paths unchanged" "$("$FTNL" paths -f remote_gid,report_state,report_source,report_pid)" "$paths_before"
exit 0
