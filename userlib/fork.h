/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fork.h: the library across fork(2) (fork.c).
 *
 * A process that forks while another of its threads holds a lock of the
 * library would give its child that lock held by a thread the child does
 * not have: the child's first verb would wait for ever.  The library's
 * fork handlers take every lock it has, in the order lockorder.h states,
 * before the fork, and release them after it in both processes; the child
 * then forgets what is the parent's (its QPs' records and twins, its
 * store connections, its path reports' socket, its threads).
 */
#ifndef _SHIFTU_FORK_H
#define _SHIFTU_FORK_H

#include <pthread.h>
#include <stdbool.h>

#include "util.h"

/*
 * Register the fork handlers, once.  Called where the library starts to
 * be used (config.c, quiesce.c, event.c); any thread.
 */
void shiftu_fork_init(void);

struct shiftu_fork_hook;

/* The hooks in the order fork takes them, *@n of them (a test's look). */
const struct shiftu_fork_hook *const *shiftu_fork_hooks(unsigned int *n) SHIFTU_HIDDEN;

/* The lock a hook of that @name takes (a test's look), or NULL. */
pthread_mutex_t *shiftu_fork_lock_named(const char *name) SHIFTU_HIDDEN;

#endif /* _SHIFTU_FORK_H */
