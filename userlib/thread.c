// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thread.c: the library's own threads, started with the application's
 * signals blocked (thread.h).
 */
#include <pthread.h>
#include <signal.h>

#include "thread.h"
#include "util.h"

int shiftu_thread_start(void *(*fn)(void *), void *arg)
{
	static const int synchronous[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT };
	sigset_t all, old;
	pthread_attr_t a;
	pthread_t t;
	unsigned int i;
	int err;

	err = pthread_attr_init(&a);
	if (err)
		return err;
	err = pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (err)
		goto out_attr;
	/* the new thread inherits the creator's mask: the creator's own is
	 * blocked for the moment of the call only, and a signal that comes
	 * meanwhile is delivered to it once restored */
	sigfillset(&all);
	for (i = 0; i < SHIFTU_ARRAY_SIZE(synchronous); i++)
		sigdelset(&all, synchronous[i]);
	err = pthread_sigmask(SIG_BLOCK, &all, &old);
	if (err)
		goto out_attr;
	err = pthread_create(&t, &a, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* named for ps -L, top -H and renice: best effort (a thread may
	 * rename itself, the shadow thread does) */
	if (!err)
		pthread_setname_np(t, SHIFTU_THREAD_NAME);
out_attr:
	pthread_attr_destroy(&a);
	return err;
}
