// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shadow.c: the shadow thread, which makes the backup resources, and the
 * backers (shadow.h).
 *
 * The application's thread records what it created (registry.c) and wakes
 * the shadow thread.  The thread makes passes over the records, doing
 * every step whose inputs are there (twin.c, failback.c, scout.c), until
 * nothing is pending; then it sleeps until woken, or for 100 ms while
 * something waits on a peer.  It holds shadow_lock for a pass's steps,
 * which are local verbs, but not while it waits for the store: a pass asks
 * the store once for every record at a time (pass_batch()), and once more
 * for what the answers made it say (shiftu_late_batch(): failback requests
 * and answers), each time with no lock held (shiftu_batch_send(),
 * storepass.c), so that a store that does not answer holds up no verb of
 * the application's.  What the application destroys meanwhile the pass
 * skips after (pass_vqs[]).  No application thread talks to the store: a
 * key to delete is queued for the thread (shiftu_kv_forget()), and a
 * replay finds the peer's keys in what the thread looked up ahead
 * (shiftu_backup_rkey(), scout.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cq.h"
#include "ctxstate.h"
#include "failover.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "provq.h"
#include "real.h"
#include "report.h"
#include "shadow_int.h"
#include "testbuild.h"
#include "thread.h"
#include "util.h"
#include "vqpstate.h"

static pthread_once_t shadow_once = PTHREAD_ONCE_INIT;

/* The backers (going back for an application that does not poll). */
static pthread_mutex_t backer_lock = PTHREAD_MUTEX_INITIALIZER;
SHIFTU_FORK_HOOK(backer, .rank = SHIFTU_RANK_BACKER, .name = "backer_lock", .lock = &backer_lock);
static pthread_cond_t backer_wake = PTHREAD_COND_INITIALIZER;
static struct shiftu_vqp *backer_head, **backer_tail = &backer_head;
static unsigned int n_backers, backers_idle;

static void *shadow_thread(void *arg);

static void shadow_start(void)
{
	int err;

	err = shiftu_thread_start(shadow_thread, NULL);
	if (err)
		shiftu_warn("cannot start the backup thread: %s: QPs run unprotected",
			    strerror(err));
	else
		shadow_started = true;
}

/* Start the shadow thread, once (the first context recorded). */
void shiftu_shadow_start(void)
{
	pthread_once(&shadow_once, shadow_start);
}

/* ---- going back for an application that does not poll ----------------- */

/*
 * A good probe makes a QP's going back due, and the application's next
 * slow poll of its CQs takes it (goback.c).  For an application that
 * has not polled for FB_BACK_WAIT_NS (it only posts, sleeps, or waits for
 * the CPU), a backer goes back: a thread of the library's, not the shadow
 * thread, because a going back drains the twin, which waits for the NIC's
 * flush (seconds a QP on a busy host), and the shadow thread meanwhile
 * probes and answers for every other QP.  Up to BACKERS run at once,
 * started as they are needed and kept; a QP handed to one is pinned
 * (vqpstate.h, @pins) until the backer is done with it.
 */
#define BACKERS		4

/*
 * How long a due going back waits for the application's poll before a
 * backer takes it (shiftu_back_due()): long enough for a poller that a
 * busy CPU runs late, since the application's threads go back side by
 * side, the backers a few at a time.
 */
#define FB_BACK_WAIT_NS	(1000ULL * 1000 * 1000)

static void *backer(void *arg)
{
	struct shiftu_vqp *vq;

	(void)arg;
	pthread_setname_np(pthread_self(), SHIFTU_THREAD_NAME "-backer");
	shiftu_lock(&backer_lock, SHIFTU_LOCK_BACKER);
	for (;;) {
		while (!backer_head) {
			backers_idle++;
			pthread_cond_wait(&backer_wake, &backer_lock);
			backers_idle--;
		}
		vq = backer_head;
		backer_head = vq->backer_next;
		if (!backer_head)
			backer_tail = &backer_head;
		shiftu_unlock(&backer_lock, SHIFTU_LOCK_BACKER);
		/* taken by an application's poll meanwhile: nothing */
		shiftu_take_back(vq);
		shiftu_lock(&backer_lock, SHIFTU_LOCK_BACKER);
		vq->backer_handed = 0;
		/* last: ibv_destroy_qp() may free it at once */
		__atomic_fetch_sub(&vq->pins, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Context: the shadow thread, shadow_lock and vq->lock held. */
static void backer_hand(struct shiftu_vqp *vq)
{
	int err = 0;

	shiftu_lock(&backer_lock, SHIFTU_LOCK_BACKER);
	if (vq->backer_handed) {
		shiftu_unlock(&backer_lock, SHIFTU_LOCK_BACKER);
		return;
	}
	if (!backers_idle && n_backers < BACKERS) {
		err = shiftu_thread_start(backer, NULL);
		if (!err)
			n_backers++;
	}
	if (!n_backers) {
		shiftu_unlock(&backer_lock, SHIFTU_LOCK_BACKER);
		shiftu_warn("qp %u on %s: cannot start a thread to go back: %s: going back in the backup thread",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(err));
		shiftu_take_back(vq);
		return;
	}
	vq->backer_handed = 1;
	__atomic_fetch_add(&vq->pins, 1, __ATOMIC_RELAXED);
	vq->backer_next = NULL;
	*backer_tail = vq;
	backer_tail = &vq->backer_next;
	pthread_cond_signal(&backer_wake);
	shiftu_unlock(&backer_lock, SHIFTU_LOCK_BACKER);
	/* under shadow_lock: the QP cannot go meanwhile */
	shiftu_info("qp %u on %s: no poll of the application's took its going back for a second: a backer goes back",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name);
}

/*
 * SHIFTU_TEST_RESET_FILE (the test build): once the file is there, reset
 * @vq in place if it is on its default QP, with the PSNs its QP expects
 * and sends next: the peer sees nothing but a responder that forgot the
 * message it was in.  What it had posted, which the reset drops, is
 * posted again as it was, read from the provider's rings (a SEND pair's
 * server: its receives, a credit WRITE whose acknowledgement the test
 * held; the test holds the peer's traffic meanwhile, so that nothing
 * completes and nothing is posted under the reset).  Context: the shadow
 * thread, vq->lock held.
 */
static void test_reset_step(struct shiftu_vqp *vq, bool due)
{
#ifdef SHIFTU_TEST_BUILD
	uint32_t n_s = 0, n_r = 0;
	struct ibv_qp_init_attr ia;
	void *sends, *recvs;
	struct ibv_qp_attr a;
	int ret;

	if (!due)
		return;
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (vq->state != SHIFTU_SEND_DEFAULT || !vq->steps.rtr_mask ||
	    (!vq->psq && vq->sq.head) || (!vq->prq && vq->rq.head != shiftu_count_start()) ||
	    __atomic_load_n(&vq->app_stop, __ATOMIC_RELAXED))
		goto unlock;
	sends = vq->psq ? shiftu_provq_save(vq->psq, &n_s) : NULL;
	recvs = vq->prq ? shiftu_provq_save(vq->prq, &n_r) : NULL;
	ret = shiftu_real.query_qp(vq->reg.app_qp, &a, IBV_QP_RQ_PSN | IBV_QP_SQ_PSN, &ia);
	if (!ret)
		ret = shiftu_qp_reconnect(vq, a.rq_psn, a.sq_psn, 0);
	if (!ret && n_r)
		ret = -shiftu_provq_repost_recvs(vq->reg.app_qp, recvs, n_r, vq->prq,
						 vq->post_recv);
	if (!ret && n_s)
		ret = -shiftu_provq_repost_sends(vq->reg.app_qp, sends, n_s, vq->psq,
						 vq->post_send);
	free(sends);
	free(recvs);
	shiftu_info("qp %u on %s: reset in place, expecting PSN %u, %u receives and %u requests posted again (a test setting): %s",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, a.rq_psn, n_r, n_s,
		    ret ? strerror(ret) : "done");
unlock:
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
#else
	(void)vq;
	(void)due;
#endif
}

/*
 * SHIFTU_TEST_TWIN_ERR_FILE (the test build): once the file is there, move
 * @vq's twin to the error state if the QP's work is on it (Fallback): the
 * twin fails under it, its requests flushed.  Context: the shadow thread,
 * vq->lock held.
 */
static void test_twin_err_step(struct shiftu_vqp *vq, bool due)
{
#ifdef SHIFTU_TEST_BUILD
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int ret;

	if (!due)
		return;
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (vq->state == SHIFTU_SEND_FALLBACK && vq->on_twin) {
		ret = shiftu_real.modify_qp(vq->bak_qp, &a, IBV_QP_STATE);
		shiftu_info("qp %u on %s: its twin, qp %u on %s, stopped (a test setting): %s",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->bak_qp->qp_num,
			    vq->sctx->bak_name, ret ? strerror(ret) : "done");
	}
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
#else
	(void)vq;
	(void)due;
#endif
}

/* The test build's files that are there: what this pass does for them. */
#define TEST_RESET	1U	/* test_reset_step() */
#define TEST_TWIN_ERR	2U	/* test_twin_err_step() */

static bool test_file_there(const char *f)
{
	return f && !access(f, F_OK);
}

static unsigned int test_files_due(void)
{
	return (test_file_there(shiftu_test_reset_file()) ? TEST_RESET : 0) |
	       (test_file_there(shiftu_test_twin_err_file()) ? TEST_TWIN_ERR : 0);
}

/*
 * Tell shift_ft what the transport told us (report.c): the path down after
 * a failover on a retry-exceeded completion, up again once the QP is back
 * on it.  A report the kernel refuses is not retried.  Context: vq->lock.
 */
static void report_step(struct shiftu_vqp *vq)
{
	bool back = vq->state == SHIFTU_SEND_DEFAULT;
	int ret;

	if (__atomic_load_n(&vq->report_down, __ATOMIC_RELAXED) && !vq->reported && !back) {
		__atomic_store_n(&vq->report_down, 0, __ATOMIC_RELAXED);
		/* before the page moves: our own report does not make us "down" */
		__atomic_store_n(&vq->reported, 1, __ATOMIC_RELAXED);
		ret = shiftu_report_path(vq->sctx->dev_name, vq->port_num, vq->dgid, true);
		if (!ret)
			shiftu_info("qp %u on %s port %u: reported its path down to shift_ft",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->port_num);
		else if (ret != -EPERM && ret != -ENOENT)
			shiftu_warn("qp %u on %s port %u: cannot report its path down: %s",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->port_num,
				    strerror(-ret));
		__atomic_store_n(&vq->reported, !ret, __ATOMIC_RELAXED);
	} else if (vq->reported && back) {
		ret = shiftu_report_path(vq->sctx->dev_name, vq->port_num, vq->dgid, false);
		__atomic_store_n(&vq->reported, 0, __ATOMIC_RELAXED);
		if (!ret)
			shiftu_info("qp %u on %s port %u: reported its path up to shift_ft",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->port_num);
		else
			shiftu_warn("qp %u on %s port %u: cannot report its path up: %s (it stays down until this process exits)",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->port_num,
				    strerror(-ret));
	}
}

static void pass_batch(void)
{
	struct shiftu_mr *m;
	unsigned int i;

	if (!n_reqs)
		return;
	shiftu_batch_send(0);
	/* an MR deregistered or registered again meanwhile is not the one
	 * published: its record went, or its twin did */
	shiftu_lock(&mr_lock, SHIFTU_LOCK_MR);
	for (i = 0; i < n_reqs; i++) {
		if (!reqs[i].mr || reqs[i].kv.ret)
			continue;
		for (m = mrs; m && m != reqs[i].mr; m = m->next)
			;
		if (m && m->app == reqs[i].mr_app && m->bak == reqs[i].mr_bak)
			m->published = true;
	}
	shiftu_unlock(&mr_lock, SHIFTU_LOCK_MR);
}

/*
 * A two-sided failback waits for the peer's message on the default QP,
 * whose CQ the application may not poll (a side that only writes): the
 * pass serves it at the QP's turn, and between the turns of others as
 * well.  A pass that moves many QPs back takes seconds (64 in the lab: a
 * quarter of a second each), and the messages of the first ones waited
 * for the next pass, past REJOIN_NS: they rejoined, or went back at the
 * end of the run.  Context: shadow_lock, no other lock.
 */
#define SERVE_NS	(100ULL * 1000 * 1000)

static void serve_awaiting(void)
{
	struct shiftu_vqp *vq;
	unsigned int i;

	for (i = 0; i < n_vqps; i++) {
		vq = vqps[i];
		if (!shiftu_awaits_default(vq))
			continue;
		shiftu_lock(&vq->lock, SHIFTU_LOCK_VQ);
		if (shiftu_awaits_default(vq))
			shiftu_app_serve(vq);
		shiftu_unlock(&vq->lock, SHIFTU_LOCK_VQ);
	}
}

/* What every QP asks the store, in the pass's first batch. */
static void pass_asks(uint64_t now)
{
	struct pass_qp *pq;
	unsigned int i;

	for (i = 0; i < n_pass; i++) {
		struct shiftu_vqp *vq = pass_vqs[i];

		pq = &pqs[i];
		pq->pub = pq->peer = pq->fbreq = pq->fbrep = -1;
		if (!vq->sctx->bak_ctx || vq->published == 2)
			continue;
		shiftu_lock(&vq->lock, SHIFTU_LOCK_VQ);
		if (shiftu_twin_asks(vq, pq)) {
			shiftu_failback_asks(vq, pq);
			shiftu_scout_req(vq, pq, now);
		}
		shiftu_unlock(&vq->lock, SHIFTU_LOCK_VQ);
	}
}

/*
 * @vq's steps once the store answered: its twin, its waits on the peer,
 * its failback, the reports of its path.  True while something is
 * pending.  Context: the shadow thread, shadow_lock held.
 */
static bool qp_step(struct shiftu_vqp *vq, struct pass_qp *pq, unsigned int tests)
{
	bool pending = false;
	uint64_t due;

	shiftu_lock(&vq->lock, SHIFTU_LOCK_VQ);
	shiftu_twin_step(vq, pq, &pending);
	if (shiftu_failback_waits(vq))
		pending = true;
	if (shiftu_failback_steps(vq, pq))
		pending = true;		/* its probe: look again soon */
	due = __atomic_load_n(&vq->back_due_ns, __ATOMIC_ACQUIRE);
	if (due) {
		/* the application does not poll its CQs: a backer goes */
		if (shiftu_mono_ns() - due > FB_BACK_WAIT_NS)
			backer_hand(vq);
		pending = true;
	}
	if (shiftu_refusal_step(vq))
		pending = true;		/* look again soon */
	report_step(vq);
	test_reset_step(vq, tests & TEST_RESET);
	test_twin_err_step(vq, tests & TEST_TWIN_ERR);
	if (shiftu_failback_listen(vq, pq))
		pending = true;		/* keep listening for requests */
	/* a two-sided failback's message may come to a CQ the
	 * application does not poll: listen while one can */
	if (shiftu_awaits_default(vq)) {
		shiftu_app_serve(vq);
		pending = true;
	}
	/* until both twins have joined (a passive side's goes to RTS too)
	 * and our record says ours has */
	if (vq->published != 2 && (!vq->bak_ready || (vq->bak_rts && !vq->joined_pub)))
		pending = true;
	shiftu_unlock(&vq->lock, SHIFTU_LOCK_VQ);
	return pending;
}

/* The QPs still there once the store answered; true while one waits. */
static bool pass_answers(unsigned int tests)
{
	uint64_t served = shiftu_mono_ns();
	bool pending = false;
	unsigned int i;

	for (i = 0; i < n_pass; i++) {
		struct shiftu_vqp *vq = pass_vqs[i];

		if (shiftu_mono_ns() - served > SERVE_NS) {
			serve_awaiting();
			served = shiftu_mono_ns();
		}
		if (!vq || !vq->sctx->bak_ctx || vq->published == 2)
			continue;
		if (qp_step(vq, &pqs[i], tests))
			pending = true;
	}
	return pending;
}

/* One step of every record; returns true while something is still pending. */
static bool shadow_pass(void)
{
	uint64_t now = shiftu_mono_ns();
	unsigned int tests = test_files_due();
	bool pending = false;
	unsigned int first_late;

	n_reqs = 0;
	scout_due = 0;
	/* first: it drops shadow_lock while it connects */
	shiftu_kv_open_step();
	if (!shiftu_pass_begin(vqps, n_vqps))
		return true;	/* the next pass tries again */
	/* the deletes before any record the pass publishes */
	shiftu_forget_take();
	if (shiftu_twins_make())
		pending = true;
	pass_asks(now);
	pass_batch();
	shiftu_scout_apply(now);
	first_late = n_reqs;
	if (pass_answers(tests))
		pending = true;
	shiftu_late_batch(first_late);
	n_pass = 0;
	/* done: the test sees the file gone */
	if (tests & TEST_RESET)
		unlink(shiftu_test_reset_file());
	if (tests & TEST_TWIN_ERR)
		unlink(shiftu_test_twin_err_file());
	/* deletes that wait: the store is backed off, or they came late */
	if (shiftu_forget_waits())
		pending = true;
	return pending;
}

/*
 * The child of a fork(2) (registry.c: shiftu_shadow_fork_child()): the
 * thread, which the child does not have, starts again with the child's
 * first device.
 */
void shiftu_shadow_thread_fork_child(void)
{
	shadow_once = (pthread_once_t)PTHREAD_ONCE_INIT;
	/* the backers are the parent's, and the QPs they had too */
	pthread_cond_init(&backer_wake, NULL);
	backer_head = NULL;
	backer_tail = &backer_head;
	n_backers = 0;
	backers_idle = 0;
}

static void *shadow_thread(void *arg)
{
	unsigned int seen;
	struct timespec t;
	uint64_t t0, wait;
	bool pending;

	(void)arg;
	pthread_setname_np(pthread_self(), SHIFTU_THREAD_NAME "-shadow");
	srandom((unsigned int)getpid() ^ (unsigned int)time(NULL));
	shiftu_lock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	for (;;) {
		seen = shadow_gen;
		t0 = shiftu_mono_ns();
		pending = shadow_pass();
		if (shiftu_mono_ns() - t0 > 200000000ULL)
			shiftu_dbg("shadow pass: %llu ms", (unsigned long long)((shiftu_mono_ns() - t0) / 1000000));
		if (seen != shadow_gen ||
		    __atomic_exchange_n(&shadow_poked, 0, __ATOMIC_ACQUIRE))
			continue;
		if (pending || scout_due) {
			/* waiting on a peer or the store: again soon; or
			 * until the next look ahead (shiftu_scout_req()) */
			wait = 100 * 1000 * 1000;
			if (!pending)
				wait = scout_due > shiftu_mono_ns() ? scout_due - shiftu_mono_ns() : 0;
			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_sec += wait / 1000000000;
			t.tv_nsec += wait % 1000000000;
			if (t.tv_nsec >= 1000000000) {
				t.tv_sec++;
				t.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&shadow_wake, &shadow_lock, &t);
		} else {
			pthread_cond_wait(&shadow_wake, &shadow_lock);
		}
	}
	return NULL;
}
