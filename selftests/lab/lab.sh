#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# lab.sh: the shift lab. Boots one or two QEMU guests running the stock
# Debian kernel from /boot with the host root shared read-only over 9p, each
# with two Soft-RoCE devices (rxe0 on eth0 = rail 0, rxe1 on eth1 = rail 1)
# and a management NIC (eth2), and runs kselftest directories, scenarios or
# an interactive shell in them.
#
#   lab.sh run one|two [--part K/N] DIR...
#                               run kselftest DIRs on host 1 (TAP on stdout);
#                               exit 0 only if every test passed or skipped,
#                               the guest printed the success token and no
#                               guest dmesg shows a kernel bug; with --part,
#                               every Nth of their tests from the Kth on
#                               (N runs share the tests between them)
#   lab.sh scenario NAME [one|two]
#                               run selftests/lab/scenarios/NAME.sh on host 1
#                               (default: two hosts), console streamed
#   lab.sh shell [one|two]      host 1's console on this terminal (Ctrl-A x
#                               quits QEMU); host 2's with `lab.sh console 2`
#   lab.sh console N            attach to host N's console (shell mode)
#   lab.sh link N IFNAME off|on pull/plug host N's cable from outside (while
#                               a shell or scenario runs)
#   lab.sh monitor N            QEMU HMP monitor of host N
#   lab.sh initramfs            just build the initramfs
#
# Topology (addresses 10.0.<rail>.<host>/24):
#
#   host1 eth0 10.0.0.1 (rxe0) ---- rail 0 ---- 10.0.0.2 eth0 (rxe0) host2
#   host1 eth1 10.0.1.1 (rxe1) ---- rail 1 ---- 10.0.1.2 eth1 (rxe1) host2
#   host1 eth2 10.0.2.1        ---- mgmt   ---- 10.0.2.2 eth2        host2
#
# Links are QEMU "-netdev dgram" UDP pairs on 127.0.0.1 (one guest: sent to
# unbound ports, so the carrier is up and the rxe ports are ACTIVE).
# Inside the guests: SHIFT_TOP, LAB_HOST_ID, LAB_NHOSTS, LAB_OUT (writable,
# ends up on the host), KSFT_DIR, and on PATH selftests/lab/guest:
# lab-link IFNAME off|on, lab-peer [--bg] CMD..., dmesg-check mark|scan.
#
# Environment: LU_LOG (libshiftu's log level in the libshiftu tests, default
# info), TORTURE_PULLS, TORTURE_SEND_CHUNK, SOAK_FAULTS, SOAK_CONNS, SOAK_PLAIN and
# SOAK_KINDS (the soak's),
# MANY_ROUNDS (the many_*.sh rides' rounds, default 5), STORE_DOWN_P
# (store_down.sh's connections, default 64), MANY_GEN_P (many_gen.sh's
# connections, default 64), MANY_PROCS_N (many_procs.sh's processes,
# default 8),
# BENCH_STEPS (bench.sh's steps, default all),
# LINKSTALL_PULLS, _HOLD and _LOAD (the linkstall scenario's),
# RXERETRY_ROUNDS and RXERETRY_MODES (the rxeretry scenario's) and
# FT_FUZZ_MSGS and FT_FUZZ_SEED (shift_ft/fuzz.sh's), FT_CYCLES
# (shift_ft/load_unload.sh's, default 100), FT_FLAPS (shift_ft's
# port_events.sh's and latency.sh's, default 20) are passed on to the
# guest, and so are LIBSHIFTU and LIBSHIFTU_TEST (the libraries the
# libshiftu tests preload, default this tree's: a test run against another
# build's, say main's, to show that it fails there), and LAB_XTRACE (1:
# each test leaves its shell trace, timed, in its out/TEST.xtrace, for
# xtrace-top);
# LAB_TESTS ("a.sh b.sh", for `run`) runs only those of the DIRs' tests, in
# that order, which may be of a DIR's TEST_PROGS_NAMED (tests that run only
# when named).
# LAB_TIMEOUT (seconds per VM run; default for `run` 2400 with one host,
# 4200 with two (CI ran a lane 2630 s), each at least 1.5 times what its
# make check run takes on a 2-core machine; 3300 for the scenarios),
# LAB_NAPI_TX (0 or 1: the guests' virtio_net.napi_tx; default 0, because
# with the kernel's 1 a rail's transmit queue can stop for good after a
# pull: see Documentation/lab.rst), LAB_ACCEL (kvm|tcg, default: probe),
# LAB_KVER (the kernel to boot; default KVER, which the top Makefile
# exports with the kernel it built the module for, else scripts/kver.sh's),
# LAB_MEM (default 1024 MiB), LAB_SMP (each guest's CPUs, default 1),
# LAB_CMDLINE_EXTRA (appended to the guests' kernel command line, for
# debugging options such as slub_debug=FZPU; default none), LAB_RUN (run
# directory for link/console/monitor, default the latest). Everything from a run is kept in
# build/lab/runs/<timestamp>/ (hostN/serial.log, hostN/out/{tap,dmesg,rc}).

set -e

LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SHIFT_TOP=$(cd "$LAB_DIR/../.." && pwd)
BUILD=$SHIFT_TOP/build/lab
KSFT_OUT=$SHIFT_TOP/build/kselftest
KSFT_DIR=$KSFT_OUT/tools/testing/selftests
LAB_TIMEOUT_GIVEN=${LAB_TIMEOUT:-}
LAB_TIMEOUT=${LAB_TIMEOUT:-3300}
LAB_MEM=${LAB_MEM:-1024}
LAB_SMP=${LAB_SMP:-1}
LAB_NAPI_TX=${LAB_NAPI_TX:-0}
case $LAB_NAPI_TX in
0|1) ;;
*) echo "lab: LAB_NAPI_TX must be 0 or 1, not '$LAB_NAPI_TX'" >&2; exit 2 ;;
esac
# Modules the initramfs loads (with dependencies, in order) to reach 9p.
INITRAMFS_MODULES=(virtio_pci 9pnet_virtio 9p overlay)
# What a kernel bug looks like in dmesg (same list as guest/dmesg-check).
BUG_PATTERN='BUG:|WARNING:|Oops|refcount_t|leak|UBSAN|KASAN|general protection|Call Trace|NETDEV WATCHDOG'

declare -a CLEANUP_PIDS=()	# QEMU, relay and tail processes of this run

log()
{
	echo "lab: $*" >&2
}

die()
{
	log "$*"
	exit 1
}

# ---------------------------------------------------------------- setup --

# The kernel to boot: LAB_KVER, else KVER (what the top Makefile built
# the module for, which it exports), else the one scripts/kver.sh picks
# for the build too.  Its modules and its image must be installed.
find_kver()
{
	local v=${LAB_KVER:-${KVER:-$("$SHIFT_TOP/scripts/kver.sh")}}

	[ -n "$v" ] || die "no kernel with headers in /lib/modules (install-deps.sh)"
	[ -d "/lib/modules/$v/kernel" ] || die "kernel $v: no /lib/modules/$v/kernel"
	[ -r "/boot/vmlinuz-$v" ] || die "kernel $v: no /boot/vmlinuz-$v (apt-get install linux-image-$v)"
	echo "$v"
}

# Build the busybox initramfs for $KVER unless the cached one was built from
# the same init script, module files and busybox binary.
build_initramfs()
{
	local img=$BUILD/initramfs-$KVER.cpio.gz key stage mods busybox

	busybox=$(command -v busybox) || die "busybox-static is not installed"
	mods=$(modprobe -a -S "$KVER" --show-depends "${INITRAMFS_MODULES[@]}" |
		awk '$1 == "insmod" && !seen[$2]++ { print $2 }')
	[ -n "$mods" ] || die "modprobe found none of ${INITRAMFS_MODULES[*]} for $KVER"
	key=$(sha256sum "$LAB_DIR/initramfs/init" "$busybox" $mods | sha256sum | cut -c1-16)
	INITRAMFS=$img
	[ -f "$img" ] && [ "$(cat "$img.key" 2>/dev/null)" = "$key" ] && return

	log "building initramfs for $KVER"
	stage=$(mktemp -d)
	mkdir -p "$stage"/{bin,dev,proc,sys,modules}
	cp "$busybox" "$stage/bin/busybox"
	cp "$LAB_DIR/initramfs/init" "$stage/init"
	# insmod order: dependencies first, as modprobe listed them.  Busybox's
	# insmod hands a compressed module to the kernel as it is ("Invalid
	# ELF header magic"): 6.12's .ko.xz are put in decompressed.
	for mod in $mods; do
		case "$mod" in
		*.ko)	cp "$mod" "$stage/modules/" ;;
		*.ko.xz) xz -dc "$mod" >"$stage/modules/$(basename "$mod" .xz)" ||
				die "cannot decompress $mod (xz-utils)" ;;
		*)	die "$mod: the lab's initramfs takes .ko and .ko.xz only" ;;
		esac
		basename "$mod" .xz
	done >"$stage/modules.order"
	# The kernel opens /dev/console before init runs.
	mknod -m 600 "$stage/dev/console" c 5 1
	mkdir -p "$BUILD"
	# each under a name of its own first: two runs may build at once
	(cd "$stage" && find . | cpio -o -H newc --quiet -R 0:0) | gzip -1 >"$img.$$"
	mv "$img.$$" "$img"
	echo "$key" >"$img.key.$$"
	mv "$img.key.$$" "$img.key"
	rm -rf "$stage"
}

# Use KVM only if it really runs a guest: boot the kernel without an
# initramfs and expect its "unable to mount root" panic within seconds.
# The answer is cached per host boot.
probe_accel()
{
	local cache out

	if [ -n "$LAB_ACCEL" ]; then
		ACCEL=$LAB_ACCEL
		return
	fi
	cache=$BUILD/accel.$(cat /proc/sys/kernel/random/boot_id)
	if [ ! -f "$cache" ]; then
		ACCEL=tcg
		if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
			out=$(timeout 15 qemu-system-x86_64 -accel kvm -m 256 \
				-nodefaults -display none -no-reboot -serial stdio \
				-kernel "/boot/vmlinuz-$KVER" \
				-append "console=ttyS0 panic=-1" </dev/null 2>&1) || true
			grep -q "Kernel panic" <<<"$out" && ACCEL=kvm
		fi
		mkdir -p "$BUILD"
		echo "$ACCEL" >"$cache.$$"
		mv "$cache.$$" "$cache"
	fi
	ACCEL=$(cat "$cache")
}

# Pick 6 consecutive free UDP ports on 127.0.0.1 from a random base: one
# pair per link (rail 0, rail 1, mgmt). Sets PORTS.
alloc_ports()
{
	mapfile -t PORTS < <(python3 - <<'EOF'
import random, socket
for _ in range(100):
    base = random.randrange(20000, 60000, 8)
    socks = []
    try:
        for port in range(base, base + 6):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", port))
            socks.append(s)
    except OSError:
        continue
    finally:
        for s in socks:
            s.close()
    print("\n".join(str(p) for p in range(base, base + 6)))
    break
EOF
	)
	[ ${#PORTS[@]} -eq 6 ] || die "no free UDP ports on 127.0.0.1"
}

# Create the run directory and point runs/latest at it. Sets RUN.
new_run()
{
	RUN=$BUILD/runs/$(date +%Y%m%d-%H%M%S)-$$
	mkdir -p "$RUN"
	ln -sfn "${RUN##*/}" "$BUILD/runs/latest"
	NONCE=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	case "$RUN" in
	*[[:space:]]*) die "the repository path must not contain spaces" ;;
	esac
}

# --------------------------------------------------------------- guests --

# write_job ID SCRIPT: the job host ID runs after its stage-2 setup.
write_job()
{
	mkdir -p "$RUN/host$1/out"
	printf '# SPDX-License-Identifier: GPL-2.0\n# lab job for host %s\n%s\n' "$1" "$2" \
		>"$RUN/host$1/out/job"
}

# qemu_args ID NHOSTS CONSOLE: the QEMU command line for host ID. CONSOLE
# is "file" (run), "stdio" (interactive host 1) or "socket" (host 2 in a
# shell, attach with lab.sh console 2). Host 1 owns the "local" end of each
# link's port pair, host 2 the other; alone, host 1 sends to nobody.
qemu_args()
{
	local id=$1 nhosts=$2 console=$3 dir=$RUN/host$1 n lport rport
	local -a args

	args=(qemu-system-x86_64 -name "lab-host$id" -accel "$ACCEL"
		-m "$LAB_MEM" -smp "$LAB_SMP" -nodefaults -nographic -no-reboot
		-kernel "/boot/vmlinuz-$KVER" -initrd "$INITRAMFS"
		-append "console=ttyS0 panic=-1 quiet mitigations=off tsc=reliable rcupdate.rcu_cpu_stall_timeout=120 watchdog_thresh=60 virtio_net.napi_tx=$LAB_NAPI_TX lab.stage2=$LAB_DIR/guest/stage2 lab.id=$id lab.n=$nhosts lab.top=$SHIFT_TOP lab.out=$dir/out lab.ksft=$KSFT_DIR lab.nonce=$NONCE${LAB_CMDLINE_EXTRA:+ $LAB_CMDLINE_EXTRA}"
		-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
		-virtfs "local,path=$dir/out,mount_tag=labout,security_model=none,multidevs=remap")
	[ "$ACCEL" = kvm ] && args+=(-cpu host)

	case "$console" in
	file)	args+=(-chardev "file,id=con,path=$dir/serial.log") ;;
	stdio)	args+=(-chardev "stdio,id=con,mux=on,signal=off,logfile=$dir/serial.log"
			-mon "chardev=con,mode=readline") ;;
	socket)	args+=(-chardev "socket,id=con,path=$dir/console.sock,server=on,wait=off,logfile=$dir/serial.log") ;;
	esac
	args+=(-serial chardev:con
		-chardev "socket,id=ctl,path=$dir/ctl.sock,server=on,wait=off"
		-serial chardev:ctl
		-qmp "unix:$dir/qmp-relay.sock,server=on,wait=off"
		-qmp "unix:$dir/qmp.sock,server=on,wait=off"
		-monitor "unix:$dir/hmp.sock,server=on,wait=off")

	for n in 0 1 2; do
		lport=${PORTS[2 * n]} rport=${PORTS[2 * n + 1]}
		[ "$id" = 2 ] && { lport=${PORTS[2 * n + 1]}; rport=${PORTS[2 * n]}; }
		args+=(-netdev "dgram,id=eth$n,local.type=inet,local.host=127.0.0.1,local.port=$lport,remote.type=inet,remote.host=127.0.0.1,remote.port=$rport"
			-device "virtio-net-pci,id=nic$n,netdev=eth$n,mac=52:54:00:1a:0$id:0$n,speed=10000,duplex=full,romfile=")
	done
	printf '%s\n' "${args[@]}"
}

# start_vm ID NHOSTS CONSOLE: start host ID in the background with its
# control-line relay. Sets VM_PID[ID].
start_vm()
{
	local id=$1 dir=$RUN/host$1
	local -a args

	mapfile -t args < <(qemu_args "$@")
	printf '%q ' "${args[@]}" >"$dir/qemu.cmd"
	"${args[@]}" </dev/null >"$dir/qemu.log" 2>&1 &
	VM_PID[$id]=$!
	CLEANUP_PIDS+=($!)
	start_relay "$id"
}

start_relay()
{
	local dir=$RUN/host$1

	python3 "$LAB_DIR/lab-relay.py" relay "$dir/ctl.sock" "$dir/qmp-relay.sock" \
		>"$dir/relay.log" 2>&1 &
	CLEANUP_PIDS+=($!)
}

# Kill everything this run started; runs on any exit, Ctrl-C or timeout.
cleanup()
{
	local pid

	trap - EXIT INT TERM HUP
	for pid in "${CLEANUP_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${CLEANUP_PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
}

# wait_vm ID SECONDS: wait for host ID's QEMU to exit; 1 on timeout.
wait_vm()
{
	local pid=${VM_PID[$1]} deadline=$((SECONDS + $2))

	while kill -0 "$pid" 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.2
	done
	wait "$pid" 2>/dev/null || true
}

# Wait for host 1 (bounded by LAB_TIMEOUT: sets TIMED_OUT), then give
# host 2 a moment to power off after lab-peer --shutdown, then kill
# whatever is left.
wait_lab()
{
	local nhosts=$1

	if ! wait_vm 1 "$LAB_TIMEOUT"; then
		log "TIMEOUT: host 1 still running after ${LAB_TIMEOUT}s (LAB_TIMEOUT), killing the VMs"
		TIMED_OUT=1
	fi
	if [ "$nhosts" = 2 ] && [ -z "$TIMED_OUT" ] && ! wait_vm 2 20; then
		log "host 2 did not power off, killing it"
	fi
	kill "${VM_PID[@]}" 2>/dev/null || true
}

# vm_cpu: VM_CPU set to the host CPU time the lab's QEMUs have used so
# far, in ticks (USER_HZ): utime and stime of /proc/PID/stat, whose second
# field (the command, in parentheses) has no space here.  A QEMU that has
# exited (the stream runs behind the console) counts as last read.
declare -A VM_TICKS
vm_cpu()
{
	local pid f

	VM_CPU=0
	for pid in "${VM_PID[@]}"; do
		read -r -a f < "/proc/$pid/stat" 2> /dev/null &&
			VM_TICKS[$pid]=$((f[13] + f[14]))
		VM_CPU=$((VM_CPU + ${VM_TICKS[$pid]:-0}))
	done
}

# stream_console ID: copy host ID's serial log to stdout until QEMU exits,
# and note in $RUN/times when each test's result line came (seconds from
# the boot), the test, and the CPU time the guests had used by then
# (vm_cpu), for test_times.
stream_console()
{
	local line t0=$SECONDS

	tail -n +1 -F --pid="${VM_PID[$1]}" "$RUN/host$1/serial.log" 2>/dev/null |
	while IFS= read -r line; do
		printf '%s\n' "$line"
		line=${line%$'\r'}
		[[ "$line" =~ ^(not\ )?ok\ [0-9]+\ selftests:\ [^:]*:\ ([^ ]+) ]] || continue
		vm_cpu
		echo "$((SECONDS - t0)) ${BASH_REMATCH[2]} $VM_CPU" >> "$RUN/times"
	done &
	STREAM_PID=$!
	CLEANUP_PIDS+=($!)
}

# test_times: each test's seconds from the one before it (the first's
# include the boot), the slowest ten on one line, then the ten that cost
# the guests the most host CPU; all of them in $RUN/times.  A polling
# program takes whatever CPU its guest gets (many_send.sh cost 149 CPU s
# alone, 82 beside make check's other guests): the figure shows which
# tests compete for the cores the runs share, not what each needs.
test_times()
{
	local hz

	[ -s "$RUN/times" ] || return 0
	log "slowest tests (s): $(awk '{ print $1 - prev, $2; prev = $1 }' "$RUN/times" |
		sort -rn | head -n 10 | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }')"
	hz=$(getconf CLK_TCK)
	log "costliest tests (CPU s, of $(awk -v hz="$hz" 'END { printf "%d", $3 / hz }' "$RUN/times") by the last): $(awk -v hz="$hz" '{ printf "%d %s\n", ($3 - prev) / hz, $2; prev = $3 }' "$RUN/times" |
		sort -rn | head -n 10 | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }')"
}

# boot_lab NHOSTS JOB: boot the lab with JOB on host 1 (host 2 serves
# lab-peer), stream host 1's console, wait.
boot_lab()
{
	local nhosts=$1 job=$2

	prepare
	write_job 1 "$job"
	[ "$nhosts" = 2 ] && write_job 2 'exec lab-peer --serve'
	log "run $RUN: $nhosts host(s), $ACCEL, kernel $KVER"
	BOOT_START=$SECONDS
	start_vm 1 "$nhosts" file
	[ "$nhosts" = 2 ] && start_vm 2 "$nhosts" file
	stream_console 1
	wait_lab "$nhosts"
	wait "$STREAM_PID" 2>/dev/null || true
	local secs=$((SECONDS - BOOT_START))

	log "VMs ran for ${secs}s ($((secs * 100 / LAB_TIMEOUT)) % of LAB_TIMEOUT ${LAB_TIMEOUT}s)"
	# a run past two thirds of its bound fails on a machine half as slow
	[ $((secs * 3)) -le $((LAB_TIMEOUT * 2)) ] ||
		log "WARNING: over two thirds of LAB_TIMEOUT: shorten the run or raise its bound"
}

prepare()
{
	KVER=$(find_kver)
	[ -f "$SHIFT_TOP/build/kmod/$KVER/shift_ft.ko" ] ||
		log "no shift_ft built for $KVER (make module KVER=$KVER): tests that load it will skip"
	"$LAB_DIR/get-kselftest.sh" "$KSFT_OUT"
	build_initramfs
	probe_accel
	new_run
	[ -z "$INTERACTIVE" ] || touch "$RUN/interactive"
	alloc_ports
	trap cleanup EXIT
	trap 'log "interrupted"; exit 130' INT TERM HUP
}

# ------------------------------------------------------------- verdicts --

# check_token: the guest printed the token, i.e. its job ran to the end.
check_token()
{
	grep -q "LAB_SUCCESS_$NONCE" "$RUN/host1/serial.log" 2>/dev/null && return 0
	log "FAIL: no success token from host 1 (guest crashed, hung or stage 2 failed)"
	return 1
}

# check_dmesg NHOSTS: scan each guest's dmesg for kernel bugs.
check_dmesg()
{
	local id rc=0 file

	for id in $(seq "$1"); do
		file=$RUN/host$id/out/dmesg
		if [ ! -s "$file" ]; then
			log "FAIL: no dmesg from host $id (see $RUN/host$id/serial.log)"
			rc=1
		elif grep -Eq "$BUG_PATTERN" "$file"; then
			log "FAIL: host $id dmesg reports kernel problems ($file):"
			# each report whole, up to its trace's end: the trace
			# names the object and the path that held it; and the
			# four lines before it, where a report that matches only
			# by its "Call Trace" (an RCU stall's) has its headline
			awk -v pat="$BUG_PATTERN" '
				!on && $0 ~ pat {
					for (i = NR - 4; i < NR; i++)
						if (i in prev && i > last)
							print prev[i]
					on = 1; n = 0
				}
				on && n++ < 40 { print; last = NR }
				on && /---\[ end trace|<\/TASK>/ { on = 0 }
				{ prev[NR] = $0; delete prev[NR - 4] }
			' "$file" | head -120 >&2
			rc=1
		fi
	done
	return $rc
}

# check_tap FILE: print the summary line; 0 if there were results, all ok
# or skipped, and as many as the plans announced.
check_tap()
{
	local file=$1 pass fail skip planned

	[ -f "$file" ] || touch "$file"
	pass=$(grep -Ec '^ok ' "$file" || true)
	skip=$(grep -Ec '^ok .*# (SKIP|skip)' "$file" || true)
	fail=$(grep -Ec '^not ok ' "$file" || true)
	planned=$(sed -n 's/^1\.\.\([0-9]*\).*/\1/p' "$file" | awk '{ n += $1 } END { print n + 0 }')
	pass=$((pass - skip))
	echo "lab: $pass passed, $fail failed, $skip skipped"
	if [ $((pass + fail + skip)) -ne "$planned" ]; then
		log "FAIL: $planned tests planned, $((pass + fail + skip)) reported"
		return 1
	fi
	if [ "$planned" -eq 0 ]; then
		log "FAIL: no test ran"
		return 1
	fi
	[ "$fail" -eq 0 ]
}

# ----------------------------------------------------------- subcommands --

parse_nhosts()
{
	case "$1" in
	one|1) echo 1 ;;
	two|2) echo 2 ;;
	*) die "expected one or two, got '$1'" ;;
	esac
}

cmd_run()
{
	local nhosts dir rc=0 part=
	local -a dirs=()

	[ $# -ge 2 ] || usage
	nhosts=$(parse_nhosts "$1")
	shift
	if [ "$1" = --part ]; then
		[[ "${2:-}" =~ ^[1-9][0-9]*/[1-9][0-9]*$ ]] && [ "${2%/*}" -le "${2#*/}" ] ||
			die "--part K/N with 1 <= K <= N, got '${2:-}'"
		part="--part $2 "
		shift 2
	fi
	[ $# -ge 1 ] || usage
	if [ -z "$LAB_TIMEOUT_GIVEN" ]; then
		LAB_TIMEOUT=2400
		[ "$nhosts" = 1 ] || LAB_TIMEOUT=4200
	fi
	"$LAB_DIR/get-kselftest.sh" "$KSFT_OUT"
	for dir in "$@"; do
		[ -f "$dir/Makefile" ] || die "$dir: not a kselftest directory (no Makefile)"
		dir=$(realpath "$dir")
		# Build on the host (fast); the guest's make run_tests is then
		# a no-op build plus the runner.  OUTPUT as the guest's lib.mk
		# sets it: under make (make check), lib.mk leaves it empty and
		# would build into /.
		make -s -C "$dir" OUTPUT="$dir" KSFT_DIR="$KSFT_DIR" all || die "$dir: build failed"
		dirs+=("$dir")
	done
	boot_lab "$nhosts" "$(scenario_env)ksft-run $part${dirs[*]} 2>&1 | tee \"\$LAB_OUT/tap\""
	check_token || rc=1
	check_dmesg "$nhosts" || rc=1
	check_tap "$RUN/host1/out/tap" || rc=1
	test_times
	ln -sf host1/out/tap "$RUN/tap"
	log "results in $RUN"
	return $rc
}

# scenario_env: the "VAR=VALUE " words that carry the knobs set here
# (LU_LOG, TORTURE_PULLS, LAB_TESTS, BENCH_STEPS, SOAK_*, LIBSHIFTU, ...)
# into the guest, shell-quoted.
scenario_env()
{
	local v

	for v in LU_LOG TORTURE_PULLS TORTURE_SEND_CHUNK LAB_TESTS BENCH_STEPS LINKSTALL_PULLS LINKSTALL_HOLD \
		 LINKSTALL_LOAD RXERETRY_ROUNDS RXERETRY_MODES FT_FUZZ_MSGS FT_FUZZ_SEED FT_CYCLES FT_FLAPS SOAK_FAULTS SOAK_CONNS SOAK_PLAIN SOAK_KINDS MANY_ROUNDS STORE_DOWN_P MANY_GEN_P MANY_PROCS_N LIBSHIFTU LIBSHIFTU_TEST LAB_XTRACE; do
		[ -z "${!v:-}" ] || printf '%s=%q ' "$v" "${!v}"
	done
}

cmd_scenario()
{
	local name=$1 nhosts rc=0 script

	[ -n "$name" ] || usage
	script=$LAB_DIR/scenarios/$name.sh
	[ -f "$script" ] || die "no scenario $script"
	nhosts=$(parse_nhosts "${2:-two}")
	INTERACTIVE=1 boot_lab "$nhosts" "$(scenario_env)bash $script"
	check_token || rc=1
	check_dmesg "$nhosts" || rc=1
	rc=$(( rc | $(cat "$RUN/host1/out/rc" 2>/dev/null || echo 1) ))
	log "scenario $name: $([ $rc -eq 0 ] && echo passed || echo FAILED), results in $RUN"
	[ $rc -eq 0 ]
}

# An interactive shell on the console with job control and the terminal's
# size; in a two-host lab host 2 also serves lab-peer.
shell_job()
{
	local size

	size=$(stty size 2>/dev/null || echo "24 80")
	[ "$1" = 2 ] && echo 'lab-peer --serve >/tmp/lab-peer.log 2>&1 &'
	echo "stty -F /dev/ttyS0 rows ${size% *} cols ${size#* } sane"
	echo 'export PS1="\h:\w# "; setsid --wait --ctty bash -i </dev/ttyS0 >/dev/ttyS0 2>&1'
}

cmd_shell()
{
	local nhosts

	nhosts=$(parse_nhosts "${1:-two}")
	INTERACTIVE=1 prepare
	write_job 1 "$(shell_job 1)"
	if [ "$nhosts" = 2 ]; then
		write_job 2 "$(shell_job 2)"
		start_vm 2 2 socket
		log "host 2 console: LAB_RUN=$RUN $0 console 2 (Ctrl-] detaches)"
		log "  or: socat -,raw,echo=0 UNIX-CONNECT:$RUN/host2/console.sock"
	fi
	log "host 1 console here; Ctrl-A x quits QEMU; exit powers off"
	log "cables: LAB_RUN=$RUN $0 link 1|2 eth0|eth1|eth2 off|on"
	# Host 1 runs in the foreground so that it owns the terminal.
	mapfile -t args < <(qemu_args 1 "$nhosts" stdio)
	start_relay 1
	"${args[@]}" || true
}

# Directory of the run that link/console/monitor act on: LAB_RUN, or else
# the newest shell/scenario run (marked "interactive") whose host 1 QEMU is
# still alive. Plain `run`s are never picked: they may be someone else's.
current_run()
{
	local run

	if [ -n "$LAB_RUN" ]; then
		[ -d "$LAB_RUN" ] || die "no lab run at $LAB_RUN"
		echo "$LAB_RUN"
		return
	fi
	for run in $(ls -1d "$BUILD"/runs/[0-9]*/ 2>/dev/null | sort -r); do
		run=${run%/}
		[ -f "$run/interactive" ] && [ -S "$run/host1/qmp.sock" ] || continue
		log "using $run (set LAB_RUN to choose)"
		echo "$run"
		return
	done
	die "no interactive lab running (lab.sh shell or scenario); set LAB_RUN"
}

cmd_link()
{
	local id=${1#host} ifname=$2 state=$3

	[ -n "$state" ] || usage
	python3 "$LAB_DIR/lab-relay.py" qmp "$(current_run)/host$id/qmp.sock" set_link "$ifname" "$state" ||
		die "set_link $ifname $state on host $id failed (is the lab running?)"
}

cmd_console()
{
	exec socat -,raw,echo=0,escape=0x1d "UNIX-CONNECT:$(current_run)/host${1#host}/console.sock"
}

cmd_monitor()
{
	exec socat -,raw,echo=0,escape=0x1d "UNIX-CONNECT:$(current_run)/host${1#host}/hmp.sock"
}

usage()
{
	sed -n '/^# lab.sh:/,/^# in build/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
	exit 2
}

main()
{
	local cmd=$1

	[ $# -gt 0 ] && shift
	case "$cmd" in
	run)		cmd_run "$@" ;;
	scenario)	cmd_scenario "$@" ;;
	shell)		cmd_shell "$@" ;;
	link)		cmd_link "$@" ;;
	console)	cmd_console "$@" ;;
	monitor)	cmd_monitor "$@" ;;
	initramfs)	KVER=$(find_kver); build_initramfs; echo "$INITRAMFS" ;;
	*)		usage ;;
	esac
}

main "$@"
