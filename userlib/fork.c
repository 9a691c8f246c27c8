// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fork.c: the library across fork(2) (fork.h), from the hooks each file
 * defines for its own locks and state (lockorder.h).
 *
 * The handlers are registered with pthread_atfork() the first time the
 * library is used (its configuration is read, or a thread opens a window),
 * so that a preloaded program that never uses RDMA runs none of them.
 * posix_spawn(3), vfork(2) and system(3), which run no fork handlers, cost
 * nothing more either.
 *
 * Before the fork, the forking thread takes every lock in the order of
 * lockorder.h, which every other thread follows too, so that it waits only
 * for holders that can finish: a shadow pass (bounded by its one batch of
 * store requests, a few seconds at worst), a move (bounded by its quiesce,
 * 5 s at worst, 35 s for a thread inside a verb that waits for a CPU) and
 * the short sections of the rest.  After it, the parent lets
 * them go and goes on as before: its QPs, twins, threads and reports are
 * untouched.  The child lets them go too, and then forgets the parent's
 * state, which it must neither use nor undo: its devices and QPs are the
 * parent's (the verbs give a child no use of them; their files are shared
 * with the parent, so a twin destroyed or a QP moved here would be the
 * parent's), its store connections (a command sent on them would
 * interleave with the parent's), its path reports' socket (the kernel
 * withdraws the reports when the socket is released, which the child's
 * copy would put off until the child exits), the open file of the health
 * page (whose wakeups are per file) and its threads (the child has only
 * the forking one).  A device the child opens is then protected as in a
 * fresh process: the threads start again on its first QP.
 *
 * A fork from the library's event callback, or from a signal
 * handler on a thread that holds a lock of the library, would wait for
 * itself; neither is supported.
 */
#include <pthread.h>
#include <string.h>

#include "fork.h"
#include "lockorder.h"

/* every file's hooks (SHIFTU_FORK_HOOK), placed by the linker */
extern const struct shiftu_fork_hook __start_shiftu_fork_hooks[] SHIFTU_HIDDEN;
extern const struct shiftu_fork_hook __stop_shiftu_fork_hooks[] SHIFTU_HIDDEN;

#define MAX_HOOKS	32

/* the hooks in rank order: fork_init() */
static const struct shiftu_fork_hook *hooks[MAX_HOOKS];
static unsigned int n_hooks;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void prepare(void)
{
	unsigned int i;

	for (i = 0; i < n_hooks; i++) {
		if (hooks[i]->lock)
			pthread_mutex_lock(hooks[i]->lock);
		else if (hooks[i]->take)
			hooks[i]->take();
	}
}

static void unlock_all(void)
{
	unsigned int i;

	for (i = 0; i < n_hooks; i++) {
		if (hooks[i]->lock)
			pthread_mutex_unlock(hooks[i]->lock);
		else if (hooks[i]->release)
			hooks[i]->release();
	}
}

static void parent(void)
{
	unlock_all();
}

/*
 * The child has one thread, this one, and every lock it took in prepare()
 * (glibc's mutexes of the default kind may be unlocked by the copy of the
 * thread that locked them).  Then the parent's state goes.
 */
static void child(void)
{
	unsigned int i;

	unlock_all();
	for (i = 0; i < n_hooks; i++)
		if (hooks[i]->child)
			hooks[i]->child();
}

static void fork_init(void)
{
	const struct shiftu_fork_hook *h;
	unsigned int i;

	/* in rank order, and in link order within a rank (the host test
	 * shiftu_fork sees every rank's lock here: none left out) */
	for (h = __start_shiftu_fork_hooks; h < __stop_shiftu_fork_hooks && n_hooks < MAX_HOOKS;
	     h++) {
		for (i = n_hooks; i > 0 && hooks[i - 1]->rank > h->rank; i--)
			hooks[i] = hooks[i - 1];
		hooks[i] = h;
		n_hooks++;
	}
	pthread_atfork(prepare, parent, child);
}

void shiftu_fork_init(void)
{
	pthread_once(&fork_once, fork_init);
}

const struct shiftu_fork_hook *const *shiftu_fork_hooks(unsigned int *n)
{
	shiftu_fork_init();
	*n = n_hooks;
	return hooks;
}

pthread_mutex_t *shiftu_fork_lock_named(const char *name)
{
	const struct shiftu_fork_hook *h;

	for (h = __start_shiftu_fork_hooks; h < __stop_shiftu_fork_hooks; h++)
		if (h->lock && !strcmp(h->name, name))
			return h->lock;
	return NULL;
}
