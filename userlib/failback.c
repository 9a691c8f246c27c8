// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * failback.c: failing back (SHIFT 4.3.3), the shadow threads' part on
 * both sides (shadow.h).
 *
 * The side that failed over, once its primary is good again, asks the
 * peer through the store to reset its QP for new PSNs, resets its own
 * with the peer's, probes, and hands the QP to the posting path
 * (goback.c), which goes back (failback_step()).  The peer answers the
 * request by what proto.c decides (fbanswer.c).  A going back cut
 * short asks the peer to join the renewed twin (a rejoin), one the peer
 * does not answer asks it to cancel the failback it granted.  All of it
 * runs in the shadow thread's pass (shadow.c), vq->lock held; what it has
 * to say once the pass's first batch is answered goes in the pass's last
 * one (shiftu_late_batch()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "failback_int.h"
#include "failover.h"
#include "handshake.h"
#include "health.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "shadow_int.h"
#include "store.h"
#include "testbuild.h"
#include "util.h"

/* Failback attempts back off up to these (fb_backoff()). */
#define FB_MAX_MS	5000
#define FB_BUSY_MS	1000

/* How long a QP holds its sends for the peer's count (handshake.h), on
 * its twin after a rejoin too. */
#define HS_TIMEOUT_NS	(10ULL * 1000 * 1000 * 1000)
/*
 * Silence past REJOIN_NS (failback_int.h) alone does not make a failback
 * leave the default QP, though: a peer
 * starved of the CPU (make check's two lanes: 5.7 s) is late, not gone,
 * and one that came after the rejoin went back all the same, its answer
 * lost in a default QP stopped, and joined the twins only once the
 * store had told it, which on such a host took longer than the asking
 * side's wait for it there (HS_TIMEOUT_NS): both gave the QP up.  So
 * past rejoin_ns() it asks the peer through the store to cancel the
 * failback it granted (cancel_ask()), and keeps listening: on the default
 * QP for a peer that followed, on the renewed twin for one that took the
 * cancel.  A peer that has done neither CANCEL_WAIT_NS after the store
 * took the cancel is taken for gone: the work goes onto the twin and
 * waits HS_TIMEOUT_NS more there (shiftu_rejoin()).  It granted the
 * failback moments before, so that is rare; a failure the side can see
 * still rejoins at once.
 */
#define CANCEL_WAIT_NS	(2 * HS_TIMEOUT_NS)

/*
 * How long a failback request waits for the peer's answer, from the
 * moment the store took it: the peer's next look (FB_POLL_NS at most),
 * then three store round trips (its GET, its PUT, our GET).  A round trip
 * is what the shadow thread's batches took lately (store_ns): on a host
 * whose CPU the application's pollers keep busy, Redis answers in
 * seconds (64 QPs going back in the lab: 1 to 5 s), and an answer that
 * comes after the wait is wasted, together with the reset the peer made
 * for it, since the next request is a new one (an old answer cannot be
 * taken safely: the peer may have granted another since).
 *
 * At least 10 s: the peer's pass, not ours, sets the pace of its answer,
 * and ours measures only our own.  With 2 s, store_down.sh's 64 QPs (a
 * pass of a second on each side) took 3 minutes to go back: the answers
 * came 6 s after the requests, to requests already asked again, and
 * each wasted grant reset the granting side's QP and dropped its own
 * request; the server asked 828 times and probed not once.  Silence is
 * all a long wait costs: a peer that answers is asked again within
 * FB_BUSY_MS (busy) or FB_MAX_MS (leads, down), as before.
 */
#define FB_ANSWER_NS	(10ULL * 1000 * 1000 * 1000)
#define FB_ANSWER_MAX_NS (30ULL * 1000 * 1000 * 1000)
/* How long a probe may take (failback_probed()). */
#define FB_PROBE_NS	(2000ULL * 1000 * 1000)
/*
 * How long a QP whose twin failed under its work holds the twin's errors
 * for a failback that has not begun (twin_dead_step()): a pulled cable
 * plugged back in a few seconds, a peer busy for a moment.  The
 * application's other QPs go on meanwhile; this one's requests wait, as
 * they would for the transport's retries.
 */
#define TWIN_DEAD_NS	(10ULL * 1000 * 1000 * 1000)

static uint64_t fb_answer_ns(void)
{
	uint64_t ns = FB_POLL_NS + 4 * store_ns;

	return ns < FB_ANSWER_NS ? FB_ANSWER_NS :
	       ns > FB_ANSWER_MAX_NS ? FB_ANSWER_MAX_NS : ns;
}

/*
 * How long a going back waits for the peer's answer before it asks the
 * peer to cancel: REJOIN_NS, or longer on a host whose store answers
 * slowly.  The answer does not come through the store, but from the
 * peer's poll or backup thread, which the same starved CPU makes late:
 * the store's round trips (store_ns) are what this side can measure of
 * that, as fb_answer_ns() does.  A cancel costs a whole failback.
 */
static uint64_t rejoin_ns(void)
{
	uint64_t ns = REJOIN_NS + 4 * store_ns;

	return ns > FB_ANSWER_MAX_NS ? FB_ANSWER_MAX_NS : ns;
}

/* The table shows @vq's port up and its path not down. */
static bool primary_ok(struct shiftu_vqp *vq)
{
	struct shiftu_port_health ph;
	uint8_t path;

	return shiftu_vqp_primary(vq, &ph, &path) == 0;
}



/*
 * Ask again later, up to @cap_ms later: backs off, never gives up.  A peer
 * that answered busy is there and will be ready soon (its own cable just
 * came back, say): it is asked again within a second.
 */
static void fb_backoff(struct shiftu_vqp *vq, uint32_t cap_ms)
{
	uint32_t ms = vq->fb_backoff_ms ? 2 * vq->fb_backoff_ms :
					  shiftu_config()->probe_ms;

	vq->fb_backoff_ms = ms > cap_ms ? cap_ms : ms;
	vq->fb_next_ns = shiftu_mono_ns() + vq->fb_backoff_ms * 1000000ULL;
	vq->fb_stage = 0;
}

/*
 * The probe failback_step() posted: the pass looks each time (it does
 * not wait, every QP's probe is under way at once), and once it is good,
 * a two-sided failback's going back is due (shiftu_back_due()), a
 * one-sided one waits for its fence.
 */
static void failback_probed(struct shiftu_vqp *vq)
{
	int st = shiftu_probe_step(vq);
	uint64_t now;

	if (st == 1 && shiftu_mono_ns() < vq->fb_probe_ns)
		return;
	if (st != 2) {
		shiftu_dbg("qp %u: probe of %s %s: trying again later",
			   vq->reg.app_qp->qp_num, vq->sctx->dev_name,
			   st == 3 ? "failed" : "timed out");
		return fb_backoff(vq, FB_MAX_MS);
	}
	vq->fb_stage = 0;
	vq->fb_backoff_ms = 0;
	now = shiftu_mono_ns();
	if (!vq->fb_mode)
		shiftu_probe_fence(vq);
	shiftu_info("qp %u on %s: probe good%s: %s (request %u, asked %.3f s ago, probe posted %.3f s ago)",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
		    vq->fb_by_send ? " (an empty SEND: the peer grants no remote access)" : "",
		    vq->fb_mode ? "going back with the peer" :
				  "failing back at the next signaled request",
		    vq->fb_seq, (now - vq->fb_asked_ns) / 1e9,
		    (now + FB_PROBE_NS - vq->fb_probe_ns) / 1e9);
	if (!vq->fb_mode)
		return;
	if (shiftu_test_failback_delay_ms()) {
		shiftu_info("qp %u on %s: going back in %u ms (a test setting)",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
			    shiftu_test_failback_delay_ms());
		usleep(shiftu_test_failback_delay_ms() * 1000U);
	}
	shiftu_back_due(vq);
}

/*
 * The first stage of failback_step(): the request to the peer, in the
 * pass's last batch, once the QP may ask.  Context: vq->lock held.
 */
static void failback_ask(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	bool dead = __atomic_load_n(&vq->twin_dead_ns, __ATOMIC_RELAXED);
	char g[33];
	int i;

	/*
	 * A passive side (no RTS of its own, nothing posted: perftest's
	 * server) does not lead: its peer, which sends, asks and probes
	 * with what it sends; this side answers.  Unless its twin failed:
	 * the peer's twin may not know, retrying for ever (Soft-RoCE's
	 * retry count of 7).
	 */
	if (!vq->steps.rts_mask && !vq->sq.head && !dead)
		return;
	if (shiftu_mono_ns() < vq->fb_next_ns || !primary_ok(vq))
		return;
	/*
	 * Not before the peer's message of our failover is handled
	 * (a slow watcher, a message the NIC retries on a lossy
	 * path): taken after the failback, it would start a new
	 * failover, taken for a rejoin (the spin model's first
	 * finding on failback).  It comes: every failover's peer
	 * moves or answers.
	 */
	if (!__atomic_load_n(&vq->hs_got, __ATOMIC_RELAXED))
		return;

	/*
	 * The peer, once it grants one-sided, posts on its reset default QP
	 * at once, and fails over again if its retries run out before ours
	 * is connected (a slow store): that new exchange's message comes to
	 * our twin, whose control receive the answer to our failover took
	 * (the spin model's third finding on failback, SEED_ASKER_NO_CTRL).
	 * One at its head again before we ask, as the side that grants
	 * posts on its own; not behind the application's receives (the
	 * failback is two-sided then) nor on a failed twin.  A QP whose
	 * fo_lock another thread holds asks at a later pass (see
	 * failback_answer()).
	 */
	if (!dead) {
		if (shiftu_trylock(&vq->fo_lock, SHIFTU_LOCK_FO))
			return;
		shiftu_ctrl_rearm(vq);
		shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	}
	/* the request goes in the pass's last batch (shiftu_late_batch()),
	 * with every other QP's: a failed one backs this one off */
	i = shiftu_req_add(SHIFTU_KV_PUT, 0);
	if (i < 0)
		return;
	vq->fb_seq++;
	vq->fb_psn = (uint32_t)random() & 0xffffff;
	shiftu_gid_hex(vq->dgid, g);
	snprintf(reqs[i].key, sizeof(reqs[i].key), "fbreq:%s:%u", g,
		 vq->steps.rtr.dest_qp_num);
	/* the peer's twin names the peer process this is meant for; the
	 * last word: our receives are on the twin, or our twin failed, and
	 * what it held goes back by the peer's count either way */
	vq->fb_by_send = shiftu_probe_by_send(vq);
	snprintf(reqs[i].val, sizeof(reqs[i].val), "%u %u %u %u %u", vq->fb_seq,
		 vq->fb_psn, vq->peer.qpn, vq->peer.psn,
		 (vq->twin_recvs || dead ? FB_TWIN_RECVS : 0) |
		 (vq->fb_by_send ? FB_PROBE_SEND : 0));
	reqs[i].why = PASS_FBREQ;
	reqs[i].qi = pass_index(pq);
	vq->fb_stage = 1;
	vq->fb_asked_ns = shiftu_mono_ns();
	/* the wait for the answer starts again once the store has
	 * the request (shiftu_late_batch()) */
	vq->fb_next_ns = shiftu_mono_ns() + fb_answer_ns();
	shiftu_dbg("qp %u: primary good again: asking the peer to reset (%s)",
		   vq->reg.app_qp->qp_num, reqs[i].key);
}

/*
 * The side that failed over, once the table shows its primary good again:
 * ask the peer (through the store) to reset its QP for a new PSN, reset
 * ours with the peer's, probe, and hand over to the posting path (fence).
 */
static void failback_step(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	unsigned int seq, psn, tq, tp, mode;
	char *val;
	char word[16];
	bool by_send;

	if (vq->fb_stage == 2) {
		failback_probed(vq);
		return;
	}
	/* its probe was good: going back, not asking again */
	if (shiftu_mono_ns() < vq->fb_wait_ns || !shiftu_kv_up() || shiftu_back_pending(vq))
		return;
	/*
	 * The pass read Fallback before the flags above: a going back that
	 * another thread finished in between has left Fallback, and its
	 * flags clear only after that (shiftu_take_back()), so the state
	 * read again tells.  Asking then would reset the peer's QP under the
	 * traffic that went back.
	 */
	if (__atomic_load_n(&vq->state, __ATOMIC_ACQUIRE) != SHIFTU_SEND_FALLBACK)
		return;
	if (vq->fb_stage == 0) {
		failback_ask(vq, pq);
		return;
	}
	/* the peer's answer, asked for in this pass's batch (failback_req()) */
	if (pq->fbrep < 0)
		return;
	val = reqs[pq->fbrep].val;
	if (reqs[pq->fbrep].kv.ret ||
	    sscanf(val, "%u %15s %u %u %u", &seq, word, &tq, &tp, &mode) != 5 ||
	    seq != vq->fb_seq || tq != vq->bak_qp->qp_num || tp != vq->bak_psn) {
		if (shiftu_mono_ns() >= vq->fb_next_ns)
			fb_backoff(vq, FB_MAX_MS);	/* no answer: ask again later */
		return;
	}
	if (sscanf(word, "%u", &psn) != 1) {
		shiftu_dbg("qp %u: the peer cannot fail back yet (%s)",
			   vq->reg.app_qp->qp_num, word);
		return fb_backoff(vq, strcmp(word, "busy") ? FB_MAX_MS : FB_BUSY_MS);
	}
	/*
	 * A grant of a request made before our twin failed, one-sided:
	 * the twin cannot complete a fence now.  Asked again at once, as
	 * two-sided (a peer that stayed on its default QP refuses that;
	 * twin_dead_step() then gives up).
	 */
	if (!(mode & FB_TWIN_RECVS) && __atomic_load_n(&vq->twin_dead_ns, __ATOMIC_RELAXED)) {
		shiftu_dbg("qp %u: the peer reset its QP for a one-sided failback, but our twin failed: asking again, two-sided",
			   vq->reg.app_qp->qp_num);
		vq->fb_stage = 0;
		vq->fb_next_ns = 0;
		return;
	}
	shiftu_dbg("qp %u: the peer reset its QP: reconnecting and probing",
		   vq->reg.app_qp->qp_num);
	/* one-sided (mode 0): the peer posts no control receive, nor takes
	 * part; a QP whose peer grants no remote access cannot go back so */
	by_send = (mode & FB_PROBE_SEND) && vq->fb_by_send;
	vq->fb_by_send = by_send;
	vq->fb_mode = mode & FB_TWIN_RECVS;
	if (shiftu_qp_reconnect(vq, psn, vq->fb_psn, vq->fb_mode) || !shiftu_probe(vq, by_send)) {
		shiftu_dbg("qp %u: probe of %s failed: trying again later",
			   vq->reg.app_qp->qp_num, vq->sctx->dev_name);
		return fb_backoff(vq, FB_MAX_MS);
	}
	vq->fb_stage = 2;
	vq->fb_probe_ns = shiftu_mono_ns() + FB_PROBE_NS;
	/* the grant a cancel names, should the peer not answer (cancel_ask()) */
	vq->fb_going = seq;
}

/*
 * A request of ours to the peer through the store, "N WORD qpn psn LAST"
 * under its fbreq key, in the pass's last batch (shiftu_late_batch()).
 * Context: vq->lock held.
 */
static void fbreq_put(struct shiftu_vqp *vq, const struct pass_qp *pq, const char *word,
		      uint32_t last, enum pass_why why)
{
	char g[33];
	int i;

	if (!shiftu_kv_up())
		return;
	i = shiftu_req_add(SHIFTU_KV_PUT, 0);
	if (i < 0)
		return;
	shiftu_gid_hex(vq->dgid, g);
	snprintf(reqs[i].key, sizeof(reqs[i].key), "fbreq:%s:%u", g,
		 vq->steps.rtr.dest_qp_num);
	snprintf(reqs[i].val, sizeof(reqs[i].val), "%u %s %u %u %u", ++vq->fb_seq, word,
		 vq->peer.qpn, vq->peer.psn, last);
	reqs[i].why = why;
	reqs[i].qi = pass_index(pq);
	reqs[i].seq = vq->fb_seq;
}

/*
 * Our failback was cut short (shiftu_rejoin()): ask the peer, through the
 * store, to join our renewed twin, in the pass's last batch
 * (shiftu_late_batch(), which says it was asked).  Its message on the twin
 * answers.  Context: vq->lock held.
 */
static void rejoin_ask(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	fbreq_put(vq, pq, "rejoin", 1, PASS_REJOIN);
}

/* Its answer.  Context: vq->lock held. */
static void rejoin_asked(struct shiftu_vqp *vq, const struct pass_req *r)
{
	if (r->kv.ret) {
		/* the next pass asks again, with the same number unless
		 * another request took one since */
		if (vq->fb_seq == r->seq)
			vq->fb_seq--;
		return;
	}
	if (!vq->rejoin_ask)
		return;		/* the peer joined meanwhile (goback.c) */
	vq->rejoin_ask = 0;
	shiftu_info("qp %u on %s: asked the peer to join its renewed twin",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name);
}

/*
 * Our going back heard nothing from the peer (rejoin_ns()): ask it,
 * through the store, to cancel the failback it granted (@vq->fb_going),
 * in the pass's last batch, as rejoin_ask() does.  The peer answers on one
 * of our QPs, not through the store (shiftu_cancel_serve()).  Context:
 * vq->lock held.
 */
static void cancel_ask(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	/* the last word names the grant: a late cancel of an older one
	 * finds another open, or none, and changes nothing */
	fbreq_put(vq, pq, "cancel", vq->fb_going, PASS_CANCEL);
}

/* Its answer: the wait for the peer counts from the store's.  vq->lock. */
static void cancel_asked(struct shiftu_vqp *vq, const struct pass_req *r)
{
	if (r->kv.ret) {
		/* asked again at the next pass, as a rejoin is */
		if (vq->fb_seq == r->seq)
			vq->fb_seq--;
		return;
	}
	if (vq->fb_cancel != 1 || !shiftu_going_back(vq))
		return;		/* the peer answered meanwhile, or a move came */
	vq->fb_cancel = 2;
	vq->fb_cancel_ns = shiftu_mono_ns();
	shiftu_info("qp %u on %s: asked the peer to cancel the failback it granted (request %u), listening on both QPs",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->fb_going);
}

/*
 * The peer's answer to our failback request (failback_step()), asked for
 * in the pass's batch while one is awaited.  Context: shadow thread,
 * vq->lock held.
 */
static void failback_req(struct shiftu_vqp *vq, struct pass_qp *pq)
{
	char g[33];
	int i;

	if (vq->state != SHIFTU_SEND_FALLBACK || vq->fb_stage != 1 ||
	    shiftu_mono_ns() < vq->fb_wait_ns)
		return;
	i = shiftu_req_add(SHIFTU_KV_GET, sizeof(reqs[0].val));
	if (i < 0)
		return;
	shiftu_gid_hex(vq->sgid, g);
	snprintf(reqs[i].key, sizeof(reqs[i].key), "fbrep:%s:%u", g, vq->reg.app_qp->qp_num);
	pq->fbrep = i;
}

/*
 * @vq's requests of the pass's first batch: the peer's failback request
 * to answer, the peer's answer to ours.  Context: the shadow thread,
 * vq->lock held.
 */
void shiftu_failback_asks(struct shiftu_vqp *vq, struct pass_qp *pq)
{
	shiftu_failback_answer_req(vq, pq);
	failback_req(vq, pq);
}

/*
 * @vq waits on the peer: it is going back (it rejoins its twin on a
 * failure it sees, asks the peer to cancel when it hears nothing, and
 * rejoins when even that goes unanswered), or it holds its sends for the
 * peer's count.  True while it waits.  Context: the shadow thread,
 * vq->lock held.
 */
bool shiftu_failback_waits(struct shiftu_vqp *vq)
{
	if (shiftu_going_back(vq)) {
		if (__atomic_load_n(&vq->rejoin_want, __ATOMIC_ACQUIRE))
			shiftu_rejoin(vq, "its default QP failed while it went back");
		else if (!primary_ok(vq))
			shiftu_rejoin(vq, "its port or path went down while it went back");
		else if (vq->fb_cancel == 2 &&
			 shiftu_mono_ns() - vq->fb_cancel_ns > CANCEL_WAIT_NS)
			shiftu_rejoin(vq, "no word from the peer on either QP since it was asked to cancel");
		else if (!vq->fb_cancel && shiftu_mono_ns() - vq->hs_told_ns > rejoin_ns()) {
			shiftu_info("qp %u on %s: no word from the peer on its default QP in %.1f s: asking it to cancel the failback",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
				    (shiftu_mono_ns() - vq->hs_told_ns) / 1e9);
			vq->fb_cancel = 1;
		}
		return true;
	}
	if (vq->state == SHIFTU_SEND_HANDSHAKE) {
		/* the keys its held sends wait for are answered */
		if (vq->keys_held && !__atomic_load_n(&vq->rkeys_wanted, __ATOMIC_RELAXED))
			shiftu_keys_came(vq);
		/* the store's answers are bounded as the peer's count is */
		if (vq->state == SHIFTU_SEND_HANDSHAKE &&
		    shiftu_mono_ns() - vq->hs_since_ns > HS_TIMEOUT_NS)
			shiftu_hs_timeout(vq, HS_TIMEOUT_NS);
		return true;
	}
	return false;
}

/*
 * @vq's twin failed under its work (cqtwin.c): its failback is asked for
 * at once, past any backoff, and two-sided (failback_ask()).  One that has
 * not begun TWIN_DEAD_NS later (its path still down, or the peer on its
 * default QP, which a two-sided failback cannot reset) gives the twin's
 * errors to the application (goback.c).  A failback under way goes on,
 * and so does the wait for the peer's that we granted (fb_wait_ns: a
 * grant whose message never comes is not waited for without end).
 * Context: the shadow thread, vq->lock held.
 */
static void twin_dead_step(struct shiftu_vqp *vq)
{
	uint64_t dead = __atomic_load_n(&vq->twin_dead_ns, __ATOMIC_ACQUIRE);

	if (!dead) {
		vq->twin_dead_seen = 0;
		return;
	}
	if (!vq->twin_dead_seen) {
		vq->twin_dead_seen = 1;
		vq->fb_backoff_ms = 0;
		if (vq->fb_stage == 0)
			vq->fb_next_ns = 0;
	}
	if (vq->state != SHIFTU_SEND_FALLBACK || vq->fb_stage == 2 || shiftu_back_pending(vq) ||
	    shiftu_mono_ns() < vq->fb_wait_ns || shiftu_mono_ns() - dead < TWIN_DEAD_NS)
		return;
	shiftu_twin_dead_give_up(vq, primary_ok(vq) ? "no failback began" :
				 "its port or path is still down");
}

/*
 * The requests @vq's failback makes in the pass's last batch (to join our
 * twin, to cancel the peer's grant), and its step on the side that failed
 * over.  True while its probe is under way, or its twin failed: the pass
 * looks again soon.  Context: the shadow thread, vq->lock held.
 */
bool shiftu_failback_steps(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	twin_dead_step(vq);
	if (vq->rejoin_ask)
		rejoin_ask(vq, pq);
	else if (vq->fb_cancel == 1 && shiftu_going_back(vq))
		cancel_ask(vq, pq);
	if (vq->state == SHIFTU_SEND_FALLBACK)
		failback_step(vq, pq);
	else if (vq->fb_stage == 2)
		vq->fb_stage = 0;	/* back by the peer's word */
	return vq->fb_stage == 2 || vq->twin_dead_seen;
}

/*
 * The pass's last batch: what its records' steps had to say once the
 * first one was answered (failback requests and answers), requests
 * @from on.  A failback request that did not go backs its QP off; one
 * that did starts its wait for the answer (fb_answer_ns()).
 * A request to join our twin that went is said; one that did not is made
 * again at the next pass.  Context: shadow_lock, no other lock; the QPs
 * destroyed while the store was asked are skipped (pass_vqs[]).
 */
void shiftu_late_batch(unsigned int from)
{
	struct shiftu_vqp *vq;
	unsigned int i;

	shiftu_batch_send(from);
	for (i = from; i < n_reqs; i++) {
		vq = req_vq(i, PASS_REJOIN);
		if (vq) {
			shiftu_lock(&vq->lock, SHIFTU_LOCK_VQ);
			rejoin_asked(vq, &reqs[i]);
			shiftu_unlock(&vq->lock, SHIFTU_LOCK_VQ);
			continue;
		}
		vq = req_vq(i, PASS_CANCEL);
		if (vq) {
			shiftu_lock(&vq->lock, SHIFTU_LOCK_VQ);
			cancel_asked(vq, &reqs[i]);
			shiftu_unlock(&vq->lock, SHIFTU_LOCK_VQ);
			continue;
		}
		vq = req_vq(i, PASS_FBREQ);
		if (!vq)
			continue;
		shiftu_lock(&vq->lock, SHIFTU_LOCK_VQ);
		if (vq->state == SHIFTU_SEND_FALLBACK && vq->fb_stage == 1) {
			if (reqs[i].kv.ret)
				fb_backoff(vq, FB_MAX_MS);
			else
				vq->fb_next_ns = shiftu_mono_ns() + fb_answer_ns();
		}
		shiftu_unlock(&vq->lock, SHIFTU_LOCK_VQ);
	}
}
