// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * move.c: moving a QP's work from one of its QPs to the other
 * (failover_int.h): shiftu_move_locked() and its steps, the batch and the
 * polling session it may be left to, what it leaves done (shiftu_moved())
 * or given up (shiftu_go_dead()), and what it reports once its locks are
 * dropped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cq.h"
#include "cqex.h"
#include "event.h"
#include "failover.h"
#include "failover_int.h"
#include "handshake.h"
#include "health.h"
#include "interpose.h"
#include "log.h"
#include "proto.h"
#include "provq.h"
#include "serial.h"
#include "shadow.h"
#include "srq.h"
#include "testbuild.h"
#include "util.h"
#include "wrapi.h"

/* receives of its SRQ a drain of one QP may meet flushed (Soft-RoCE: 1) */
#define SRQ_FLUSHED	8

void shiftu_fo_report(struct shiftu_vqp *vq, enum fo_result r)
{
	/* the callback may call verbs: no library lock held */
	switch (r) {
	case FO_DONE:
		shiftu_event_emit(SHIFTU_EV_FAILOVER, vq->reg.app_qp, vq->sctx->dev_name,
				  vq->port_num, vq->sctx->bak_name, vq->sctx->bak_port, 0);
		break;
	case FO_BACK:
		shiftu_event_emit(SHIFTU_EV_FAILBACK, vq->reg.app_qp, vq->sctx->bak_name,
				  vq->sctx->bak_port, vq->sctx->dev_name, vq->port_num, 0);
		break;
	case FO_DEAD_ATOMIC:
		shiftu_event_emit(SHIFTU_EV_ATOMIC_ERROR, vq->reg.app_qp,
				  vq->sctx->dev_name, vq->port_num, NULL, 0, -EIO);
		/* fall through */
	case FO_DEAD:
		shiftu_event_emit(SHIFTU_EV_UNPROTECTED, vq->reg.app_qp, vq->sctx->dev_name,
				  vq->port_num, NULL, 0, -EIO);
		break;
	default:
		break;
	}
}

/*
 * Back on its default QP, @vq gives up the slow polls its failover took,
 * unless the library still holds completions for its CQs: then each CQ
 * with a stash keeps a count of its own (slow_leftover), dropped by the
 * slow poll that finds that stash empty.  A count left on the send CQ for
 * the receive CQ's stash was dropped by a poll of the send CQ, and the
 * receive CQ's next polls took the common path past its stash: a receive
 * completion the drain had kept reached the application a failover later
 * (torture: a notification late and out of order).  Context: both CQs'
 * locks held.
 */
static void slow_handover(struct shiftu_vqp *vq)
{
	struct shiftu_cq *s = vq->scq, *r = vq->rcq;

	if (!s->stash_n && !r->stash_n) {
		shiftu_cq_slow(vq, false);
		return;
	}
	if (s->stash_n)
		s->slow_leftover++;
	if (r != s && r->stash_n) {
		if (s->stash_n)
			shiftu_cq_slow(vq, true);	/* a count for each */
		r->slow_leftover++;
	}
}

/*
 * @vq's work is no longer on its twin, nor will come from it: its CQs stop
 * matching the twin's completions to it and give back the slow polls its
 * failover took (slow_handover()).  Nothing to do for a QP not there: the
 * slow polls stay counted once.  Context: both CQs' locks held.
 */
void shiftu_twins_leave(struct shiftu_vqp *vq)
{
	if (!shiftu_twins_has(vq->scq, vq) && !shiftu_twins_has(vq->rcq, vq))
		return;
	shiftu_twins_del(vq->scq, vq);
	shiftu_twins_del(vq->rcq, vq);
	slow_handover(vq);
}

/*
 * @flushed[0..n) without the receives its SRQ's table names, which a move
 * posted again.  Returns how many are left.
 */
static int drop_srq(struct drained_wc *flushed, int n)
{
	int i, j;

	for (i = 0, j = 0; i < n; i++)
		if (!flushed[i].srq)
			flushed[j++] = flushed[i];
	return j;
}

/*
 * Give up on @vq: the application gets the errors, the @n the NIC flushed
 * and then the sends from @held on it held back.  A QP whose work is not
 * on its twin gives up the twin's place on its CQs and their slow polls,
 * as a failback does: nothing of it comes from the twin any more.
 * Context: fo_lock and both CQs' locks held.
 */
void shiftu_go_dead(struct shiftu_vqp *vq, const struct drained_wc *flushed, int n,
		    uint64_t held)
{
	struct ibv_wc wc;
	int i;

	/* what the NIC flushed goes to the application, as without shift,
	 * as its own QP's (a drain of the twin took the twin's) */
	for (i = 0; i < n; i++) {
		wc = flushed[i].wc;
		wc.qp_num = vq->reg.app_qp->qp_num;
		shiftu_stash_push(flushed[i].rcq ? vq->rcq : vq->scq, &wc);
	}
	shiftu_flush_held(vq, held);
	if (!vq->on_twin)
		shiftu_twins_leave(vq);
	vq->state = SHIFTU_SEND_DEAD;
	shiftu_qp_set_flags(&vq->reg, vq->reg.flags & ~SHIFTU_QP_F_PROTECTED);
	shiftu_vqp_set_slow(vq, 0, __ATOMIC_RELAXED);
}

/*
 * A failback (ours, or the peer's we follow) given up before we spoke on
 * the default QP: that QP is connected to the peer's, whose receive queue
 * a control receive heads, posted for the count we never sent.  Left
 * connected, the application's next message, which now goes straight to
 * the default QP, lands in that receive and is taken for the count: in
 * many_gen.sh a WRITE_WITH_IMM's immediate, 574, was read as "the peer
 * has received 574 messages" by a peer that had sent none, which gave its
 * QP up too, the message lost with it.  The default QP is stopped instead:
 * what the application posts there completes flushed, as on the QP that
 * failed; the peer, which never hears, is left to its own errors.  No
 * answer of the peer's is awaited there any more (the backup thread's
 * looks at the application's CQ for it end).  Context: fo_lock and both
 * CQs' locks held.
 */
static void back_abandon(struct shiftu_vqp *vq)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int ret;

	__atomic_store_n(&vq->ctrl_default, 0, __ATOMIC_RELAXED);
	ret = shiftu_real.modify_qp(vq->reg.app_qp, &a, IBV_QP_STATE);
	if (ret)
		shiftu_warn("qp %u on %s: cannot stop its default QP: %s: the peer may take its next message for a failback's count",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(ret));
}

/*
 * @vq->down once it is back on its default QP: the probe proved the path,
 * so a path the page may still show down (a peer's cable relayed late by
 * the agents) does not count, its next move tells again; the local port
 * the page shows down does (it may have gone again since the probe).
 */
uint8_t shiftu_port_down_now(struct shiftu_vqp *vq)
{
	struct shiftu_port_health ph;
	uint8_t path;

	return shiftu_vqp_primary(vq, &ph, &path) == 1 && path != SHIFT_FT_PATH_DOWN;
}

/*
 * The sends are replayed where the work went: on the twin, the QP is in
 * Fallback; back on the default QP, it is in Default again, and the twin
 * is reset (by the shadow thread) for the next failover.  Context: fo_lock
 * and both CQs' locks held.
 */
enum fo_result shiftu_moved(struct shiftu_vqp *vq, uint64_t replayed)
{
	__atomic_fetch_add(&vq->reg.replayed_wrs, replayed, __ATOMIC_RELAXED);
	shiftu_stat_add(SHIFTU_STAT_REPLAYED_WRS, replayed);
	vq->keys_held = 0;
	if (vq->on_twin) {
		vq->state = SHIFTU_SEND_FALLBACK;
		shiftu_qp_set_send_state(&vq->reg, SHIFTU_SEND_FALLBACK);
		return FO_DONE;
	}
	shiftu_twins_leave(vq);
	vq->state = SHIFTU_SEND_DEFAULT;
	shiftu_qp_set_send_state(&vq->reg, SHIFTU_SEND_DEFAULT);
	__atomic_store_n(&vq->back_ns, shiftu_mono_ns(), __ATOMIC_RELAXED);
	vq->hs_sent = vq->hs_got = 0;
	vq->rejoin_want = 0;
	/* drained and not renewed (a test's delay): no failover to it until
	 * the shadow thread has reset it */
	if (!__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE)) {
		vq->twin_stale = 1;
		shiftu_shadow_poke();
	}
	vq->fb_wait_ns = 0;
	vq->down = shiftu_port_down_now(vq);
	vq->down_path = 0;
	shiftu_vqp_set_slow(vq, vq->down, __ATOMIC_RELAXED);
	__atomic_fetch_add(&vq->reg.failbacks, 1, __ATOMIC_RELAXED);
	shiftu_info("qp %u on %s: failed back from %s, %" PRIu64 " requests replayed",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->sctx->bak_name, replayed);
	return FO_BACK;
}

/*
 * A batch of the extended send API open on @vq's default QP in the
 * provider's builders (wrapi.c) holds the provider's send queue until its
 * poster completes it: the drain's marker would wait for it, for ever if
 * the poster is this thread.  The posts' gate is closed first, so that no
 * batch opens after this look; then, if one is open, the move is left to
 * its poster, with @why.  The poster's stores of its batch and the look at
 * @move_deferred after them are ordered against ours by the quiesce's
 * barrier: either we see the batch closed, or it sees the move left to it
 * (or both, and its move finds ours made).  Returns 1 if the move is left
 * to the poster, 0 if none is open, or -EBUSY when shiftu_fo_quiesce() gave up.
 * Context: fo_lock, no CQ lock.
 */
static int batch_open(struct shiftu_vqp *vq, const char *why)
{
	bool ok;

	if (!shiftu_wr_can_direct(vq))
		return 0;
	shiftu_vqp_set_slow(vq, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&vq->move_deferred, why, __ATOMIC_SEQ_CST);
	ok = shiftu_fo_quiesce(vq);
	if (!ok || !shiftu_wr_direct_open(vq)) {
		__atomic_store_n(&vq->move_deferred, NULL, __ATOMIC_RELAXED);
		return ok ? 0 : -EBUSY;
	}
	shiftu_info("qp %u on %s: %s during a batch of the extended send API: failing over once it is posted",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
	return 1;
}

/*
 * A direct polling session of an extended CQ (cqex.c) holds the provider's
 * CQ until its thread ends it: the drain would wait for it, for ever if
 * the session's thread is this one, or waits for this move (a post on the
 * QP).  As for a batch (batch_open()): the context's polls are made slow,
 * under which no session starts direct, the move left to the sessions of
 * @vq's CQs (with a hold of the slow polls, @vq->poll_hold) and the verbs
 * in flight waited out; then, if a direct session is still open on one of
 * them, its end makes the move.  Otherwise the move is ours, and the polls
 * stay slow (*@held) until the caller's move holds them itself.  Returns 1
 * if the move is left to a session, 0 if not, or -EBUSY when shiftu_fo_quiesce()
 * gave up.  Context: fo_lock, no CQ lock.
 */
static int polls_open(struct shiftu_vqp *vq, const char *why, bool *held)
{
	const struct ibv_cq *a = vq->scq->app, *b = vq->rcq->app;
	bool ok;

	*held = false;
	if (!shiftu_cqx_mark(a, b))
		return 0;
	shiftu_cq_slow(vq, true);		/* ours, for the move */
	shiftu_cq_slow(vq, true);		/* the session's, if it is left to one */
	__atomic_store_n(&vq->poll_hold, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&vq->move_deferred, why, __ATOMIC_SEQ_CST);
	ok = shiftu_fo_quiesce(vq);
	if (ok && shiftu_cqx_direct(a, b)) {
		shiftu_cq_slow(vq, false);
		shiftu_info("qp %u on %s: %s during a polling session of its extended CQ: failing over once it ends",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
		return 1;
	}
	/* taken back, unless a session's end took it (it then finds us done) */
	if (__atomic_exchange_n(&vq->poll_hold, 0, __ATOMIC_ACQ_REL))
		shiftu_cq_slow(vq, false);
	__atomic_compare_exchange_n(&vq->move_deferred, &why, NULL, false,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	if (!ok) {
		shiftu_cq_slow(vq, false);
		return -EBUSY;
	}
	*held = true;
	return 0;
}

/*
 * Debug: the receives a move posted, @n from @from, by their length: a
 * receive too short for the peer's messages fails the QP (the NIC answers
 * "invalid request") as many messages later as receives lay before it.
 */
static void rx_moved_dbg(struct shiftu_vqp *vq, uint64_t from, uint64_t n, bool to_twin)
{
	uint64_t i, len, lo = UINT64_MAX, hi = 0;
	const struct shiftu_rwqe *e;
	uint32_t s;

	if (!n || !shiftu_log_enabled(SHIFTU_LOG_DEBUG))
		return;
	for (i = from; i != from + n; i++) {
		e = shiftu_rwqe_at(&vq->rq, i);
		for (len = 0, s = 0; s < e->num_sge; s++)
			len += e->sge[s].length;
		lo = len < lo ? len : lo;
		hi = len > hi ? len : hi;
	}
	shiftu_dbg("qp %u: %" PRIu64 " receives posted on its %s, %" PRIu64 " to %" PRIu64 " bytes each",
		   vq->reg.app_qp->qp_num, n, to_twin ? "twin" : "default QP", lo, hi);
}

/*
 * Move @vq's work as @kind says: stop and drain the QP it leaves, repost
 * the receives it held on the other, tell the peer our receive count there,
 * and replay the sends, now or, if which of them arrived matters and the
 * peer has not told us yet, when it does (SHIFTU_SEND_HANDSHAKE).  Going
 * back always waits for the peer's count: its receives must be on its
 * default QP before ours go.  A rejoin the peer must be asked for
 * (@asking) sends nothing and waits: the peer's twin may not be renewed
 * yet, and the peer speaks first once it is.
 * Context: fo_lock held; the caller delivers @msgs once it is dropped.
 */
enum fo_result shiftu_move_locked(struct shiftu_vqp *vq, enum move_kind kind, bool asking,
				  const char *why, struct shiftu_hs_msg *msgs, int *n_msgs)
{
	static const char *const done[] = {
		[MOVE_OVER] = "failed over to", [MOVE_BACK] = "going back from",
		[MOVE_REJOIN] = "back on",
	};
	struct shiftu_cq *c = vq->scq, *rc = vq->rcq;
	struct drained_wc *flushed = NULL;
	uint64_t t0 = shiftu_mono_ns(), start, end, i, n_r, replayed = 0;
	uint64_t t_q = 0, t_d = 0;		/* quiesced, drained: for the log */
	uint64_t consumed, srq_ids[SRQ_FLUSHED];
	struct shiftu_send_plan plan;
	unsigned int n_srq = 0;
	int n = 0, nr, n_s, ret;
	bool atomic = false, from_twin, to_twin = kind != MOVE_BACK;
	bool stuck = false, unposted = true, polls_held = false;
	enum fo_result r;

	/* the application tears its QP down: its errors are its own */
	if (__atomic_load_n(&vq->app_stop, __ATOMIC_RELAXED))
		return FO_NONE;
	switch (kind) {
	case MOVE_OVER:
		if (vq->state != SHIFTU_SEND_DEFAULT)
			return FO_NONE;
		break;
	case MOVE_BACK:
		if (vq->state != SHIFTU_SEND_FALLBACK || !vq->on_twin)
			return FO_NONE;
		break;
	case MOVE_REJOIN:
		if (vq->state == SHIFTU_SEND_DEFAULT || vq->state == SHIFTU_SEND_DEAD)
			return FO_NONE;
		break;
	}
	/* a going back still due is this one, or one a move overtook */
	__atomic_store_n(&vq->back_due_ns, 0, __ATOMIC_RELAXED);
	/* a cancel asked for is the going back's this move ends, if any */
	vq->fb_cancel = 0;
	from_twin = kind == MOVE_BACK || (kind == MOVE_REJOIN && vq->on_twin);
	/* leaving the default QP for a twin a failback drained: renew it */
	if (kind == MOVE_REJOIN && !from_twin &&
	    !__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE)) {
		ret = shiftu_twin_renew(vq);
		if (ret) {
			shiftu_warn("qp %u on %s: %s, but its twin cannot be renewed: %s",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why, strerror(-ret));
			return FO_NONE;
		}
	}
	if ((kind != MOVE_REJOIN && !__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE)) ||
	    !c || !rc) {
		/* the next post asks again; so does the shadow thread once it
		 * has reset a twin a failback stopped (a moment) */
		shiftu_vqp_set_slow(vq, 1, __ATOMIC_RELAXED);
		if (shiftu_twin_coming(vq))
			shiftu_dbg("qp %u on %s: %s: its twin is being reset, failing over in a moment",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
		else if (!vq->told_waiting++)
			/* a stall, as without the library, until the shadow
			 * thread has the twin ready (it then moves the QP) */
			shiftu_info("qp %u on %s: %s, but its twin is not ready yet: staying until it is",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
		return FO_NONE;
	}
	if (kind == MOVE_OVER) {
		ret = batch_open(vq, why);
		if (ret == 0)
			ret = polls_open(vq, why, &polls_held);
		if (ret > 0)
			return FO_NONE;
		if (ret < 0) {
			shiftu_lock_cqs(c, rc);
			goto dead;
		}
	}
	flushed = malloc((vq->sq.mask + vq->rq.mask + 3) * sizeof(*flushed));
	if (!flushed) {
		if (polls_held)
			shiftu_cq_slow(vq, false);
		return FO_NONE;
	}

	shiftu_lock_cqs(c, rc);
	if (kind == MOVE_OVER && (c->n_twins == SHIFTU_ARRAY_SIZE(c->twins) ||
				  rc->n_twins == SHIFTU_ARRAY_SIZE(rc->twins))) {
		shiftu_unlock_cqs(c, rc);
		free(flushed);
		if (polls_held)
			shiftu_cq_slow(vq, false);
		shiftu_warn("qp %u: its CQ has too many failed-over QPs: staying",
			    vq->reg.app_qp->qp_num);
		return FO_NONE;
	}
	if (kind == MOVE_OVER) {
		shiftu_cq_slow(vq, true);
		shiftu_twins_add(c, vq);
		shiftu_twins_add(rc, vq);
	}
	if (polls_held)
		shiftu_cq_slow(vq, false);	/* the move's own holds them now */
	/*
	 * From here the application's posts and polls take the slow paths,
	 * which wait for us.  One already past that check (the watcher's
	 * move, or a poller's, while the application posts) is inside its
	 * thread's window (quiesce.h) and is let finish first: otherwise its
	 * request could reach the QP after the drain's marker, and be lost.
	 */
	shiftu_vqp_set_slow(vq, 1, __ATOMIC_SEQ_CST);
	shiftu_unlock_cqs(c, rc);
	/*
	 * Leaving the twin, no thread can be inside a verb of this QP: its
	 * posts took the slow path all along, and its CQs' polls too.
	 */
	stuck = !from_twin && !shiftu_fo_quiesce(vq);
	shiftu_lock_cqs(c, rc);
	if (stuck)
		goto dead;
	t_q = shiftu_mono_ns();
	end = shiftu_posted_end(vq);
	ret = shiftu_drain(vq, from_twin, flushed, vq->sq.mask + vq->rq.mask + 2, &n, &nr,
			   &stuck, msgs, n_msgs);
	t_d = shiftu_mono_ns();
	if (ret < 0) {
		if (!stuck)
			shiftu_warn("qp %u on %s: cannot drain it: %s: unprotected",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
				    strerror(-ret));
		goto dead;
	}
	/*
	 * The receives still outstanding: those flushed from the receive CQ
	 * when it is not the send CQ, else those posted and not counted
	 * complete.  The others were consumed: while pollers do not count
	 * receives (shiftu_wc_look), that is the count.  When they do, one
	 * may hold receive completions it took from the default QP before
	 * this move and has not counted yet (preempted): the flushes tell,
	 * and what it counts later is already paid.
	 */
	consumed = __atomic_load_n(&vq->consumed, __ATOMIC_RELAXED);
	n_r = nr >= 0 ? (uint64_t)nr : vq->rq.head - consumed;
	if (vq->app_srq) {
		/*
		 * Its receives are its SRQ's table's, not its own: the one the
		 * NIC took for a message cut short, if any, completed flushed
		 * under the table's id, and is posted again where the QP goes
		 * (srq.c).  Its receive completions were counted as polled.
		 */
		n_r = 0;
		for (i = 0; i < (uint64_t)n; i++) {
			if (!flushed[i].srq)
				continue;
			if (n_srq == SRQ_FLUSHED) {
				shiftu_warn("qp %u on %s: more than %d receives of its SRQ flushed: unprotected",
					    vq->reg.app_qp->qp_num, vq->sctx->dev_name, SRQ_FLUSHED);
				goto dead;
			}
			srq_ids[n_srq++] = flushed[i].wc.wr_id;
		}
	} else if (nr >= 0 && __atomic_load_n(&shiftu_wc_look, __ATOMIC_RELAXED) ==
		       SHIFTU_WC_LOOK_ERRORS) {
		__atomic_store_n(&vq->consumed, vq->rq.head - n_r, __ATOMIC_RELAXED);
	} else if (nr >= 0 && !from_twin && shiftu_seq64_lt(consumed, vq->rq.head - n_r)) {
		uint64_t owed = vq->rq.head - n_r - consumed;

		shiftu_recv_owe(vq, owed);
		shiftu_dbg("qp %u: %" PRIu64 " receive completions not counted yet",
			   vq->reg.app_qp->qp_num, owed);
	}
	/* an SRQ's: the flushed were sends but for the receives its table names */
	n_s = n - (int)(vq->app_srq ? n_srq : n_r);
	/* the flushed sends are the last n_s posted (a replay's gap left out) */
	if (n_r > vq->rq.mask + 1 || n_s < 0 || (uint64_t)n_s > vq->sq.mask + 1 ||
	    !shiftu_posted_from(&vq->sq, &vq->sq_gap, end, n_s, &start)) {
		shiftu_warn("qp %u on %s: %d flushed, %" PRIu64 " receives outstanding: the count does not add up: unprotected",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, n, n_r);
		goto dead;
	}
	/* a QP that only counted its requests has them in the provider's rings */
	if (!from_twin && vq->rings == SHIFTU_RINGS_PROVIDER) {
		ret = shiftu_provq_take(vq, n_s, n_r);
		if (ret) {
			shiftu_warn("qp %u on %s: %d sends and %" PRIu64 " receives outstanding: cannot read them from the provider's rings: %s: unprotected",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, n_s, n_r,
				    strerror(-ret));
			goto dead;
		}
	}
	/* an atomic held, never posted, is no atomic in flight */
	shiftu_plan_sends(&plan, &vq->sq, start, end, &vq->sq_gap, vq->sent2, vq->hs_got,
			  vq->hs_peer);
	atomic = plan.atomic;
	if (atomic) {
		shiftu_warn("qp %u on %s: %s with an atomic outstanding: not replayed, the application gets the errors",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
		goto dead;
	}
	/*
	 * A twin left is renewed at once (reset, and joined to the peer's
	 * with the PSNs both published), so that the peer can reach it again
	 * whatever becomes of this move; a test may put that off to the
	 * shadow thread (SHIFTU_TEST_TWIN_RESET_MS).
	 */
	if (from_twin) {
		/* drained: the shadow thread must not connect it as it is */
		vq->twin_stale = 1;
		__atomic_store_n(&vq->bak_ready, 0, __ATOMIC_RELEASE);
		if (kind == MOVE_REJOIN || !shiftu_test_twin_reset_ms()) {
			ret = shiftu_twin_renew(vq);
			if (ret && kind == MOVE_REJOIN) {
				shiftu_warn("qp %u on %s: cannot renew its twin: %s: unprotected",
					    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
					    strerror(-ret));
				goto dead;
			}
		}
	}
	/*
	 * The receives first: the peer may send as soon as it hears from us.
	 * An SRQ's: the one the NIC flushed goes where the QP goes, and the
	 * side it leaves is emptied if no QP is left there (srq.c).
	 */
	if (vq->app_srq && shiftu_srq_move(vq, from_twin, to_twin, srq_ids, n_srq)) {
		shiftu_warn("qp %u on %s: its SRQ's receives cannot move: unprotected",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name);
		goto dead;
	}
	/* they are posted: the drain's flushes of them are not the application's */
	if (n_srq)
		n = drop_srq(flushed, n);
	vq->on_twin = to_twin;
	unposted = false;
	for (i = vq->rq.head - n_r; i != vq->rq.head; i++) {
		ret = shiftu_post_recv_on(vq, shiftu_rwqe_at(&vq->rq, i));
		if (ret) {
			shiftu_warn("qp %u on %s: cannot repost a receive: %s: the application gets the errors",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(ret));
			goto dead;
		}
	}
	rx_moved_dbg(vq, vq->rq.head - n_r, n_r, to_twin);
	vq->rx_moved = to_twin;
	shiftu_qp_set_recv_state(&vq->reg, to_twin ? SHIFTU_RECV_FALLBACK : SHIFTU_RECV_DEFAULT);
	if (!vq->hs_sent && !asking) {
		/* an answer if the peer spoke first */
		ret = shiftu_ctrl_send(vq, vq->hs_got);
		if (ret) {
			shiftu_warn("qp %u on %s: cannot tell the peer: %s: unprotected",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(ret));
			goto dead;
		}
	}
	shiftu_vqp_set_slow(vq, 1, __ATOMIC_RELAXED);
	vq->stayed = 0;
	if (kind == MOVE_OVER)
		__atomic_fetch_add(&vq->reg.failovers, 1, __ATOMIC_RELAXED);
	if (shiftu_plan_next(&plan, asking, kind == MOVE_BACK) == SHIFTU_SENDS_HOLD) {
		/* which of them arrived only the peer knows: wait for its count */
		vq->state = SHIFTU_SEND_HANDSHAKE;
		vq->replay_start = start;
		vq->hs_since_ns = t0;
		vq->hs_told_ns = shiftu_mono_ns();
		vq->keys_held = 0;
		r = kind == MOVE_OVER ? FO_DONE : FO_NONE;
	} else if (shiftu_keys_wait(vq, start)) {
		vq->hs_told_ns = shiftu_mono_ns();
		r = kind == MOVE_OVER ? FO_DONE : FO_NONE;
	} else {
		ret = shiftu_replay(vq, start, &replayed);
		if (ret) {
			shiftu_warn("qp %u on %s: replay failed: %s: the application gets the errors",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(ret));
			n = 0;	/* the replayed part completes where it went */
			goto dead;
		}
		r = shiftu_moved(vq, replayed);
		/* a rejoin goes on with the failover reported already */
		if (kind == MOVE_REJOIN && r == FO_DONE)
			r = FO_NONE;
	}
	shiftu_unlock_cqs(c, rc);
	shiftu_info("qp %u on %s: %s: %s qp %u on %s port %u, %d sends and %" PRIu64 " receives outstanding, %s, %.3f ms (%.3f ms to quiesce, %.3f ms to drain)",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why, done[kind],
		    vq->bak_qp->qp_num, vq->sctx->bak_name, vq->sctx->bak_port, n_s, n_r,
		    vq->state != SHIFTU_SEND_HANDSHAKE ? "replayed" :
		    asking ? "sends held until the peer joins" :
		    vq->keys_held ? "sends held for the peer's rkeys" : "sends held for the peer's count",
		    (shiftu_mono_ns() - t0) / 1e6, (t_q - t0) / 1e6, (t_d - t_q) / 1e6);
	free(flushed);
	return r;

dead:
	/* before the receives moved, the held sends were posted nowhere */
	shiftu_go_dead(vq, flushed, n, unposted ? shiftu_posted_end(vq) : vq->sq.head);
	if (kind == MOVE_BACK && !vq->hs_sent)
		back_abandon(vq);
	shiftu_unlock_cqs(c, rc);
	free(flushed);
	return atomic ? FO_DEAD_ATOMIC : FO_DEAD;
}

/*
 * After a move of @vq: the peers' messages its drain took, then those it
 * parked on @vq's CQs (the drain polls no other), and the fences of other
 * QPs whose completions it took from their twin CQs.  Context: no lock held.
 */
void shiftu_moved_deliver(struct shiftu_vqp *vq, struct shiftu_hs_msg *msgs, int n_msgs)
{
	shiftu_hs_deliver(msgs, n_msgs);
	if (vq->scq) {
		shiftu_hs_unpark(vq->scq);
		shiftu_cq_fences(vq->scq);
	}
	if (vq->rcq && vq->rcq != vq->scq) {
		shiftu_hs_unpark(vq->rcq);
		shiftu_cq_fences(vq->rcq);
	}
}

bool shiftu_twin_coming(const struct shiftu_vqp *vq)
{
	return !__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE) &&
	       (__atomic_load_n(&vq->reg.flags, __ATOMIC_RELAXED) & SHIFTU_QP_F_PROTECTED) &&
	       __atomic_load_n(&vq->published, __ATOMIC_RELAXED) != 2;
}
