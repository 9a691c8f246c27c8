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
 * destructor).  The windows themselves, with the thread's other words
 * beside them, are in window.h.
 */
#ifndef _SHIFTU_QUIESCE_H
#define _SHIFTU_QUIESCE_H

#include <stdbool.h>
#include <stdint.h>

struct shiftu_vqp;
struct shiftu_srq;

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
