// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * srqpost.c: libshiftu's ibv_post_srq_recv (interpose.h): the common path
 * through the SRQ's table (srq.h), and its ways to the table's slow post.
 * No syscall, lock or allocation on the common path, as for the posts to
 * a QP (post.c).
 */
#include <errno.h>
#include <stdbool.h>

#include "interpose.h"
#include "srq.h"
#include "srqtab.h"
#include "util.h"
#include "window.h"

/*
 * ibv_post_srq_recv(), past the common path: the thread's SRQ is not
 * @srq's record (its first post, or to another SRQ), or @wr is a chain or
 * not of one scatter entry.  Entered with the window closed.
 */
static shiftu_cold int post_srq_other(struct ibv_srq *srq, struct ibv_recv_wr *wr,
				      struct ibv_recv_wr **bad_wr)
{
	struct shiftu_srq *r = shiftu_window.srq;
	struct shiftu_ctx *s;

	if (!srq) {
		*bad_wr = wr;
		return EINVAL;
	}
	if (r->app != srq) {
		r = shiftu_srq_find(srq);
		if (!r) {
			s = shiftu_ctx_find(srq->context);
			if (!s || !s->post_srq_recv) {
				*bad_wr = wr;
				return EINVAL;
			}
			return shiftu_wrid_post_srq(s, s->post_srq_recv, srq, wr, bad_wr);
		}
		/* the anchor is set outside the window (quiesce.h) */
		if (!shiftu_window_ready())
			shiftu_window_register();
		shiftu_window.srq = r;
	}
	if (!wr->next && wr->num_sge == 1)
		return shiftu_post_srq_recv(srq, wr, bad_wr);
	return shiftu_srq_post(r, wr, bad_wr);
}

/*
 * The common path found no credit (it is shut for a move, or the default
 * SRQ may be full: @e NULL) or the cursor's entry @e still posted: the
 * credit goes back and a claim found posted is counted, inside the window
 * that a move waits out, then the post takes srq_lock.  Its arguments are
 * where the common path holds them when it gives up (@srq and @bad_wr as
 * they came, @e where the provider's post takes its request, @wr aside),
 * so that neither path moves them for the other.
 */
static shiftu_cold_args int post_srq_slow(struct ibv_srq *srq, struct shiftu_srqent *e,
					  struct ibv_recv_wr **bad_wr,
					  struct ibv_recv_wr *wr)
{
	struct shiftu_srq *r = shiftu_window.srq;

	(void)srq;
	if (e)
		shiftu_srqtab_skip(&r->tab, 1);
	shiftu_srqtab_uncredit(&r->tab);
	shiftu_window_close();
	return shiftu_srq_post(r, wr, bad_wr);
}

/*
 * ibv_post_srq_recv(): through the SRQ's table (srq.h).  The common path:
 * one receive of one scatter entry to the thread's SRQ while all its QPs
 * are on the default side: inside the window, a credit of the default
 * SRQ's room and an entry claimed, no lock; the entry keeps the
 * application's id and scatter entry (a move posts it again from there)
 * and its own request, under the library's id, goes to the provider's
 * post as a tail call, after the window: the credit means the provider
 * cannot refuse it, so nothing is left to do after it.  A move that shuts
 * the path waits out the windows, then the producer index (srq.c).
 *
 * Its cost is counted (make bench: at most 25 instructions over the
 * provider's post, and it takes 25; check a change with objdump -d): the
 * tail call takes @srq and @bad_wr in the registers they came in, and
 * only @wr moves, to free the one the entry's request goes out in.
 */
int shiftu_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr)
{
	struct shiftu_srq *r = shiftu_window.srq;
	struct shiftu_srqent *e;

	if (unlikely(r->app != srq) || unlikely(wr->next) || unlikely(wr->num_sge != 1))
		return post_srq_other(srq, wr, bad_wr);
	/* before the credit: a move that shuts the path waits for us */
	shiftu_window_open();
	if (unlikely(!shiftu_srqtab_credit(&r->tab)))
		return post_srq_slow(srq, NULL, bad_wr, wr);
	if (unlikely(!shiftu_srqtab_claim_fast(&r->tab, &e)))
		return post_srq_slow(srq, e, bad_wr, wr);
	e->wr_id = wr->wr_id;
	e->sge[0] = wr->sg_list[0];
	shiftu_window_close();
	/*
	 * @srq is @r's (checked above), and stays in the register it came
	 * in: without the empty asm, GCC 12 gives that register to the
	 * window's TLS offset and moves @srq out and back (28 instructions
	 * in all); @r->app loaded again instead costs a load (26).
	 */
	shiftu_hide_var(srq);
	return r->post(srq, &e->wr, bad_wr);
}

