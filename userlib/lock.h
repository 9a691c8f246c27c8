/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lock.h: the library's mutexes, taken and let go with their class
 * (lockorder.h).  In the production build these are pthread's calls and
 * nothing more.  The test build (libshiftu-test.so.0, SHIFTU_TEST_BUILD)
 * checks every take against lockorder.h's order, per thread
 * (lockcheck.c): the first take out of order names both locks on stderr
 * and in the log and aborts, so that an inversion shows in the lab run that
 * made it, not in the deadlock it may cause one day.
 */
#ifndef _SHIFTU_LOCK_H
#define _SHIFTU_LOCK_H

#include <pthread.h>

#include "lockorder.h"

#ifdef SHIFTU_TEST_BUILD
void shiftu_lock_check(enum shiftu_lock_class c);
void shiftu_lock_held(enum shiftu_lock_class c);
void shiftu_lock_gone(enum shiftu_lock_class c);
#else
static inline void shiftu_lock_check(enum shiftu_lock_class c) { (void)c; }
static inline void shiftu_lock_held(enum shiftu_lock_class c) { (void)c; }
static inline void shiftu_lock_gone(enum shiftu_lock_class c) { (void)c; }
#endif

static inline void shiftu_lock(pthread_mutex_t *m, enum shiftu_lock_class c)
{
	shiftu_lock_check(c);
	pthread_mutex_lock(m);
	shiftu_lock_held(c);
}

/* A trylock cannot wait, so it is not checked; once taken it is held. */
static inline int shiftu_trylock(pthread_mutex_t *m, enum shiftu_lock_class c)
{
	int ret = pthread_mutex_trylock(m);

	if (!ret)
		shiftu_lock_held(c);
	return ret;
}

static inline void shiftu_unlock(pthread_mutex_t *m, enum shiftu_lock_class c)
{
	shiftu_lock_gone(c);
	pthread_mutex_unlock(m);
}

#endif /* _SHIFTU_LOCK_H */
