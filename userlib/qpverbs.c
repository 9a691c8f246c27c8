// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * qpverbs.c: the QP verbs (interpose_int.h).  A QP the provider creates is
 * managed before the application has it: its rings, its registry entry,
 * its SRQ's table, its twin asked for; a QP the library cannot protect
 * still passes through its data verbs.  Each queue of an RC QP gets one
 * entry more than asked for, for a failover's marker.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "failover.h"
#include "interpose.h"
#include "interpose_int.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "posters.h"
#include "provq.h"
#include "real.h"
#include "serial.h"
#include "shadow.h"
#include "srq.h"
#include "util.h"
#include "wrapi.h"

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

/* @vq, a node's, starts as @qp's: no thread posts, nothing counted. */
static void qp_start(struct shiftu_vqp *vq, struct ibv_qp *qp,
		     const struct ibv_qp_init_attr *attr)
{
	vq->init_attr = *attr;
	pthread_mutex_init(&vq->lock, NULL);
	pthread_mutex_init(&vq->fo_lock, NULL);
	vq->state = SHIFTU_SEND_DEFAULT;
	/* no thread posts yet: the first one takes each queue (posters.h) */
	vq->poster = vq->poster_r = SHIFTU_POSTER_NONE;
	/* 0, but where a test build says (serial.h) */
	vq->sent2 = vq->consumed = vq->rq.head = shiftu_count_start();
	vq->reg.app_qp = qp;
}

/*
 * Why @vq cannot be protected, or NULL: it then has its rings and its
 * room on its CQs.  @srq_why: its SRQ's reason, if it is on one.
 */
static const char *qp_why(struct shiftu_vqp *vq, const struct ibv_qp_init_attr *attr,
			  bool grown, uint64_t send_ops, struct ibv_qp_ex *qpx,
			  const char *srq_why)
{
	const char *why = NULL;

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
	return why;
}

/*
 * How @vq keeps what a failover moves (SHIFTU_RINGS_*: none when @why
 * says it is not protected), its states and the provider's data verbs.
 */
static void qp_rings(struct shiftu_vqp *vq, struct ibv_qp *qp, struct shiftu_ctx *s,
		     const struct ibv_qp_init_attr *attr, const char *why)
{
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
}

/* @n's QP, registered, joins the list (and, as needed, the polls' look). */
static void qp_join(struct vqp_node *n, struct ibv_qp *qp, struct shiftu_ctx *s,
		    const struct ibv_qp_init_attr *attr)
{
	struct shiftu_vqp *vq = &n->vq;

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
}

/*
 * Manage a QP the provider just created.  Context: the create verb, before
 * the application has the QP.  A QP the library cannot manage (no memory)
 * still works: the data verbs pass it through.
 *
 * @send_ops: the extended send API's operations the QP was created with
 * (send_ops_flags), or 0 for a QP posted with ibv_post_send only.
 */
static void qp_attach(struct ibv_qp *qp, uint64_t send_ops,
		      const struct ibv_qp_init_attr *attr, bool grown)
{
	struct shiftu_ctx *s = shiftu_ctx_find(qp->context);
	struct ibv_qp_ex *qpx = send_ops ? shiftu_real.qp_to_qp_ex(qp) : NULL;
	const char *why, *srq_why = NULL;
	struct vqp_node *n;
	struct shiftu_vqp *vq;

	if (!s)
		return;
	n = shiftu_vqp_node_get();
	if (!n) {
		shiftu_warn("qp %u on %s: out of memory: not managed",
			    qp->qp_num, s->dev_name);
		return;
	}
	vq = &n->vq;
	qp_start(vq, qp, attr);
	/*
	 * A QP on an SRQ joins it whatever becomes of it: one the library
	 * does not protect consumes from the SRQ all the same, which keeps
	 * the SRQ's receives where they are (srq.h).
	 */
	if (attr->srq)
		srq_why = shiftu_srq_qp_attach(vq, attr->srq);
	why = qp_why(vq, attr, grown, send_ops, qpx, srq_why);
	qp_rings(vq, qp, s, attr, why);
	if (shiftu_qp_register(&vq->reg)) {
		shiftu_warn("qp %u on %s: cannot register: not managed",
			    qp->qp_num, s->dev_name);
		if (vq->cq_room)
			shiftu_cq_release(attr->send_cq, attr->recv_cq);
		free(vq->sq.slots);
		free(vq->rq.slots);
		shiftu_srq_qp_detach(vq);
		shiftu_vqp_node_put(n);
		return;
	}
	/* registered first: the library's builders find their entry */
	if (qpx && vq->rings && shiftu_wr_attach(vq, qpx)) {
		why = "out of memory";
		vq->rings = 0;
		vq->copying = vq->copying_r = 1;
	}
	qp_join(n, qp, s, attr);
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

struct ibv_qp *shiftu_create_qp_ex(struct ibv_context *ctx,
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
	shiftu_rcache_drop(vq, qp->qp_num);
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
	free(vq->tw_held[0]);
	free(vq->tw_held[1]);
	free(vq->sq.slots);
	free(vq->rq.slots);
	shiftu_vqp_node_put(n);
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

SHIFTU_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	if (!shiftu_real_verbs())
		return ENOSYS;
	qp_detach(qp);
	return shiftu_real.destroy_qp(qp);
}
