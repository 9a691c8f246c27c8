// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * cqex.c: extended CQs (cqex.h).
 *
 * A polling session (start_poll, next_poll ..., end_poll) is direct when
 * it can be: the provider's own start_poll, next_poll and end_poll, its
 * accessors reading its completion in place, and the library only looking
 * at each completion's status as the provider leaves it in the CQ, as the
 * poll's common path looks at a struct ibv_wc (poll.c).  That is the
 * case while the CQ's context takes the common path (no QP of it away from
 * its default, no completion held, the health page where it was), which a
 * session tests once, at its start.
 *
 * Otherwise the session is served: each start_poll and next_poll takes one
 * completion through the library's ibv_poll_cq path (stash, twin CQ, the
 * library's own taken out, twin completions renamed), into the CQ's node
 * here, and the accessors, the library's for the session, read the node.
 * A direct session whose completion needs more than a look (an error, a
 * receive the common path cannot count) becomes a served one: the
 * completion is read out, the provider's session ended (which consumes
 * it), and it goes through the library's poll as if its poll_cq had
 * returned it.  Outside sessions the accessors are the provider's.
 *
 * The provider holds its CQ's lock through a session.  A move must not
 * wait for it: its drain polls the CQ, and the session's thread may be
 * the one moving (a post inside the session that finds the port down), or
 * may wait for the move (a post on the moving QP).  So a move finds out
 * first (shiftu_cqx_mark(); drain.c's shiftu_polls_open()): it makes the
 * context's polls slow, which no session starts direct under, waits out
 * the data verbs in flight (quiesce.h, whose barrier orders the session's
 * stores with its own), and if a direct session is still open on one of
 * its QP's CQs leaves the move to the end of that session, as a batch of
 * the extended send API does (wrapi.c).  Whoever ends the session makes
 * it once the provider has let the CQ go: end_poll, the step to a served
 * session, or, for a program whose session ended when next_poll found the
 * CQ empty, the next session on the CQ, which the slow polls send down the
 * cold path.
 *
 * A lock of the node's own, held from start_poll to end_poll, serialises
 * the application's sessions of either kind (cq->wr_id, cq->status and the
 * node's completion are the session's): its word holds the owning thread's
 * token, with bit 0 set for a direct session.  The library's threads never
 * take it.  Providers disagree on how a session ends when next_poll finds
 * the CQ empty: mlx5's keeps it open for end_poll; Soft-RoCE's (rdma-core
 * 44) ends it there, and its end_poll after that consumes an entry that is
 * not there.  A direct session does as its provider does: every end_poll
 * goes to the provider (the thread's session, or the one its next_poll
 * ended last on the CQ), and the node's lock is let go when next_poll
 * finds nothing.  A served session ends there too, and an end_poll after
 * it is nothing.
 *
 * Served are CQs whose wc_flags are among IBV_WC_STANDARD_FLAGS: those a
 * struct ibv_wc carries whole, so nothing is lost by taking completions as
 * struct ibv_wc (nor by the twin being an ordinary CQ).  Soft-RoCE
 * supports no others.
 *
 * Nodes are never freed (a destroyed CQ's node waits for the next CQ): a
 * thread's anchor may point at a node whose CQ is gone.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "cqex.h"
#include "health.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "util.h"
#include "window.h"

/* The provider's polling functions, as it made the CQ. */
struct cqx_prov {
	int (*start_poll)(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr);
	int (*next_poll)(struct ibv_cq_ex *cq);
	void (*end_poll)(struct ibv_cq_ex *cq);
	enum ibv_wc_opcode (*read_opcode)(struct ibv_cq_ex *cq);
	uint32_t (*read_vendor_err)(struct ibv_cq_ex *cq);
	uint32_t (*read_byte_len)(struct ibv_cq_ex *cq);
	__be32 (*read_imm_data)(struct ibv_cq_ex *cq);
	uint32_t (*read_qp_num)(struct ibv_cq_ex *cq);
	uint32_t (*read_src_qp)(struct ibv_cq_ex *cq);
	unsigned int (*read_wc_flags)(struct ibv_cq_ex *cq);
	uint32_t (*read_slid)(struct ibv_cq_ex *cq);
	uint8_t (*read_sl)(struct ibv_cq_ex *cq);
	uint8_t (*read_dlid_path_bits)(struct ibv_cq_ex *cq);
};

struct shiftu_cqx {
	/* the session's thread's token, bit 0 set if it is direct, or 0
	 * (first: its address is the node's) */
	uintptr_t owner;
	/* the CQ served, or NULL: the node is free (written under cqx_lock,
	 * read by anchors without it: see cqx_find()) */
	struct ibv_cq_ex *cq;
	struct shiftu_ctx *s;		/* the CQ's context */
	struct cqx_prov prov;
	/* a move was left to a direct session's end (atomic) */
	bool moves_due;
	struct shiftu_cqx *next;	/* cqx_list; set once, before publication */
	/* a served session's current completion */
	struct ibv_wc cur;
};

/* Pushes publish with release; walkers load acquire.  Under cqx_lock. */
static struct shiftu_cqx *cqx_list;
static pthread_mutex_t cqx_lock = PTHREAD_MUTEX_INITIALIZER;
SHIFTU_FORK_HOOK(cqx, .rank = SHIFTU_RANK_CQX, .name = "cqx_lock", .lock = &cqx_lock);

/* Matches no CQ: the anchors' value before a thread's first session.  Its
 * context's polls are never on the common path. */
static struct shiftu_ctx cqx_none_ctx = { .slow_cqs = 1 };
static struct shiftu_cqx cqx_none = { .s = &cqx_none_ctx };

/*
 * The thread's block: the node of the CQ it polled last; its token as a
 * session's owner (the block's address), and the same with bit 0 set,
 * both set at its first session (cqx_find()); and the node whose direct
 * session its next_poll ended last, to which an end_poll with no session
 * of the thread's goes (the provider's).  One block: one offset reaches
 * all of it.
 */
struct cqx_thread {
	struct shiftu_cqx *anchor;
	uintptr_t me, me_direct;
	struct shiftu_cqx *tail;
};
static __thread struct cqx_thread cqx_t __attribute__((tls_model("initial-exec"))) = {
	.anchor = &cqx_none,
};

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

	if (!cqx_t.me) {
		cqx_t.me = (uintptr_t)&cqx_t;
		cqx_t.me_direct = cqx_t.me | 1;
	}
	while (x && __atomic_load_n(&x->cq, __ATOMIC_RELAXED) != cq)
		x = x->next;
	if (!x) {
		/* our functions on a CQ we do not know: cannot happen */
		shiftu_warn("extended cq %p: not the library's", (void *)cq);
		return &cqx_none;
	}
	cqx_t.anchor = x;
	return x;
}

static inline struct shiftu_cqx *cqx_of(const struct ibv_cq_ex *cq)
{
	struct shiftu_cqx *x = cqx_t.anchor;

	if (unlikely(x->cq != cq))
		x = cqx_find(cq);
	return x;
}

static inline bool cqx_session_try(struct shiftu_cqx *x, uintptr_t me)
{
	/* a full barrier (lock cmpxchg), no expected value in memory */
	return __sync_bool_compare_and_swap(&x->owner, 0, me);
}

/* Another thread's session is open on the CQ: wait for its end. */
static shiftu_cold void cqx_session_wait(struct shiftu_cqx *x, uintptr_t me)
{
	unsigned int spins = 0;

	do {
		if (++spins > 64)
			sched_yield();	/* a session may wait for a failover */
		else
			__builtin_ia32_pause();
	} while (__atomic_load_n(&x->owner, __ATOMIC_RELAXED) || !cqx_session_try(x, me));
}

/*
 * A direct session may start on @x: its context's polls are on the common
 * path (the poll's test, poll.c).  Read after the session's owner word
 * is stored: a move that makes the polls slow, then waits out the verbs in
 * flight, sees the session or is seen by it (shiftu_cqx_mark()).
 */
static inline bool cqx_direct_ok(const struct shiftu_cqx *x)
{
	return likely(x->s->seen_slow == shiftu_health_seq());
}

/*
 * A direct session's completion needs the library's look: an error, or a
 * receive in a process that counts receives as they are polled
 * (SHIFTU_WC_LOOK_RECVS, its upper half), which cqx_direct_look() counts
 * or takes on (the caller's node is the thread's anchor).
 */
static inline bool cqx_looked(const struct ibv_cq_ex *cq, int ret)
{
	const uint32_t *look = (const uint32_t *)&shiftu_wc_look + 1;

	_Static_assert(__BYTE_ORDER == __LITTLE_ENDIAN, "shiftu_wc_look's upper half");
	/*
	 * One test for the three: the provider's return (its status may be
	 * stale then: the caller looks at @ret first), the status, and an
	 * aligned word written once (qpverbs.c).
	 */
	return unlikely(((uint32_t)ret | (uint32_t)cq->status |
			 *(const volatile uint32_t *)look) != 0);
}

/* The accessors of a served session: its current completion. */
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

/*
 * The accessors in @cq: the library's for a served session (every one a
 * struct ibv_wc can answer, asked for or not: the provider leaves those
 * not asked for NULL, and calling one is the application's bug either
 * way), the provider's outside it.  Context: the session's owner.
 */
static void cqx_readers(struct shiftu_cqx *x, struct ibv_cq_ex *cq, bool ours)
{
	const struct cqx_prov *p = &x->prov;

	cq->read_opcode = ours ? cqx_read_opcode : p->read_opcode;
	cq->read_vendor_err = ours ? cqx_read_vendor_err : p->read_vendor_err;
	cq->read_byte_len = ours ? cqx_read_byte_len : p->read_byte_len;
	cq->read_imm_data = ours ? cqx_read_imm_data : p->read_imm_data;
	cq->read_qp_num = ours ? cqx_read_qp_num : p->read_qp_num;
	cq->read_src_qp = ours ? cqx_read_src_qp : p->read_src_qp;
	cq->read_wc_flags = ours ? cqx_read_wc_flags : p->read_wc_flags;
	cq->read_slid = ours ? cqx_read_slid : p->read_slid;
	cq->read_sl = ours ? cqx_read_sl : p->read_sl;
	cq->read_dlid_path_bits = ours ? cqx_read_dlid_path_bits : p->read_dlid_path_bits;
}

/*
 * The moves left to a direct session's end, made now that the provider
 * has let the CQ go.  Context: no lock held.
 */
static void cqx_moves(struct shiftu_cqx *x)
{
	if (__atomic_exchange_n(&x->moves_due, false, __ATOMIC_ACQUIRE) &&
	    !shiftu_vqp_polls_done(ibv_cq_ex_to_cq(x->cq))) {
		/* out of memory: the next session tries again (the polls
		 * held slow send it down the cold path) */
		__atomic_store_n(&x->moves_due, true, __ATOMIC_RELAXED);
		shiftu_warn("out of memory: a failover left to a polling session waits for the next");
	}
}

/* A served session ends: the provider's accessors back, the lock let go. */
static void cqx_served_end(struct shiftu_cqx *x, struct ibv_cq_ex *cq)
{
	cqx_readers(x, cq, false);
	__atomic_store_n(&x->owner, 0, __ATOMIC_RELEASE);
}

/*
 * One completion into the served session's current one, through the
 * library's poll: 0, or ENOENT (the session then ends) or the poll's
 * error.  The CQ's wr_id and status are the application's to read, as the
 * verbs define them.
 */
static int cqx_take(struct shiftu_cqx *x, struct ibv_cq_ex *cq)
{
	int n = shiftu_poll_cq(ibv_cq_ex_to_cq(cq), 1, &x->cur);

	if (likely(n == 1)) {
		cq->wr_id = x->cur.wr_id;
		cq->status = x->cur.status;
		return 0;
	}
	cqx_served_end(x, cq);
	return n ? -n : ENOENT;
}

/*
 * A direct session's completion needs the library's look.  A good receive
 * whose QP the receive cache holds is counted, and the session goes on.
 * Anything else is read out whole, the provider's session ended (which
 * consumes it and lets the CQ go), and looked at as the library's poll
 * looks at what it takes.  The session goes on served: this completion if
 * it is the application's, else the next one the library's poll has.
 */
static shiftu_cold int cqx_direct_look(struct ibv_cq_ex *cq)
{
	struct shiftu_cqx *x = cqx_t.anchor;
	const struct cqx_prov *p = &x->prov;
	struct ibv_wc *w = &x->cur;
	int n;

	/* a good receive whose QP the receive cache holds: counted here */
	if (cq->status == IBV_WC_SUCCESS &&
	    (!(p->read_opcode(cq) & IBV_WC_RECV) ||
	     shiftu_count_recv_cached(x->s, p->read_qp_num(cq))))
		return 0;

	memset(w, 0, sizeof(*w));
	w->wr_id = cq->wr_id;
	w->status = cq->status;
	w->opcode = p->read_opcode(cq);
	w->qp_num = p->read_qp_num(cq);
	w->vendor_err = p->read_vendor_err ? p->read_vendor_err(cq) : 0;
	w->byte_len = p->read_byte_len ? p->read_byte_len(cq) : 0;
	w->imm_data = p->read_imm_data ? p->read_imm_data(cq) : 0;
	w->src_qp = p->read_src_qp ? p->read_src_qp(cq) : 0;
	w->wc_flags = p->read_wc_flags ? p->read_wc_flags(cq) : 0;
	w->slid = p->read_slid ? p->read_slid(cq) : 0;
	w->sl = p->read_sl ? p->read_sl(cq) : 0;
	w->dlid_path_bits = p->read_dlid_path_bits ? p->read_dlid_path_bits(cq) : 0;
	/* taken from the CQ and not counted yet: a move waits for us */
	if (!shiftu_window_ready())
		shiftu_window_register();
	shiftu_poll_open();
	p->end_poll(cq);
	__atomic_store_n(&x->owner, cqx_t.me, __ATOMIC_RELAXED);
	if (cqx_t.tail == x)
		cqx_t.tail = NULL;
	cqx_readers(x, cq, true);
	n = shiftu_poll_taken(x->s, ibv_cq_ex_to_cq(cq), w, 1);
	cqx_moves(x);
	if (n == 1) {
		cq->wr_id = w->wr_id;
		cq->status = w->status;
		return 0;
	}
	if (n < 0) {
		cqx_served_end(x, cq);
		return -n;
	}
	return cqx_take(x, cq);
}

/* The provider's end_poll of a direct session whose lock is let go, and
 * then the moves left to it. */
static shiftu_cold void cqx_prov_end(struct shiftu_cqx *x, struct ibv_cq_ex *cq)
{
	x->prov.end_poll(cq);
	cqx_moves(x);
}

/* cqx_moves(), out of line, for a verb that then returns @ret. */
static shiftu_cold int cqx_moves_cold(struct shiftu_cqx *x, int ret)
{
	cqx_moves(x);
	return ret;
}

/*
 * The provider's start_poll found nothing (and let its lock go): no
 * session on @x, and end_poll is not called.  Not out of line: a poll that
 * finds nothing is common.
 */
static inline int cqx_direct_none(struct shiftu_cqx *x, int ret)
{
	__atomic_store_n(&x->owner, 0, __ATOMIC_RELEASE);
	/* ours first, as at end_poll (cqx_end_poll()) */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (unlikely(__atomic_load_n(&x->moves_due, __ATOMIC_RELAXED)))
		return cqx_moves_cold(x, ret);
	return ret;
}

/*
 * start_poll that is not direct: the CQ's polls are slow (a QP away from
 * its default, completions held, the page moved, moves left to this CQ's
 * sessions), or the CQ is not the library's.  The session is served, once
 * the moves due are made.
 */
static shiftu_cold int cqx_start_served(struct shiftu_cqx *x, struct ibv_cq_ex *cq)
{
	if (x == &cqx_none) {
		__atomic_store_n(&x->owner, 0, __ATOMIC_RELEASE);
		return EINVAL;
	}
	__atomic_store_n(&x->owner, cqx_t.me, __ATOMIC_RELAXED);
	if (cqx_t.tail == x)
		cqx_t.tail = NULL;	/* its end_poll is not the provider's */
	cqx_moves(x);
	cqx_readers(x, cq, true);
	return cqx_take(x, cq);
}

/*
 * start_poll once the thread holds @x's session lock, the owner word
 * stored: direct if it can be.  The cold paths are the call's last steps,
 * so that nothing but the node is kept across the provider's call.
 */
static __attribute__((always_inline)) inline int
cqx_start_locked(struct shiftu_cqx *x, struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	int ret;

	/* the owner word before the test: see cqx_direct_ok() */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (unlikely(!cqx_direct_ok(x)))
		return cqx_start_served(x, cq);
	ret = x->prov.start_poll(cq, attr);
	if (unlikely(ret))
		return cqx_direct_none(x, ret);
	/* the CQ from the node: one register kept across the call */
	if (cqx_looked(x->cq, 0))
		return cqx_direct_look(x->cq);
	return 0;
}

/* start_poll with the session's lock waited for, or on a CQ the thread
 * did not poll last. */
static shiftu_cold int cqx_start_full(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	struct shiftu_cqx *x = cqx_of(cq);

	if (!cqx_session_try(x, cqx_t.me_direct))
		cqx_session_wait(x, cqx_t.me_direct);
	return cqx_start_locked(x, cq, attr);
}

/* The common path: the CQ the thread polled last, its lock free. */
static int cqx_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	struct shiftu_cqx *x = cqx_t.anchor;

	if (unlikely(x->cq != cq) || unlikely(!cqx_session_try(x, cqx_t.me_direct)))
		return cqx_start_full(cq, attr);
	return cqx_start_locked(x, cq, attr);
}

/* next_poll of a served session, or with no session of the thread's. */
static shiftu_cold int cqx_next_served(struct shiftu_cqx *x, struct ibv_cq_ex *cq)
{
	if (__atomic_load_n(&x->owner, __ATOMIC_RELAXED) != cqx_t.me)
		return ENOENT;	/* the application's bug: none open */
	return cqx_take(x, cq);
}

/* next_poll on a CQ the thread did not poll last. */
static shiftu_cold int cqx_next_full(struct ibv_cq_ex *cq);

/* The common path as for start_poll: a direct session of the thread's. */
static int cqx_next_poll(struct ibv_cq_ex *cq)
{
	struct shiftu_cqx *x = cqx_t.anchor;
	int ret;

	if (unlikely(x->cq != cq))
		return cqx_next_full(cq);
	if (unlikely(__atomic_load_n(&x->owner, __ATOMIC_RELAXED) != cqx_t.me_direct))
		return cqx_next_served(x, cq);
	ret = x->prov.next_poll(cq);
	if (ret) {
		/*
		 * Nothing more: the session ends as the provider's does (see
		 * above), and an end_poll after it goes to the provider.  The
		 * common end of a session on Soft-RoCE: not out of line.
		 */
		cqx_t.tail = x;
		__atomic_store_n(&x->owner, 0, __ATOMIC_RELEASE);
		return ret;
	}
	if (cqx_looked(x->cq, 0))
		return cqx_direct_look(x->cq);
	return 0;
}

static shiftu_cold int cqx_next_full(struct ibv_cq_ex *cq)
{
	if (cqx_find(cq) == &cqx_none)
		return EINVAL;
	return cqx_next_poll(cq);
}

/* end_poll of a served session, or with none of the thread's open. */
static shiftu_cold void cqx_end_other(struct shiftu_cqx *x, struct ibv_cq_ex *cq)
{
	if (__atomic_load_n(&x->owner, __ATOMIC_RELAXED) == cqx_t.me) {
		cqx_served_end(x, cq);
		return;
	}
	if (cqx_t.tail == x) {
		/* after a direct session's empty next_poll: the provider's */
		cqx_t.tail = NULL;
		cqx_prov_end(x, cq);
	}
}

/* end_poll on a CQ the thread did not poll last. */
static shiftu_cold void cqx_end_full(struct ibv_cq_ex *cq);

static void cqx_end_poll(struct ibv_cq_ex *cq)
{
	struct shiftu_cqx *x = cqx_t.anchor;

	if (unlikely(x->cq != cq)) {
		cqx_end_full(cq);
		return;
	}

	if (unlikely(__atomic_load_n(&x->owner, __ATOMIC_RELAXED) != cqx_t.me_direct)) {
		cqx_end_other(x, cq);
		return;
	}
	/* ours first: a move that sees it gone waits for the provider's */
	__atomic_store_n(&x->owner, 0, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (unlikely(__atomic_load_n(&x->moves_due, __ATOMIC_RELAXED))) {
		cqx_prov_end(x, cq);
		return;
	}
	x->prov.end_poll(cq);
}

static shiftu_cold void cqx_end_full(struct ibv_cq_ex *cq)
{
	if (cqx_find(cq) != &cqx_none)
		cqx_end_poll(cq);
}

int shiftu_cqx_attach(struct shiftu_ctx *s, struct ibv_cq_ex *cq)
{
	struct shiftu_cqx *x;
	bool fresh = false;

	shiftu_lock(&cqx_lock, SHIFTU_LOCK_CQX);
	for (x = cqx_list; x && x->cq; x = x->next)
		;
	if (!x) {
		x = calloc(1, sizeof(*x));
		if (!x) {
			shiftu_unlock(&cqx_lock, SHIFTU_LOCK_CQX);
			return -ENOMEM;
		}
		x->next = cqx_list;
		fresh = true;
	}
	x->owner = 0;
	x->moves_due = false;
	x->prov = (struct cqx_prov){
		.start_poll = cq->start_poll, .next_poll = cq->next_poll,
		.end_poll = cq->end_poll, .read_opcode = cq->read_opcode,
		.read_vendor_err = cq->read_vendor_err, .read_byte_len = cq->read_byte_len,
		.read_imm_data = cq->read_imm_data, .read_qp_num = cq->read_qp_num,
		.read_src_qp = cq->read_src_qp, .read_wc_flags = cq->read_wc_flags,
		.read_slid = cq->read_slid, .read_sl = cq->read_sl,
		.read_dlid_path_bits = cq->read_dlid_path_bits,
	};
	/*
	 * A direct session needs the provider's session and the two accessors
	 * its look reads (the library asks for the QP number): a CQ without
	 * them is served always, its context one whose polls are never on the
	 * common path.
	 */
	x->s = x->prov.start_poll && x->prov.next_poll && x->prov.end_poll &&
	       x->prov.read_opcode && x->prov.read_qp_num ? s : &cqx_none_ctx;
	/* the node is whole before an anchor or a walker can match it */
	__atomic_store_n(&x->cq, cq, __ATOMIC_RELEASE);
	if (fresh)
		__atomic_store_n(&cqx_list, x, __ATOMIC_RELEASE);
	shiftu_unlock(&cqx_lock, SHIFTU_LOCK_CQX);

	cq->start_poll = cqx_start_poll;
	cq->next_poll = cqx_next_poll;
	cq->end_poll = cqx_end_poll;
	return 0;
}

void shiftu_cqx_detach(const struct ibv_cq *cq)
{
	struct shiftu_cqx *x;

	shiftu_lock(&cqx_lock, SHIFTU_LOCK_CQX);
	for (x = cqx_list; x; x = x->next)
		if (x->cq && ibv_cq_ex_to_cq(x->cq) == cq) {
			__atomic_store_n(&x->cq, NULL, __ATOMIC_RELAXED);
			break;
		}
	shiftu_unlock(&cqx_lock, SHIFTU_LOCK_CQX);
}

/* @cq's node, if it is an extended CQ the library serves.  Cold. */
static struct shiftu_cqx *cqx_node(const struct ibv_cq *cq)
{
	/* pairs with the release in shiftu_cqx_attach() */
	struct shiftu_cqx *x = __atomic_load_n(&cqx_list, __ATOMIC_ACQUIRE);
	struct ibv_cq_ex *c;

	if (!cq)
		return NULL;
	for (; x; x = x->next) {
		c = __atomic_load_n(&x->cq, __ATOMIC_ACQUIRE);
		if (c && ibv_cq_ex_to_cq(c) == cq)
			return x;
	}
	return NULL;
}

bool shiftu_cqx_mark(const struct ibv_cq *a, const struct ibv_cq *b)
{
	struct shiftu_cqx *xa = cqx_node(a), *xb = b != a ? cqx_node(b) : NULL;

	if (xa)
		__atomic_store_n(&xa->moves_due, true, __ATOMIC_SEQ_CST);
	if (xb)
		__atomic_store_n(&xb->moves_due, true, __ATOMIC_SEQ_CST);
	return xa || xb;
}

static bool cqx_direct_open(const struct shiftu_cqx *x)
{
	return x && (__atomic_load_n(&x->owner, __ATOMIC_SEQ_CST) & 1);
}

bool shiftu_cqx_direct(const struct ibv_cq *a, const struct ibv_cq *b)
{
	return cqx_direct_open(cqx_node(a)) || (b != a && cqx_direct_open(cqx_node(b)));
}

bool shiftu_cqx_busy(const struct ibv_cq *cq)
{
	struct shiftu_cqx *x = cqx_node(cq);

	return cqx_direct_open(x) &&
	       __atomic_load_n(&x->owner, __ATOMIC_RELAXED) != cqx_t.me_direct;
}
