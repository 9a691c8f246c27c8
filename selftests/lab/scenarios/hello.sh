#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# hello: show both hosts' Soft-RoCE devices (`lab.sh scenario hello`).
# Runs on host 1; host 2 is reached with lab-peer (absent in a one-host lab).

set -e

show()
{
	echo "== host$LAB_HOST_ID: rdma link"
	rdma link
	echo "== host$LAB_HOST_ID: ibv_devinfo"
	ibv_devinfo
}

show
if [ "$LAB_NHOSTS" -gt 1 ]; then
	lab-peer "$(declare -f show); show"
fi
