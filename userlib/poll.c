// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * poll.c: libshiftu's ibv_poll_cq (interpose.h): the common path, the
 * last step of every poll, and the library's ids given back (rename.h).
 * The thread's window, with the anchors the data verbs start from, is
 * window.c's.
 *
 * As for the posts (post.c): the context's object is the one the thread
 * polled last, else found by a walk of the contexts; one acquire load and
 * a compare tell whether the health page moved; then the provider's poll,
 * and a look at each completion's status and opcode.  Everything else is
 * in cold functions.  No syscall, lock or allocation here.
 */
#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "cq.h"
#include "health.h"
#include "interpose.h"
#include "rename.h"
#include "srq.h"
#include "util.h"
#include "window.h"

/* As shiftu_vqp_open() (interpose.h), for a context's polls: its page
 * seq and its slow CQs. */
static inline bool ctx_open(const struct shiftu_ctx *s)
{
	uint64_t seq = shiftu_health_seq();

	return likely(s->seen_slow == seq);
}

int shiftu_wrid_out_all(struct shiftu_ctx *s, struct ibv_wc *wc, int n)
{
	struct shiftu_wrids *w = __atomic_load_n(&s->wrids, __ATOMIC_ACQUIRE);
	bool srq = __atomic_load_n(&shiftu_srq_tables, __ATOMIC_RELAXED);
	bool open = shiftu_window_ready() && (shiftu_window.seq & 1);
	int i, j;

	if (n <= 0 || (!w && !srq))
		return n;
	/* the destroy verb frees an SRQ's table once no window is open
	 * (post's: a poll's may be closed already) */
	if (srq && !open)
		shiftu_window_enter();
	for (i = 0, j = 0; i < n; i++) {
		/* classified once: an id given back is the application's */
		switch (shiftu_wrid_kind(wc[i].wr_id)) {
		case SHIFTU_WRID_SRQ:
			if (srq)
				shiftu_srq_give_back(&wc[i].wr_id);
			break;
		case SHIFTU_WRID_RENAMED:
			/* a quiet send's good completion: the library's */
			if (w && !shiftu_wrid_give_back(w, &wc[i]))
				continue;
			break;
		default:
			break;
		}
		if (j != i)
			wc[j] = wc[i];
		j++;
	}
	if (srq && !open)
		shiftu_window_close();
	if (w)
		shiftu_wrid_hold_end(w);
	return j;
}

_Static_assert(offsetof(struct ibv_wc, opcode) == offsetof(struct ibv_wc, status) + 4 &&
	       sizeof(((struct ibv_wc *)0)->status) == 4 && __BYTE_ORDER == __LITTLE_ENDIAN,
	       "a completion's status and opcode are read as one 64-bit word");

/* The completion's status and opcode, masked with shiftu_wc_look. */
static inline uint64_t wc_look(const struct ibv_wc *wc)
{
	uint64_t w;

	memcpy(&w, &wc->status, sizeof(w));
	return w & __atomic_load_n(&shiftu_wc_look, __ATOMIC_RELAXED);
}

/*
 * A completion that needs a look (an error, or a receive to count) and
 * was not a good receive counted here, without a call.  The first test is
 * the one a good send completion takes, status and opcode in one 64-bit
 * test; only a completion that fails it has its status looked at alone.
 */
static inline bool wc_looked(const struct ibv_wc *wc)
{
	return unlikely(wc_look(wc) != 0) &&
	       (wc->status != IBV_WC_SUCCESS ||
		!shiftu_count_recv_cached(shiftu_window.ctx, wc->qp_num));
}

/*
 * What the poll hands the application: the library's ids given back
 * (rename.h; an SRQ's table's, a renamed request's), each completion
 * classified once.  Only a process with an SRQ table or a renamed
 * request pays more than the test.
 */
static inline int poll_out(struct shiftu_ctx *s, struct ibv_wc *wc, int n)
{
	if (unlikely(__atomic_load_n(&shiftu_srq_tables, __ATOMIC_RELAXED)) ||
	    unlikely(__atomic_load_n(&s->wrids, __ATOMIC_RELAXED) != NULL))
		return shiftu_wrid_out_all(s, wc, n);
	return n;
}

/*
 * The @n completions the thread's poll took (its context, CQ and array
 * are in its block), from the @i-th on, the first that needs a
 * look: errors and receives.  Leaves the poller's window (quiesce.h) once
 * they are counted, or stashed for a failover.  A receive posted through
 * an SRQ's table (its QP is not in the receive cache under its number)
 * comes here: the application's id back, inside the window.
 */
static __attribute__((noinline)) int poll_took(int n, int i)
{
	struct shiftu_ctx *s = shiftu_window.ctx;
	struct ibv_wc *wc = shiftu_window.wc;

	for (; i < n; i++) {
		/* an error completion may start a failover (the transport's verdict) */
		if (unlikely(wc[i].status != IBV_WC_SUCCESS)) {
			n = shiftu_poll_error(s, shiftu_window.cq, wc, n);
			shiftu_poll_leave();
			return poll_out(s, wc, n);
		}
		if (wc_look(&wc[i]))
			shiftu_count_recv(s, wc[i].qp_num);
	}
	n = poll_out(s, wc, n);
	shiftu_poll_leave();
	return n;
}

/* Entered with the window open; a slow poll takes the CQ's lock, which
 * keeps it out of a drain's way: no window. */
static shiftu_cold int poll_moved(struct shiftu_ctx *s, struct ibv_cq *cq,
				  int num, struct ibv_wc *wc)
{
	shiftu_poll_leave();
	if (shiftu_health_moved(&s->health_seen))
		shiftu_ctx_health(s);
	if (__atomic_load_n(&s->slow_cqs, __ATOMIC_RELAXED))
		return shiftu_poll_cq_slow(s, cq, num, wc);
	shiftu_poll_reenter();
	shiftu_window.cq = cq;
	shiftu_window.wc = wc;
	return poll_took(s->poll_cq(cq, num, wc), 0);
}

/*
 * The common path, for the thread's context @s: the poller's window, the
 * context's word against the page's sequence, the provider's poll, and a
 * look at each completion's status and opcode; a good send completion
 * needs nothing more, a good receive of a QP the context's cache holds is
 * counted here, the rest goes to poll_took().  The verb's arguments go to
 * the thread's block, not to registers kept across the provider's call:
 * only the array is used after it on this path.
 */
static __attribute__((always_inline)) inline int poll_common(struct shiftu_ctx *s,
							     struct ibv_cq *cq, int num,
							     struct ibv_wc *wc)
{
	int n, i;

	/* before the slow flag's load: a move that sets it waits for us */
	shiftu_poll_open();
	if (unlikely(!ctx_open(s)))
		return poll_moved(s, cq, num, wc);
	shiftu_window.cq = cq;
	shiftu_window.wc = wc;
	n = s->poll_cq(cq, num, wc);
	if (n > 0) {
		/* statistics (the exit line): one add, its thread's word */
		shiftu_window.wcs += (uint32_t)n;
		/* most polls that take any take one: it is looked at first */
		wc = shiftu_window.wc;
		if (wc_looked(&wc[0]))
			return poll_took(n, 0);
		/* the rest with the loop's test at its foot */
		if (unlikely(n > 1))
			for (i = 1; i < n; i++)
				if (wc_looked(&wc[i]))
					return poll_took(n, i);
	}
	shiftu_poll_close();
	return n;
}

/*
 * @cq's context is neither of the thread's two, or this is the thread's
 * first poll (its window is not registered yet).  A context the library
 * does not manage cannot reach here (its ops were never replaced).
 */
static shiftu_cold int poll_list(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	struct shiftu_ctx *s = shiftu_ctx_find(cq->context);

	if (!shiftu_window_ready())
		shiftu_window_register();
	shiftu_window.ctx_before = shiftu_window.ctx;
	shiftu_window.ctx = s;
	return poll_common(s, cq, num, wc);
}

/*
 * @cq's context is not the thread's: it polls CQs of several (a thread for
 * two rails, say).  The one it polled before, if it is @cq's, becomes the
 * thread's, with no call before the provider's, as on the common path.
 */
static __attribute__((noinline)) int poll_find(struct ibv_cq *cq, int num,
					       struct ibv_wc *wc)
{
	struct shiftu_ctx *s = shiftu_window.ctx_before;

	if (unlikely(s->ctx != cq->context))
		return poll_list(cq, num, wc);
	shiftu_window.ctx_before = shiftu_window.ctx;
	shiftu_window.ctx = s;
	return poll_common(s, cq, num, wc);
}

int shiftu_poll_taken(struct shiftu_ctx *s, struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	if (!shiftu_window_ready())
		shiftu_window_register();
	shiftu_window.ctx = s;
	shiftu_window.cq = cq;
	shiftu_window.wc = wc;
	return poll_took(n, 0);
}

int shiftu_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	struct shiftu_ctx *s = shiftu_window.ctx;

	if (unlikely(s->ctx != cq->context))
		return poll_find(cq, num, wc);
	return poll_common(s, cq, num, wc);
}

