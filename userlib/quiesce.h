/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * quiesce.h: waiting out the application's pollers that a move overtook.
 *
 * A thread polling a QP's CQ on the common path may take some of the
 * completions a move's drain is counting (the flushes of the QP it stops)
 * and be preempted before it hands them to the library: the drain must wait
 * for it, or count short.  Each polling thread therefore keeps a window
 * count in its own thread-local word: odd while it is inside
 * ibv_poll_cq(), even outside.  Entering and leaving are plain stores to
 * memory no other thread writes, with no fence: shiftu_quiesce() makes
 * them visible with membarrier(2) (MEMBARRIER_CMD_PRIVATE_EXPEDITED, a full
 * barrier on every CPU running one of the process's threads) and then waits
 * for each window that was open to close.  The common path pays two
 * thread-local increments and a test.
 *
 * A thread's word is registered (a list under a mutex) at its first poll,
 * and unregistered when it exits (a thread-specific key's destructor).
 */
#ifndef _SHIFTU_QUIESCE_H
#define _SHIFTU_QUIESCE_H

#include <stdbool.h>
#include <stdint.h>

struct shiftu_window {
	uint32_t seq;			/* odd: inside; written by its thread only */
	uint8_t registered;
	struct shiftu_window *next;	/* the registry, under its mutex */
};

/*
 * Initial exec: the library is loaded at start (LD_PRELOAD or linked), so
 * its TLS is in the static block and one %fs-relative access reaches it.
 */
extern __thread struct shiftu_window shiftu_window
	__attribute__((tls_model("initial-exec")));

/* Register the calling thread's window.  Cold; may allocate a key. */
void shiftu_window_register(void);

/*
 * The calling thread enters and leaves its window.  Only a thread's own
 * stores touch its word, relaxed; the compiler barriers keep the data verb
 * between them.  Leaving twice is leaving once: a slow path leaves as soon
 * as it has handed over what it took, before it may wait for a move.
 */
static inline void shiftu_window_enter(void)
{
	if (__builtin_expect(!shiftu_window.registered, 0))
		shiftu_window_register();
	__atomic_store_n(&shiftu_window.seq, shiftu_window.seq + 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void shiftu_window_leave(void)
{
	uint32_t seq = shiftu_window.seq;

	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&shiftu_window.seq, seq + (seq & 1), __ATOMIC_RELAXED);
}

/*
 * Wait until every other thread that was inside its window when this was
 * called (after the caller's stores that send new calls elsewhere, such as
 * a CQ's slow flag) has left it, at most @timeout_ns.  Returns true when
 * all did (or none was inside), false on the timeout, or when membarrier(2)
 * is not there (the caller then falls back on a grace period).  Context:
 * no lock a poller may wait for (a CQ's) held.  Cold.
 */
bool shiftu_quiesce(uint64_t timeout_ns);

#endif /* _SHIFTU_QUIESCE_H */
