/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * thread.h: the library's own threads (the backup thread, shadow.c; the
 * completion-event watcher, handshake.c).
 *
 * They start detached, with every signal blocked that the application may
 * send or catch: a signal sent to the process is then delivered to one of
 * the application's threads, as it would be without libshiftu.  Were it
 * delivered to ours, the application's handler would run on a thread it
 * never made, and a thread of its own waiting in sigsuspend(2), pause(2) or
 * a call it means the signal to interrupt would not be woken.  Signals the
 * hardware raises (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP) and SIGABRT go
 * to the thread that causes them and stay unblocked.
 */
#ifndef _SHIFTU_THREAD_H
#define _SHIFTU_THREAD_H

/* Start @fn(@arg) on a new detached thread.  Returns 0 or an errno. */
int shiftu_thread_start(void *(*fn)(void *), void *arg);

#endif /* _SHIFTU_THREAD_H */
