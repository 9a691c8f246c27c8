// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * window.c: each thread's window and its anchors (window.h), and what the
 * anchors point at before the thread's first post and poll: a QP, an SRQ
 * and a context that match none.
 */
#include "ctxstate.h"
#include "srqstate.h"
#include "vqpstate.h"
#include "window.h"

/* What a thread's anchors point at before its first post and poll. */
struct shiftu_vqp shiftu_vqp_none = {	/* reg.app_qp NULL: no QP's */
	.rc_qpn = UINT32_MAX,		/* no QP's number either */
};
static struct shiftu_ctx ctx_none;	/* ctx NULL: no CQ's */
struct shiftu_srq shiftu_srq_none = { .slow = true };

/*
 * The thread's window (window.h) and its anchors.  Most threads post to
 * one QP and poll one context's CQs: the anchor's compare (its object's
 * app_qp or ctx) replaces a lookup.  A thread that posts to several QPs
 * pays the registry's cache, as all did before; one that polls CQs of two
 * contexts finds the other one in ctx_before.  The compare is a plain
 * load: an anchored QP may be gone, its node kept for another QP
 * (vqp.c), and whatever app_qp a racing attach or detach leaves
 * there, it is not the QP the thread posts to (that one is alive, its node
 * is its own).  Contexts' nodes are never freed either.  Its declaration
 * (window.h) states its alignment: knowing it, the compiler stores
 * ctx_before and ctx in one aligned move (poll_find(), poll.c).
 */
__thread struct shiftu_window shiftu_window __attribute__((tls_model("initial-exec"), aligned(16))) = {
	.vq = &shiftu_vqp_none,
	.srq = &shiftu_srq_none,
	.ctx = &ctx_none,
	.ctx_before = &ctx_none,
};
