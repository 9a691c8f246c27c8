// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * cqerr.c: an error completion that a poll of the application's CQ meets
 * (cq.h, cq_int.h).
 *
 * The first error of a QP the library can fail over, and what follows it,
 * wait in the stash while the QP fails over, and the application gets
 * what came before it (shiftu_poll_error() on the common path, the slow
 * poll's shiftu_hold_error()).  An error the library would refuse to fail
 * over, or that is the application's own (a bad key, length or opcode),
 * is the application's, as without the library (shiftu_error_vq()).  A
 * receive the peer's message was refused into waits for the peer's
 * verdict (shiftu_refusal_step()).
 */
#include "bell.h"
#include "cq.h"
#include "cq_int.h"
#include "failover.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "provq.h"
#include "shadow.h"
#include "util.h"
#include "window.h"

/* A completion status as a word for the log (ibv_wc_status_str is in
 * libibverbs, which the library does not link). */
const char *shiftu_wc_status_word(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_RETRY_EXC_ERR:	return "transport retry counter exceeded";
	case IBV_WC_RNR_RETRY_EXC_ERR:	return "RNR retry counter exceeded";
	case IBV_WC_WR_FLUSH_ERR:	return "work request flushed";
	case IBV_WC_REM_ACCESS_ERR:	return "remote access error";
	case IBV_WC_LOC_QP_OP_ERR:	return "local QP operation error";
	case IBV_WC_LOC_LEN_ERR:	return "local length error";
	case IBV_WC_REM_INV_REQ_ERR:	return "remote invalid request error";
	case IBV_WC_REM_OP_ERR:		return "remote operation error";
	default:			return "error completion";
	}
}

/*
 * Whether @st says the path or the NIC failed, not the request: the
 * transport gave up, the device did, Soft-RoCE found no route (ip link
 * down), or the QP was flushed after one of those.  Any other error is the
 * application's own (a bad key, length or opcode, a receiver not ready).
 */
static bool path_error(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_WR_FLUSH_ERR:
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_FATAL_ERR:
	case IBV_WC_RESP_TIMEOUT_ERR:
	case IBV_WC_GENERAL_ERR:
		return true;
	default:
		return false;
	}
}

/*
 * A "remote invalid request" of @vq's that is the transport's, not the
 * application's (provq.h): its default QP's responder lost its place in a
 * WRITE or SEND stream it had taken before, which a failover mends as any
 * path fault (the 300-fault soak: 6.1's Soft-RoCE refused chunk 1 of a
 * write_imm message whose chunk 0 it took; no verb of either side's in
 * between; the 1000-fault soak: three 4 KiB SENDs so).  Known only where
 * the provider's ring shows it (SHIFTU_RINGS_PROVIDER).
 */
static bool transport_refusal(struct shiftu_vqp *vq, const struct ibv_wc *wc)
{
	const char *what;

	if (wc->status != IBV_WC_REM_INV_REQ_ERR || vq->rings != SHIFTU_RINGS_PROVIDER ||
	    !vq->psq)
		return false;
	what = shiftu_provq_desync(vq->psq, wc->wr_id);
	if (!what)
		return false;
	shiftu_info("qp %u: %s on %s behind one the peer took: its responder lost its place, the transport's error",
		    vq->reg.app_qp->qp_num, shiftu_wc_status_word(wc->status), what);
	return true;
}

/*
 * How long a refused receive waits for the peer's failover: the peer's
 * library judges its refused SEND once its application polls it, and asks
 * us to follow (in the 1000-fault soak, the peer's request was 3 s behind
 * the refusal, both guests loaded).
 */
#define REFUSAL_WAIT_NS	(10ULL * 1000 * 1000 * 1000)

/*
 * Whether the error completion @wc of @vq's completed one of its receives
 * (provq.h): known only where the provider's rings show it
 * (SHIFTU_RINGS_PROVIDER), and not for an SRQ's receive.
 */
static bool recv_error(const struct shiftu_vqp *vq, const struct ibv_wc *wc)
{
	return vq->rings == SHIFTU_RINGS_PROVIDER && vq->psq && vq->prq &&
	       shiftu_provq_recv_error(vq->psq, vq->prq, wc->wr_id, wc->status);
}

/*
 * Whether @wc says the path or the NIC failed (path_error()), for @vq: a
 * "local QP operation error" on a receive is not the path's but the
 * receive's, too short for the message or its memory not there
 * (Soft-RoCE's RESPST_ERR_MALFORMED_WQE: a SEND of 8 KiB into a receive of
 * 4 KiB gets it, on 6.1 and 6.12), the application's own; on a request,
 * Soft-RoCE says it of a packet it could not send (no route).
 */
static bool qp_path_error(const struct shiftu_vqp *vq, const struct ibv_wc *wc)
{
	if (!path_error(wc->status))
		return false;
	return wc->status != IBV_WC_LOC_QP_OP_ERR || !recv_error(vq, wc);
}

/*
 * Whether @wc is a "remote invalid request" that completed a receive of
 * @vq's default QP (vqpstate.h: @refused_ns), or one already waits.
 */
static bool recv_refusal(struct shiftu_vqp *vq, const struct ibv_wc *wc)
{
	if (__atomic_load_n(&vq->refused_ns, __ATOMIC_RELAXED))
		return true;
	return wc->status == IBV_WC_REM_INV_REQ_ERR && recv_error(vq, wc);
}

/* @vq's refused receive @wc begins its wait for the peer's verdict. */
static void refusal_hold(struct shiftu_vqp *vq, const struct ibv_wc *wc)
{
	if (__atomic_load_n(&vq->refused_ns, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&vq->refused_ns, shiftu_mono_ns(), __ATOMIC_RELEASE);
	shiftu_info("qp %u: %s on a receive: held for the peer's verdict: its responder lost its place if the peer fails over, else the application's error",
		    vq->reg.app_qp->qp_num, shiftu_wc_status_word(wc->status));
	shiftu_shadow_poke();
}

/*
 * The QP of the error completion @wc, polled from @cq, if the library can
 * fail it over, now or once its twin is reset (shiftu_failover_on_error()),
 * or move it onto its twin again as it goes back (shiftu_rejoin()); else
 * NULL: what the library would refuse is left to the application, and so
 * is a default QP the application's own error broke, from that error on
 * (app_stop).
 */
struct shiftu_vqp *shiftu_error_vq(struct shiftu_ctx *s, const struct ibv_cq *cq,
				   const struct ibv_wc *wc)
{
	struct shiftu_vqp *vq = shiftu_vqp_by_num(s, wc->qp_num);
	bool refused = false;

	/* a QP the application stops itself flushes for it, as without us */
	if (!vq || !vq->rings || !vq->scq || !vq->rcq ||
	    __atomic_load_n(&vq->app_stop, __ATOMIC_RELAXED) ||
	    (vq->scq->app != cq && vq->rcq->app != cq))
		return NULL;
	/* its own error stopped it as surely as a move to ERR would have */
	if (vq->state == SHIFTU_SEND_DEFAULT && !shiftu_going_back(vq) &&
	    !qp_path_error(vq, wc) && !transport_refusal(vq, wc)) {
		refused = recv_refusal(vq, wc);
		if (!refused) {
			if (!__atomic_exchange_n(&vq->app_stop, 1, __ATOMIC_RELAXED))
				shiftu_info("qp %u: %s: the application's own error: its errors are its own, not protected any more",
					    vq->reg.app_qp->qp_num, shiftu_wc_status_word(wc->status));
			return NULL;
		}
	}
	if (shiftu_going_back(vq))
		return vq;
	if (vq->state == SHIFTU_SEND_DEFAULT &&
	    (__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE) || shiftu_twin_coming(vq)) &&
	    vq->scq->n_twins < SHIFTU_ARRAY_SIZE(vq->scq->twins) &&
	    vq->rcq->n_twins < SHIFTU_ARRAY_SIZE(vq->rcq->twins)) {
		if (refused)
			refusal_hold(vq, wc);
		return vq;
	}
	return NULL;
}

/*
 * The first error completion of QP @qp_num in @c's stash rings @c's bell
 * for an application asleep on its channel: its errors, held until now,
 * are served.  Context: c->lock held.
 */
static void refusal_wake(struct shiftu_cq *c, uint32_t qp_num)
{
	unsigned int i;

	for (i = 0; i < c->stash_n; i++) {
		const struct ibv_wc *w = &c->stash[(c->stash_head + i) % c->stash_cap];

		if (w->qp_num == qp_num && w->status != IBV_WC_SUCCESS) {
			shiftu_bell_ring(c, w);
			return;
		}
	}
}

bool shiftu_refusal_step(struct shiftu_vqp *vq)
{
	uint64_t t = __atomic_load_n(&vq->refused_ns, __ATOMIC_ACQUIRE);
	bool gave = false;

	if (!t)
		return false;
	if (shiftu_mono_ns() - t < REFUSAL_WAIT_NS)
		return true;
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_lock_cqs(vq->scq, vq->rcq);
	/* not taken by a move meanwhile (the drain clears it) */
	if (__atomic_load_n(&vq->refused_ns, __ATOMIC_RELAXED) == t) {
		__atomic_store_n(&vq->refused_ns, 0, __ATOMIC_RELAXED);
		if (vq->state == SHIFTU_SEND_DEFAULT &&
		    !__atomic_exchange_n(&vq->app_stop, 1, __ATOMIC_RELAXED)) {
			refusal_wake(vq->scq, vq->reg.app_qp->qp_num);
			if (vq->rcq != vq->scq)
				refusal_wake(vq->rcq, vq->reg.app_qp->qp_num);
			gave = true;
		}
	}
	shiftu_unlock_cqs(vq->scq, vq->rcq);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (gave)
		shiftu_info("qp %u: the peer did not fail over %.1f s after its message was refused: the application's own error: its errors are its own, not protected any more",
			    vq->reg.app_qp->qp_num, (shiftu_mono_ns() - t) / 1e9);
	return false;
}

/* Fail @vq over on the error completion @wc a poller met (and stashed);
 * @wait: see shiftu_failover_on_error(). */
void shiftu_error_failover(struct shiftu_vqp *vq, const struct ibv_wc *wc, bool wait)
{
	/* a refused receive waits for the peer's verdict, its QP's errors
	 * with it: the peer's failover moves it (shiftu_refusal_step()) */
	if (__atomic_load_n(&vq->refused_ns, __ATOMIC_ACQUIRE))
		return;
	if (shiftu_failover_on_error(vq, shiftu_wc_status_word(wc->status), wait) &&
	    wc->status == IBV_WC_RETRY_EXC_ERR && vq->has_dgid) {
		/* the transport's verdict on the path: for other processes too */
		__atomic_store_n(&vq->report_down, 1, __ATOMIC_RELAXED);
		shiftu_shadow_poke();
	}
}

/*
 * Completions @wc[0..k) just taken from @c's CQ: the first error of a QP
 * the library can fail over, and what follows it, go to the stash; *@vq
 * gets that QP (else NULL) and *@first the error, for the caller to fail
 * over once it has dropped the lock.  Returns how many completions are
 * left in @wc.  Context: c->lock held.
 */
int shiftu_hold_error(struct shiftu_ctx *s, struct shiftu_cq *c, struct ibv_wc *wc,
		      int k, struct shiftu_vqp **vq, struct ibv_wc *first)
{
	int i, j;

	for (i = 0; i < k; i++)
		if (wc[i].status != IBV_WC_SUCCESS && (*vq = shiftu_error_vq(s, c->app, &wc[i])))
			break;
	if (i == k) {
		*vq = NULL;
		return k;
	}
	for (j = i; j < k; j++)
		if (shiftu_stash_push(c, &wc[j])) {
			/* no memory to hold them: hand everything over as it is */
			c->stash_n -= j - i;
			*vq = NULL;
			return k;
		}
	*first = wc[i];
	cq_slow_ctx(s, true);
	c->slow_leftover++;
	return i;
}

/*
 * An error completion in what the provider returned.  If it is the first
 * error of a QP the library can fail over, everything from it on is
 * stashed, the QP fails over (which takes its other flushed completions
 * out of the stash), and the application gets what came before it now and
 * the rest from the slow poll: if nothing came before, at most @n now (the
 * entries the provider filled; poll_cq may return fewer than asked, and the
 * common path keeps no other size).  Other errors (unprotected QPs, or a
 * QP already on its twin) go to the application unchanged.  Context: the
 * polling thread.  Cold.
 */
int shiftu_poll_error(struct shiftu_ctx *s, struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	struct shiftu_cq *c = shiftu_cq_find(cq);
	struct shiftu_vqp *vq = NULL;
	struct ibv_wc first;
	int i, j, took = n;

	/* the caller counted the receives before the first error, not after */
	for (j = 0; j < n; j++)
		if (wc[j].status != IBV_WC_SUCCESS)
			break;
	shiftu_took(s, wc + j + 1, n > j + 1 ? n - j - 1 : 0);
	/* a bell's completion is never the application's (a drain's markers
	 * may be pending: they are stashed for it with the rest, below) */
	for (i = 0, j = 0; i < n; i++)
		if (shiftu_wrid_kind(wc[i].wr_id) != SHIFTU_WRID_BELL)
			wc[j++] = wc[i];
	n = j;
	if (c) {
		/* the error and what follows it wait in the stash: the
		 * failover counts the errors there, and what it leaves is
		 * served in order.  Not the quiet lock: a drain waits for
		 * this poller's window. */
		shiftu_lock(&c->lock, SHIFTU_LOCK_CQ);
		n = shiftu_hold_error(s, c, wc, n, &vq, &first);
		shiftu_unlock(&c->lock, SHIFTU_LOCK_CQ);
	}
	/* the library's own requests, flushed with the QP or not, are not
	 * shown (those among the stashed are the drain's) */
	n = shiftu_drop_ours(s, wc, n);
	if (!vq)
		return n;
	/* handed over: a drain need not wait for us (we may wait for it) */
	shiftu_poll_leave();
	shiftu_error_failover(vq, &first, true);
	if (n)
		return n;
	/* not shiftu_poll_cq_slow(): the caller gives the ids back, once */
	return shiftu_poll_slow(s, cq, took, wc);
}
