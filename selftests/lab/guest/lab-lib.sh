# SPDX-License-Identifier: GPL-2.0
#
# Helpers for test scripts running in a lab guest: source this file
# (it is on PATH in the guest: `. lab-lib.sh`). Functions run in the
# caller's shell with builtins only, because every exec costs 50-150 ms
# under TCG.
#
#   lab_link IFNAME off|on   pull/plug a cable like the lab-link command,
#                            without starting a process (~5 ms under TCG);
#                            not for concurrent use by several processes
#                            (the lab-link command serialises callers)
#   lab_virtq IFNAME         QEMU's view of the virtio NIC behind IFNAME:
#                            device status and each queue's indexes (for
#                            a stalled link's diagnosis)
#   lab_rail_reset N         rebuild rail N of this guest from the device
#                            up (a rail whose virtio link stalled): the NIC
#                            reset by unbinding and binding its driver,
#                            named ethN, addressed, up, rxeN added again
#   lab_gid_index DEV        print the GID index of DEV's IPv4 RoCE v2 GID
#   lab_nap SECONDS          sleep without starting a process (read -t on a
#                            FIFO of the shell's own; one mkfifo the first
#                            time)

LAB_CTL=/dev/ttyS1

# Protocol with the host relay (lab-relay.py), one line each way:
# "lab-link NONCE IFNAME on|off" or "lab-virtq NONCE IFNAME", answered by
# "REQUEST NONCE ok[ TEXT]" or "REQUEST NONCE error MESSAGE". The relay
# answers only after QEMU returned. Lines for other nonces are skipped.
# lab_relay_ask REQUEST ARGS...: prints TEXT, returns 1 on an error.
lab_relay_ask()
{
	local req=$1 nonce=$$.$RANDOM.$RANDOM line fd
	shift

	exec {fd}<>"$LAB_CTL"
	printf '%s %s %s\n' "$req" "$nonce" "$*" >&$fd
	while IFS= read -r -t "${LAB_LINK_TIMEOUT:-10}" line <&$fd; do
		line=${line%$'\r'}
		case "$line" in
		"$req $nonce ok"*)
			exec {fd}<&-
			line=${line#"$req $nonce ok"}
			[ -z "$line" ] || echo "${line# }"
			return 0 ;;
		"$req $nonce error "*)
			echo "$req: ${line#"$req $nonce error "}" >&2
			exec {fd}<&-
			return 1 ;;
		esac
	done
	exec {fd}<&-
	echo "$req: no answer from the host relay" >&2
	return 1
}

lab_link()
{
	case "$1:$2" in
	eth[0-2]:on|eth[0-2]:off) ;;
	*) echo "usage: lab-link eth0|eth1|eth2 off|on" >&2; return 2 ;;
	esac
	lab_relay_ask lab-link "$1" "$2"
}

lab_virtq()
{
	case "$1" in
	eth[0-2]) ;;
	*) echo "usage: lab_virtq eth0|eth1|eth2" >&2; return 2 ;;
	esac
	lab_relay_ask lab-virtq "$1"
}

lab_rail_reset()
{
	local n=$1 virtio dev t=0
	local drv=/sys/bus/virtio/drivers/virtio_net

	case "$n" in
	0|1) ;;
	*) echo "usage: lab_rail_reset 0|1" >&2; return 2 ;;
	esac
	virtio=$(readlink "/sys/class/net/eth$n/device") || {
		echo "lab_rail_reset: eth$n has no device" >&2; return 1; }
	virtio=${virtio##*/}
	rdma link delete "rxe$n" 2>/dev/null || true
	echo "$virtio" > "$drv/unbind" || return 1
	echo "$virtio" > "$drv/bind" || return 1
	for dev in "/sys/bus/virtio/devices/$virtio/net/"*; do
		dev=${dev##*/}
	done
	[ -e "/sys/class/net/$dev" ] || {
		echo "lab_rail_reset: $virtio has no network device once bound again" >&2
		return 1; }
	[ "$dev" = "eth$n" ] || ip link set dev "$dev" name "eth$n" || return 1
	ip addr add "10.0.$n.$LAB_HOST_ID/24" dev "eth$n" || return 1
	ip link set dev "eth$n" up || return 1
	rdma link add "rxe$n" type rxe netdev "eth$n" || return 1
	until lab_gid_index "rxe$n" > /dev/null; do
		[ "$t" -lt 100 ] || {
			echo "lab_rail_reset: rxe$n has no IPv4 RoCEv2 GID after 10 s" >&2
			return 1; }
		lab_nap 0.1
		t=$((t + 1))
	done
}

lab_gid_index()
{
	local port=/sys/class/infiniband/$1/ports/1 gid type line

	for gid in "$port"/gids/*; do
		read -r type <"$port/gid_attrs/types/${gid##*/}" 2>/dev/null || continue
		[ "$type" = "RoCE v2" ] || continue
		read -r line <"$gid"
		case "$line" in
		0000:0000:0000:0000:0000:ffff:*) echo "${gid##*/}"; return 0 ;;
		esac
	done
	return 1
}

lab_nap()
{
	local f

	if [ -z "${LAB_NAP_FD:-}" ]; then
		f=/tmp/.lab-nap.$$.$RANDOM
		mkfifo "$f" || return
		exec {LAB_NAP_FD}<> "$f"
		rm -f "$f"
	fi
	read -r -t "$1" -u "$LAB_NAP_FD" _ || true
}
