// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * interpose.c: libshiftu's contexts (interpose.h): a device opened, its
 * context's data verbs taken over, and given back when it is closed.  The
 * contexts' list is ctx.c's; the other control verbs are in the files
 * interpose_int.h lists.
 *
 * The library does nothing until the application opens a device: no
 * constructor, no thread, no file.  The first ibv_open_device() reads the
 * configuration, maps the health page and resolves the real verbs; every
 * opened context then gets the library's data verbs.  With SHIFTU_DISABLE=1
 * contexts are left exactly as the provider made them.
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "bell.h"
#include "config.h"
#include "health.h"
#include "interpose.h"
#include "interpose_int.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "real.h"
#include "shadow.h"
#include "util.h"

/*
 * Take over @ctx's data verbs.  Context: ibv_open_device(), before the
 * application has the context, so no other thread can be using its ops.
 */
static void ctx_attach(struct ibv_context *ctx)
{
	struct verbs_context *vctx = verbs_get_ctx_op(ctx, create_qp_ex);
	struct verbs_context *vcq = verbs_get_ctx_op(ctx, create_cq_ex);
	struct ibv_device_attr attr;
	struct shiftu_ctx *s;
	bool fresh = false;
	size_t i;

	shiftu_lock(&ctx_lock, SHIFTU_LOCK_CTX);
	for (s = shiftu_ctx_list; s && s->ctx; s = s->next)
		;
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s) {
			shiftu_unlock(&ctx_lock, SHIFTU_LOCK_CTX);
			shiftu_warn("context %s: out of memory: not managed",
				    shiftu_real.get_device_name(ctx->device));
			return;
		}
		s->next = shiftu_ctx_list;
		fresh = true;
	}
	snprintf(s->dev_name, sizeof(s->dev_name), "%s",
		 shiftu_real.get_device_name(ctx->device));
	s->node_guid = be64toh(shiftu_real.get_device_guid(ctx->device));
	s->max_cqe = shiftu_real.query_device(ctx, &attr) ? 0 : attr.max_cqe;
	s->post_send = ctx->ops.post_send;
	s->post_recv = ctx->ops.post_recv;
	s->poll_cq = ctx->ops.poll_cq;
	s->req_notify_cq = ctx->ops.req_notify_cq;
	s->post_srq_recv = ctx->ops.post_srq_recv;
	s->create_qp_ex = vctx ? vctx->create_qp_ex : NULL;
	s->create_cq_ex = vcq ? vcq->create_cq_ex : NULL;
	for (i = 0; i < SHIFTU_ARRAY_SIZE(s->rcache); i++)
		s->rcache[i] = &shiftu_vqp_none;
	/* the node is whole before a walker can match it */
	__atomic_store_n(&s->ctx, ctx, __ATOMIC_RELEASE);
	if (fresh)
		__atomic_store_n(&shiftu_ctx_list, s, __ATOMIC_RELEASE);
	shiftu_unlock(&ctx_lock, SHIFTU_LOCK_CTX);

	ctx->ops.post_send = shiftu_post_send;
	ctx->ops.post_recv = shiftu_post_recv;
	ctx->ops.poll_cq = shiftu_poll_cq;
	if (ctx->ops.req_notify_cq)
		ctx->ops.req_notify_cq = shiftu_req_notify_cq;
	if (ctx->ops.post_srq_recv)
		ctx->ops.post_srq_recv = shiftu_post_srq_recv;
	if (vctx)
		vctx->create_qp_ex = shiftu_create_qp_ex;
	if (vcq)
		vcq->create_cq_ex = shiftu_create_cq_ex;
	shiftu_info("context %s: interposed", s->dev_name);
	shiftu_shadow_ctx(s);
}

/* Give the provider its pointers back.  Context: ibv_close_device(). */
static void ctx_detach(struct ibv_context *ctx)
{
	struct verbs_context *vctx = verbs_get_ctx(ctx);
	struct shiftu_ctx *s;

	s = shiftu_ctx_find(ctx);
	if (s)
		shiftu_shadow_ctx_gone(s);
	shiftu_lock(&ctx_lock, SHIFTU_LOCK_CTX);
	if (s) {
		ctx->ops.post_send = s->post_send;
		ctx->ops.post_recv = s->post_recv;
		ctx->ops.poll_cq = s->poll_cq;
		ctx->ops.req_notify_cq = s->req_notify_cq;
		ctx->ops.post_srq_recv = s->post_srq_recv;
		if (vctx && s->create_qp_ex)
			vctx->create_qp_ex = s->create_qp_ex;
		if (vctx && s->create_cq_ex)
			vctx->create_cq_ex = s->create_cq_ex;
		retired.contexts++;
		__atomic_store_n(&s->ctx, NULL, __ATOMIC_RELAXED);
	}
	shiftu_unlock(&ctx_lock, SHIFTU_LOCK_CTX);
}

/* ---- the exported verbs -------------------------------------------------- */

SHIFTU_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
	const struct shiftu_config *cfg;
	struct ibv_context *ctx;

	if (!shiftu_real_verbs())
		return NULL;
	ctx = shiftu_real.open_device(dev);
	if (!ctx)
		return NULL;
	cfg = shiftu_config_start();
	if (cfg->disabled)
		return ctx;
	shiftu_health_open();
	ctx_attach(ctx);
	return ctx;
}

SHIFTU_EXPORT int ibv_close_device(struct ibv_context *ctx)
{
	if (!shiftu_real_verbs())
		return ENOSYS;
	ctx_detach(ctx);
	return shiftu_real.close_device(ctx);
}
