/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * window.h: each thread's block of the words its data verbs write: its
 * post and poll windows (what a move waits out: quiesce.h), its poster
 * tag (posters.h) and the data verbs' anchors, with the inlines that open
 * and close the windows on the data path.  quiesce.c registers the blocks.
 */
#ifndef _SHIFTU_WINDOW_H
#define _SHIFTU_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

struct shiftu_vqp;
struct shiftu_srq;
struct shiftu_ctx;
struct ibv_cq;
struct ibv_wc;

struct shiftu_window {
	uint32_t seq;			/* posts; odd: inside; written by its thread only */
	uint8_t registered;
	/*
	 * The thread's poster tag (posters.h) in the top 16 bits, as the
	 * posts' gates hold a queue's poster: or'ed into the page's sequence
	 * that a gate is compared with.  0 until the window is registered,
	 * and for a thread that got no tag: it matches no gate.  Written
	 * under windows_lock when the window is registered; read by its
	 * thread.
	 */
	uint64_t tag;
	struct shiftu_window *next;	/* the registry, under its mutex */
	/*
	 * Polls, as @seq, in a word that counts them too (statistics): a
	 * poll adds 2, and a poll that leaves and enters again on its slow
	 * path 2 more, which @poll_reentries takes back.
	 */
	uint64_t pseq;
	uint64_t poll_reentries;
	/*
	 * Completions its polls took on their common path (statistics):
	 * modulo 2^32, so that counting them is one add to memory.
	 */
	uint32_t wcs;
	/*
	 * The data verbs' anchors (post.c, srqpost.c, poll.c), in this
	 * block so that the one offset the window needs reaches them too.
	 * Written by the thread only.  Until its window is registered they
	 * point at objects that match no QP and no context, so that its
	 * first post and poll take the path that registers it.
	 */
	struct shiftu_vqp *vq;		/* the QP the thread last posted to */
	struct shiftu_srq *srq;		/* ... and the SRQ (srq.h) */
	struct shiftu_ctx *ctx;		/* the context whose CQ it last polled */
	struct shiftu_ctx *ctx_before;	/* the one it polled before that */
	/*
	 * A poll's arguments, kept across the provider's poll for the
	 * completions that need a look (cheaper than registers).
	 */
	struct ibv_cq *cq;
	struct ibv_wc *wc;
	/* the thread's id, for a look at its scheduling (quiesce.c); cold */
	int tid;
};

/*
 * Initial exec: the library is loaded at start (LD_PRELOAD or linked), so
 * its TLS is in the static block and one %fs-relative access reaches it.
 * Defined with the anchors' initial values in window.c, 16-byte aligned:
 * poll.c's stores of ctx_before and ctx are one aligned move.
 */
extern __thread struct shiftu_window shiftu_window
	__attribute__((tls_model("initial-exec"), aligned(16)));

/* A QP that matches none: the anchors' and the receive cache's empty value. */
extern struct shiftu_vqp shiftu_vqp_none SHIFTU_HIDDEN;

/* A record that matches no SRQ: a thread's anchor before its first post. */
extern struct shiftu_srq shiftu_srq_none;

/* Register the calling thread's window.  Cold; may allocate a key. */
void shiftu_window_register(void);

/*
 * The poll_cq calls of every thread that registered a window, the exited
 * ones' included, in *@polls, and the completions they took on their
 * common path in *@wcs (statistics: each thread counts its own, in its own
 * words, so that no polling thread writes a line another one writes; the
 * completions modulo 2^32 a thread).
 */
void shiftu_window_stats(uint64_t *polls, uint64_t *wcs);

/* The poll_cq calls alone. */
uint64_t shiftu_window_polls(void);

/* The calling thread's window is registered (a data verb's first call
 * registers it, out of line, and calls again). */
static inline bool shiftu_window_ready(void)
{
	return __builtin_expect(shiftu_window.registered != 0, 1);
}

/*
 * The calling thread opens its window (it was closed) and closes it (it
 * was open): one increment each.  Only the thread writes its words, with
 * plain stores (one instruction on x86, where an aligned store is atomic;
 * the poll word's 64 bits want a 64-bit target, as the statistics do);
 * shiftu_quiesce() reads them relaxed after membarrier(2) (or, without
 * it, a grace) made them visible.  The compiler barriers keep the data
 * verb between them.
 * shiftu_window_*(): posts; shiftu_poll_*(): polls.
 */
static inline void shiftu_window_open(void)
{
	shiftu_window.seq++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void shiftu_window_close(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	shiftu_window.seq++;
}

static inline void shiftu_poll_open(void)
{
	shiftu_window.pseq++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void shiftu_poll_close(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	shiftu_window.pseq++;
}

/* Open it, registering first if needed (slow paths). */
static inline void shiftu_window_enter(void)
{
	if (!shiftu_window_ready())
		shiftu_window_register();
	shiftu_window_open();
}

/* A poll that left its window enters it again, still counted once. */
static inline void shiftu_poll_reenter(void)
{
	if (!shiftu_window_ready())
		shiftu_window_register();
	shiftu_window.poll_reentries++;
	shiftu_poll_open();
}

/*
 * Close it if it is open.  A slow path leaves as soon as it has handed
 * over what it took, before it may wait for a move; its caller's close
 * then finds it closed.
 */
static inline void shiftu_window_leave(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	shiftu_window.seq += shiftu_window.seq & 1;
}

static inline void shiftu_poll_leave(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	shiftu_window.pseq += shiftu_window.pseq & 1;
}

#endif /* _SHIFTU_WINDOW_H */
