// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * qpconn.c: a QP's connection replayed from its recorded steps
 * (shadow.h, shadow_int.h).
 *
 * A twin brought as far as the application brought its QP, aimed at the
 * peer's twin, and ready once both have joined (the shadow thread's pass,
 * twin.c, or a peer's message on the twin, failover.c); a twin a move has
 * drained renewed with the PSNs both sides published (move.c, goback.c);
 * and the application's QP reset and brought back with the PSNs a
 * failback agreed (failback.c).  Of the library it calls only the control
 * receive at a QP's head (handshake.c).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "event.h"
#include "handshake.h"
#include "interpose.h"
#include "log.h"
#include "real.h"
#include "shadow_int.h"
#include "testbuild.h"
#include "util.h"

/*
 * The RTS step to replay: the application's, or for a side that never
 * asked for RTS the usual RC values (the library's control messages need
 * a QP that can send).  Returns the attribute mask.
 */
static int rts_attr(const struct shiftu_qp_steps *st, struct ibv_qp_attr *a)
{
	if (st->rts_mask) {
		*a = st->rts;
		return st->rts_mask;
	}
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->max_rd_atomic = 1;
	return IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
	       IBV_QP_MAX_QP_RD_ATOMIC;
}

/*
 * Both twins have joined each other: ours can take the QP's work, and
 * the QP is protected from now on (the first time: a renewed twin is
 * joined by the same move on both sides).  Before, a failover could tell
 * its count to a twin of the peer's that could not answer it: one before
 * RTR drops it, one in RTR (its thread starved before RTS, as in a CI
 * run of failover_cqex.sh) takes it while its side cannot follow yet;
 * the side that failed over waited 10 s for an answer that never came
 * (failover_late_join.sh).  Context: vq->lock (the shadow thread) or
 * fo_lock (a peer's message on the twin).
 */
static void twin_ready(struct shiftu_vqp *vq)
{
	if (!vq->bak_rts || (!vq->reconnects && !vq->peer_joined) ||
	    __atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE))
		return;
	if (!vq->reconnects && !__atomic_exchange_n(&vq->joined_once, 1, __ATOMIC_ACQ_REL)) {
		shiftu_qp_set_flags(&vq->reg, vq->reg.flags | SHIFTU_QP_F_PROTECTED);
		shiftu_stat_add(SHIFTU_STAT_QPS_PROTECTED, 1);
		shiftu_info("qp %u on %s: protected by qp %u on %s port %u (peer's twin: qp %u; requests %s)",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->bak_qp->qp_num,
			    vq->sctx->bak_name, vq->sctx->bak_port, vq->peer.qpn,
			    vq->rings == SHIFTU_RINGS_PROVIDER ? "in the provider's rings" :
								 "copied as posted");
	}
	__atomic_store_n(&vq->bak_ready, 1, __ATOMIC_RELEASE);
	shiftu_dbg("qp %u: its twin can post", vq->reg.app_qp->qp_num);
}

void shiftu_twin_heard(struct shiftu_vqp *vq)
{
	if (__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE) || vq->reconnects || !vq->bak_rts)
		return;
	/* only a twin that has joined ours sends to it */
	vq->peer_joined = 1;
	twin_ready(vq);
}

/*
 * Bring the twin as far as the application brought its QP, with the same
 * attributes re-aimed at the peer's twin: RTR (it can be written to and
 * read from), then RTS (it can post), and ready once the peer's has joined
 * it too (twin_ready()).
 */
void twin_connect(struct shiftu_vqp *vq)
{
	struct shiftu_qp_steps *st = &vq->steps;
	struct ibv_qp_attr a;
	struct ibv_port_attr pa;
	struct verbs_context *vctx;
	int ret;

	if (!vq->peer_known || !st->init_mask || !st->rtr_mask)
		return;
	if (vq->bak_rtr)
		goto rts;
	a = st->init;
	a.port_num = vq->sctx->bak_port;
	/* the peer writes its messages into a mailbox (box.c) */
	if (vq->mbox[SHIFTU_BOX_TWIN].mr && vq->app_srq)
		a.qp_access_flags |= IBV_ACCESS_REMOTE_WRITE;
	ret = shiftu_real.modify_qp(vq->bak_qp, &a, st->init_mask | IBV_QP_PORT |
				    (vq->app_srq ? IBV_QP_ACCESS_FLAGS : 0));
	if (ret)
		goto fail;
	/* at the head of the receive queue before the peer can reach it */
	ret = shiftu_ctrl_recv(vq, true);
	if (ret)
		goto fail;
	vq->ctrl_rq = 1;

	a = st->rtr;
	a.dest_qp_num = vq->peer.qpn;
	a.rq_psn = vq->peer.psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = vq->peer.gid;
	a.ah_attr.grh.sgid_index = vq->bak_sgid_index;
	a.ah_attr.port_num = vq->sctx->bak_port;
	a.ah_attr.dlid = 0;
	/* the backup port may have a smaller MTU than the primary */
	vctx = verbs_get_ctx_op(vq->sctx->bak_ctx, query_port);
	if (vctx && !vctx->query_port(vq->sctx->bak_ctx, vq->sctx->bak_port, &pa,
				      sizeof(pa)) && pa.active_mtu < a.path_mtu)
		a.path_mtu = pa.active_mtu;
	ret = shiftu_real.modify_qp(vq->bak_qp, &a, st->rtr_mask);
	if (ret)
		goto fail;
	vq->bak_rtr = 1;
	/* SHIFTU_TEST_JOIN_DELAY_MS: RTS on a later pass (qp_connect()) */
	vq->bak_rtr_ns = shiftu_mono_ns();
	if (shiftu_test_join_delay_ms() && !vq->reconnects)
		return;
rts:
	/*
	 * A passive side (perftest's server) never asks for RTS; its twin
	 * still answers a peer's failover.
	 */
	if (!vq->bak_rts) {
		ret = rts_attr(st, &a);
		a.sq_psn = vq->bak_psn;
		ret = shiftu_real.modify_qp(vq->bak_qp, &a, ret | IBV_QP_SQ_PSN);
		if (ret)
			goto fail;
		vq->bak_rts = 1;
	}
	twin_ready(vq);
	return;
fail:
	shiftu_warn("qp %u: cannot bring its twin to RTS: %s: unprotected",
		    vq->reg.app_qp->qp_num, strerror(ret));
	vq->published = 2;
}

/*
 * A move drained the twin: reset it and bring it back with the PSNs both
 * sides published, so that no exchange is needed, and a control receive
 * at its head again.  The peer renews its own in the same move.
 */
int shiftu_twin_renew(struct shiftu_vqp *vq)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int ret;

	/* the shadow thread's qp_connect() keeps off meanwhile */
	vq->twin_stale = 1;
	__atomic_store_n(&vq->bak_ready, 0, __ATOMIC_RELEASE);
	vq->bak_rtr = 0;
	vq->bak_rts = 0;
	vq->ctrl_rq = 0;
	vq->twin_recvs = 0;
	vq->tw_old = 0;
	ret = shiftu_real.modify_qp(vq->bak_qp, &a, IBV_QP_STATE);
	if (ret) {
		shiftu_warn("qp %u: cannot reset its twin: %s: unprotected",
			    vq->reg.app_qp->qp_num, strerror(ret));
		vq->published = 2;
		vq->twin_stale = 0;
		return -ret;
	}
	/*
	 * A reset empties a receive queue, not an SRQ: the twin SRQ's
	 * receives are the application's, for every QP on it (srq.h).
	 */
	/* read by pollers of the twin's CQs without fo_lock */
	__atomic_store_n(&vq->reconnects, vq->reconnects + 1, __ATOMIC_RELAXED);
	twin_connect(vq);
	vq->twin_stale = 0;
	return __atomic_load_n(&vq->bak_ready, __ATOMIC_RELAXED) ? 0 : -EIO;
}

/*
 * Reset the application's QP and bring it back up with its own attributes
 * and the PSNs the two sides agreed on.  The QP carries nothing meanwhile:
 * its side is on the twin (the one that failed over) or passive (the peer).
 */
int shiftu_qp_reconnect(struct shiftu_vqp *vq, uint32_t rq_psn, uint32_t sq_psn,
			unsigned int ctrl)
{
	struct shiftu_qp_steps *st = &vq->steps;
	struct ibv_qp *qp = vq->reg.app_qp;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	unsigned int i;
	int ret;

	ret = shiftu_real.modify_qp(qp, &a, IBV_QP_STATE);
	if (ret)
		return ret;
	a = st->init;
	/* the peer writes its messages into our mailbox (box.c) */
	if (box_rkey(vq, SHIFTU_BOX_DEFAULT))
		a.qp_access_flags |= IBV_ACCESS_REMOTE_WRITE;
	ret = shiftu_real.modify_qp(qp, &a, st->init_mask |
				    (box_rkey(vq, SHIFTU_BOX_DEFAULT) ? IBV_QP_ACCESS_FLAGS : 0));
	if (ret)
		return ret;
	/*
	 * A two-sided failback (@ctrl control receives): the peer's message
	 * comes first (handshake.h), behind the peer's probe if it probes
	 * with a SEND (FB_PROBE_SEND): they come in that order, and each
	 * takes the first receive left.
	 */
	vq->ctrl_default = 0;		/* the reset dropped it */
	for (i = 0; i < ctrl; i++) {
		ret = shiftu_ctrl_recv(vq, false);
		if (ret)
			return ret;
		vq->ctrl_default = 1;
	}
	a = st->rtr;
	a.rq_psn = rq_psn;
	ret = shiftu_real.modify_qp(qp, &a, st->rtr_mask | IBV_QP_RQ_PSN);
	/* a passive side stays in RTR, unless it must answer (two-sided) */
	if (ret || (!st->rts_mask && !ctrl))
		return ret;
	ret = rts_attr(st, &a);
	a.sq_psn = sq_psn;
	ret = shiftu_real.modify_qp(qp, &a, ret | IBV_QP_SQ_PSN);
	/* what a stalled QP's PSNs are compared with (rdma res show qp) */
	if (!ret)
		shiftu_info("qp %u on %s: reconnected for a failback: expecting PSN %u, sending from PSN %u",
			    qp->qp_num, vq->sctx->dev_name, rq_psn, sq_psn);
	return ret;
}
