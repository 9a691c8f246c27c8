// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * quiesce.c: the posting and polling threads' windows and the wait for
 * them (window.h, quiesce.h).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fork.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "posters.h"
#include "quiesce.h"
#include "util.h"
#include "window.h"

static pthread_mutex_t windows_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shiftu_window *windows;	/* windows_lock */
static uint64_t polls_gone;		/* windows_lock: exited threads' polls */
static uint64_t wcs_gone;		/* ... and the completions they took */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static bool key_ok, barrier_ok;

/*
 * The window a last wait gave up on, and the word it had then: while it
 * still has it, the thread has not moved, and any wait gives up at once (a
 * thread stuck in a verb would otherwise cost every move the bound).
 * windows_lock.
 */
static const struct shiftu_window *stuck_w;
static bool stuck_poll;
static uint64_t stuck_v;

/* Without membarrier(2): how long a thread's window stores take to show. */
#define GRACE_US	1000

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/* @w's poll_cq calls (one in progress not yet). */
static uint64_t window_polls(struct shiftu_window *w)
{
	return __atomic_load_n(&w->pseq, __ATOMIC_RELAXED) / 2 -
	       __atomic_load_n(&w->poll_reentries, __ATOMIC_RELAXED);
}

/* A thread that polled exits: its words go with its TLS. */
static void window_gone(void *arg)
{
	struct shiftu_window *w = arg, **p;

	shiftu_lock(&windows_lock, SHIFTU_LOCK_WINDOWS);
	for (p = &windows; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	if (stuck_w == w)
		stuck_w = NULL;
	polls_gone += window_polls(w);
	wcs_gone += __atomic_load_n(&w->wcs, __ATOMIC_RELAXED);
	shiftu_poster_tag_put(w->tag);
	w->tag = 0;
	shiftu_unlock(&windows_lock, SHIFTU_LOCK_WINDOWS);
}

void shiftu_window_stats(uint64_t *polls, uint64_t *wcs)
{
	struct shiftu_window *w;

	shiftu_lock(&windows_lock, SHIFTU_LOCK_WINDOWS);
	*polls = polls_gone;
	*wcs = wcs_gone;
	for (w = windows; w; w = w->next) {
		*polls += window_polls(w);
		*wcs += __atomic_load_n(&w->wcs, __ATOMIC_RELAXED);
	}
	shiftu_unlock(&windows_lock, SHIFTU_LOCK_WINDOWS);
}

uint64_t shiftu_window_polls(void)
{
	uint64_t polls, wcs;

	shiftu_window_stats(&polls, &wcs);
	return polls;
}

/*
 * fork(2) (fork.c): the child has one thread, the caller's, whose window
 * is the only one, and a new mm, which membarrier(2) must be told about
 * again.  windows_lock was taken before the fork and is free again.  The
 * forking thread is in no data verb (the library never forks), so its
 * words are even and may start again at zero.
 */
static void shiftu_windows_fork_child(void)
{
	struct shiftu_window *w = &shiftu_window;

	windows = w->registered == 1 ? w : NULL;
	if (windows)
		w->next = NULL;
	/* the other threads' tags went with them */
	shiftu_poster_tags_fork_child(w->tag);
	w->tid = (int)syscall(SYS_gettid);
	stuck_w = NULL;
	/* the polls are the parent's (statistics); the thread is in no poll */
	polls_gone = 0;
	wcs_gone = 0;
	w->pseq = 0;
	w->poll_reentries = 0;
	w->wcs = 0;
	barrier_ok = !membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
}

SHIFTU_FORK_HOOK(windows, .rank = SHIFTU_RANK_WINDOWS, .name = "windows_lock",
		 .lock = &windows_lock, .child = shiftu_windows_fork_child);

static void init(void)
{
	key_ok = !pthread_key_create(&key, window_gone);
	shiftu_fork_init();
	/* registered once; PRIVATE_EXPEDITED is refused without it */
	barrier_ok = !membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
	if (!barrier_ok)
		shiftu_info("membarrier(2) private expedited not available: moves see posters and pollers after a grace of %d us",
			    GRACE_US);
}

void shiftu_window_register(void)
{
	struct shiftu_window *w = &shiftu_window;

	pthread_once(&once, init);
	/* without a destructor the word could outlive its thread: stay out */
	if (!key_ok || pthread_setspecific(key, w)) {
		w->registered = 2;
		return;
	}
	w->tid = (int)syscall(SYS_gettid);
	shiftu_lock(&windows_lock, SHIFTU_LOCK_WINDOWS);
	w->next = windows;
	windows = w;
	w->tag = shiftu_poster_tag_get();
	shiftu_unlock(&windows_lock, SHIFTU_LOCK_WINDOWS);
	w->registered = 1;
}

static uint64_t word(const struct shiftu_window *w, bool poll)
{
	return poll ? __atomic_load_n(&w->pseq, __ATOMIC_RELAXED) :
		      __atomic_load_n(&w->seq, __ATOMIC_RELAXED);
}

/* @w is still registered (its thread has not exited).  windows_lock. */
static bool registered(const struct shiftu_window *w)
{
	const struct shiftu_window *i;

	for (i = windows; i; i = i->next)
		if (i == w)
			return true;
	return false;
}

enum wait { LEFT, GONE, GAVE_UP };

/*
 * What the scheduler says of thread @tid: its state letter (R, S, D, t...)
 * from /proc's stat, and from schedstat the time it ran and the time it
 * waited for a CPU while runnable (CONFIG_SCHED_INFO).  false when /proc
 * cannot tell.
 */
static bool thread_sched(int tid, char *state, uint64_t *run_ns, uint64_t *wait_ns)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "tid (comm) S ...": comm may hold anything but ends at the last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return false;
	*state = p[2];
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return sscanf(buf, "%" SCNu64 " %" SCNu64, run_ns, wait_ns) == 2;
}

/*
 * How long past its deadline a wait may go on for a thread that is
 * runnable but has not had a CPU (below); then it gives up whatever the
 * scheduler says.
 */
#define STARVED_CAP_NS	(30ULL * 1000 * 1000 * 1000)
/* how often such a thread is looked at again */
#define STARVED_LOOK_NS	(50ULL * 1000 * 1000)

/*
 * Wait, the registry's lock dropped meanwhile, until @w's post (or @poll)
 * window, if it is open, has moved on: LEFT; GONE if its thread exited
 * meanwhile; GAVE_UP at *@deadline (remembered if @last), or at once if
 * a last wait gave up on it where it still is.  windows_lock.
 *
 * A last wait does not give up on a thread that the scheduler shows
 * runnable (state R) and that has run for less than @timeout_ns since the
 * wait began: it is waiting for a CPU, not stuck.  A poller preempted
 * inside its window on a busy CPU (eight processes polling on one, say)
 * leaves it as soon as it runs again, and a move that gave up on it would
 * leave its QP unprotected for nothing.  The deadline then moves on by
 * STARVED_LOOK_NS at a time, up to @cap.  A thread stopped (a debugger),
 * asleep, or running inside a verb for @timeout_ns gets no more than the
 * deadline, as before; so does every thread where /proc cannot tell.
 */
static enum wait wait_word(const struct shiftu_window *w, bool poll, uint64_t *deadline,
			   uint64_t cap, uint64_t timeout_ns, bool last)
{
	uint64_t v = word(w, poll), t0 = shiftu_mono_ns(), run0 = 0, q0 = 0, run = 0, q = 0, t;
	/* only a window open now is looked at */
	bool sched_ok = (v & 1) && thread_sched(w->tid, &(char){0}, &run0, &q0);
	bool starved = false;
	char st = '?';

	while ((v & 1) && word(w, poll) == v) {
		if (w == stuck_w && poll == stuck_poll && v == stuck_v)
			return GAVE_UP;
		t = shiftu_mono_ns();
		if (last && t >= *deadline && t < cap && sched_ok &&
		    thread_sched(w->tid, &st, &run, &q) && st == 'R' &&
		    run - run0 < timeout_ns) {
			if (!starved)
				shiftu_dbg("quiesce: thread %d is inside its %s window and waits for a CPU (ran %" PRIu64 " ms in %" PRIu64 " ms): waiting on",
					   w->tid, poll ? "poll" : "post", (run - run0) / 1000000,
					   (t - t0) / 1000000);
			starved = true;
			*deadline = t + STARVED_LOOK_NS < cap ? t + STARVED_LOOK_NS : cap;
		}
		if (t >= *deadline) {
			if (last)
				stuck_w = w, stuck_poll = poll, stuck_v = v;
			if (sched_ok && thread_sched(w->tid, &st, &run, &q))
				shiftu_dbg("quiesce: thread %d still inside its %s window after %" PRIu64 " ms: state %c, ran %" PRIu64 " ms and waited for a CPU %" PRIu64 " ms meanwhile",
					   w->tid, poll ? "poll" : "post", (t - t0) / 1000000, st,
					   (run - run0) / 1000000, (q - q0) / 1000000);
			return GAVE_UP;
		}
		shiftu_unlock(&windows_lock, SHIFTU_LOCK_WINDOWS);
		/*
		 * Spin only briefly: on a busy CPU the thread we wait for
		 * needs it more than we do.
		 */
		if (t - t0 < 2000000ULL)
			sched_yield();
		else
			usleep(1000);
		shiftu_lock(&windows_lock, SHIFTU_LOCK_WINDOWS);
		if (!registered(w))
			return GONE;
	}
	if (starved)
		shiftu_dbg("quiesce: thread %d left its %s window after %" PRIu64 " ms",
			   w->tid, poll ? "poll" : "post", (shiftu_mono_ns() - t0) / 1000000);
	return LEFT;
}

bool shiftu_quiesce(uint64_t timeout_ns, bool last)
{
	struct shiftu_window *w;
	uint64_t deadline, cap;
	enum wait r;

	pthread_once(&once, init);
	/*
	 * The caller's stores out, every thread's window stores in.  Without
	 * the barrier, a grace: a store waits in its CPU's store buffer for
	 * far less, and a thread that passed the caller's flag before it
	 * was seen had opened its window first.  Not a proof; the best
	 * there is without membarrier(2).
	 */
	if (!barrier_ok || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		usleep(GRACE_US);
	/*
	 * Each window is read under the registry's lock, so that no word
	 * goes while it is read (a thread exiting waits for it), and the lock
	 * is dropped while we wait for one to move: a thread starting or
	 * ending does not wait for us.  A window that went meanwhile sends
	 * us over the list again; each window is read first after the
	 * barrier either way.
	 */
	shiftu_lock(&windows_lock, SHIFTU_LOCK_WINDOWS);
	deadline = shiftu_mono_ns() + timeout_ns;
	cap = deadline + STARVED_CAP_NS;
	do {
		for (w = windows, r = LEFT; w; w = w->next) {
			if (w == &shiftu_window)
				continue;
			r = wait_word(w, false, &deadline, cap, timeout_ns, last);
			if (r == LEFT)
				r = wait_word(w, true, &deadline, cap, timeout_ns, last);
			/* before the next: a window gone has no next */
			if (r != LEFT)
				break;
		}
	} while (r == GONE);
	shiftu_unlock(&windows_lock, SHIFTU_LOCK_WINDOWS);
	/* what a poller did in its window (a stash) the caller sees through
	 * the CQ's lock, which the poller took to do it */
	return r == LEFT;
}

/*
 * @w's post window, if open, is on @anchor (the pointer at @off in the
 * window): its word read again after the anchor, unchanged, says the
 * anchor is the one the window opened with (a thread sets its anchors
 * before it opens its window and never changes them inside; x86 keeps its
 * two stores in order).  windows_lock.
 */
static bool window_on(const struct shiftu_window *w, size_t off, const void *anchor,
		      uint32_t *v)
{
	const void *const *at = (const void *const *)((const char *)w + off);

	*v = __atomic_load_n(&w->seq, __ATOMIC_RELAXED);
	if (!(*v & 1))
		return false;
	if (__atomic_load_n(at, __ATOMIC_RELAXED) != anchor)
		return false;
	return __atomic_load_n(&w->seq, __ATOMIC_RELAXED) == *v;
}

/* Wait out the post windows anchored on @anchor at @off (shiftu_quiesce_vq()). */
static bool quiesce_anchor(size_t off, const void *anchor, uint64_t timeout_ns)
{
	struct shiftu_window *w;
	uint64_t deadline;
	uint32_t v;
	bool again;

	pthread_once(&once, init);
	/*
	 * The caller's store out (a queue's new poster, an SRQ's gate),
	 * every thread's window and anchor in: a poster that read it before
	 * the barrier had opened its window first, and shows it now; one that
	 * reads it after goes the slow way.  No grace instead: a window the
	 * grace missed would be a count two threads write at once.
	 */
	if (!barrier_ok || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return false;
	shiftu_lock(&windows_lock, SHIFTU_LOCK_WINDOWS);
	deadline = shiftu_mono_ns() + timeout_ns;
	do {
		again = false;
		for (w = windows; w; w = w->next) {
			if (w == &shiftu_window || !window_on(w, off, anchor, &v))
				continue;
			while (__atomic_load_n(&w->seq, __ATOMIC_RELAXED) == v) {
				if (shiftu_mono_ns() >= deadline) {
					shiftu_unlock(&windows_lock, SHIFTU_LOCK_WINDOWS);
					return false;
				}
				shiftu_unlock(&windows_lock, SHIFTU_LOCK_WINDOWS);
				sched_yield();
				shiftu_lock(&windows_lock, SHIFTU_LOCK_WINDOWS);
				if (!registered(w)) {
					/* gone, and its next with it: over again */
					again = true;
					break;
				}
			}
			if (again)
				break;
		}
	} while (again);
	shiftu_unlock(&windows_lock, SHIFTU_LOCK_WINDOWS);
	return true;
}

bool shiftu_quiesce_vq(const struct shiftu_vqp *vq, uint64_t timeout_ns)
{
	return quiesce_anchor(offsetof(struct shiftu_window, vq), vq, timeout_ns);
}

bool shiftu_quiesce_srq(const struct shiftu_srq *r, uint64_t timeout_ns)
{
	return quiesce_anchor(offsetof(struct shiftu_window, srq), r, timeout_ns);
}

bool shiftu_quiesce_barrier(void)
{
	pthread_once(&once, init);
	return barrier_ok;
}
