// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * cqex.c: extended CQs (cqex.h).
 *
 * The provider's start_poll returns a completion in place, under the CQ's
 * lock, and its accessors read it there until end_poll.  A CQ the library
 * protects needs more: completions of its own taken out, error completions
 * held for a failover, a stash and a twin CQ served in order, twin
 * completions renamed to the application's QP, and receives counted, all
 * of which the library's ibv_poll_cq path does (datapath.c, cq.c).  So on
 * a CQ the library serves, start_poll and next_poll take one completion
 * each through that path, into the CQ's node here, and the accessors read
 * the node: whatever the completion came from (the CQ, its twin, the
 * stash), they return its own values.  The provider's cq_ex functions are
 * not called; its poll_cq, which every provider gives a cq_ex too, is.
 *
 * Served are CQs whose wc_flags are among IBV_WC_STANDARD_FLAGS: those a
 * struct ibv_wc carries whole, so nothing is lost by taking completions
 * as struct ibv_wc (nor by the twin being an ordinary CQ).  Soft-RoCE
 * supports no others.
 *
 * The provider's lock, held from start_poll to end_poll, serialises the
 * application's polling sessions: two threads may poll one CQ, and
 * cq->wr_id and cq->status are the session's.  The node keeps a lock of
 * its own for that, held the same way; the library's threads never take
 * it (they poll with the provider's poll_cq, which has its own), so a
 * failover never waits for an application's session.  Providers disagree
 * on how a session ends when next_poll finds the CQ empty: mlx5's keeps
 * it open for end_poll; Soft-RoCE's (rdma-core 44) ends it there, and its
 * end_poll after that consumes an entry that is not there.  So programs
 * are written both ways, and the library takes both: its next_poll ends
 * the session on ENOENT, and end_poll ends only a session its thread holds.
 *
 * Nodes are never freed (a destroyed CQ's node waits for the next CQ): a
 * thread's anchor may point at a node whose CQ is gone.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "cqex.h"
#include "fork.h"
#include "interpose.h"
#include "log.h"
#include "util.h"

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

struct shiftu_cqx {
	/* the CQ served, or NULL: the node is free (written under cqx_lock,
	 * read by anchors without it: see cqx_find()) */
	struct ibv_cq_ex *cq;
	/* the thread whose polling session is open (its token), or NULL */
	void *owner;
	struct shiftu_cqx *next;	/* cqx_list; set once, before publication */
	/* the session's current completion */
	struct ibv_wc cur;
};

/* Pushes publish with release; walkers load acquire.  Under cqx_lock. */
static struct shiftu_cqx *cqx_list;
pthread_mutex_t cqx_lock = PTHREAD_MUTEX_INITIALIZER;	/* fork.h */

/* Matches no CQ: the anchors' value before a thread's first session. */
static struct shiftu_cqx cqx_none;

/* The node of the CQ the thread polled last; its address is the thread's
 * token as a session's owner. */
static __thread struct shiftu_cqx *cqx_anchor
	__attribute__((tls_model("initial-exec"))) = &cqx_none;

bool shiftu_cqx_servable(const struct ibv_cq_init_attr_ex *attr)
{
	return !(attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS);
}

/*
 * @cq's node, which becomes the thread's anchor.  The application polls a
 * CQ it has not destroyed (verbs rule), so its node is found; a node that
 * a walker meets as it is freed or reused holds another CQ or none.
 */
static shiftu_cold struct shiftu_cqx *cqx_find(const struct ibv_cq_ex *cq)
{
	/* pairs with the release in shiftu_cqx_attach() */
	struct shiftu_cqx *x = __atomic_load_n(&cqx_list, __ATOMIC_ACQUIRE);

	while (x && __atomic_load_n(&x->cq, __ATOMIC_RELAXED) != cq)
		x = x->next;
	if (!x) {
		/* our functions on a CQ we do not know: cannot happen */
		shiftu_warn("extended cq %p: not the library's", (void *)cq);
		return &cqx_none;
	}
	cqx_anchor = x;
	return x;
}

static inline struct shiftu_cqx *cqx_of(const struct ibv_cq_ex *cq)
{
	struct shiftu_cqx *x = cqx_anchor;

	if (unlikely(x->cq != cq))
		x = cqx_find(cq);
	return x;
}

static inline bool cqx_session_try(struct shiftu_cqx *x, void *me)
{
	void *none = NULL;

	return __atomic_compare_exchange_n(&x->owner, &none, me, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Another thread's session is open on the CQ: wait for its end. */
static shiftu_cold void cqx_session_wait(struct shiftu_cqx *x, void *me)
{
	unsigned int spins = 0;

	do {
		if (++spins > 64)
			sched_yield();	/* a session may wait for a failover */
		else
			__builtin_ia32_pause();
	} while (__atomic_load_n(&x->owner, __ATOMIC_RELAXED) || !cqx_session_try(x, me));
}

static inline void cqx_session_start(struct shiftu_cqx *x)
{
	void *me = &cqx_anchor;

	if (unlikely(!cqx_session_try(x, me)))
		cqx_session_wait(x, me);
}

/*
 * The thread's session on @x ends, if it has one: only the owner stores
 * its own token, so a plain load tells, and nobody else stores meanwhile.
 */
static inline void cqx_session_end(struct shiftu_cqx *x)
{
	if (__atomic_load_n(&x->owner, __ATOMIC_RELAXED) == (void *)&cqx_anchor)
		__atomic_store_n(&x->owner, NULL, __ATOMIC_RELEASE);
}

/*
 * One completion into @x's current one, through the library's poll:
 * 0, ENOENT when there is none, or the poll's error.  The CQ's wr_id and
 * status are the application's to read, as the verbs define them.
 */
static inline int cqx_take(struct shiftu_cqx *x, struct ibv_cq_ex *cq)
{
	int n = shiftu_poll_cq(ibv_cq_ex_to_cq(cq), 1, &x->cur);

	if (likely(n == 1)) {
		cq->wr_id = x->cur.wr_id;
		cq->status = x->cur.status;
		return 0;
	}
	return n ? -n : ENOENT;
}

static int cqx_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	struct shiftu_cqx *x = cqx_of(cq);
	int ret;

	(void)attr;
	cqx_session_start(x);
	ret = cqx_take(x, cq);
	/* no session without a completion: end_poll is not called */
	if (unlikely(ret))
		cqx_session_end(x);
	return ret;
}

static int cqx_next_poll(struct ibv_cq_ex *cq)
{
	struct shiftu_cqx *x = cqx_of(cq);
	int ret = cqx_take(x, cq);

	/* as Soft-RoCE's: an empty CQ ends the session (see above) */
	if (unlikely(ret))
		cqx_session_end(x);
	return ret;
}

static void cqx_end_poll(struct ibv_cq_ex *cq)
{
	cqx_session_end(cqx_of(cq));
}

/* The accessors: the session's current completion, wherever it came from. */
static enum ibv_wc_opcode cqx_read_opcode(struct ibv_cq_ex *cq)
{
	return cqx_of(cq)->cur.opcode;
}

static uint32_t cqx_read_vendor_err(struct ibv_cq_ex *cq)
{
	return cqx_of(cq)->cur.vendor_err;
}

static uint32_t cqx_read_byte_len(struct ibv_cq_ex *cq)
{
	return cqx_of(cq)->cur.byte_len;
}

/* also ibv_wc_read_invalidated_rkey(): one union in struct ibv_wc */
static __be32 cqx_read_imm_data(struct ibv_cq_ex *cq)
{
	return cqx_of(cq)->cur.imm_data;
}

static uint32_t cqx_read_qp_num(struct ibv_cq_ex *cq)
{
	return cqx_of(cq)->cur.qp_num;
}

static uint32_t cqx_read_src_qp(struct ibv_cq_ex *cq)
{
	return cqx_of(cq)->cur.src_qp;
}

static unsigned int cqx_read_wc_flags(struct ibv_cq_ex *cq)
{
	return cqx_of(cq)->cur.wc_flags;
}

static uint32_t cqx_read_slid(struct ibv_cq_ex *cq)
{
	return cqx_of(cq)->cur.slid;
}

static uint8_t cqx_read_sl(struct ibv_cq_ex *cq)
{
	return cqx_of(cq)->cur.sl;
}

static uint8_t cqx_read_dlid_path_bits(struct ibv_cq_ex *cq)
{
	return cqx_of(cq)->cur.dlid_path_bits;
}

int shiftu_cqx_attach(struct ibv_cq_ex *cq)
{
	struct shiftu_cqx *x;

	pthread_mutex_lock(&cqx_lock);
	for (x = cqx_list; x && x->cq; x = x->next)
		;
	if (!x) {
		x = calloc(1, sizeof(*x));
		if (!x) {
			pthread_mutex_unlock(&cqx_lock);
			return -ENOMEM;
		}
		x->next = cqx_list;
		__atomic_store_n(&x->cq, cq, __ATOMIC_RELAXED);
		/* the node is whole before a walker can reach it */
		__atomic_store_n(&cqx_list, x, __ATOMIC_RELEASE);
	} else {
		x->owner = NULL;
		__atomic_store_n(&x->cq, cq, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&cqx_lock);

	/*
	 * Every accessor a struct ibv_wc can answer, asked for or not (the
	 * provider leaves those not asked for NULL: calling one is the
	 * application's bug either way).  The others stay the provider's:
	 * a CQ that asks for them is not served.
	 */
	cq->start_poll = cqx_start_poll;
	cq->next_poll = cqx_next_poll;
	cq->end_poll = cqx_end_poll;
	cq->read_opcode = cqx_read_opcode;
	cq->read_vendor_err = cqx_read_vendor_err;
	cq->read_byte_len = cqx_read_byte_len;
	cq->read_imm_data = cqx_read_imm_data;
	cq->read_qp_num = cqx_read_qp_num;
	cq->read_src_qp = cqx_read_src_qp;
	cq->read_wc_flags = cqx_read_wc_flags;
	cq->read_slid = cqx_read_slid;
	cq->read_sl = cqx_read_sl;
	cq->read_dlid_path_bits = cqx_read_dlid_path_bits;
	return 0;
}

void shiftu_cqx_detach(const struct ibv_cq *cq)
{
	struct shiftu_cqx *x;

	pthread_mutex_lock(&cqx_lock);
	for (x = cqx_list; x; x = x->next)
		if (x->cq && ibv_cq_ex_to_cq(x->cq) == cq) {
			__atomic_store_n(&x->cq, NULL, __ATOMIC_RELAXED);
			break;
		}
	pthread_mutex_unlock(&cqx_lock);
}
