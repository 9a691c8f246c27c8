// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bell.c: waking an application that sleeps in its completion channel.
 *
 * An application that blocks in ibv_get_cq_event() (or poll()s its
 * channel's fd) is woken by the kernel when a completion reaches a CQ it
 * armed with ibv_req_notify_cq().  Completions of a QP that failed over
 * reach the twin CQ, on another device, and come to the application's CQ
 * only in the library's stash: no event.  So every application CQ that has
 * a channel gets a bell: a QP of the library's on the application's
 * context, in the error state, whose send and receive CQ is that CQ.  A
 * receive posted to a QP in the error state is flushed by the NIC with an
 * error completion (IBA 10.7.3.1), and that completion, like any other,
 * raises the CQ's event if it is armed: a real event on the application's
 * own channel, read and acknowledged by the real verbs, so nothing in
 * libibverbs' accounting changes.  The library takes the bell's completion
 * out before the application can see it.
 *
 * The bell rings when the library put completions in the stash of a CQ
 * the application has armed since it last rang (the library sees the arm
 * go by: ibv_req_notify_cq() is one of the context's ops), at most once
 * per arm, as a NIC raises one event per arm.
 *
 * An arm for solicited completions only wants a receive completion of a
 * message sent with the solicited event bit, or an error completion
 * (ibv_req_notify_cq(3)).  The library cannot tell the first kind: a work
 * completion does not carry the bit.  So such an arm is rung by any
 * receive or error completion the library stashes, a wake-up too many
 * rather than one missed.  The bell's flush is a receive's for either arm:
 * the verbs count an error completion as solicited, where Soft-RoCE counts
 * only receives (a flushed send raises no solicited event there), and
 * 6.12's Soft-RoCE neither (its flush_recv_wqe() posts with solicited 0,
 * where 6.1's responder completed a flushed receive as solicited).  So
 * before it rings a solicited-only arm the bell widens it: the provider's
 * req_notify_cq for any completion, which on an armed CQ only widens the
 * arm (both kernels); if a solicited completion of the application's own
 * raised the event in between, the widened arm is one the application did
 * not make, a wake-up too many again, never one missed.
 * Soft-RoCE flushes a receive when its responder runs, which a post from
 * userspace does not start: the bell then moves its QP to the error state
 * again, as a drain does (drain.c), a system call as a send's doorbell
 * would have been.
 */
#include <errno.h>
#include <string.h>

#include "bell.h"
#include "interpose.h"
#include "log.h"
#include "real.h"
#include "shadow.h"

/* Rings in flight at once: each is flushed at once, so a few are plenty. */
#define BELL_DEPTH	8

void shiftu_bell_create(struct shiftu_cq *c)
{
	struct ibv_context *ctx = c->app->context;
	struct ibv_qp_init_attr a = {
		.send_cq = c->app, .recv_cq = c->app,
		.cap = { .max_send_wr = 1, .max_recv_wr = BELL_DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct ibv_qp *qp;
	struct ibv_pd *pd;
	int ret;

	if (c->bell || !c->app->channel)
		return;
	/* the real verbs: neither is the application's, nor protected */
	pd = shiftu_real.alloc_pd(ctx);
	if (!pd) {
		ret = errno ? errno : ENOMEM;
		goto fail;
	}
	qp = shiftu_real.create_qp(pd, &a);
	if (!qp) {
		ret = errno ? errno : ENOMEM;
		goto fail_pd;
	}
	/* RESET to ERR is not a transition every provider takes: via INIT */
	ret = shiftu_real.modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (!ret)
		ret = shiftu_real.modify_qp(qp, &err, IBV_QP_STATE);
	if (ret)
		goto fail_qp;
	c->bell_pd = pd;
	/* pairs with the acquire in shiftu_bell_ring() */
	__atomic_store_n(&c->bell, qp, __ATOMIC_RELEASE);
	shiftu_dbg("cq on %s: bell qp %u", c->sctx->dev_name, qp->qp_num);
	return;

fail_qp:
	shiftu_real.destroy_qp(qp);
fail_pd:
	shiftu_real.dealloc_pd(pd);
fail:
	shiftu_warn("cq on %s: cannot make its bell: %s: an application sleeping in its completion channel is not woken by its backup's completions",
		    c->sctx->dev_name, strerror(ret));
}

void shiftu_bell_destroy(struct shiftu_cq *c)
{
	if (!c->bell)
		return;
	shiftu_real.destroy_qp(c->bell);
	shiftu_real.dealloc_pd(c->bell_pd);
	c->bell = NULL;
	c->bell_pd = NULL;
}

/* @wc is a completion a solicited-only arm may want (see the top) */
static bool maybe_solicited(const struct ibv_wc *wc)
{
	return wc->status != IBV_WC_SUCCESS || (wc->opcode & IBV_WC_RECV);
}

void shiftu_bell_ring(struct shiftu_cq *c, const struct ibv_wc *wc)
{
	struct ibv_recv_wr w = { .wr_id = SHIFTU_BELL_ID }, *bad;
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct ibv_qp *qp = __atomic_load_n(&c->bell, __ATOMIC_ACQUIRE);
	int arm = __atomic_load_n(&c->armed, __ATOMIC_RELAXED);
	int ret;

	/* a load first: most pushes find the CQ not armed, and write nothing */
	do {
		if (!qp || arm == SHIFTU_ARM_NONE ||
		    (arm == SHIFTU_ARM_SOLICITED && !maybe_solicited(wc)))
			return;
	} while (!__atomic_compare_exchange_n(&c->armed, &arm, SHIFTU_ARM_NONE, false,
					      __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	/* a flushed receive is no solicited completion everywhere (see the top) */
	if (arm == SHIFTU_ARM_SOLICITED)
		c->sctx->req_notify_cq(c->app, 0);
	/* the provider's own post: the application's context's ops are ours */
	ret = c->sctx->post_recv(qp, &w, &bad);
	if (!ret)
		shiftu_real.modify_qp(qp, &err, IBV_QP_STATE);	/* the flush, now */
	else	/* full: the next push rings; a new arm is not weakened */
		__atomic_compare_exchange_n(&c->armed, &(int){ SHIFTU_ARM_NONE }, arm, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

bool shiftu_bell_is(const struct shiftu_cq *c, const struct ibv_wc *wc)
{
	const struct ibv_qp *qp = __atomic_load_n(&c->bell, __ATOMIC_ACQUIRE);

	return shiftu_wrid_kind(wc->wr_id) == SHIFTU_WRID_BELL && qp && wc->qp_num == qp->qp_num;
}

int shiftu_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct shiftu_ctx *s = shiftu_ctx_find(cq->context);
	struct shiftu_cq *c;
	int ret;

	ret = s->req_notify_cq(cq, solicited_only);
	if (ret || !cq->channel)
		return ret;
	c = shiftu_cq_find(cq);
	if (!c || !__atomic_load_n(&c->bell, __ATOMIC_RELAXED))
		return 0;
	/* as a NIC does, a solicited arm leaves an armed CQ armed for any */
	if (!solicited_only)
		__atomic_store_n(&c->armed, SHIFTU_ARM_ANY, __ATOMIC_RELEASE);
	else
		__atomic_compare_exchange_n(&c->armed, &(int){ SHIFTU_ARM_NONE },
					    SHIFTU_ARM_SOLICITED, false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
	return 0;
}
