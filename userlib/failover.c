// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * failover.c: moving a QP's traffic to its twin on the backup port (SHIFT
 * paper 4.3.2), and the slow paths of its posts meanwhile (its CQs': cq.c).
 *
 * A failover starts on the thread that notices: a poster or poller that
 * reads the health page, a poller that takes an error completion, or the
 * watcher that hears the peer's control message (handshake.h).  It stops
 * the default QP (modify to ERR), which flushes every work request the NIC
 * still holds, in order, with an error completion each, even the
 * unsignaled ones (IBA 10.7.3.1); markers posted after the stop are
 * flushed last.  Draining the CQs up to them counts the outstanding work:
 * the receives are those posted and not counted complete, the rest of the
 * flushed were sends, the last ones the ring recorded.  Completions of
 * other QPs, and good ones of this QP, met on the way are kept for the
 * application's next poll.
 *
 * The receives are reposted on the twin, the peer is told our receive
 * count, and the sends are replayed from the first one the peer had not
 * received.  An atomic outstanding is never replayed: the flushed work
 * requests go back to the application as the errors they are, and
 * SHIFTU_EV_ATOMIC_ERROR is raised.  Going back to the default QP when the
 * peer and we are both on our twins is the same move in reverse.
 *
 * This file holds where a move starts: a failover noticed, the peer's
 * control message and the held sends it releases, a QP the application
 * stops or destroys, and the slow paths of the posting verbs.  The move
 * itself is in move.c, the stop and drain of the QP it leaves in drain.c,
 * the replay of the sends in replay.c, and going back in goback.c
 * (failover_int.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "cq.h"
#include "ctxstate.h"
#include "failover.h"
#include "failover_int.h"
#include "handshake.h"
#include "lock.h"
#include "log.h"
#include "posters.h"
#include "proto.h"
#include "real.h"
#include "serial.h"
#include "shadow.h"
#include "testbuild.h"
#include "util.h"
#include "vqpstate.h"

#define TWIN_WAIT_NS	(2000ULL * 1000 * 1000)

void shiftu_unprotect(struct shiftu_vqp *vq, const char *why)
{
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	/* its SRQ's receives are posted as the application posts them */
	__atomic_store_n(&vq->app_srq, NULL, __ATOMIC_RELAXED);
	if (vq->state == SHIFTU_SEND_DEFAULT) {
		vq->state = SHIFTU_SEND_DEAD;
		shiftu_qp_set_flags(&vq->reg, vq->reg.flags & ~SHIFTU_QP_F_PROTECTED);
		shiftu_vqp_set_slow(vq, 0, __ATOMIC_RELAXED);
		shiftu_info("qp %u on %s: %s: unprotected", vq->reg.app_qp->qp_num,
			    vq->sctx->dev_name, why);
	} else if (vq->state != SHIFTU_SEND_DEAD) {
		shiftu_warn("qp %u on %s: %s while its work is on its twin: it stays there",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
	}
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
}

/*
 * The peer's count did not come (its process or its library is gone):
 * nothing is replayed, since what arrived is not known; the held requests
 * complete flushed, as on a QP in error, and the QP is left unprotected.
 * Context: the shadow thread, no library lock held.
 */
void shiftu_hs_timeout(struct shiftu_vqp *vq, uint64_t after_ns)
{
	uint64_t n;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	/*
	 * Again under the lock: a post that starts a handshake sets the state
	 * before its start time, and the shadow thread, which reads both
	 * without the lock, could see the new state with an old time (an
	 * ibv_rc_pingpong client was given up "in 0.0 s").
	 */
	if (vq->state != SHIFTU_SEND_HANDSHAKE || shiftu_mono_ns() - vq->hs_since_ns <= after_ns) {
		shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
		return;
	}
	shiftu_lock_cqs(vq->scq, vq->rcq);
	n = vq->sq.head - vq->replay_start;
	shiftu_go_dead(vq, NULL, 0, vq->replay_start);
	shiftu_unlock_cqs(vq->scq, vq->rcq);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_warn("qp %u on %s: %s in %.1f s: %" PRIu64 " requests flushed, unprotected",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
		    vq->keys_held && vq->rkeys_wanted ? "the store gave no backup for the peer's rkeys" :
		    "no word from the peer", (shiftu_mono_ns() - vq->hs_since_ns) / 1e9, n);
	shiftu_fo_report(vq, FO_DEAD);
}

void shiftu_failover_qp_gone(struct shiftu_vqp *vq)
{
	if (!vq->scq || !vq->rcq)
		return;
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_lock_cqs(vq->scq, vq->rcq);
	shiftu_twins_leave(vq);
	/* messages for it that wait in a park would outlive it */
	shiftu_hs_park_forget(vq->scq, vq);
	shiftu_hs_park_forget(vq->rcq, vq);
	/* a control message's completion that never came is nobody's now */
	shiftu_ctrl_send_done(vq, true);
	/* no move starts after this one: each wants another state */
	vq->state = SHIFTU_SEND_DEAD;
	/* a move left to a polling session is nobody's now: its hold goes */
	if (__atomic_exchange_n(&vq->poll_hold, 0, __ATOMIC_ACQ_REL))
		shiftu_cq_slow(vq, false);
	shiftu_unlock_cqs(vq->scq, vq->rcq);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
}

void shiftu_failover_app_stop(struct shiftu_vqp *vq, enum ibv_qp_state to)
{
	struct ibv_qp_attr a = { .qp_state = to };
	bool twin;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	twin = vq->on_twin;
	if (vq->state == SHIFTU_SEND_DEAD || !vq->scq || !vq->rcq) {
		vq->state = SHIFTU_SEND_DEAD;
		shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
		return;
	}
	shiftu_lock_cqs(vq->scq, vq->rcq);
	if (twin)
		/* its work is there: it stops as the default QP did; the
		 * twin's completions stay renamed (it keeps its CQs' place) */
		shiftu_real.modify_qp(vq->bak_qp, &a, IBV_QP_STATE);
	else
		shiftu_twins_leave(vq);
	if (to == IBV_QPS_ERR)
		shiftu_flush_held(vq, shiftu_posted_end(vq));
	else
		shiftu_ctrl_send_done(vq, true);	/* a reset drops it */
	vq->state = SHIFTU_SEND_DEAD;
	/* no failback's message to wait for on the default QP */
	__atomic_store_n(&vq->ctrl_default, 0, __ATOMIC_RELAXED);
	shiftu_qp_set_flags(&vq->reg, vq->reg.flags & ~SHIFTU_QP_F_PROTECTED);
	shiftu_vqp_set_slow(vq, 0, __ATOMIC_RELAXED);
	shiftu_unlock_cqs(vq->scq, vq->rcq);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_info("qp %u on %s: the application moved it to %s%s: its errors are its own, not protected any more",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, to == IBV_QPS_ERR ? "ERR" : "RESET",
		    twin ? " while its work was on its twin" : "");
}

bool shiftu_failover(struct shiftu_vqp *vq, const char *why)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	enum fo_result r;
	int n_msgs = 0;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	r = shiftu_move_locked(vq, MOVE_OVER, false, why, msgs, &n_msgs);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_fo_report(vq, r);
	shiftu_moved_deliver(vq, msgs, n_msgs);
	return r != FO_NONE;
}

/*
 * A twin a failback left to the shadow thread (SHIFTU_TEST_TWIN_RESET_MS)
 * is stale until that thread has reset it, and the default QP may fail at
 * once: Soft-RoCE completes a request it cannot route (`ip link set down`
 * took the route) with IBV_WC_LOC_QP_OP_ERR and stops the QP by itself.
 * Its flushed receives must wait for the twin, not reach the application;
 * so must those of a QP going back (shiftu_rejoin()).
 */
bool shiftu_failover_on_error(struct shiftu_vqp *vq, const char *why, bool wait)
{
	uint64_t until = shiftu_mono_ns() + TWIN_WAIT_NS;

	if (shiftu_going_back(vq)) {
		/* the shadow thread moves it (shiftu_rejoin()): its drain
		 * takes these errors out of the stash */
		__atomic_store_n(&vq->rejoin_want, 1, __ATOMIC_RELEASE);
		shiftu_shadow_poke();
		while (wait && shiftu_going_back(vq) && shiftu_mono_ns() < until)
			usleep(100);
		return true;
	}
	if (!wait)
		return shiftu_failover(vq, why);
	if (shiftu_twin_coming(vq)) {
		shiftu_info("qp %u on %s: %s while its twin is %s: waiting for it",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why,
			    __atomic_load_n(&vq->reg.flags, __ATOMIC_RELAXED) & SHIFTU_QP_F_PROTECTED ?
			    "being reset" : "not joined by the peer's yet");
		shiftu_shadow_poke();
		while (shiftu_twin_coming(vq) && shiftu_mono_ns() < until)
			usleep(100);
	}
	return shiftu_failover(vq, why);
}

const char *shiftu_down_why(const struct shiftu_vqp *vq)
{
	/* read as vq->down is: a stale value costs only the word */
	return vq->down_path ? "path down" : "port down";
}

/*
 * The peer's count our held sends waited for has come: answer if we have
 * not spoken yet, and replay.  Context: fo_lock held.
 */
static enum fo_result replay_held(struct shiftu_vqp *vq)
{
	bool keys = vq->keys_held;
	enum fo_result r;
	uint64_t replayed;
	int ret;

	shiftu_lock_cqs(vq->scq, vq->rcq);
	/* a rejoin we asked for: the peer spoke first, we answer */
	ret = vq->hs_sent ? 0 : shiftu_ctrl_send(vq, true);
	if (!ret && shiftu_keys_wait(vq, vq->replay_start)) {
		shiftu_unlock_cqs(vq->scq, vq->rcq);
		return FO_NONE;
	}
	if (!ret)
		ret = shiftu_replay(vq, vq->replay_start, &replayed);
	if (ret) {
		shiftu_warn("qp %u on %s: %s, but answering or replaying failed: %s: unprotected",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
			    keys ? "the look ahead answered" : "the peer's count came", strerror(ret));
		shiftu_go_dead(vq, NULL, 0, vq->sq.head);
		r = FO_DEAD;
	} else {
		shiftu_info("qp %u on %s: the peer's %s came after %.3f ms: %" PRIu64 " requests replayed (it had received %" PRIu64 " messages, we sent %" PRIu64 ")",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, keys ? "rkeys" : "count",
			    (shiftu_mono_ns() - vq->hs_since_ns) / 1e6, replayed, vq->hs_peer,
			    vq->sent2);
		r = shiftu_moved(vq, replayed);
		if (r == FO_DONE)
			r = FO_NONE;	/* reported when it started */
		/* a rejoin the peer joined before we could ask */
		vq->rejoin_ask = 0;
	}
	shiftu_unlock_cqs(vq->scq, vq->rcq);
	return r;
}

/* The held sends carry a message, and the peer's count has not come. */
static bool count_due(struct shiftu_vqp *vq)
{
	uint64_t i;

	if (vq->hs_got)
		return false;
	for (i = vq->replay_start; i < vq->sq.head; i++)
		if (shiftu_op_two_sided(shiftu_swqe_at(&vq->sq, i)->opcode))
			return true;
	return false;
}

void shiftu_keys_came(struct shiftu_vqp *vq)
{
	enum fo_result r = FO_NONE;
	uint32_t rkey;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	/* a key still unanswered waits; one the store had none of fails
	 * the replay (as it always did) */
	if (vq->state == SHIFTU_SEND_HANDSHAKE && vq->keys_held && vq->on_twin &&
	    !count_due(vq) && shiftu_keys_ready(vq, vq->replay_start, &rkey) != -EAGAIN)
		r = replay_held(vq);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_fo_report(vq, r);
}

/*
 * A control receive took a message of the peer's application (a
 * WRITE_WITH_IMM) instead of its library's: the peer is not where the
 * protocol has it, its immediate is no count, and the message cannot
 * reach the application's receive.  The QP is given up, its errors going
 * to the application, rather than replay by a count that is not one (in
 * many_gen.sh an immediate of 574 was taken for "574 received").
 * Context: fo_lock held.
 */
static enum fo_result hs_foreign(struct shiftu_vqp *vq, const struct shiftu_hs_msg *m)
{
	if (vq->state == SHIFTU_SEND_DEAD)
		return FO_NONE;
	shiftu_warn("qp %u on %s: a message of the peer's application (WRITE_WITH_IMM, immediate %u) took the control receive on its %s, where the peer's count was due: unprotected",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, m->imm,
		    m->on_default ? "default QP" : "backup QP");
	/* nothing more is awaited on the default QP */
	__atomic_store_n(&vq->ctrl_default, 0, __ATOMIC_RELAXED);
	shiftu_lock_cqs(vq->scq, vq->rcq);
	shiftu_go_dead(vq, NULL, 0, shiftu_posted_end(vq));
	shiftu_unlock_cqs(vq->scq, vq->rcq);
	return FO_DEAD;
}

/* SHIFTU_TEST_FOLLOW_DELAY_MS has delayed a follow (the test build's) */
static uint8_t follow_delayed;

/*
 * SHIFTU_TEST_FOLLOW_DELAY_MS: late, as a side starved of the CPU is,
 * past the asker's wait for our answer (REJOIN_NS); fo_lock held, so that
 * the shadow thread's look at the peer's requests waits too.  The
 * process's first follow only: the failback tried again must go back.
 */
static void follow_delay(struct shiftu_vqp *vq)
{
	if (shiftu_test_follow_delay_ms() &&
	    !__atomic_exchange_n(&follow_delayed, 1, __ATOMIC_RELAXED)) {
		shiftu_info("qp %u on %s: following the peer back in %u ms (a test setting)",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
			    shiftu_test_follow_delay_ms());
		usleep(shiftu_test_follow_delay_ms() * 1000U);
	}
}

/*
 * What the peer's message calls for (@act, shiftu_hs_decide()), done.
 * Context: fo_lock held; the caller delivers @msgs once it is dropped.
 */
static enum fo_result hs_act(struct shiftu_vqp *vq, enum shiftu_hs_act act,
			     struct shiftu_hs_msg *msgs, int *n_msgs)
{
	enum fo_result r = FO_NONE;
	int ret;

	switch (act) {
	case SHIFTU_HS_FOLLOW_BACK:
		follow_delay(vq);
		/* acted on: a cancel of it that comes now is too late */
		vq->fb_grant_open = 0;
		vq->hs_sent = 0;
		r = shiftu_move_locked(vq, MOVE_BACK, false, "the peer fails back", msgs, n_msgs);
		break;
	case SHIFTU_HS_REJOIN:
		vq->hs_sent = 0;
		vq->ctrl_default = 0;
		r = shiftu_move_locked(vq, MOVE_REJOIN, false,
				       "the peer failed over while we went back", msgs, n_msgs);
		break;
	case SHIFTU_HS_FOLLOW_OVER:
		r = shiftu_move_locked(vq, MOVE_OVER, false, "the peer failed over", msgs, n_msgs);
		/*
		 * Not followed, and nothing will ask again: the peer waits
		 * for our count in vain.  Both twins have joined before either
		 * side moves (twin.c), so this says a rule was broken.
		 */
		if (r == FO_NONE && vq->state == SHIFTU_SEND_DEFAULT &&
		    !__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE))
			shiftu_warn("qp %u on %s: the peer failed over, but our twin is not ready: not followed",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name);
		break;
	case SHIFTU_HS_ANSWER:
		vq->on_twin = 1;
		ret = shiftu_ctrl_send(vq, true);
		vq->on_twin = 0;
		if (ret) {
			shiftu_warn("qp %u: cannot answer the peer: %s",
				    vq->reg.app_qp->qp_num, strerror(ret));
			vq->hs_got = 0;
			vq->hs_sent = 0;
			break;
		}
		/*
		 * The exchange is over: the peer has our count, we have its.
		 * Its default QP was drained before it spoke, so nothing we
		 * post here from now on reaches it: our first post goes over
		 * (the slow paths), replaying all of it by the peer's count,
		 * and says nothing, since our answer took the one control
		 * receive on the peer's twin (model/shift.pml).
		 */
		vq->stayed = 1;
		shiftu_vqp_set_slow(vq, 1, __ATOMIC_RELAXED);
		shiftu_info("qp %u on %s: the peer failed over; nothing posted here: answered, staying until this QP posts",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name);
		break;
	case SHIFTU_HS_DONE:
		vq->hs_got = 0;
		break;
	case SHIFTU_HS_REPLAY:
		r = replay_held(vq);
		break;
	default:
		break;
	}
	return r;
}

/*
 * The peer's control message: its receive count, whether it answers ours,
 * and on which QP it came (a message on the default QP is a two-sided
 * failback's).  Context: any thread, no library lock held.
 */
void shiftu_hs_message(const struct shiftu_hs_msg *m)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	struct shiftu_vqp *vq = m->vq;
	struct shiftu_hs_in in = {
		.ack = m->imm & SHIFTU_HS_ACK,
		.on_default = m->on_default,
	};
	enum fo_result r = FO_NONE;
	enum shiftu_hs_act act;
	int n_msgs = 0;
	uint64_t peer;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (m->foreign) {
		r = hs_foreign(vq, m);
		goto out;
	}
	/*
	 * The peer's receive count, 31 bits of it: it counts our two-sided
	 * sends, so it lies at most the work outstanding below our own
	 * count, whichever wrap of the 31 bits lies between.
	 */
	peer = shiftu_hs_count_get(m->imm, vq->sent2);
	/* the peer moved before the store told us it had joined our twin */
	if (!in.on_default)
		shiftu_twin_heard(vq);
	in.state = vq->state;
	in.on_twin = vq->on_twin;
	in.old_gen = m->gen != (uint16_t)vq->ctrl_gen;
	in.expected = vq->ctrl_default;
	in.busy = vq->sq.head || vq->rq.head != shiftu_count_start();
	act = shiftu_hs_decide(&in);
	if (act == SHIFTU_HS_OLD) {
		shiftu_dbg("qp %u: a message on the default QP from before its reset (generation %u, now %u): dropped",
			   vq->reg.app_qp->qp_num, m->gen, (uint16_t)vq->ctrl_gen);
		goto out;
	}
	/*
	 * A message on the twin took its control receive, unless the twin
	 * was renewed since: a move's drain took it from the old twin and
	 * hands it over now, and the renewed twin's receive is still there
	 * (counted gone, a second would be posted behind it, and the peer's
	 * first SEND after its next failover's message would land in that).
	 */
	if (!in.on_default && vq->ctrl_rq && m->gen == (uint16_t)vq->reconnects)
		vq->ctrl_rq--;
	/* the message a failback we granted awaited has come */
	if (in.on_default)
		vq->ctrl_default = 0;
	shiftu_dbg("qp %u: the peer's %s on its %s QP: it has received %" PRIu64 " messages, we sent %" PRIu64,
		   vq->reg.app_qp->qp_num, in.ack ? "answer" : "move",
		   in.on_default ? "default" : "backup", peer, vq->sent2);
	if (act == SHIFTU_HS_STALE)
		goto out;
	vq->hs_peer = peer;
	vq->hs_got = 1;
	r = hs_act(vq, act, msgs, &n_msgs);
out:
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_fo_report(vq, r);
	shiftu_moved_deliver(vq, msgs, n_msgs);
}

/* ---- slow paths ------------------------------------------------------- */

/* Why a QP that answered the peer's failover and stayed moves now. */
#define STAYED_WHY	"it posts, and the peer is on its twin"

/*
 * A QP at rest on its default QP with its port up takes the fast paths
 * again.  Only here, under fo_lock: no move is under way.
 */
static void slow_settle(struct shiftu_vqp *vq)
{
	if (vq->state == SHIFTU_SEND_DEFAULT && !vq->down && !vq->rx_moved && !vq->stayed)
		shiftu_vqp_set_slow(vq, 0, __ATOMIC_RELAXED);
}

int shiftu_post_send_slow(struct shiftu_vqp *vq, struct ibv_qp *qp,
			  struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	bool back;
	int ret = 0;

	if (vq->state == SHIFTU_SEND_DEFAULT && (vq->down || vq->stayed))
		shiftu_failover(vq, vq->down ? shiftu_down_why(vq) : STAYED_WHY);
	/*
	 * Under fo_lock: a move another thread is making (the state still
	 * reads Default until it is done) must not see a request reach the
	 * QP it is draining.
	 */
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (vq->state == SHIFTU_SEND_DEFAULT || vq->state == SHIFTU_SEND_DEAD) {
		/* it counts: this thread must be the send queue's poster */
		bool kept = shiftu_poster_take(vq, false);

		slow_settle(vq);
		ret = shiftu_post_send_default(vq, qp, wr, bad_wr);
		shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
		if (!kept)
			shiftu_fo_report(vq, FO_DEAD);
		return ret;
	}
	for (; wr; wr = wr->next) {
		if (vq->state == SHIFTU_SEND_FALLBACK && shiftu_op_two_sided(wr->opcode) &&
		    !vq->hs_got) {
			/* the peer may not have its receives on its twin yet */
			vq->state = SHIFTU_SEND_HANDSHAKE;
			vq->replay_start = vq->sq.head;
			vq->hs_since_ns = shiftu_mono_ns();
		}
		if (vq->state == SHIFTU_SEND_WAIT_DRAINED ||
		    vq->state == SHIFTU_SEND_HANDSHAKE) {
			/* recorded, doorbell withheld */
			shiftu_record_send(vq, wr);
			continue;
		}
		/* recorded: a two-sided failback replays what the twin held */
		shiftu_record_send(vq, wr);
		ret = shiftu_post_twin(vq, wr);
		/* held with those after it until the key is fetched; a failback
		 * under way (its fence) is not held: it fails as it did */
		if (ret == EAGAIN && vq->state == SHIFTU_SEND_FALLBACK &&
		    shiftu_keys_wait(vq, vq->sq.head - 1)) {
			ret = 0;
			continue;
		}
		if (ret == EAGAIN)
			ret = EINVAL;
		if (ret) {
			vq->sq.head--;
			vq->sent2 -= shiftu_op_two_sided(wr->opcode);
			*bad_wr = wr;
			break;
		}
		if (shiftu_wr_signaled(vq, wr)) {
			vq->twin_signaled++;
			if (vq->state == SHIFTU_SEND_WAIT_SIGNALED) {
				/* this one is the fence */
				vq->state = SHIFTU_SEND_WAIT_DRAINED;
				shiftu_qp_set_send_state(&vq->reg, SHIFTU_SEND_WAIT_DRAINED);
				vq->held_start = vq->sq.head;
				shiftu_dbg("qp %u: fence posted on the twin (%" PRIu64 " of %" PRIu64 " signaled done)",
					   qp->qp_num, vq->twin_done, vq->twin_signaled);
			}
		}
	}
	back = shiftu_release_drained(vq);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (back)
		shiftu_fo_report(vq, FO_BACK);
	return ret;
}

int shiftu_post_recv_slow(struct shiftu_vqp *vq, struct ibv_qp *qp,
			  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	int ret = 0;

	/* the peer is on its twin, where its messages wait for receives */
	if (vq->state == SHIFTU_SEND_DEFAULT && vq->stayed)
		shiftu_failover(vq, STAYED_WHY);
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (!vq->rx_moved) {
		/* it counts: this thread must be the receive queue's poster */
		bool kept = shiftu_poster_take(vq, true);

		slow_settle(vq);
		ret = shiftu_post_recv_default(vq, qp, wr, bad_wr);
		shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
		if (!kept)
			shiftu_fo_report(vq, FO_DEAD);
		return ret;
	}
	for (; wr; wr = wr->next) {
		shiftu_record_recv(vq, wr);
		ret = shiftu_post_twin_rwqe(vq, shiftu_rwqe_at(&vq->rq, vq->rq.head - 1));
		if (ret) {
			vq->rq.head--;
			*bad_wr = wr;
			break;
		}
	}
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	return ret;
}
