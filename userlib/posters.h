/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * posters.h: several threads posting to one QP.
 *
 * The verbs let any number of threads post to one QP at once (the provider
 * locks its queues).  The library's counts of a QP's requests (struct
 * shiftu_vqp's @sq.head, @sent2, @rq.head, and the copies of the requests
 * a QP that copies keeps) are written with plain loads and stores, which
 * two threads at once would corrupt: a count short or long, a copy in the
 * wrong slot, and a failover that replays what the peer has or drops what
 * it has not.  A locked add per post would cost every post what only a
 * few programs need.
 *
 * So each queue of a QP (its send queue, its receive queue) has a poster:
 * the one thread that may count its requests with plain stores.  Every
 * thread has a tag from its first data verb on, unique among the live
 * threads that made one (at most 65534 of them; a thread beyond gets
 * none, and posts, always correctly, through the slow path).  A queue's gate holds its poster's
 * tag, and the posts' common path compares the gate with the page's
 * sequence or'ed with the calling thread's tag: a thread that is not the
 * poster fails that one compare and takes the slow path, which makes it
 * the poster under the QP's fo_lock (shiftu_poster_take()) before it
 * counts anything:
 *
 *   1. store its tag in the gate (the old poster's next post then fails
 *      the compare and comes here, to wait for fo_lock);
 *   2. membarrier(2): every thread's window (quiesce.h) and anchor show;
 *      a post that read the old tag had opened its window before it;
 *   3. wait for every other thread inside a post window on this QP to
 *      leave it: its count is then written, and it cannot start another
 *      one without coming here first.
 *
 * So at any time at most one thread counts a queue outside fo_lock, and
 * the slow paths count under it: two threads that post at once are
 * serialised at the moment their posts overlap, and the counts stay
 * exact.  Handing a queue over costs fo_lock, a membarrier(2) (which
 * interrupts every CPU running one of the process's threads) and a look
 * at every thread's window; the posts of one thread in a row cost one
 * instruction more than before (the tag is or'ed into the compare the
 * common path makes anyway).  A QP whose posts alternate between
 * threads (a mutex-serialised pool) pays that on each change of poster.
 *
 * A hand-over that cannot be made with certainty gives the QP up: it is
 * left unprotected (its errors go to the application, it never fails
 * over), with one warning: when membarrier(2) is refused (kernels before
 * 4.14, a seccomp filter), or when a thread stays inside its post on the
 * QP for a second (stopped by a debugger, or blocked in the provider by a
 * lock the taker's own thread holds).  Never a replay from counts two
 * threads wrote at once.
 *
 * The extended send API (wrapi.c) keeps the verbs' per-QP critical
 * section itself: ibv_wr_start takes the QP's batch (a compare-and-swap,
 * as the provider's own lock), and a thread that is to become the send
 * queue's poster takes it too, so that no batch is open while the poster
 * changes.
 */
#ifndef _SHIFTU_POSTERS_H
#define _SHIFTU_POSTERS_H

#include <stdbool.h>
#include <stdint.h>

struct shiftu_vqp;

/* A gate whose queue no thread has taken yet: no thread has this tag. */
#define SHIFTU_POSTER_NONE	0xffffU
/* Where a tag sits in a gate and in a thread's block. */
#define SHIFTU_POSTER_SHIFT	48

/*
 * A free tag, shifted into place, or 0 when none is left (the thread then
 * matches no gate).  Context: windows_lock (quiesce.c).
 */
uint64_t shiftu_poster_tag_get(void);

/* Give @tag (as shiftu_poster_tag_get() returned it) back.  windows_lock. */
void shiftu_poster_tag_put(uint64_t tag);

/* fork(2), in the child: only @tag, the forking thread's, is in use. */
void shiftu_poster_tags_fork_child(uint64_t tag);

/*
 * Make the calling thread the poster of @vq's receive queue (@recv) or
 * send queue.  Returns true when it is (or the QP is unprotected, whose
 * counts nobody reads), false when the QP was given up just now because
 * the hand-over could not be made with certainty.  Either way the caller
 * posts under fo_lock next.  Context: @vq's fo_lock held, the caller's
 * windows closed (it waits for other threads' windows).  Cold.
 */
bool shiftu_poster_take(struct shiftu_vqp *vq, bool recv);

#endif /* _SHIFTU_POSTERS_H */
