// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * cqsrq.c: the CQ and SRQ verbs (interpose_int.h).  A CQ is made with room
 * for a failover's completions and recorded for its twin; an extended CQ
 * the library can serve (cqex.h) too.  An SRQ is recorded with its table
 * (srq.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>

#include "cq.h"
#include "cqex.h"
#include "interpose.h"
#include "interpose_int.h"
#include "log.h"
#include "real.h"
#include "shadow.h"
#include "srq.h"
#include "util.h"

/*
 * A CQ of @cqe entries on @s is made with room for the failover
 * completions of SHIFTU_CQ_EXTRA / SHIFTU_CQ_PER_QP QPs (interpose.h); it
 * grows as more take room on it (shiftu_cq_hold()).  The CQ reports its
 * larger size, as verbs allow; never past the device's limit, which the
 * application may ask for (its QPs then have no room, and go unprotected).
 */
static int cq_size(const struct shiftu_ctx *s, int cqe)
{
	if (cqe > 0 && s) {
		if (!s->max_cqe || cqe <= s->max_cqe - SHIFTU_CQ_EXTRA)
			cqe += SHIFTU_CQ_EXTRA;
		else if (cqe < s->max_cqe)
			cqe = s->max_cqe;
	}
	return cqe;
}

/*
 * ibv_create_cq_ex() is an inline that calls this through the context.
 * A CQ the library can serve (cqex.h) is recorded as one from
 * ibv_create_cq is, and gets a twin; one it cannot is left as the
 * provider made it, and the QPs that use it are unprotected
 * (qp_attach()).
 */
struct ibv_cq_ex *shiftu_create_cq_ex(struct ibv_context *ctx,
					 struct ibv_cq_init_attr_ex *attr)
{
	struct shiftu_ctx *s = shiftu_ctx_find(ctx);
	bool serve = shiftu_cqx_servable(attr);
	struct ibv_cq_ex *cq;
	uint64_t flags;
	uint32_t cqe;

	if (!s || !s->create_cq_ex) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cqe = attr->cqe;
	flags = attr->wc_flags;
	if (serve && cqe <= INT32_MAX)
		attr->cqe = cq_size(s, cqe);
	/* a direct session's look reads the QP number (cqex.c) */
	if (serve)
		attr->wc_flags |= IBV_WC_EX_WITH_QP_NUM;
	cq = s->create_cq_ex(ctx, attr);
	if (!cq && attr->wc_flags != flags) {
		/* a provider without it: the CQ's sessions are all served */
		attr->wc_flags = flags;
		cq = s->create_cq_ex(ctx, attr);
	}
	attr->cqe = cqe;
	attr->wc_flags = flags;
	if (!cq)
		return NULL;
	if (!serve) {
		shiftu_info("cq on %s: extended, with wc_flags 0x%" PRIx64 " beyond a struct ibv_wc's: not served, its QPs unprotected",
			    s->dev_name, (uint64_t)attr->wc_flags);
		return cq;
	}
	if (shiftu_cqx_attach(s, cq)) {
		shiftu_warn("cq on %s: extended: out of memory: not served, its QPs unprotected",
			    s->dev_name);
		return cq;
	}
	shiftu_shadow_cq(ibv_cq_ex_to_cq(cq), (int)cqe);
	shiftu_dbg("cq on %s: extended, wc_flags 0x%" PRIx64 ": served", s->dev_name,
		   (uint64_t)attr->wc_flags);
	return cq;
}

SHIFTU_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe,
					   void *cq_context,
					   struct ibv_comp_channel *channel,
					   int comp_vector)
{
	struct ibv_cq *cq;

	if (!shiftu_real_verbs())
		return NULL;
	cq = shiftu_real.create_cq(ctx, cq_size(shiftu_ctx_find(ctx), cqe), cq_context,
				   channel, comp_vector);
	if (cq)
		shiftu_shadow_cq(cq, cqe);
	return cq;
}

/* The application's resize keeps the room its protected QPs hold. */
SHIFTU_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	if (!shiftu_real_verbs())
		return ENOSYS;
	return shiftu_cq_resize(cq, cqe);
}

/*
 * An SRQ is made as the application asks, and recorded with its table
 * (srq.h).
 */
SHIFTU_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
					     struct ibv_srq_init_attr *attr)
{
	struct shiftu_ctx *s;
	struct ibv_srq *srq;

	if (!shiftu_real_verbs())
		return NULL;
	s = shiftu_ctx_find(pd->context);
	srq = shiftu_real.create_srq(pd, attr);
	if (srq && s)
		shiftu_srq_attach(s, srq, attr);
	return srq;
}

/* A resize maps the SRQ's ring anew: its QP is left unprotected first. */
SHIFTU_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	if (!shiftu_real_verbs())
		return ENOSYS;
	if (mask & IBV_SRQ_MAX_WR)
		shiftu_srq_resize(srq);
	return shiftu_real.modify_srq(srq, attr, mask);
}

SHIFTU_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	int ret;

	if (!shiftu_real_verbs())
		return ENOSYS;
	ret = shiftu_real.destroy_srq(srq);
	/* its record, and its twin, once the verbs have let it go */
	if (!ret)
		shiftu_srq_detach(srq);
	return ret;
}

SHIFTU_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	if (!shiftu_real_verbs())
		return ENOSYS;
	shiftu_shadow_cq_gone(cq);
	shiftu_cqx_detach(cq);
	return shiftu_real.destroy_cq(cq);
}
