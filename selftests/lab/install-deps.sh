#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install everything `make check` needs on a Debian 12 root machine.
# Idempotent: when every package is already installed it only runs one
# dpkg-query and exits; apt-get update runs only if something is missing.
# INITRD=No keeps the kernel image install from running update-initramfs
# (the lab boots its own initramfs, see lab.sh).  Two kernels: Debian 12's
# own 6.1 and the 6.12 of its security suite (metapackages that follow the
# newest 6.12 build); make check builds for both and boots both.
# linux-source-6.12 and python3-yaml/-jsonschema: the kernel's YNL tools
# and schemas, for the netlink spec's tests (selftests/lab/get-ynl.sh).
# openssl and stunnel4: the store's TLS tunnel (selftests/host/store_tls.sh).
# libssl-dev: libcrypto's headers, for the records' signatures (userlib/recsign.c).

set -e

PACKAGES=(
	linux-image-amd64 linux-headers-amd64
	linux-image-6.12-amd64 linux-headers-6.12-amd64 build-essential
	qemu-system-x86 busybox-static kmod cpio iproute2
	libibverbs-dev ibverbs-providers ibverbs-utils librdmacm-dev
	rdmacm-utils perftest iputils-ping socat libnl-3-dev libnl-genl-3-dev
	dkms redis-server libhiredis-dev sparse linux-source-6.1 python3 jq
	xz-utils procps python3-pyverbs ucx-utils ethtool spin
	linux-source-6.12 python3-yaml python3-jsonschema
	openssl stunnel4 libssl-dev
)

# Print the packages that are not in the "install ok installed" state.
missing_packages()
{
	local pkg status

	for pkg in "${PACKAGES[@]}"; do
		status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null) || status=
		[ "$status" = "install ok installed" ] || echo "$pkg"
	done
}

main()
{
	local missing

	mapfile -t missing < <(missing_packages)
	if [ ${#missing[@]} -eq 0 ]; then
		echo "install-deps: all ${#PACKAGES[@]} packages present"
		return 0
	fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: missing ${missing[*]}; run as root" >&2
		return 1
	fi
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive INITRD=No
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
}

main "$@"
