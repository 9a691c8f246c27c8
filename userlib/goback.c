// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * goback.c: going back to the default QP (SHIFT paper 4.3.3): the probes
 * of the repaired path, a one-sided failback's fence and the release of
 * the sends it held, the two-sided failback started, and a failback cut
 * short (rejoin) or cancelled.
 */
#include <inttypes.h>
#include <string.h>

#include "cq.h"
#include "failover.h"
#include "failover_int.h"
#include "handshake.h"
#include "interpose.h"
#include "lock.h"
#include "log.h"
#include "mailbox.h"
#include "proto.h"
#include "serial.h"
#include "shadow.h"
#include "util.h"

bool shiftu_going_back(const struct shiftu_vqp *vq)
{
	return __atomic_load_n(&vq->state, __ATOMIC_RELAXED) == SHIFTU_SEND_HANDSHAKE &&
	       !__atomic_load_n(&vq->on_twin, __ATOMIC_RELAXED);
}

bool shiftu_awaits_default(const struct shiftu_vqp *vq)
{
	return __atomic_load_n(&vq->ctrl_default, __ATOMIC_RELAXED) &&
	       (__atomic_load_n(&vq->on_twin, __ATOMIC_RELAXED) ||
		__atomic_load_n(&vq->state, __ATOMIC_RELAXED) == SHIFTU_SEND_HANDSHAKE);
}

/*
 * A failback cut short: we went back, and the default QP failed before
 * the peer's count came (our own may never have reached it).  The peer
 * may still be on its twin as it was, or back on its default QP, or on its
 * renewed twin: the work goes onto our twin, renewed when we left it, and
 * waits there for the peer's count.  The shadow thread asks the peer to
 * join (rejoin_ask): the peer renews its twin if it is the old one, and
 * speaks first.  Context: the shadow thread, vq->lock held.
 */
void shiftu_rejoin(struct shiftu_vqp *vq, const char *why)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	enum fo_result r = FO_NONE;
	int n_msgs = 0;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (shiftu_going_back(vq)) {
		r = shiftu_move_locked(vq, MOVE_REJOIN, true, why, msgs, &n_msgs);
		if (!shiftu_going_back(vq) && vq->state == SHIFTU_SEND_HANDSHAKE) {
			/* nothing said on the twin: the peer's count is answered */
			vq->hs_sent = 0;
			vq->ctrl_default = 0;
			vq->rejoin_ask = 1;
		}
	}
	__atomic_store_n(&vq->rejoin_want, 0, __ATOMIC_RELAXED);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_fo_report(vq, r);
	shiftu_moved_deliver(vq, msgs, n_msgs);
}

/*
 * The peer asks us to join its renewed twin (shiftu_rejoin()).  Our twin
 * may still be joined to the peer's old one (a failback we granted, and
 * whose message never came): the work on it moves onto it renewed, and we
 * speak first.  Back on our default QP, we fail over as if the peer had
 * told us on its twin.  Already on a renewed twin, we have spoken, or
 * will: nothing to do.  Context: the shadow thread, vq->lock held.
 */
void shiftu_rejoin_serve(struct shiftu_vqp *vq)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	enum fo_result r = FO_NONE;
	int n_msgs = 0;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (vq->state == SHIFTU_SEND_DEFAULT) {
		if (!__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE))
			shiftu_twin_renew(vq);
		r = shiftu_move_locked(vq, MOVE_OVER, false, "the peer went back to its twin",
				       msgs, &n_msgs);
	} else if (vq->on_twin && vq->tw_old) {
		vq->hs_sent = vq->hs_got = 0;
		vq->ctrl_default = 0;
		vq->fb_grant_open = 0;
		r = shiftu_move_locked(vq, MOVE_REJOIN, false, "the peer renewed its twin", msgs,
				       &n_msgs);
	} else {
		shiftu_dbg("qp %u: the peer asks to join its renewed twin: joined already",
			   vq->reg.app_qp->qp_num);
	}
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_fo_report(vq, r);
	shiftu_moved_deliver(vq, msgs, n_msgs);
}

/*
 * The peer, going back by the failback we granted (its request
 * @granted), has not heard from us, and asks us through the store to
 * cancel it.  The cancel wins over a grant not acted on yet: our default
 * QP stops waiting for the peer's message (one already come, or polled
 * and waiting for fo_lock, is dropped as stale), and the work on our twin,
 * still joined to the peer's old one, moves onto it renewed, where we speak
 * first; the peer, still going back, takes that for a failover and
 * follows us onto the twins (SHIFTU_HS_REJOIN).  A grant we followed
 * already is not undone: our answer is on its way to the peer's default
 * QP, where the peer still listens.  A cancel of another failback than
 * the one open (an older one, taken late from the store) changes nothing.
 * Context: the shadow thread, vq->lock held.
 */
void shiftu_cancel_serve(struct shiftu_vqp *vq, uint32_t granted)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	struct shiftu_fb_cancel_in in;
	enum fo_result r = FO_NONE;
	int n_msgs = 0;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	in = (struct shiftu_fb_cancel_in){
		.state = vq->state,
		.on_twin = vq->on_twin,
		.tw_old = vq->tw_old,
		.expected = vq->ctrl_default,
		.open = vq->fb_grant_open,
		.same = vq->fb_granted == granted,
	};
	if (shiftu_fb_cancel_wins(&in)) {
		shiftu_info("qp %u on %s: the peer cancels its failback (its request %u): joining its renewed twin",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, granted);
		vq->fb_grant_open = 0;
		vq->hs_sent = vq->hs_got = 0;
		vq->ctrl_default = 0;
		r = shiftu_move_locked(vq, MOVE_REJOIN, false, "the peer cancelled its failback",
				       msgs, &n_msgs);
	} else {
		shiftu_dbg("qp %u: the peer cancels its failback (its request %u): %s",
			   vq->reg.app_qp->qp_num, granted,
			   in.same && !in.open ?
				   "followed already, our answer is on its way" :
				   "not the one open: nothing to do");
	}
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_fo_report(vq, r);
	shiftu_moved_deliver(vq, msgs, n_msgs);
}

void shiftu_twin_dead_give_up(struct shiftu_vqp *vq, const char *why)
{
	struct shiftu_cq *cqs[2] = { vq->scq, vq->rcq };
	uint64_t dead = 0;
	unsigned int i, j, n = 0;
	struct ibv_wc wc;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_lock_cqs(vq->scq, vq->rcq);
	if (vq->state == SHIFTU_SEND_FALLBACK && vq->on_twin)
		dead = __atomic_load_n(&vq->twin_dead_ns, __ATOMIC_RELAXED);
	if (dead) {
		/* in the order they came, as the twin's that cannot go back */
		for (j = 0; j < 2; j++) {
			for (i = 0; i < vq->tw_held_n[j]; i++) {
				wc = vq->tw_held[j][i];
				wc.qp_num = vq->reg.app_qp->qp_num;
				shiftu_stash_push(cqs[j], &wc);
			}
			n += vq->tw_held_n[j];
			vq->tw_held_n[j] = 0;
		}
		__atomic_store_n(&vq->twin_dead_ns, 0, __ATOMIC_RELAXED);
		shiftu_go_dead(vq, NULL, 0, vq->sq.head);
	}
	shiftu_unlock_cqs(vq->scq, vq->rcq);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (!dead)
		return;
	shiftu_warn("qp %u on %s: its twin failed %.1f s ago and %s: the application gets its %u errors: unprotected",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, (shiftu_mono_ns() - dead) / 1e9,
		    why, n);
	shiftu_fo_report(vq, FO_DEAD);
}

void shiftu_switch_back(struct shiftu_vqp *vq)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	enum fo_result r;
	int n_msgs = 0;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	vq->hs_sent = vq->hs_got = 0;		/* a new exchange */
	r = shiftu_move_locked(vq, MOVE_BACK, false, "its port is back", msgs, &n_msgs);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_fo_report(vq, r);
	shiftu_moved_deliver(vq, msgs, n_msgs);
}

/*
 * The twin has completed everything it was given: ring the default QP's
 * doorbell for the requests held since the fence, and go back to it.
 * Returns true when it did (the caller emits SHIFTU_EV_FAILBACK once it has
 * dropped fo_lock: the callback may call verbs).  Context: fo_lock held.
 */
static bool release_held(struct shiftu_vqp *vq)
{
	struct shiftu_cq *c = vq->scq;
	struct ibv_send_wr w, *bad;
	uint64_t i, held = vq->sq.head - vq->held_start;
	int ret = 0;

	for (i = vq->held_start; i < vq->sq.head && !ret; i++) {
		shiftu_swqe_wr(shiftu_swqe_at(&vq->sq, i), &w);
		ret = vq->post_send(vq->reg.app_qp, &w, &bad);
	}
	shiftu_lock_cqs(c, vq->rcq);
	shiftu_twins_leave(vq);
	shiftu_unlock_cqs(c, vq->rcq);
	vq->state = ret ? SHIFTU_SEND_DEAD : SHIFTU_SEND_DEFAULT;
	shiftu_qp_set_send_state(&vq->reg, SHIFTU_SEND_DEFAULT);
	shiftu_qp_set_recv_state(&vq->reg, SHIFTU_RECV_DEFAULT);
	/*
	 * The next failover is a new exchange: the twin needs a control
	 * receive at its head again (it holds no receive of the
	 * application's: a QP with receives on its twin does not fail back).
	 */
	vq->rx_moved = 0;
	vq->on_twin = 0;
	vq->hs_sent = vq->hs_got = 0;
	/* the twin completed everything before the fence: a gap's READs too */
	vq->sq_gap.lo = vq->sq_gap.hi = vq->held_start;
	if (!vq->ctrl_rq && !shiftu_ctrl_recv(vq, true))
		vq->ctrl_rq = 1;
	__atomic_store_n(&vq->back_ns, shiftu_mono_ns(), __ATOMIC_RELAXED);
	vq->down = shiftu_port_down_now(vq);
	vq->down_path = 0;
	shiftu_vqp_set_slow(vq, vq->down, __ATOMIC_RELAXED);
	if (ret) {
		shiftu_warn("qp %u on %s: cannot post the held requests after failing back: %s",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(ret));
		return false;
	}
	__atomic_fetch_add(&vq->reg.failbacks, 1, __ATOMIC_RELAXED);
	shiftu_info("qp %u on %s: failed back from %s, %" PRIu64 " held requests released",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->sctx->bak_name, held);
	return true;
}

/*
 * Release the held requests if the twin has drained: true when @vq went
 * back (the caller reports FO_BACK once it has dropped fo_lock).
 * Context: fo_lock held.
 */
bool shiftu_release_drained(struct shiftu_vqp *vq)
{
	return vq->state == SHIFTU_SEND_WAIT_DRAINED &&
	       shiftu_seq64_le(vq->twin_signaled, __atomic_load_n(&vq->twin_done, __ATOMIC_RELAXED)) &&
	       release_held(vq);
}

void shiftu_try_drain(struct shiftu_vqp *vq)
{
	bool back;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	back = shiftu_release_drained(vq);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (back)
		shiftu_fo_report(vq, FO_BACK);
}

/*
 * Aim the empty probe @p at memory the application writes to, with its
 * key, so that the responder takes its ordinary path (nothing is written:
 * the length is zero).  A QP that reads probes with an empty READ instead
 * (its peer grants remote reads): Soft-RoCE 6.1 keeps its completer's last
 * READ-response opcode across a reset, so after a failover in the middle
 * of a multi-packet READ response it takes the next ACK as out of sequence
 * (a WARN at rxe_comp.c:756, and the QP fails again), while a READ's
 * single response is accepted in any state and clears it.  Returns false
 * when the ring holds neither: the peer may grant no remote access at all
 * (ibv_rc_pingpong), and Soft-RoCE refuses even an empty WRITE then (it
 * checks the QP's access flags before the length).  A peer on an SRQ has
 * a mailbox, which its reset QP grants remote writes to (box.c): the probe
 * is aimed there.
 */
static bool probe_aim(struct shiftu_vqp *vq, struct ibv_send_wr *p)
{
	uint64_t i0;

	/* a peer on an SRQ grants remote writes to its mailbox (box.c) */
	if (vq->peer.box_rkey[SHIFTU_BOX_DEFAULT]) {
		p->opcode = IBV_WR_RDMA_WRITE;
		p->wr.rdma.remote_addr = vq->peer.box_addr[SHIFTU_BOX_DEFAULT];
		p->wr.rdma.rkey = vq->peer.box_rkey[SHIFTU_BOX_DEFAULT];
		return true;
	}

	for (i0 = vq->sq.head; i0 > vq->sq.head - vq->sq.mask - 1 && i0 > 0; i0--) {
		const struct shiftu_swqe *e = shiftu_swqe_at(&vq->sq, i0 - 1);

		if (e->opcode == IBV_WR_RDMA_WRITE || e->opcode == IBV_WR_RDMA_READ) {
			p->opcode = e->opcode;
			p->wr.rdma.remote_addr = e->remote_addr;
			p->wr.rdma.rkey = e->rkey;
			return true;
		}
	}
	return false;
}

bool shiftu_probe_by_send(struct shiftu_vqp *vq)
{
	struct ibv_send_wr p = { .opcode = IBV_WR_RDMA_WRITE };

	return !probe_aim(vq, &p);
}

/*
 * The default QP was reconnected: send an empty WRITE (or READ) through
 * it, or with @by_send an empty SEND into the control receive the peer
 * posted for it (handshake.h).  Only a working path in both directions
 * completes it; shiftu_probe_step() looks for that.  Returns false when
 * it could not be posted.  Context: the shadow thread.
 */
bool shiftu_probe(struct shiftu_vqp *vq, bool by_send)
{
	struct ibv_send_wr p = { .wr_id = PROBE_WR_ID, .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (by_send)
		p.opcode = IBV_WR_SEND;
	else
		probe_aim(vq, &p);
	vq->probe_state = 1;
	if (vq->post_send(vq->reg.app_qp, &p, &bad))
		return false;
	shiftu_dbg("qp %u: probe posted (%s)", vq->reg.app_qp->qp_num,
		   by_send ? "an empty SEND" : p.opcode == IBV_WR_RDMA_READ ? "an empty READ" :
		   "an empty WRITE");
	return true;
}

/*
 * Whether @vq's probe has completed: the application's slow polls take its
 * completion (shiftu_app_own()); so does one poll of the send CQ here, for
 * an application that polls nothing.  Returns the probe's state.  It does
 * not wait: the shadow thread probes every QP that is ready at once, and
 * one slow probe (a second beside 64 polling threads on the lab's one
 * CPU) no longer holds up the others.  Context: the shadow thread.
 */
int shiftu_probe_step(struct shiftu_vqp *vq)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	struct shiftu_cq *c = vq->scq;
	struct ibv_wc wc[16];
	int k, i, n_msgs = 0;

	if (vq->probe_state != 1)
		return vq->probe_state;
	shiftu_cq_lock_quiet(c);
	k = vq->sctx->poll_cq(c->app, SHIFTU_ARRAY_SIZE(wc), wc);
	if (k > 0) {
		/* the probe's completion, and a peer's message, taken out */
		k = shiftu_app_own(c, wc, k, msgs, &n_msgs);
		shiftu_took(vq->sctx, wc, k);
	}
	for (i = 0; i < k; i++)
		shiftu_stash_push(c, &wc[i]);
	shiftu_unlock(&c->lock, SHIFTU_LOCK_CQ);
	shiftu_hs_deliver(msgs, n_msgs);
	shiftu_hs_unpark(c);
	return vq->probe_state;
}

void shiftu_probe_fence(struct shiftu_vqp *vq)
{
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (vq->state == SHIFTU_SEND_FALLBACK) {
		vq->state = SHIFTU_SEND_WAIT_SIGNALED;
		shiftu_qp_set_send_state(&vq->reg, SHIFTU_SEND_WAIT_SIGNALED);
	}
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
}

void shiftu_back_due(struct shiftu_vqp *vq)
{
	__atomic_store_n(&vq->back_due_ns, shiftu_mono_ns(), __ATOMIC_RELEASE);
	__atomic_store_n(&vq->scq->back_due, true, __ATOMIC_RELEASE);
	__atomic_store_n(&vq->rcq->back_due, true, __ATOMIC_RELEASE);
}

bool shiftu_take_back(struct shiftu_vqp *vq)
{
	uint8_t none = 0;

	if (!__atomic_compare_exchange_n(&vq->back_taken, &none, 1, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return false;
	/* taken before it stops being due: shiftu_back_pending() sees one */
	if (!__atomic_exchange_n(&vq->back_due_ns, 0, __ATOMIC_ACQ_REL)) {
		__atomic_store_n(&vq->back_taken, 0, __ATOMIC_RELEASE);
		return false;
	}
	shiftu_switch_back(vq);
	/* back (its state says so), or not going: either way no longer taken */
	__atomic_store_n(&vq->back_taken, 0, __ATOMIC_RELEASE);
	return true;
}

bool shiftu_back_pending(const struct shiftu_vqp *vq)
{
	return __atomic_load_n(&vq->back_due_ns, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&vq->back_taken, __ATOMIC_ACQUIRE);
}
