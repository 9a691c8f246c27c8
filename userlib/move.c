// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * move.c: moving a QP's work from one of its QPs to the other
 * (failover_int.h): shiftu_move_locked() and its steps, what it leaves
 * done (shiftu_moved()) or given up (shiftu_go_dead()), and what it
 * reports once its locks are dropped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cq.h"
#include "event.h"
#include "failover.h"
#include "failover_int.h"
#include "handshake.h"
#include "health.h"
#include "interpose.h"
#include "log.h"
#include "proto.h"
#include "provq.h"
#include "real.h"
#include "serial.h"
#include "shadow.h"
#include "srq.h"
#include "testbuild.h"
#include "util.h"

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
 * One move of a QP's work (shiftu_move_locked()), as its steps see it:
 * what each finds, for the steps after it and for the move's log line.
 */
struct move {
	struct shiftu_vqp *vq;
	enum move_kind kind;
	bool asking;		/* a rejoin the peer must be asked for */
	bool from_twin, to_twin;
	const char *why;
	struct shiftu_hs_msg *msgs;	/* the peers' messages the drain took */
	int *n_msgs;
	/* the drain's: what it flushed (@n, of them @nr receives when the
	 * QP's two CQs tell them apart, else -1) */
	struct drained_wc *flushed;
	int n, nr;
	/* outstanding: the receives, the last @n_r posted; the sends, @n_s
	 * from @start on, those posted ending at @end */
	uint64_t n_r, start, end;
	int n_s;
	/* the receives of its SRQ the drain met flushed (their table's ids) */
	uint64_t srq_ids[SRQ_FLUSHED];
	unsigned int n_srq;
	struct shiftu_send_plan plan;
	uint64_t t0, t_q, t_d;	/* started, quiesced, drained: for the log */
	bool stuck;		/* a thread stayed inside a data verb */
	bool told;		/* it told the peer our count, */
	uint64_t told_count;	/* this one */
	bool unposted;		/* the receives have not moved yet */
	bool atomic;		/* given up for an atomic outstanding */
};

/* Whether @vq's state is one a move of @kind starts from. */
static bool move_wanted(struct shiftu_vqp *vq, enum move_kind kind)
{
	/* the application tears its QP down: its errors are its own */
	if (__atomic_load_n(&vq->app_stop, __ATOMIC_RELAXED))
		return false;
	switch (kind) {
	case MOVE_OVER:
		if (vq->state != SHIFTU_SEND_DEFAULT)
			return false;
		break;
	case MOVE_BACK:
		if (vq->state != SHIFTU_SEND_FALLBACK || !vq->on_twin)
			return false;
		break;
	case MOVE_REJOIN:
		if (vq->state == SHIFTU_SEND_DEFAULT || vq->state == SHIFTU_SEND_DEAD)
			return false;
		break;
	}
	return true;
}

/*
 * Whether the twin can take the work now; if not, the QP stays where it
 * is, its posts on the slow path, and the move is asked for again.
 */
static bool move_twin_ready(struct move *m)
{
	struct shiftu_vqp *vq = m->vq;
	int ret;

	/* leaving the default QP for a twin a failback drained: renew it */
	if (m->kind == MOVE_REJOIN && !m->from_twin &&
	    !__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE)) {
		ret = shiftu_twin_renew(vq);
		if (ret) {
			shiftu_warn("qp %u on %s: %s, but its twin cannot be renewed: %s",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, m->why,
				    strerror(-ret));
			return false;
		}
	}
	if ((m->kind != MOVE_REJOIN && !__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE)) ||
	    !vq->scq || !vq->rcq) {
		/* the next post asks again; so does the shadow thread once it
		 * has reset a twin a failback stopped (a moment) */
		shiftu_vqp_set_slow(vq, 1, __ATOMIC_RELAXED);
		if (shiftu_twin_coming(vq))
			shiftu_dbg("qp %u on %s: %s: its twin is being reset or joined, failing over in a moment",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, m->why);
		else if (!vq->told_waiting++)
			/* a stall, as without the library, until the shadow
			 * thread has the twin ready (it then moves the QP) */
			shiftu_info("qp %u on %s: %s, but its twin is not ready yet: staying until it is",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, m->why);
		return false;
	}
	return true;
}

/*
 * Take the QP's posts and polls onto the slow paths, and wait out the
 * threads already past them.  A failover puts the QP among its CQs'
 * twins first, with a hold of their slow polls (@polls_held: the one
 * shiftu_polls_open() took, given back now).  Returns 0 with both CQs'
 * locks held; -ENOSPC when the CQs have no room for another twin (the QP
 * stays, no lock held, the hold given back); -EBUSY when a thread stayed
 * inside a data verb (m->stuck; the locks held).
 */
static int move_quiesce(struct move *m, bool polls_held)
{
	struct shiftu_vqp *vq = m->vq;
	struct shiftu_cq *c = vq->scq, *rc = vq->rcq;

	shiftu_lock_cqs(c, rc);
	if (m->kind == MOVE_OVER && (c->n_twins == SHIFTU_ARRAY_SIZE(c->twins) ||
				     rc->n_twins == SHIFTU_ARRAY_SIZE(rc->twins))) {
		shiftu_unlock_cqs(c, rc);
		if (polls_held)
			shiftu_cq_slow(vq, false);
		shiftu_warn("qp %u: its CQ has too many failed-over QPs: staying",
			    vq->reg.app_qp->qp_num);
		return -ENOSPC;
	}
	if (m->kind == MOVE_OVER) {
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
	m->stuck = !m->from_twin && !shiftu_fo_quiesce(vq);
	shiftu_lock_cqs(c, rc);
	return m->stuck ? -EBUSY : 0;
}

/* Stop and drain the QP the work leaves (shiftu_drain()).  Both CQs' locks held. */
static bool move_drain(struct move *m)
{
	struct shiftu_vqp *vq = m->vq;
	int ret;

	m->t_q = shiftu_mono_ns();
	m->end = shiftu_posted_end(vq);
	ret = shiftu_drain(vq, m->from_twin, m->flushed, vq->sq.mask + vq->rq.mask + 2, &m->n,
			   &m->nr, &m->stuck, m->msgs, m->n_msgs);
	m->t_d = shiftu_mono_ns();
	if (ret < 0) {
		if (!m->stuck)
			shiftu_warn("qp %u on %s: cannot drain it: %s: unprotected",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
				    strerror(-ret));
		return false;
	}
	return true;
}

/*
 * The receives still outstanding: those flushed from the receive CQ
 * when it is not the send CQ, else those posted and not counted
 * complete.  The others were consumed: while pollers do not count
 * receives (shiftu_wc_look), that is the count.  When they do, one
 * may hold receive completions it took from the default QP before
 * this move and has not counted yet (preempted): the flushes tell,
 * and what it counts later is already paid.  Both CQs' locks held.
 */
static bool rx_outstanding(struct move *m)
{
	struct shiftu_vqp *vq = m->vq;
	uint64_t consumed, i;

	consumed = __atomic_load_n(&vq->consumed, __ATOMIC_RELAXED);
	m->n_r = m->nr >= 0 ? (uint64_t)m->nr : vq->rq.head - consumed;
	if (vq->app_srq) {
		/*
		 * Its receives are its SRQ's table's, not its own: the one the
		 * NIC took for a message cut short, if any, completed flushed
		 * under the table's id, and is posted again where the QP goes
		 * (srq.c).  Its receive completions were counted as polled.
		 */
		m->n_r = 0;
		for (i = 0; i < (uint64_t)m->n; i++) {
			if (!m->flushed[i].srq)
				continue;
			if (m->n_srq == SRQ_FLUSHED) {
				shiftu_warn("qp %u on %s: more than %d receives of its SRQ flushed: unprotected",
					    vq->reg.app_qp->qp_num, vq->sctx->dev_name, SRQ_FLUSHED);
				return false;
			}
			m->srq_ids[m->n_srq++] = m->flushed[i].wc.wr_id;
		}
	} else if (m->nr >= 0 && __atomic_load_n(&shiftu_wc_look, __ATOMIC_RELAXED) ==
		       SHIFTU_WC_LOOK_ERRORS) {
		__atomic_store_n(&vq->consumed, vq->rq.head - m->n_r, __ATOMIC_RELAXED);
	} else if (m->nr >= 0 && !m->from_twin &&
		   shiftu_seq64_lt(consumed, vq->rq.head - m->n_r)) {
		uint64_t owed = vq->rq.head - m->n_r - consumed;

		shiftu_recv_owe(vq, owed);
		shiftu_dbg("qp %u: %" PRIu64 " receive completions not counted yet",
			   vq->reg.app_qp->qp_num, owed);
	}
	return true;
}

/*
 * The sends outstanding, read from the provider's rings if the QP only
 * counted them, and the plan for them (proto.h): none is replayed with an
 * atomic outstanding.  Both CQs' locks held.
 */
static bool tx_outstanding(struct move *m)
{
	struct shiftu_vqp *vq = m->vq;
	int ret;

	/* an SRQ's: the flushed were sends but for the receives its table names */
	m->n_s = m->n - (int)(vq->app_srq ? m->n_srq : m->n_r);
	/* the flushed sends are the last n_s posted (a replay's gap left out) */
	if (m->n_r > vq->rq.mask + 1 || m->n_s < 0 || (uint64_t)m->n_s > vq->sq.mask + 1 ||
	    !shiftu_posted_from(&vq->sq, &vq->sq_gap, m->end, m->n_s, &m->start)) {
		shiftu_warn("qp %u on %s: %d flushed, %" PRIu64 " receives outstanding: the count does not add up: unprotected",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, m->n, m->n_r);
		return false;
	}
	/* a QP that only counted its requests has them in the provider's rings */
	if (!m->from_twin && vq->rings == SHIFTU_RINGS_PROVIDER) {
		ret = shiftu_provq_take(vq, m->n_s, m->n_r);
		if (ret) {
			shiftu_warn("qp %u on %s: %d sends and %" PRIu64 " receives outstanding: cannot read them from the provider's rings: %s: unprotected",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, m->n_s, m->n_r,
				    strerror(-ret));
			return false;
		}
	}
	/* an atomic held, never posted, is no atomic in flight */
	shiftu_plan_sends(&m->plan, &vq->sq, m->start, m->end, &vq->sq_gap, vq->sent2, vq->hs_got,
			  vq->hs_peer);
	m->atomic = m->plan.atomic;
	if (m->atomic) {
		shiftu_warn("qp %u on %s: %s with an atomic outstanding: not replayed, the application gets the errors",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, m->why);
		return false;
	}
	return true;
}

/*
 * A twin left is renewed at once (reset, and joined to the peer's
 * with the PSNs both published), so that the peer can reach it again
 * whatever becomes of this move; a test may put that off to the
 * shadow thread (SHIFTU_TEST_TWIN_RESET_MS).
 */
static bool twin_left(struct move *m)
{
	struct shiftu_vqp *vq = m->vq;
	int ret;

	if (!m->from_twin)
		return true;
	/* drained: the shadow thread must not connect it as it is */
	vq->twin_stale = 1;
	__atomic_store_n(&vq->bak_ready, 0, __ATOMIC_RELEASE);
	if (m->kind == MOVE_REJOIN || !shiftu_test_twin_reset_ms()) {
		ret = shiftu_twin_renew(vq);
		if (ret && m->kind == MOVE_REJOIN) {
			shiftu_warn("qp %u on %s: cannot renew its twin: %s: unprotected",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
				    strerror(-ret));
			return false;
		}
	}
	return true;
}

/*
 * The receives first: the peer may send as soon as it hears from us.
 * An SRQ's: the one the NIC flushed goes where the QP goes, and the
 * side it leaves is emptied if no QP is left there (srq.c).  Both CQs'
 * locks held.
 */
static bool rx_move(struct move *m)
{
	struct shiftu_vqp *vq = m->vq;
	uint64_t i;
	int ret;

	if (vq->app_srq && shiftu_srq_move(vq, m->from_twin, m->to_twin, m->srq_ids, m->n_srq)) {
		shiftu_warn("qp %u on %s: its SRQ's receives cannot move: unprotected",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name);
		return false;
	}
	/* they are posted: the drain's flushes of them are not the application's */
	if (m->n_srq)
		m->n = drop_srq(m->flushed, m->n);
	vq->on_twin = m->to_twin;
	m->unposted = false;
	for (i = vq->rq.head - m->n_r; i != vq->rq.head; i++) {
		ret = shiftu_post_recv_on(vq, shiftu_rwqe_at(&vq->rq, i));
		if (ret) {
			shiftu_warn("qp %u on %s: cannot repost a receive: %s: the application gets the errors",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(ret));
			return false;
		}
	}
	rx_moved_dbg(vq, vq->rq.head - m->n_r, m->n_r, m->to_twin);
	vq->rx_moved = m->to_twin;
	shiftu_qp_set_recv_state(&vq->reg, m->to_twin ? SHIFTU_RECV_FALLBACK : SHIFTU_RECV_DEFAULT);
	return true;
}

/* Tell the peer our receive count, unless it spoke first or must be asked. */
static bool move_tell(struct move *m)
{
	struct shiftu_vqp *vq = m->vq;
	int ret;

	if (vq->hs_sent || m->asking)
		return true;
	/* an answer if the peer spoke first */
	m->told_count = __atomic_load_n(&vq->consumed, __ATOMIC_RELAXED);
	ret = shiftu_ctrl_send(vq, vq->hs_got);
	if (ret) {
		shiftu_warn("qp %u on %s: cannot tell the peer: %s: unprotected",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(ret));
		return false;
	}
	m->told = true;
	return true;
}

/*
 * The sends as the plan says: held for the peer's count, or for the
 * peer's keys, or replayed now.  Returns false when the replay failed
 * (what it posted completes where it went), else *@r, what the move
 * reports.  Both CQs' locks held.
 */
static bool tx_move(struct move *m, enum fo_result *r)
{
	struct shiftu_vqp *vq = m->vq;
	enum move_kind kind = m->kind;
	uint64_t replayed = 0;
	int ret;

	shiftu_vqp_set_slow(vq, 1, __ATOMIC_RELAXED);
	vq->stayed = 0;
	if (kind == MOVE_OVER)
		__atomic_fetch_add(&vq->reg.failovers, 1, __ATOMIC_RELAXED);
	if (shiftu_plan_next(&m->plan, m->asking, kind == MOVE_BACK) == SHIFTU_SENDS_HOLD) {
		/* which of them arrived only the peer knows: wait for its count */
		vq->state = SHIFTU_SEND_HANDSHAKE;
		vq->replay_start = m->start;
		vq->hs_since_ns = m->t0;
		vq->hs_told_ns = shiftu_mono_ns();
		vq->keys_held = 0;
		*r = kind == MOVE_OVER ? FO_DONE : FO_NONE;
	} else if (shiftu_keys_wait(vq, m->start)) {
		vq->hs_told_ns = shiftu_mono_ns();
		*r = kind == MOVE_OVER ? FO_DONE : FO_NONE;
	} else {
		ret = shiftu_replay(vq, m->start, &replayed);
		if (ret) {
			shiftu_warn("qp %u on %s: replay failed: %s: the application gets the errors",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(ret));
			m->n = 0;	/* the replayed part completes where it went */
			return false;
		}
		*r = shiftu_moved(vq, replayed);
		/* a rejoin goes on with the failover reported already */
		if (kind == MOVE_REJOIN && *r == FO_DONE)
			*r = FO_NONE;
	}
	return true;
}

/* The line a move logs once done.  No CQ lock held. */
static void move_log(const struct move *m)
{
	static const char *const done[] = {
		[MOVE_OVER] = "failed over to", [MOVE_BACK] = "going back from",
		[MOVE_REJOIN] = "back on",
	};
	const struct shiftu_vqp *vq = m->vq;
	char told[48] = "";

	/* what a count gone wrong is found by (a soak's sequence error) */
	if (m->told)
		snprintf(told, sizeof(told), ", told the peer %" PRIu64 " received",
			 m->told_count);
	shiftu_info("qp %u on %s: %s: %s qp %u on %s port %u, %d sends and %" PRIu64 " receives outstanding, %s, %.3f ms (%.3f ms to quiesce, %.3f ms to drain)%s",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, m->why, done[m->kind],
		    vq->bak_qp->qp_num, vq->sctx->bak_name, vq->sctx->bak_port, m->n_s, m->n_r,
		    vq->state != SHIFTU_SEND_HANDSHAKE ? "replayed" :
		    m->asking ? "sends held until the peer joins" :
		    vq->keys_held ? "sends held for the peer's rkeys" : "sends held for the peer's count",
		    (shiftu_mono_ns() - m->t0) / 1e6, (m->t_q - m->t0) / 1e6, (m->t_d - m->t_q) / 1e6,
		    told);
}

/*
 * The move failed: give the QP up (shiftu_go_dead()).  A failback given
 * up before we spoke stops the default QP (back_abandon()).  Called with
 * both CQs' locks held, which it drops.
 */
static enum fo_result move_dead(struct move *m)
{
	struct shiftu_vqp *vq = m->vq;

	/* before the receives moved, the held sends were posted nowhere */
	shiftu_go_dead(vq, m->flushed, m->n, m->unposted ? shiftu_posted_end(vq) : vq->sq.head);
	if (m->kind == MOVE_BACK && !vq->hs_sent)
		back_abandon(vq);
	shiftu_unlock_cqs(vq->scq, vq->rcq);
	free(m->flushed);
	return m->atomic ? FO_DEAD_ATOMIC : FO_DEAD;
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
	struct move m = {
		.vq = vq, .kind = kind, .asking = asking, .why = why,
		.msgs = msgs, .n_msgs = n_msgs, .t0 = shiftu_mono_ns(),
		.to_twin = kind != MOVE_BACK, .unposted = true,
	};
	bool polls_held = false;
	enum fo_result r;
	int ret;

	if (!move_wanted(vq, kind))
		return FO_NONE;
	/* a going back still due is this one, or one a move overtook */
	__atomic_store_n(&vq->back_due_ns, 0, __ATOMIC_RELAXED);
	/* a cancel asked for is the going back's this move ends, if any */
	vq->fb_cancel = 0;
	m.from_twin = kind == MOVE_BACK || (kind == MOVE_REJOIN && vq->on_twin);
	if (!move_twin_ready(&m))
		return FO_NONE;
	if (kind == MOVE_OVER) {
		ret = shiftu_batch_open(vq, why);
		if (ret == 0)
			ret = shiftu_polls_open(vq, why, &polls_held);
		if (ret > 0)
			return FO_NONE;
		if (ret < 0) {
			shiftu_lock_cqs(vq->scq, vq->rcq);
			return move_dead(&m);
		}
	}
	m.flushed = malloc((vq->sq.mask + vq->rq.mask + 3) * sizeof(*m.flushed));
	if (!m.flushed) {
		if (polls_held)
			shiftu_cq_slow(vq, false);
		return FO_NONE;
	}
	ret = move_quiesce(&m, polls_held);
	if (ret == -ENOSPC) {
		free(m.flushed);
		return FO_NONE;
	}
	if (ret || !move_drain(&m) || !rx_outstanding(&m) || !tx_outstanding(&m) ||
	    !twin_left(&m) || !rx_move(&m) || !move_tell(&m) || !tx_move(&m, &r))
		return move_dead(&m);
	shiftu_unlock_cqs(vq->scq, vq->rcq);
	move_log(&m);
	free(m.flushed);
	return r;
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
	       ((__atomic_load_n(&vq->reg.flags, __ATOMIC_RELAXED) & SHIFTU_QP_F_PROTECTED) ||
		__atomic_load_n(&vq->bak_rts, __ATOMIC_RELAXED)) &&
	       __atomic_load_n(&vq->published, __ATOMIC_RELAXED) != 2;
}
