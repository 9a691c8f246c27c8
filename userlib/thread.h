/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * thread.h: the library's own threads (the backup thread, shadow.c; the
 * completion-event watcher, watcher.c).
 *
 * They start detached, with every signal blocked that the application may
 * send or catch: a signal sent to the process is then delivered to one of
 * the application's threads, as it would be without libshiftu.  Were it
 * delivered to ours, the application's handler would run on a thread it
 * never made, and a thread of its own waiting in sigsuspend(2), pause(2) or
 * a call it means the signal to interrupt would not be woken.  Signals the
 * hardware raises (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP) and SIGABRT go
 * to the thread that causes them and stay unblocked.
 *
 * Their names begin with "shiftu" (SHIFTU_THREAD_NAME; the backup thread is
 * "shiftu-shadow", its helpers that go back "shiftu-backer"), so that an
 * operator tells them from the application's threads in ps -L or top -H,
 * and can give them a better niceness where the application's pollers
 * would starve them (the lab's one-CPU guests do; selftests' lu_lib_urgent).
 */
#ifndef _SHIFTU_THREAD_H
#define _SHIFTU_THREAD_H

#define SHIFTU_THREAD_NAME	"shiftu"

/* Start @fn(@arg) on a new detached thread.  Returns 0 or an errno. */
int shiftu_thread_start(void *(*fn)(void *), void *arg);

#endif /* _SHIFTU_THREAD_H */
