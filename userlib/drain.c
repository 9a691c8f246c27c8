// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * drain.c: stopping the QP a move leaves and draining it (failover_int.h):
 * a batch or a polling session that would hold the drain left the move,
 * the threads inside a data verb waited out, the QP moved to ERR, a
 * marker posted behind each queue, and its CQs polled up to both, the
 * flushed work requests collected and counted.
 */
#include <errno.h>
#include <unistd.h>

#include "cq.h"
#include "cqex.h"
#include "failover_int.h"
#include "handshake.h"
#include "interpose.h"
#include "log.h"
#include "provq.h"
#include "quiesce.h"
#include "real.h"
#include "shadow.h"
#include "testbuild.h"
#include "util.h"
#include "wrapi.h"

/*
 * How long a drain waits for the QP's flushes before it leaves the QP
 * unprotected: DRAIN_NS since it last took one (or since its markers were
 * posted), and DRAIN_KICKS kicks at least in that time.  A NIC flushes in
 * microseconds; Soft-RoCE flushes in its tasklets, which a guest CPU that
 * 64 polling threads keep busy runs late: the lab saw a twin's drain take
 * 5.8 s as 64 QPs went back together.  The drain's own thread waits for
 * that CPU too: one stalled 13 s before its first look, which found the
 * send marker; its next look, 64 us and one kick later, found the
 * receive marker not yet flushed, and a deadline counted from the start
 * gave the QP up there, with its failback granted (many_gen.sh).
 */
#define DRAIN_NS	(10ULL * 1000 * 1000 * 1000)
#define DRAIN_KICKS	10
#define KICK_NS		(100ULL * 1000 * 1000)
#define SLOW_DRAIN_NS	(500ULL * 1000 * 1000)	/* a drain this long says why */
#define QUIESCE_NS	(200ULL * 1000 * 1000)
#define QUIESCE_MAX_S	5

/*
 * What a drain has collected so far (shiftu_drain()): with separate send and
 * receive CQs, @n_recv of the @n flushed came from the receive CQ.
 */
struct drain_state {
	struct drained_wc *flushed;
	unsigned int n, max, n_recv;
	bool smark, rmark, stuck;
	/* completions another drain handed over (twin_handover()), and what
	 * drain_take() said of them */
	unsigned int handed;
	int err;
	/* for a slow drain's line: when each marker came, since the start */
	uint64_t t0, smark_ns, rmark_ns;
	unsigned int kicks, polls;
	/* kicks since the drain last took a completion of the QP's */
	unsigned int idle_kicks;
};

/* What the drain has taken so far: it moves while the QP flushes. */
static unsigned int drain_taken(const struct drain_state *d)
{
	return d->n + d->smark + d->rmark + d->handed;
}

/*
 * Whether the drain gives up: the QP has flushed nothing for DRAIN_NS,
 * and it was kicked DRAIN_KICKS times meanwhile.  A drain whose thread
 * did not run (a starved CPU) has not waited, however late it is.
 * *@deadline and *@taken move on with each completion it took.
 */
static bool drain_expired(struct drain_state *d, uint64_t *deadline, unsigned int *taken)
{
	uint64_t now = shiftu_mono_ns();

	if (drain_taken(d) != *taken) {
		*taken = drain_taken(d);
		*deadline = now + DRAIN_NS;
		d->idle_kicks = 0;
		return false;
	}
	return now > *deadline && d->idle_kicks >= DRAIN_KICKS;
}

/*
 * An error completion of the QP being drained: one of the library's
 * markers, a control message of its own, or a flushed request of the
 * application's.  Returns 0 or -EOVERFLOW.
 */
static int drain_take(struct shiftu_vqp *vq, bool twin, struct drain_state *d,
		      const struct shiftu_cq *c, const struct ibv_wc *wc)
{
	bool rcq = c == vq->rcq && c != vq->scq;

	switch (shiftu_wrid_kind(wc->wr_id)) {
	case SHIFTU_WRID_MARKER:
		d->smark = true;
		d->smark_ns = shiftu_mono_ns() - d->t0;
		break;
	case SHIFTU_WRID_RMARKER:
		d->rmark = true;
		d->rmark_ns = shiftu_mono_ns() - d->t0;
		break;
	case SHIFTU_WRID_CTRL_RECV:
	case SHIFTU_WRID_CTRL_DEF:
		shiftu_ctrl_recv_check(wc);
		if (twin)
			vq->ctrl_rq = 0;
		break;
	case SHIFTU_WRID_APP:
	case SHIFTU_WRID_RENAMED:	/* the application's, under our id (rename.h) */
		if (d->n == d->max)
			return -EOVERFLOW;
		d->flushed[d->n++] = (struct drained_wc){ .wc = *wc, .rcq = rcq };
		d->n_recv += rcq;
		break;
	case SHIFTU_WRID_SRQ:
		/* the receive the NIC took from the SRQ for a message cut short */
		if (d->n == d->max)
			return -EOVERFLOW;
		d->flushed[d->n++] = (struct drained_wc){ .wc = *wc, .rcq = rcq, .srq = true };
		break;
	case SHIFTU_WRID_CTRL_SEND:
		if (!twin)
			shiftu_ctrl_send_done(vq, false);
		break;
	default:
		/* a probe of ours: no request of the application's */
		break;
	}
	return 0;
}

/*
 * A twin's error completion @wc met on @c by the drain of another twin:
 * when it is of a third QP whose twin's drain is under way too (two QPs
 * that share a CQ going back side by side: each drain drops the CQs'
 * locks now and then, and the other polls meanwhile), it is that drain's
 * (a marker, a flush), handed to it; true then.  Context: @c's lock.
 */
static bool twin_handover(struct shiftu_cq *c, const struct ibv_wc *wc)
{
	struct shiftu_vqp *o;
	unsigned int j;
	int ret;

	for (j = 0; j < c->n_twins; j++) {
		o = c->twins[j];
		if (o->bak_qp->qp_num != wc->qp_num)
			continue;
		if (!o->twin_drain)
			return false;
		o->twin_drain->handed++;
		ret = drain_take(o, true, o->twin_drain, c, wc);
		if (ret && !o->twin_drain->err)
			o->twin_drain->err = ret;
		return true;
	}
	return false;
}

/*
 * Move the default QP's error completions out of its CQs' stashes, where a
 * poller put them, through drain_take(), keeping everything else in order.
 * Returns 0 or -EOVERFLOW.
 */
static int unstash_errors(struct shiftu_vqp *vq, struct drain_state *d)
{
	struct shiftu_cq *cqs[2] = { vq->scq, vq->rcq }, *c;
	uint32_t qp_num = vq->reg.app_qp->qp_num;
	unsigned int i, j, kept, total;
	struct ibv_wc w;
	int ret = 0;

	for (j = 0; j < 2 && !(j && cqs[1] == cqs[0]); j++) {
		c = cqs[j];
		total = c->stash_n;
		for (i = 0, kept = 0; i < total; i++) {
			w = c->stash[(c->stash_head + i) % c->stash_cap];
			if (!ret && w.qp_num == qp_num && w.status != IBV_WC_SUCCESS)
				ret = drain_take(vq, false, d, c, &w);
			else
				c->stash[(c->stash_head + kept++) % c->stash_cap] = w;
		}
		c->stash_n = kept;
	}
	/* a refused receive's wait for the peer's verdict ends with the move */
	__atomic_store_n(&vq->refused_ns, 0, __ATOMIC_RELAXED);
	return ret;
}

/*
 * A twin that failed under its work: the error completions a poller held
 * for the drain that goes back (cqtwin.c: twin_hold()), which came before
 * any the drain polls, go through drain_take().  The hold is empty after,
 * and the twin sound once renewed.  Returns 0 or -EOVERFLOW.
 */
static int take_held(struct shiftu_vqp *vq, struct drain_state *d)
{
	struct shiftu_cq *cqs[2] = { vq->scq, vq->rcq };
	unsigned int i, j;
	int ret = 0;

	for (j = 0; j < 2; j++) {
		for (i = 0; i < vq->tw_held_n[j] && !ret; i++)
			ret = drain_take(vq, true, d, cqs[j], &vq->tw_held[j][i]);
		vq->tw_held_n[j] = 0;
	}
	__atomic_store_n(&vq->twin_dead_ns, 0, __ATOMIC_RELAXED);
	return ret;
}

/*
 * Wait out the threads a move of @vq overtook inside a data verb
 * (quiesce.h): usually at once, else up to QUIESCE_MAX_S with a line
 * saying so.  A thread held longer (stopped, or starved of CPU) leaves the
 * move nothing it can trust: a post may yet land behind the drain's
 * marker, a poll may hold completions the count lacks.  Then false, with
 * a line saying so, and the QP is left unprotected, its errors going to
 * the application, rather than have its work lost or done twice.  (While
 * that thread stays where it is, the next move gives up at once:
 * shiftu_quiesce() remembers it.)  Context: fo_lock, no CQ lock.
 */
bool shiftu_fo_quiesce(struct shiftu_vqp *vq)
{
	if (shiftu_quiesce(QUIESCE_NS, false))
		return true;
	shiftu_info("qp %u on %s: a thread is still inside a data verb the move overtook: waiting for it",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name);
	if (shiftu_quiesce(QUIESCE_MAX_S * 1000000000ULL, true))
		return true;
	shiftu_warn("qp %u on %s: a thread stayed inside a data verb for %d s or more: its work cannot be moved safely: unprotected",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, QUIESCE_MAX_S);
	return false;
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
 * to the poster, 0 if none is open, or -EBUSY when shiftu_fo_quiesce()
 * gave up.  Context: fo_lock, no CQ lock.
 */
int shiftu_batch_open(struct shiftu_vqp *vq, const char *why)
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
 * QP).  As for a batch (shiftu_batch_open()): the context's polls are
 * made slow, under which no session starts direct, the move left to the
 * sessions of @vq's CQs (with a hold of the slow polls, @vq->poll_hold)
 * and the verbs in flight waited out; then, if a direct session is still
 * open on one of them, its end makes the move.  Otherwise the move is
 * ours, and the polls stay slow (*@held) until the caller's move holds
 * them itself.  Returns 1 if the move is left to a session, 0 if not, or
 * -EBUSY when shiftu_fo_quiesce() gave up.  Context: fo_lock, no CQ lock.
 */
int shiftu_polls_open(struct shiftu_vqp *vq, const char *why, bool *held)
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

/* The QP a move leaves or goes to: the application's, or its twin. */
static struct ibv_qp *side_qp(const struct shiftu_vqp *vq, bool twin)
{
	return twin ? vq->bak_qp : vq->reg.app_qp;
}

static int side_poll(struct shiftu_vqp *vq, struct shiftu_cq *c, bool twin, int n,
		     struct ibv_wc *wc)
{
	return twin ? c->bak->context->ops.poll_cq(c->bak, n, wc) :
		      vq->sctx->poll_cq(c->app, n, wc);
}

/*
 * Stop @qp, the QP a drain leaves, and post a marker behind each of its
 * queues.  Returns 0 or -errno.  Context: as drain_locked().
 */
static int drain_stop(struct shiftu_vqp *vq, struct ibv_qp *qp, bool twin, struct drain_state *d)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_send_wr m = { .wr_id = MARKER_WR_ID, .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_recv_wr rm = { .wr_id = RMARKER_WR_ID }, *rbad;
	int ret;

	/*
	 * On an error completion the NIC has stopped the QP already; the
	 * modify then only confirms it.  Error completions of the QP that a
	 * poller stashed (the first error and those after it, or ones a
	 * poller met while another thread started this move) are part of
	 * the count; so are those a twin that failed had held.
	 */
	ret = twin ? take_held(vq, d) : unstash_errors(vq, d);
	if (ret < 0)
		return ret;
	ret = shiftu_real.modify_qp(qp, &a, IBV_QP_STATE);
	if (ret)
		return -ret;
	/*
	 * SHIFTU_TEST_DRAIN_STALL_MS: as a thread that waits for the CPU
	 * here, while Soft-RoCE's tasklets that the stop scheduled run (a
	 * receive marker posted after them waits for the next kick)
	 */
	if (twin && shiftu_test_drain_stall_ms())
		usleep(shiftu_test_drain_stall_ms() * 1000U);
	/* where the application's requests end in the provider's rings */
	if (!twin && vq->rings == SHIFTU_RINGS_PROVIDER)
		shiftu_provq_mark(vq);
	/* the provider's own: the application's context's ops are ours */
	ret = twin ? qp->context->ops.post_send(qp, &m, &bad) : vq->post_send(qp, &m, &bad);
	if (ret)
		return -ret;
	if (!d->rmark) {
		ret = twin ? qp->context->ops.post_recv(qp, &rm, &rbad) :
			     vq->post_recv(qp, &rm, &rbad);
		if (ret)
			return -ret;
	}
	return 0;
}

/*
 * One poll of @c by the drain of @qp: its error completions taken
 * (drain_take()), everything else kept in order in @c's stash or handed
 * on (drain_locked()).  *@none: the poll found nothing.  Returns 0 or
 * -errno.  Context: as drain_locked().
 */
static int drain_poll(struct shiftu_vqp *vq, struct ibv_qp *qp, bool twin,
		      struct drain_state *d, struct shiftu_cq *c, bool *none,
		      struct shiftu_hs_msg *msgs, int *n_msgs)
{
	struct ibv_wc wc[16];
	int k, i, kept, ret;

	k = side_poll(vq, c, twin, SHIFTU_ARRAY_SIZE(wc), wc);
	if (k < 0)
		return -EIO;
	*none &= !k;
	if (!twin) {
		/* a peer's message, a probe: not the application's */
		k = shiftu_app_own(c, wc, k, msgs, n_msgs);
		shiftu_took(vq->sctx, wc, k);
	}
	for (i = 0, kept = 0; i < k; i++) {
		if (wc[i].status == IBV_WC_SUCCESS) {
			wc[kept++] = wc[i];
			continue;
		}
		if (wc[i].qp_num != qp->qp_num) {
			if (!twin || !twin_handover(c, &wc[i]))
				wc[kept++] = wc[i];
			continue;
		}
		ret = drain_take(vq, twin, d, c, &wc[i]);
		if (ret)
			return ret;
	}
	if (twin)
		kept = shiftu_twin_take(c, wc, kept, msgs, n_msgs);
	for (i = 0; i < kept; i++)
		if (shiftu_stash_push(c, &wc[i]))
			return -ENOMEM;
	return 0;
}

/*
 * Stop the QP a move leaves (the default one, or the twin when going back)
 * and collect its error completions: every send and receive work request
 * it still held is flushed, in order, each queue up to a marker the
 * library posts behind them.  The flushed completions of the two queues
 * cannot be told apart (their opcode is undefined), but their numbers can:
 * the receives outstanding are those posted and not completed, which the
 * library counts (@vq->consumed); the rest were sends.  @flushed gets the
 * error completions and *@got their number, also when the drain fails, so
 * that none is lost; the library's control messages are not among them.
 * Good completions met on the way are kept for the application (a twin's
 * renamed); control messages of other QPs go to @msgs; another twin's
 * error completions, while its own drain is under way too, go to that
 * drain (twin_handover()).  Returns 0 or -errno.  Context: fo_lock and
 * both CQs' locks held; the CQs are marked draining (their slow polls
 * leave the application's CQ alone), and their locks are dropped now and
 * then: a poller that took some of the QP's completions before the move
 * began must be let stash them.
 */
static int drain_locked(struct shiftu_vqp *vq, bool twin, struct drain_state *d,
			struct shiftu_hs_msg *msgs, int *n_msgs)
{
	struct ibv_qp *qp = side_qp(vq, twin);
	struct shiftu_cq *cqs[2] = { vq->scq, vq->rcq };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	uint64_t t0 = d->t0, deadline, kick;
	unsigned int j, taken;
	int ret;

	ret = drain_stop(vq, qp, twin, d);
	if (ret)
		return ret;
	/* counted from here: stopping the QP and posting may have stalled */
	kick = shiftu_mono_ns();
	deadline = kick + DRAIN_NS;
	taken = drain_taken(d);
	while (!d->smark || !d->rmark) {
		bool none = true;

		if (d->err)
			return d->err;

		/*
		 * A receive posted to a QP in error is only flushed when the
		 * responder runs, and a userspace post does not wake it
		 * (Soft-RoCE): the move to ERR, again, does, and wakes the
		 * requester and completer too.
		 */
		if (shiftu_mono_ns() >= kick) {
			shiftu_real.modify_qp(qp, &a, IBV_QP_STATE);
			kick = shiftu_mono_ns() + KICK_NS;
			d->kicks++;
			d->idle_kicks++;
		}
		d->polls++;
		for (j = 0; j < 2; j++) {
			if (j && cqs[1] == cqs[0])
				break;
			ret = drain_poll(vq, qp, twin, d, cqs[j], &none, msgs, n_msgs);
			if (ret)
				return ret;
		}
		if (none) {
			if (drain_expired(d, &deadline, &taken))
				return -ETIMEDOUT;
			/* a poller waiting to stash what it took from us */
			shiftu_unlock_cqs(cqs[0], cqs[1]);
			shiftu_wait_step(shiftu_mono_ns() - t0);
			shiftu_lock_cqs(cqs[0], cqs[1]);
			ret = twin ? 0 : unstash_errors(vq, d);
			if (ret < 0)
				return ret;
		}
	}
	/*
	 * A poller of the application's may have taken some of the QP's
	 * flushes ahead of our markers and still be on its way to stash
	 * them (it waits for these locks): it is inside its window
	 * (quiesce.h), and what it stashes is counted instead of reaching
	 * the application as errors once the move is done.  (Only the
	 * application polls the default QP's CQs; a twin's are the
	 * library's.)
	 */
	if (!twin) {
		shiftu_unlock_cqs(cqs[0], cqs[1]);
		d->stuck = !shiftu_fo_quiesce(vq);
		shiftu_lock_cqs(cqs[0], cqs[1]);
		if (d->stuck)
			return -EBUSY;
		ret = unstash_errors(vq, d);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * *@n_recv: how many of the *@got flushed were receives, when the QP's two
 * CQs tell them apart (else -1); *@stuck: it failed because a thread
 * stayed inside a data verb (shiftu_fo_quiesce() said so).
 */
int shiftu_drain(struct shiftu_vqp *vq, bool twin, struct drained_wc *flushed,
		 unsigned int max, int *got, int *n_recv, bool *stuck,
		 struct shiftu_hs_msg *msgs, int *n_msgs)
{
	struct drain_state d = {
		.flushed = flushed, .max = max, .t0 = shiftu_mono_ns(),
		/* an SRQ's receives are not flushed: no marker behind them */
		.rmark = !vq->init_attr.cap.max_recv_wr || vq->init_attr.srq,
	};
	int ret;

	vq->scq->draining++;
	vq->rcq->draining++;
	if (twin)
		vq->twin_drain = &d;
	ret = drain_locked(vq, twin, &d, msgs, n_msgs);
	vq->twin_drain = NULL;
	vq->scq->draining--;
	vq->rcq->draining--;
	if (shiftu_mono_ns() - d.t0 > SLOW_DRAIN_NS)
		shiftu_info("qp %u on %s: a slow drain of its %s QP: %.3f ms, send marker after %.3f ms, receive marker after %.3f ms, %u polls, %u kicks, %u completions from another drain",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, twin ? "backup" : "default",
			    (shiftu_mono_ns() - d.t0) / 1e6, d.smark_ns / 1e6, d.rmark_ns / 1e6,
			    d.polls, d.kicks, d.handed);
	else if (d.handed)
		shiftu_dbg("qp %u on %s: its backup QP's drain: %u completions from another drain",
			   vq->reg.app_qp->qp_num, vq->sctx->dev_name, d.handed);
	*got = (int)d.n;
	*n_recv = vq->scq != vq->rcq ? (int)d.n_recv : -1;
	*stuck = d.stuck;
	return ret;
}
