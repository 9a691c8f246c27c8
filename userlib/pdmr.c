// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * pdmr.c: the PD and MR verbs (interpose_int.h): each object the
 * application makes on a managed context is recorded, for its twin on the
 * backup NIC (registry.c), and forgotten before the provider frees it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "interpose.h"
#include "real.h"
#include "shadow.h"
#include "util.h"

SHIFTU_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd;

	if (!shiftu_real_verbs())
		return NULL;
	pd = shiftu_real.alloc_pd(ctx);
	if (pd)
		shiftu_shadow_pd(pd);
	return pd;
}

SHIFTU_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (!shiftu_real_verbs())
		return ENOSYS;
	shiftu_shadow_pd_gone(pd);
	return shiftu_real.dealloc_pd(pd);
}

/* verbs.h makes these names macros around inlines; define the functions */
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

/*
 * The three registration entry points; libibverbs may implement one with
 * another, which the shadow record tolerates (one record per MR).
 */
SHIFTU_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr,
					size_t length, int access)
{
	struct ibv_mr *mr;

	if (!shiftu_real_verbs())
		return NULL;
	mr = shiftu_real.reg_mr(pd, addr, length, access);
	if (mr && shiftu_ctx_find(pd->context))
		shiftu_shadow_mr(mr, addr, length, (uintptr_t)addr, access);
	return mr;
}

SHIFTU_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr,
					     size_t length, uint64_t iova, int access)
{
	struct ibv_mr *mr;

	if (!shiftu_real_verbs())
		return NULL;
	mr = shiftu_real.reg_mr_iova(pd, addr, length, iova, access);
	if (mr && shiftu_ctx_find(pd->context))
		shiftu_shadow_mr(mr, addr, length, iova, access);
	return mr;
}

SHIFTU_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
					      size_t length, uint64_t iova,
					      unsigned int access)
{
	struct ibv_mr *mr;

	if (!shiftu_real_verbs())
		return NULL;
	mr = shiftu_real.reg_mr_iova2(pd, addr, length, iova, access);
	if (mr && shiftu_ctx_find(pd->context))
		shiftu_shadow_mr(mr, addr, length, iova, access);
	return mr;
}

/*
 * How NCCL registers GPU memory for GPUDirect RDMA: the twin is registered
 * from the same dma-buf, at the same offset, on the backup NIC.
 */
SHIFTU_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
					       size_t length, uint64_t iova, int fd,
					       int access)
{
	struct ibv_mr *mr;

	if (!shiftu_real_verbs())
		return NULL;
	if (!shiftu_real.reg_dmabuf_mr) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	mr = shiftu_real.reg_dmabuf_mr(pd, offset, length, iova, fd, access);
	if (mr && shiftu_ctx_find(pd->context))
		shiftu_shadow_dmabuf_mr(mr, offset, length, iova, fd, access);
	return mr;
}

/*
 * The twin follows: it goes before the call (the keys may change, and the
 * old twin must not outlive what it mirrored) and is made again after, from
 * what the MR is then.  Verbs rule: no work request uses @mr meanwhile.
 */
SHIFTU_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
			       void *addr, size_t length, int access)
{
	struct shiftu_mr *rec;
	int ret;

	if (!shiftu_real_verbs())
		return IBV_REREG_MR_ERR_INPUT;
	shiftu_shadow_mr_rereg(mr, &rec);
	ret = shiftu_real.rereg_mr(mr, flags, pd, addr, length, access);
	shiftu_shadow_mr_rereg_done(rec, ret, flags, addr, length, access);
	return ret;
}

SHIFTU_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	if (!shiftu_real_verbs())
		return ENOSYS;
	shiftu_shadow_mr_gone(mr);
	return shiftu_real.dereg_mr(mr);
}
