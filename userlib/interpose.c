// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * interpose.c: libshiftu's control verbs (interpose.h).
 *
 * The library does nothing until the application opens a device: no
 * constructor, no thread, no file.  The first ibv_open_device() reads the
 * configuration, maps the health page and resolves the real verbs; every
 * opened context then gets the library's data verbs.  With SHIFTU_DISABLE=1
 * contexts are left exactly as the provider made them.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bell.h"
#include "config.h"
#include "cq.h"
#include "cqex.h"
#include "event.h"
#include "failover.h"
#include "health.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "posters.h"
#include "provq.h"
#include "quiesce.h"
#include "rename.h"
#include "serial.h"
#include "shadow.h"
#include "srq.h"
#include "util.h"
#include "wrapi.h"

/*
 * Contexts, newest first.  Nodes are never freed: a closed context's node
 * is kept (ctx NULL) and reused, so that a lock-free walker (poll_cq) never
 * reads freed memory.  Pushes publish with release; walkers load acquire.
 */
struct shiftu_ctx *shiftu_ctx_list;
uint64_t shiftu_wc_look = SHIFTU_WC_LOOK_ERRORS;
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
SHIFTU_FORK_HOOK(ctx, .rank = SHIFTU_RANK_CTX, .name = "ctx_lock", .lock = &ctx_lock);

/*
 * Every managed QP, for the exit statistics; under vqp_lock.  A node that
 * was registered is never freed: a thread's anchor (datapath.c) or a
 * context's receive cache may still point at it after its QP is gone (a
 * poller that loaded it before qp_detach() cleared the slot, or
 * shiftu_count_recv_slow() storing what it found as the QP went), and
 * reads its app_qp (the cache: app_qp->qp_num) to see that it is not the
 * QP looked for.  A QP that goes leaves its node on vqp_spare, for the
 * next QP, with app_qp at qp_gone (before the provider frees the QP, whose
 * address a new QP may get), which stays until the next QP's replaces it.
 */
struct vqp_node {
	struct shiftu_vqp vq;
	struct vqp_node *prev, *next;
};
static struct vqp_node *vqp_list, *vqp_spare;
static pthread_mutex_t vqp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_qp qp_gone = { .qp_num = UINT32_MAX };	/* QP numbers have 24 bits */

/* A zeroed node: a spare one, or a new one. */
static struct vqp_node *vqp_node_get(void)
{
	struct vqp_node *n;

	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	n = vqp_spare;
	if (n)
		vqp_spare = n->next;
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (n)
			n->vq.rc_qpn = UINT32_MAX;
		return n;
	}
	/* all but app_qp, the first word, which a reader may compare */
	memset(&n->vq.reg.send_state, 0,
	       sizeof(*n) - offsetof(struct vqp_node, vq.reg.send_state));
	n->vq.rc_qpn = UINT32_MAX;
	return n;
}

/* @n's QP is gone, or was never managed: the node waits for the next QP. */
static void vqp_node_put(struct vqp_node *n)
{
	__atomic_store_n(&n->vq.reg.app_qp, &qp_gone, __ATOMIC_RELAXED);
	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	__atomic_store_n(&n->vq.rc_qpn, UINT32_MAX, __ATOMIC_RELAXED);
	n->next = vqp_spare;
	vqp_spare = n;
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
}

/*
 * @vq, of QP number @qp_num, leaves its context's receive cache if it is
 * there.  Context: vqp_lock held (every writer of the cache holds it).
 */
static void rcache_drop(struct shiftu_vqp *vq, uint32_t qp_num)
{
	struct shiftu_vqp **slot = &vq->sctx->rcache[qp_num & 63];

	if (__atomic_load_n(slot, __ATOMIC_RELAXED) == vq)
		__atomic_store_n(slot, &shiftu_vqp_none, __ATOMIC_RELAXED);
}

/* The counts of QPs and contexts already gone; under vqp_lock / ctx_lock. */
static struct {
	uint64_t contexts, qps;
	uint64_t post_sends, post_recvs, wr_starts, wr_completes;
	uint64_t poster_changes;
} retired;

struct shiftu_ctx *shiftu_ctx_find(const struct ibv_context *ctx)
{
	/* pairs with the release in ctx_attach() */
	struct shiftu_ctx *s = __atomic_load_n(&shiftu_ctx_list, __ATOMIC_ACQUIRE);

	while (s && s->ctx != ctx)
		s = s->next;
	return s;
}

static struct ibv_qp *create_qp_ex(struct ibv_context *ctx,
				   struct ibv_qp_init_attr_ex *attr);
static struct ibv_cq_ex *create_cq_ex(struct ibv_context *ctx,
				      struct ibv_cq_init_attr_ex *attr);

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
		vctx->create_qp_ex = create_qp_ex;
	if (vcq)
		vcq->create_cq_ex = create_cq_ex;
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

/*
 * Manage a QP the provider just created.  Context: the create verb, before
 * the application has the QP.  A QP the library cannot manage (no memory)
 * still works: the data verbs pass it through.
 */
static int ring_alloc(struct shiftu_ring *r, uint32_t entries, uint32_t stride)
{
	uint32_t slots = 1;

	while (slots < entries)
		slots <<= 1;
	r->stride = (stride + 7) & ~7U;
	r->slots = calloc(slots, r->stride);
	if (!r->slots)
		return -ENOMEM;
	r->mask = slots - 1;
	return 0;
}

/* The send and receive rings of @vq, sized for every entry the provider
 * granted. */
static int ring_init(struct shiftu_vqp *vq)
{
	const struct ibv_qp_cap *cap = &vq->init_attr.cap;

	if (ring_alloc(&vq->sq, cap->max_send_wr, sizeof(struct shiftu_swqe) +
		       shiftu_swqe_sges(cap->max_send_sge) * sizeof(struct ibv_sge) +
		       cap->max_inline_data))
		return -ENOMEM;
	if (ring_alloc(&vq->rq, cap->max_recv_wr, sizeof(struct shiftu_rwqe) +
		       cap->max_recv_sge * sizeof(struct ibv_sge))) {
		free(vq->sq.slots);
		vq->sq.slots = NULL;
		return -ENOMEM;
	}
	return 0;
}

/*
 * A failover posts a marker behind the outstanding work on each queue
 * (drain.c): an RC QP gets one entry more on each than the application
 * asks for (on its send queue only when its receives come from an SRQ,
 * which has its own entry: srq.c).  What the application reads back is
 * what it asked for.  A provider that refuses the larger QP (a request at
 * the device's max_qp_wr) is asked again for what the application asked:
 * the QP is then made as without the library, unprotected (qp_attach()).
 */
static void caps_ask(struct ibv_qp_init_attr *attr, bool *grown)
{
	*grown = attr->qp_type == IBV_QPT_RC;
	if (*grown) {
		attr->cap.max_send_wr++;
		attr->cap.max_recv_wr += !attr->srq;
	}
}

static void caps_tell(struct ibv_qp_init_attr *attr, bool grown)
{
	if (grown) {
		attr->cap.max_send_wr--;
		attr->cap.max_recv_wr -= !attr->srq;
	}
}

/*
 * @send_ops: the extended send API's operations the QP was created with
 * (send_ops_flags), or 0 for a QP posted with ibv_post_send only.
 */
static void qp_attach(struct ibv_qp *qp, uint64_t send_ops,
		      const struct ibv_qp_init_attr *attr, bool grown)
{
	struct shiftu_ctx *s = shiftu_ctx_find(qp->context);
	struct ibv_qp_ex *qpx = send_ops ? shiftu_real.qp_to_qp_ex(qp) : NULL;
	const char *why = NULL, *srq_why = NULL;
	struct vqp_node *n;
	struct shiftu_vqp *vq;

	if (!s)
		return;
	n = vqp_node_get();
	if (!n) {
		shiftu_warn("qp %u on %s: out of memory: not managed",
			    qp->qp_num, s->dev_name);
		return;
	}
	vq = &n->vq;
	vq->init_attr = *attr;
	pthread_mutex_init(&vq->lock, NULL);
	pthread_mutex_init(&vq->fo_lock, NULL);
	vq->state = SHIFTU_SEND_DEFAULT;
	/* no thread posts yet: the first one takes each queue (posters.h) */
	vq->poster = vq->poster_r = SHIFTU_POSTER_NONE;
	/* 0, but where a test build says (serial.h) */
	vq->sent2 = vq->consumed = vq->rq.head = shiftu_count_start();
	vq->reg.app_qp = qp;
	/*
	 * A QP on an SRQ joins it whatever becomes of it: one the library
	 * does not protect consumes from the SRQ all the same, which keeps
	 * the SRQ's receives where they are (srq.h).
	 */
	if (attr->srq)
		srq_why = shiftu_srq_qp_attach(vq, attr->srq);
	/*
	 * RC only, with replayable operations, and on an SRQ only when the
	 * SRQ's receives can move (srq.h): others are not recorded.
	 */
	if (attr->qp_type != IBV_QPT_RC)
		why = "not an RC QP";
	else if (!grown)
		why = "its provider refused the entry more a failover's marker takes (a queue at the device's max_qp_wr)";
	else if (send_ops && (!qpx || !shiftu_wr_ops_covered(send_ops)))
		why = "its extended send operations are not all replayable";
	else if (!shiftu_cq_find(attr->send_cq) || !shiftu_cq_find(attr->recv_cq))
		why = "a CQ of its is not served by the library";
	else if (srq_why)
		why = srq_why;
	else if (ring_init(vq))
		why = "out of memory";
	else if (shiftu_cq_hold(attr->send_cq, attr->recv_cq)) {
		why = "a CQ of its has no room left for a failover's completions (the device's max_cqe)";
		free(vq->sq.slots);
		free(vq->rq.slots);
		vq->sq.slots = vq->rq.slots = NULL;
	}
	vq->cq_room = !why;
	vq->rings = why ? SHIFTU_RINGS_NONE : SHIFTU_RINGS_COPY;
	vq->rc_qpn = qp->qp_num | (vq->srq ? SHIFTU_RC_SRQ : 0);
	if (vq->rings && !shiftu_config()->record_copy && !shiftu_provq_find(vq))
		vq->rings = SHIFTU_RINGS_PROVIDER;
	vq->copying = vq->copying_r = vq->rings != SHIFTU_RINGS_PROVIDER;
	vq->reg.send_state = SHIFTU_SEND_DEFAULT;
	vq->reg.recv_state = SHIFTU_RECV_DEFAULT;
	vq->sctx = s;
	vq->post_send = s->post_send;
	vq->post_recv = s->post_recv;
	/* its receives are its SRQ's table's (srq.c) */
	if (vq->rings && attr->srq)
		__atomic_store_n(&vq->app_srq, attr->srq, __ATOMIC_RELAXED);
	if (shiftu_qp_register(&vq->reg)) {
		shiftu_warn("qp %u on %s: cannot register: not managed",
			    qp->qp_num, s->dev_name);
		if (vq->cq_room)
			shiftu_cq_release(attr->send_cq, attr->recv_cq);
		free(vq->sq.slots);
		free(vq->rq.slots);
		shiftu_srq_qp_detach(vq);
		vqp_node_put(n);
		return;
	}
	/* registered first: the library's builders find their entry */
	if (qpx && vq->rings && shiftu_wr_attach(vq, qpx)) {
		why = "out of memory";
		vq->rings = 0;
		vq->copying = vq->copying_r = 1;
	}
	/*
	 * Before the QP is known, so before it can take a receive: its
	 * pollers, which read this after the provider's poll gave them the
	 * completion, count it.
	 */
	if (((vq->rings && attr->send_cq == attr->recv_cq) || vq->srq) &&
	    __atomic_exchange_n(&shiftu_wc_look, SHIFTU_WC_LOOK_RECVS, __ATOMIC_RELAXED) !=
	    SHIFTU_WC_LOOK_RECVS)
		shiftu_dbg("qp %u on %s: %s: receive completions are counted as they are polled",
			   qp->qp_num, s->dev_name,
			   vq->app_srq ? "its receives come from an SRQ" : "one CQ for both queues");
	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	n->next = vqp_list;
	if (vqp_list)
		vqp_list->prev = n;
	vqp_list = n;
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
	shiftu_dbg("qp %u on %s: managed%s", qp->qp_num, s->dev_name,
		   vq->wb ? " (extended send API)" : "");
	if (vq->rings) {
		/* as recorded: a QP on an SRQ has the SRQ's receive caps */
		struct ibv_qp_init_attr a = vq->init_attr;

		shiftu_shadow_qp(vq, &a);
	} else {
		shiftu_info("qp %u on %s: %s: unprotected", qp->qp_num, s->dev_name, why);
	}
}

static struct ibv_qp *create_qp_ex(struct ibv_context *ctx,
				   struct ibv_qp_init_attr_ex *attr)
{
	struct shiftu_ctx *s = shiftu_ctx_find(ctx);
	struct ibv_qp_init_attr a = {
		.send_cq = attr->send_cq, .recv_cq = attr->recv_cq,
		.srq = attr->srq, .cap = attr->cap,
		.qp_type = attr->qp_type, .sq_sig_all = attr->sq_sig_all,
	};
	struct ibv_qp *qp;
	bool grown;

	if (!s || !s->create_qp_ex) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	caps_ask(&a, &grown);
	attr->cap = a.cap;
	qp = s->create_qp_ex(ctx, attr);
	if (!qp && grown) {
		caps_tell(&a, grown);
		grown = false;
		attr->cap = a.cap;
		qp = s->create_qp_ex(ctx, attr);
	}
	a.cap = attr->cap;
	if (qp)
		qp_attach(qp, attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS ?
				  attr->send_ops_flags : 0, &a, grown);
	caps_tell(&a, grown);
	attr->cap = a.cap;
	return qp;
}

/* Context: vqp_lock held. */
static struct shiftu_vqp *vqp_by_num_locked(struct shiftu_ctx *s, uint32_t qp_num)
{
	struct vqp_node *n;

	for (n = vqp_list; n; n = n->next)
		if (n->vq.sctx == s && n->vq.reg.app_qp->qp_num == qp_num)
			return &n->vq;
	return NULL;
}

struct shiftu_vqp *shiftu_vqp_by_num(struct shiftu_ctx *s, uint32_t qp_num)
{
	struct shiftu_vqp *vq;

	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	vq = vqp_by_num_locked(s, qp_num);
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
	return vq;
}

struct shiftu_vqp *shiftu_vqp_by_twin(struct shiftu_ctx *s, uint32_t qp_num)
{
	struct shiftu_vqp *vq = NULL;
	struct vqp_node *n;

	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	for (n = vqp_list; n; n = n->next)
		if (n->vq.sctx == s && n->vq.bak_qp && n->vq.bak_qp->qp_num == qp_num) {
			vq = &n->vq;
			break;
		}
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
	return vq;
}

struct shiftu_vqp *shiftu_count_recv_slow(struct shiftu_ctx *s, uint32_t qp_num)
{
	struct shiftu_vqp *vq;

	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	vq = vqp_by_num_locked(s, qp_num);
	/* a QP on an SRQ under its other key: its receives still need the
	 * poll's look (struct shiftu_vqp's @rc_qpn) */
	if (vq && !__atomic_load_n(&vq->recv_owed, __ATOMIC_RELAXED))
		__atomic_store_n(&s->rcache[qp_num & 63], vq, __ATOMIC_RELAXED);
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
	return vq;
}

void shiftu_recv_owe(struct shiftu_vqp *vq, uint64_t owed)
{
	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	__atomic_fetch_add(&vq->recv_owed, owed, __ATOMIC_RELAXED);
	__atomic_fetch_add(&vq->consumed, owed, __ATOMIC_RELAXED);
	rcache_drop(vq, vq->reg.app_qp->qp_num);
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
}

void shiftu_health_sweep(void)
{
	/* pairs with the release in ctx_attach(); nodes are never freed */
	struct shiftu_ctx *s = __atomic_load_n(&shiftu_ctx_list, __ATOMIC_ACQUIRE);

	for (; s; s = s->next)
		if (__atomic_load_n(&s->ctx, __ATOMIC_ACQUIRE))
			shiftu_ctx_health(s);
}

/*
 * The QPs for which @match(@vq, @arg) holds, collected under the list's
 * lock and each pinned: the caller acts on them (a failover takes locks
 * this list's lock must not hold) and unpins each when done with it; a QP
 * destroyed meanwhile keeps its node (its locks, its number) until then.
 * Returns the array (the caller frees it), *@k its length; NULL with *@k 0
 * when there is none, or no memory for it (*@oom then set).
 */
static struct shiftu_vqp **vqps_pinned(bool (*match)(const struct shiftu_vqp *, const void *),
				       const void *arg, size_t *k, bool *oom)
{
	struct shiftu_vqp **v;
	struct vqp_node *n;
	size_t cap = 0;

	*k = 0;
	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	for (n = vqp_list; n; n = n->next)
		cap++;
	v = cap ? malloc(cap * sizeof(*v)) : NULL;
	*oom = cap && !v;
	for (n = vqp_list; v && n; n = n->next)
		if (match(&n->vq, arg)) {
			__atomic_fetch_add(&n->vq.pins, 1, __ATOMIC_RELAXED);
			v[(*k)++] = &n->vq;
		}
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
	return v;
}

static void vqp_unpin(struct shiftu_vqp *vq)
{
	__atomic_fetch_sub(&vq->pins, 1, __ATOMIC_RELEASE);
}

static bool vqp_of_ctx(const struct shiftu_vqp *vq, const void *s)
{
	return vq->sctx == s && vq->rings;
}

void shiftu_ctx_health(struct shiftu_ctx *s)
{
	struct shiftu_vqp **v;
	size_t i, k;
	bool oom;

	v = vqps_pinned(vqp_of_ctx, s, &k, &oom);
	for (i = 0; i < k; i++) {
		shiftu_vqp_health(v[i]);
		vqp_unpin(v[i]);
	}
	free(v);
}

/* @vq's move waits for a polling session of @cq (cqex.c). */
static bool vqp_polls_held(const struct shiftu_vqp *vq, const void *cq)
{
	return __atomic_load_n(&vq->poll_hold, __ATOMIC_RELAXED) &&
	       ((vq->scq && vq->scq->app == cq) || (vq->rcq && vq->rcq->app == cq));
}

bool shiftu_vqp_polls_done(const struct ibv_cq *cq)
{
	struct shiftu_vqp **v, *vq;
	const char *why;
	size_t i, k;
	uint8_t hold;
	bool oom;

	v = vqps_pinned(vqp_polls_held, cq, &k, &oom);
	if (oom)
		return false;
	for (i = 0; i < k; i++) {
		vq = v[i];
		/*
		 * The hold first: a move that is left to a session again
		 * takes a hold of its own before this one is given back.
		 */
		hold = __atomic_exchange_n(&vq->poll_hold, 0, __ATOMIC_ACQ_REL);
		why = __atomic_exchange_n(&vq->move_deferred, NULL, __ATOMIC_ACQ_REL);
		if (why)
			shiftu_failover(vq, why);
		if (hold)
			shiftu_cq_slow(vq, false);
		vqp_unpin(vq);
	}
	free(v);
	return true;
}

static void qp_detach(struct ibv_qp *qp)
{
	struct shiftu_vqp *vq = (struct shiftu_vqp *)shiftu_qp_lookup(qp);
	struct vqp_node *n;

	if (!vq)
		return;
	shiftu_qp_unregister(&vq->reg);
	shiftu_failover_qp_gone(vq);
	shiftu_shadow_qp_gone(vq);
	shiftu_srq_qp_detach(vq);
	if (vq->cq_room)
		shiftu_cq_release(vq->init_attr.send_cq, vq->init_attr.recv_cq);
	n = (struct vqp_node *)vq;
	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	__atomic_store_n(&vq->rc_qpn, UINT32_MAX, __ATOMIC_RELAXED);
	rcache_drop(vq, qp->qp_num);
	if (n->prev)
		n->prev->next = n->next;
	else
		vqp_list = n->next;
	if (n->next)
		n->next->prev = n->prev;
	retired.qps++;
	retired.post_sends += vq->sq.head - vq->wr_posts;
	retired.post_recvs += vq->rq.head - shiftu_count_start();
	retired.wr_starts += vq->wr_starts;
	retired.wr_completes += vq->wr_completes;
	retired.poster_changes += vq->poster_changes;
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
	/*
	 * A sweep that collected it before it left the list, or a backer
	 * that has it (it is dead: neither moves anything).  The sweep may
	 * be moving the QPs it collected before this one, the backer going
	 * back with one handed earlier: a QP destroyed as its port fails,
	 * or as it goes back, can wait for their moves.
	 */
	while (__atomic_load_n(&vq->pins, __ATOMIC_ACQUIRE))
		usleep(1000);
	pthread_mutex_destroy(&vq->lock);
	pthread_mutex_destroy(&vq->fo_lock);
	shiftu_wr_detach(vq);
	free(vq->sq.slots);
	free(vq->rq.slots);
	vqp_node_put(n);
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

SHIFTU_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
					   struct ibv_qp_init_attr *attr)
{
	struct ibv_qp *qp;
	bool grown;

	if (!shiftu_real_verbs())
		return NULL;
	caps_ask(attr, &grown);
	qp = shiftu_real.create_qp(pd, attr);
	if (!qp && grown) {
		caps_tell(attr, grown);
		grown = false;
		qp = shiftu_real.create_qp(pd, attr);
	}
	if (qp)
		qp_attach(qp, 0, attr, grown);
	caps_tell(attr, grown);
	return qp;
}

SHIFTU_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
				int mask)
{
	bool stop = (mask & IBV_QP_STATE) &&
		    (attr->qp_state == IBV_QPS_ERR || attr->qp_state == IBV_QPS_RESET);
	struct shiftu_vqp *vq;
	int ret;

	if (!shiftu_real_verbs())
		return ENOSYS;
	vq = (struct shiftu_vqp *)shiftu_qp_lookup(qp);
	/*
	 * The application stops its QP (a teardown, rdma_disconnect()'s
	 * move to ERR, a reset to use it again): the flushes that follow
	 * are its own.  Marked before the provider's modify, so that a
	 * poller that takes them at once never fails the QP over.
	 */
	if (vq && stop)
		__atomic_store_n(&vq->app_stop, 1, __ATOMIC_SEQ_CST);
	ret = shiftu_real.modify_qp(qp, attr, mask);
	if (ret) {
		if (vq && stop && vq->state != SHIFTU_SEND_DEAD)
			__atomic_store_n(&vq->app_stop, 0, __ATOMIC_RELAXED);
		return ret;
	}
	if (!vq)
		return 0;
	if (stop && vq->rings)
		shiftu_failover_app_stop(vq, attr->qp_state);
	/*
	 * Remember where the QP goes, and make the next post re-read the
	 * table for it (verbs rule: no post runs concurrently with this).
	 */
	if (mask & IBV_QP_PORT)
		vq->port_num = attr->port_num;
	if ((mask & IBV_QP_AV) && attr->ah_attr.is_global) {
		memcpy(vq->dgid, attr->ah_attr.grh.dgid.raw, sizeof(vq->dgid));
		vq->has_dgid = 1;
	}
	if (mask & (IBV_QP_PORT | IBV_QP_AV)) {
		__atomic_store_n(&vq->health_seen, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&vq->health_seen_r, 0, __ATOMIC_RELAXED);
	}
	if (vq->rings)
		shiftu_shadow_qp_modified(vq, attr, mask);
	return 0;
}

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
static struct ibv_cq_ex *create_cq_ex(struct ibv_context *ctx,
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

SHIFTU_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	if (!shiftu_real_verbs())
		return ENOSYS;
	qp_detach(qp);
	return shiftu_real.destroy_qp(qp);
}

/*
 * fork(2): the QPs are the parent's.  None is protected in the child: a
 * health sweep or a poll of the child's own contexts then never moves one
 * (moving it would move the parent's: the uverbs files are shared).  A QP
 * the library does not protect was not locked before the fork (registry.c):
 * its locks, which another thread of the parent may have held, are made
 * again, as are the others, free by now.  Context: fork.c, the child's
 * only thread.
 */
static bool forget_parent(void)
{
	struct shiftu_ctx *s;
	struct vqp_node *n;
	bool had = false;

	/*
	 * The exit line counts what the child did: what the parent's
	 * contexts and QPs count now is taken off (modulo 2^64: the sums of
	 * shiftu_exit_stats() start at zero here, whatever the child closes).
	 */
	retired.contexts = 0;
	for (s = shiftu_ctx_list; s; s = s->next)
		if (s->ctx) {
			retired.contexts--;
			had = true;
		}
	retired.qps = retired.post_sends = retired.post_recvs = 0;
	retired.wr_starts = retired.wr_completes = 0;
	retired.poster_changes = 0;
	for (n = vqp_list; n; n = n->next) {
		n->vq.rings = SHIFTU_RINGS_NONE;
		pthread_mutex_init(&n->vq.lock, NULL);
		pthread_mutex_init(&n->vq.fo_lock, NULL);
		n->vq.pins = 0;	/* the parent's sweeps and backers */
		retired.qps--;
		retired.post_sends -= n->vq.sq.head - n->vq.wr_posts;
		retired.post_recvs -= n->vq.rq.head;
		retired.wr_starts -= n->vq.wr_starts;
		retired.wr_completes -= n->vq.wr_completes;
		retired.poster_changes -= n->vq.poster_changes;
		had = true;
	}
	return had;
}

/*
 * The child's: the parent's contexts and QPs are unprotected here, and
 * its counts are not the child's.
 */
static void interpose_fork_child(void)
{
	if (forget_parent())
		shiftu_info("forked from %d: its devices and QPs stay its own, unprotected here; a device this process opens is protected",
			    (int)getppid());
}
SHIFTU_FORK_HOOK(vqp, .rank = SHIFTU_RANK_VQP, .name = "vqp_lock", .lock = &vqp_lock,
		 .child = interpose_fork_child);

/*
 * One line of what went through the library, for the operator and the
 * tests, at info level; only when the application opened a device.
 * post_send and post_recv count work requests (the data path counts them,
 * not its calls), poll_wcs the completions poll_cq took on its common path,
 * the others calls.  Each thread counts its polls and their completions in
 * its own window words (quiesce.h): one count every polling thread wrote
 * would be a shared line on the data path.
 */
static void __attribute__((destructor)) shiftu_exit_stats(void)
{
	uint64_t contexts, qps, ps, pr, ws, wc, pc, polls, wcs;
	struct shiftu_ctx *s;
	struct vqp_node *n;

	shiftu_lock(&ctx_lock, SHIFTU_LOCK_CTX);
	contexts = retired.contexts;
	for (s = shiftu_ctx_list; s; s = s->next)
		contexts += s->ctx != NULL;
	shiftu_unlock(&ctx_lock, SHIFTU_LOCK_CTX);
	if (!contexts)
		return;
	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	qps = retired.qps;
	ps = retired.post_sends;
	pr = retired.post_recvs;
	ws = retired.wr_starts;
	wc = retired.wr_completes;
	pc = retired.poster_changes;
	for (n = vqp_list; n; n = n->next) {
		qps++;
		ps += n->vq.sq.head - n->vq.wr_posts;
		pr += n->vq.rq.head - shiftu_count_start();
		ws += n->vq.wr_starts;
		wc += n->vq.wr_completes;
		pc += __atomic_load_n(&n->vq.poster_changes, __ATOMIC_RELAXED);
	}
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
	shiftu_window_stats(&polls, &wcs);
	shiftu_info("exit: contexts=%" PRIu64 " qps=%" PRIu64 " post_send=%" PRIu64
		    " post_recv=%" PRIu64 " poll_cq=%" PRIu64 " poll_wcs=%" PRIu64 " wr_start=%" PRIu64
		    " wr_complete=%" PRIu64 " failovers=%" PRIu64 " failbacks=%" PRIu64
		    " replayed=%" PRIu64 " twin_wcs=%" PRIu64 " poster_changes=%" PRIu64
		    " renamed=%" PRIu64,
		    contexts, qps, ps, pr,
		    polls, wcs, ws, wc,
		    __atomic_load_n(&shiftu_stat_lines[SHIFTU_STAT_FAILOVERS].v, __ATOMIC_RELAXED),
		    __atomic_load_n(&shiftu_stat_lines[SHIFTU_STAT_FAILBACKS].v, __ATOMIC_RELAXED),
		    __atomic_load_n(&shiftu_stat_lines[SHIFTU_STAT_REPLAYED_WRS].v, __ATOMIC_RELAXED),
		    __atomic_load_n(&shiftu_twin_wcs, __ATOMIC_RELAXED), pc, shiftu_wrid_renamed());
}
