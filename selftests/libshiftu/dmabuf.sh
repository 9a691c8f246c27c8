#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a region registered from a dma-buf (ibv_reg_dmabuf_mr, how NCCL
# registers GPU memory for GPUDirect RDMA) gets a twin on the backup NIC
# from the same dma-buf and offset, even once the application has closed
# its fd, published while it lives and forgotten when it goes.  The dma-buf
# is plain memory from /dev/udmabuf; where the kernel has no udmabuf or its
# Soft-RoCE cannot register a dma-buf (Debian's 6.1 has neither; 6.12 has
# udmabuf, but rxe no dma-buf registration), the test says so and skips.
#
#     memfd ── udmabuf ── fd ──► ibv_reg_dmabuf_mr on rxe0; closed
#                                libshiftu's dup ──► twin on rxe1
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

ls_setup
[ -x "$LS_MRKINDS" ] || skip "mrkinds not built (make -C $LS_DIR)"
modprobe udmabuf 2> /dev/null || true
rc=0
ls_mr_kind dmabuf || rc=$?
[ "$rc" = 0 ] || skip "$LS_WHY"
