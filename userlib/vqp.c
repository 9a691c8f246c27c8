// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vqp.c: the managed QPs' list (interpose_int.h): its nodes, which outlive
 * their QPs, the lookups by QP number, the contexts' receive caches, and
 * the counts of the QPs gone and of the twins' completions, which fork(2)'s
 * child and the exit line read.  The QPs collected and pinned for a health
 * sweep or a polling session's end are sweep.c's.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event.h"
#include "interpose.h"
#include "interpose_int.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "rename.h"
#include "serial.h"
#include "util.h"
#include "window.h"

struct vqp_node *vqp_list;
static struct vqp_node *vqp_spare;
pthread_mutex_t vqp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_qp qp_gone = { .qp_num = UINT32_MAX };	/* QP numbers have 24 bits */

/* A zeroed node: a spare one, or a new one. */
struct vqp_node *shiftu_vqp_node_get(void)
{
	struct vqp_node *n;

	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	n = vqp_spare;
	if (n)
		vqp_spare = n->next;
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (n)
			n->vq.rc_qpn = UINT32_MAX;
		return n;
	}
	/* all but app_qp, the first word, which a reader may compare */
	memset(&n->vq.reg.send_state, 0,
	       sizeof(*n) - offsetof(struct vqp_node, vq.reg.send_state));
	n->vq.rc_qpn = UINT32_MAX;
	return n;
}

/* @n's QP is gone, or was never managed: the node waits for the next QP. */
void shiftu_vqp_node_put(struct vqp_node *n)
{
	__atomic_store_n(&n->vq.reg.app_qp, &qp_gone, __ATOMIC_RELAXED);
	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	__atomic_store_n(&n->vq.rc_qpn, UINT32_MAX, __ATOMIC_RELAXED);
	n->next = vqp_spare;
	vqp_spare = n;
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
}

/*
 * @vq, of QP number @qp_num, leaves its context's receive cache if it is
 * there.  Context: vqp_lock held (every writer of the cache holds it).
 */
void shiftu_rcache_drop(struct shiftu_vqp *vq, uint32_t qp_num)
{
	struct shiftu_vqp **slot = &vq->sctx->rcache[qp_num & 63];

	if (__atomic_load_n(slot, __ATOMIC_RELAXED) == vq)
		__atomic_store_n(slot, &shiftu_vqp_none, __ATOMIC_RELAXED);
}

/* The counts of QPs and contexts already gone; under vqp_lock / ctx_lock. */
struct vqp_retired retired;
uint64_t shiftu_twin_wcs;

/* Context: vqp_lock held. */
static struct shiftu_vqp *vqp_by_num_locked(struct shiftu_ctx *s, uint32_t qp_num)
{
	struct vqp_node *n;

	for (n = vqp_list; n; n = n->next)
		if (n->vq.sctx == s && n->vq.reg.app_qp->qp_num == qp_num)
			return &n->vq;
	return NULL;
}

struct shiftu_vqp *shiftu_vqp_by_num(struct shiftu_ctx *s, uint32_t qp_num)
{
	struct shiftu_vqp *vq;

	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	vq = vqp_by_num_locked(s, qp_num);
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
	return vq;
}

struct shiftu_vqp *shiftu_vqp_by_twin(struct shiftu_ctx *s, uint32_t qp_num)
{
	struct shiftu_vqp *vq = NULL;
	struct vqp_node *n;

	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	for (n = vqp_list; n; n = n->next)
		if (n->vq.sctx == s && n->vq.bak_qp && n->vq.bak_qp->qp_num == qp_num) {
			vq = &n->vq;
			break;
		}
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
	return vq;
}

struct shiftu_vqp *shiftu_count_recv_slow(struct shiftu_ctx *s, uint32_t qp_num)
{
	struct shiftu_vqp *vq;

	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	vq = vqp_by_num_locked(s, qp_num);
	/* a QP on an SRQ under its other key: its receives still need the
	 * poll's look (struct shiftu_vqp's @rc_qpn) */
	if (vq && !__atomic_load_n(&vq->recv_owed, __ATOMIC_RELAXED))
		__atomic_store_n(&s->rcache[qp_num & 63], vq, __ATOMIC_RELAXED);
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
	return vq;
}

void shiftu_recv_owe(struct shiftu_vqp *vq, uint64_t owed)
{
	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	__atomic_fetch_add(&vq->recv_owed, owed, __ATOMIC_RELAXED);
	__atomic_fetch_add(&vq->consumed, owed, __ATOMIC_RELAXED);
	shiftu_rcache_drop(vq, vq->reg.app_qp->qp_num);
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
}

/*
 * fork(2): the QPs are the parent's.  None is protected in the child: a
 * health sweep or a poll of the child's own contexts then never moves one
 * (moving it would move the parent's: the uverbs files are shared).  A QP
 * the library does not protect was not locked before the fork (registry.c):
 * its locks, which another thread of the parent may have held, are made
 * again, as are the others, free by now.  Context: fork.c, the child's
 * only thread.
 */
static bool forget_parent(void)
{
	struct shiftu_ctx *s;
	struct vqp_node *n;
	bool had = false;

	/*
	 * The exit line counts what the child did: what the parent's
	 * contexts and QPs count now is taken off (modulo 2^64: the sums of
	 * shiftu_exit_stats() start at zero here, whatever the child closes).
	 */
	retired.contexts = 0;
	for (s = shiftu_ctx_list; s; s = s->next)
		if (s->ctx) {
			retired.contexts--;
			had = true;
		}
	retired.qps = retired.post_sends = retired.post_recvs = 0;
	retired.wr_starts = retired.wr_completes = 0;
	retired.poster_changes = 0;
	for (n = vqp_list; n; n = n->next) {
		n->vq.rings = SHIFTU_RINGS_NONE;
		pthread_mutex_init(&n->vq.lock, NULL);
		pthread_mutex_init(&n->vq.fo_lock, NULL);
		n->vq.pins = 0;	/* the parent's sweeps and backers */
		retired.qps--;
		retired.post_sends -= n->vq.sq.head - n->vq.wr_posts;
		retired.post_recvs -= n->vq.rq.head;
		retired.wr_starts -= n->vq.wr_starts;
		retired.wr_completes -= n->vq.wr_completes;
		retired.poster_changes -= n->vq.poster_changes;
		had = true;
	}
	return had;
}

/*
 * The child's: the parent's contexts and QPs are unprotected here, and
 * its counts are not the child's.
 */
static void interpose_fork_child(void)
{
	if (forget_parent())
		shiftu_info("forked from %d: its devices and QPs stay its own, unprotected here; a device this process opens is protected",
			    (int)getppid());
}
SHIFTU_FORK_HOOK(vqp, .rank = SHIFTU_RANK_VQP, .name = "vqp_lock", .lock = &vqp_lock,
		 .child = interpose_fork_child);

/*
 * One line of what went through the library, for the operator and the
 * tests, at info level; only when the application opened a device.
 * post_send and post_recv count work requests (the data path counts them,
 * not its calls), poll_wcs the completions poll_cq took on its common path,
 * the others calls.  Each thread counts its polls and their completions in
 * its own window words (window.h): one count every polling thread wrote
 * would be a shared line on the data path.
 */
static void __attribute__((destructor)) shiftu_exit_stats(void)
{
	uint64_t contexts, qps, ps, pr, ws, wc, pc, polls, wcs;
	struct shiftu_ctx *s;
	struct vqp_node *n;

	shiftu_lock(&ctx_lock, SHIFTU_LOCK_CTX);
	contexts = retired.contexts;
	for (s = shiftu_ctx_list; s; s = s->next)
		contexts += s->ctx != NULL;
	shiftu_unlock(&ctx_lock, SHIFTU_LOCK_CTX);
	if (!contexts)
		return;
	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	qps = retired.qps;
	ps = retired.post_sends;
	pr = retired.post_recvs;
	ws = retired.wr_starts;
	wc = retired.wr_completes;
	pc = retired.poster_changes;
	for (n = vqp_list; n; n = n->next) {
		qps++;
		ps += n->vq.sq.head - n->vq.wr_posts;
		pr += n->vq.rq.head - shiftu_count_start();
		ws += n->vq.wr_starts;
		wc += n->vq.wr_completes;
		pc += __atomic_load_n(&n->vq.poster_changes, __ATOMIC_RELAXED);
	}
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
	shiftu_window_stats(&polls, &wcs);
	shiftu_info("exit: contexts=%" PRIu64 " qps=%" PRIu64 " post_send=%" PRIu64
		    " post_recv=%" PRIu64 " poll_cq=%" PRIu64 " poll_wcs=%" PRIu64 " wr_start=%" PRIu64
		    " wr_complete=%" PRIu64 " failovers=%" PRIu64 " failbacks=%" PRIu64
		    " replayed=%" PRIu64 " twin_wcs=%" PRIu64 " poster_changes=%" PRIu64
		    " renamed=%" PRIu64 " health_reads=%" PRIu64 " health_stale=%" PRIu64,
		    contexts, qps, ps, pr,
		    polls, wcs, ws, wc,
		    __atomic_load_n(&shiftu_stat_lines[SHIFTU_STAT_FAILOVERS].v, __ATOMIC_RELAXED),
		    __atomic_load_n(&shiftu_stat_lines[SHIFTU_STAT_FAILBACKS].v, __ATOMIC_RELAXED),
		    __atomic_load_n(&shiftu_stat_lines[SHIFTU_STAT_REPLAYED_WRS].v, __ATOMIC_RELAXED),
		    __atomic_load_n(&shiftu_twin_wcs, __ATOMIC_RELAXED), pc, shiftu_wrid_renamed(),
		    __atomic_load_n(&shiftu_stat_lines[SHIFTU_STAT_HEALTH_READS].v, __ATOMIC_RELAXED),
		    __atomic_load_n(&shiftu_stat_lines[SHIFTU_STAT_HEALTH_STALE].v, __ATOMIC_RELAXED));
}
