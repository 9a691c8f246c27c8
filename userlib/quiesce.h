/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * quiesce.h: waiting out the application's posts and polls that a move
 * overtook.
 *
 * A move closes a QP's common paths (its slow flags) and then stops the QP.
 * A thread that passed the check just before may still be in the data
 * verb: a post whose request would reach the QP after the drain's marker
 * (and be lost), or a poll that took some of the flushes the drain counts
 * and has not handed them over yet (and the count would come short).  Each
 * thread that posts or polls therefore keeps a window count in its own
 * thread-local words, one for posts and one for polls: odd while it is
 * inside such a verb, even outside.
 * Opening and closing are plain increments of memory no other thread
 * writes, with no fence: shiftu_quiesce() makes them visible with
 * membarrier(2) (MEMBARRIER_CMD_PRIVATE_EXPEDITED, a full barrier on every
 * CPU running one of the process's threads) and then waits for each window
 * that was open to close.
 *
 * A thread's word is registered (a list under a mutex) at its first data
 * verb, and unregistered when it exits (a thread-specific key's
 * destructor).
 */
#ifndef _SHIFTU_QUIESCE_H
#define _SHIFTU_QUIESCE_H

#include <stdbool.h>
#include <stdint.h>

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
 * Defined with the anchors' initial values in poll.c.
 */
extern __thread struct shiftu_window shiftu_window
	__attribute__((tls_model("initial-exec")));

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

/*
 * Wait until every other thread that was inside its window when this was
 * called (after the caller's stores that send new calls elsewhere, such as
 * a QP's or a CQ's slow flag) has left it, at most @timeout_ns.  Returns
 * true when all did (or none was inside), false on the timeout, and at
 * once while a thread is still where a @last wait (the caller's final
 * one) gave up on it.  Without membarrier(2) the windows are read after a
 * grace of a millisecond instead of the barrier.  Context: no lock a
 * poller may wait for inside its window (a CQ's) held.  Cold.
 */
bool shiftu_quiesce(uint64_t timeout_ns, bool last);

/*
 * Wait until every other thread that was inside its post window on @vq
 * (its anchor, struct shiftu_window's @vq, is @vq) when this was called,
 * after the caller's stores (a queue's new poster, posters.c), has left
 * it, at most @timeout_ns.  Returns true when all did, or none was inside;
 * false on the timeout, and at once without membarrier(2): without the
 * barrier a window still open may not show yet, and the caller must not
 * take that for a window closed.  Context: fo_lock of @vq; the caller's
 * own windows closed.  Cold.
 */
bool shiftu_quiesce_vq(const struct shiftu_vqp *vq, uint64_t timeout_ns);

/*
 * The same for the posts to the SRQ of record @r (anchor struct
 * shiftu_window's @srq), after the caller closed the SRQ's gate (srq.h's
 * @slow).  Returns true when all left, false on the timeout or without
 * membarrier(2).  Context: any lock but windows_lock; the caller's own
 * windows closed.  Cold.
 */
bool shiftu_quiesce_srq(const struct shiftu_srq *r, uint64_t timeout_ns);

/* membarrier(2) is there to order windows with (else moves use a grace). */
bool shiftu_quiesce_barrier(void);

#endif /* _SHIFTU_QUIESCE_H */
