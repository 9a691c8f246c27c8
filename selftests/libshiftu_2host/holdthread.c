// SPDX-License-Identifier: GPL-2.0
/*
 * holdthread: stop one thread of a running process inside a library's code
 * and keep it there, while the process's other threads run on.
 *
 *   holdthread TID LIBRARY SECONDS [MUTEX]
 *
 * Seizes thread TID alone with ptrace(2) (the others are not traced),
 * interrupts it, and single-steps it until it executes code of the
 * library whose mapped path contains LIBRARY (/proc/TID/maps); prints
 * "held TID at ADDR" then, holds it SECONDS (fractions allowed), or until
 * holdthread gets SIGUSR1, and lets it go: a test lets the thread go once
 * what it waits for was seen, with SECONDS as its bound.  A thread that
 * does not get there within STEPS_MAX steps (it may be in a loop that
 * calls the library only when something arrives, which stepping slows a
 * thousandfold) runs free for a few milliseconds and is interrupted
 * again, elsewhere.  A thread that does not reach the library
 * within 30 s, stepping or waiting in a step, is let go, with exit
 * status 1.  With MUTEX, the offset (hex)
 * of a pthread_mutex_t in the library's image (nm(1) gives it), it is held
 * only where it also owns that mutex, as glibc's mutex records.
 *
 * failover_held.sh holds a program's main thread inside Soft-RoCE's
 * provider, which libshiftu calls only inside the thread's window
 * (userlib/quiesce.h): there a failover must wait for it.  fork_children.sh
 * holds libshiftu's shadow thread where it owns shadow_lock, which a fork
 * must wait for; inside the library alone it may be talking to the store,
 * with no lock held (CI's lab, 2026-12-02).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REACH_S		30
#define STEPS_MAX	4000
#define FREE_US		3000

static volatile sig_atomic_t let_go, late;

static void on_usr1(int sig)
{
	(void)sig;
	let_go = 1;
}

/* a step into a wait that nothing ends: waitpid() gives up (EINTR) */
static void on_alrm(int sig)
{
	(void)sig;
	late = 1;
}

struct range {
	uint64_t lo, hi;
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * The executable mappings of @lib in @tid's address space, at most @max;
 * *@base: where its image starts (the mapping of file offset 0).
 */
static int lib_text(pid_t tid, const char *lib, struct range *r, int max, uint64_t *base)
{
	char path[64], line[512], perms[8];
	unsigned long lo, hi, foff;
	int n = 0, off;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", tid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	*base = 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perms, &foff, &off) != 4)
			continue;
		if (!strstr(line + off, lib))
			continue;
		if (foff == 0 && !*base)
			*base = lo;
		if (perms[2] == 'x')
			r[n++] = (struct range){ lo, hi };
	}
	fclose(f);
	return n;
}

/* Whether @tid owns the mutex at @m in its address space (glibc's owner). */
static bool owns(pid_t tid, uint64_t m)
{
	long word;

	errno = 0;
	word = ptrace(PTRACE_PEEKDATA, tid, m + offsetof(pthread_mutex_t, __data.__owner), 0);
	if (errno)
		return false;
	return (int)(word & 0xffffffff) == tid;
}

static bool inside(const struct range *r, int n, uint64_t ip)
{
	int i;

	for (i = 0; i < n; i++)
		if (ip >= r[i].lo && ip < r[i].hi)
			return true;
	return false;
}

/*
 * Wait for @tid's next stop; false if it is gone.  *@sig: a signal the
 * thread was about to take, to be given back when it goes on (0 for the
 * stops we made: the interrupt's, a step's trap).
 */
static bool stopped(pid_t tid, int *sig)
{
	int status;
	pid_t ret;

	do
		ret = waitpid(tid, &status, __WALL);
	while (ret < 0 && errno == EINTR && !late);
	if (ret != tid || !WIFSTOPPED(status))
		return false;
	*sig = WSTOPSIG(status);
	if (*sig == SIGTRAP || status >> 16)
		*sig = 0;
	return true;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_usr1 }, al = { .sa_handler = on_alrm };
	struct user_regs_struct regs;
	struct range text[8];
	uint64_t base = 0, mutex = 0;
	double hold, t0;
	unsigned long steps = 0;
	unsigned int since = 0, runs = 0;
	char *end;
	pid_t tid;
	int n, sig = 0, ret = 1;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: holdthread TID LIBRARY SECONDS [MUTEX]\n");
		return 2;
	}
	tid = (pid_t)strtol(argv[1], &end, 10);
	if (*end || tid <= 0) {
		fprintf(stderr, "holdthread: bad thread id '%s'\n", argv[1]);
		return 2;
	}
	hold = strtod(argv[3], &end);
	if (*end || hold < 0) {
		fprintf(stderr, "holdthread: bad time '%s'\n", argv[3]);
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	sigemptyset(&al.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) || sigaction(SIGALRM, &al, NULL)) {
		fprintf(stderr, "holdthread: cannot catch SIGUSR1 or SIGALRM: %s\n", strerror(errno));
		return 1;
	}
	if (argc == 5) {
		mutex = strtoull(argv[4], &end, 16);
		if (*end || !mutex) {
			fprintf(stderr, "holdthread: bad mutex offset '%s'\n", argv[4]);
			return 2;
		}
	}
	n = lib_text(tid, argv[2], text, 8, &base);
	if (n <= 0) {
		fprintf(stderr, "holdthread: thread %d has no code of %s mapped\n", tid, argv[2]);
		return 1;
	}
	if (mutex)
		mutex += base;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) || ptrace(PTRACE_INTERRUPT, tid, 0, 0)) {
		fprintf(stderr, "holdthread: cannot trace thread %d: %s\n", tid, strerror(errno));
		return 1;
	}
	if (!stopped(tid, &sig))
		goto gone;
	t0 = now();
	alarm(REACH_S + 1);
	for (;;) {
		if (ptrace(PTRACE_GETREGS, tid, 0, &regs))
			goto gone;
		if (inside(text, n, regs.rip) && (!mutex || owns(tid, mutex)))
			break;
		if (now() - t0 > REACH_S || late) {
			fprintf(stderr, "holdthread: thread %d did not reach %s in %d s (%lu steps, %u free runs)\n",
				tid, argv[2], REACH_S, steps, runs);
			goto out;
		}
		if (++since > STEPS_MAX) {
			since = 0;
			if (ptrace(PTRACE_CONT, tid, 0, sig))
				goto gone;
			sig = 0;
			usleep(FREE_US + rand() % FREE_US);
			if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) || !stopped(tid, &sig))
				goto gone;
			runs++;
			continue;
		}
		if (ptrace(PTRACE_SINGLESTEP, tid, 0, sig) || !stopped(tid, &sig))
			goto gone;
		steps++;
	}
	alarm(0);
	printf("held %d at 0x%llx (%s+0x%llx)%s after %lu steps, %u free runs\n", tid,
	       (unsigned long long)regs.rip, argv[2], (unsigned long long)(regs.rip - base),
	       mutex ? ", owning the mutex" : "", steps, runs);
	fflush(stdout);
	t0 = now();
	while (!let_go && now() - t0 < hold)
		usleep(10000);
	/* CLOCK_MONOTONIC, for a test to order what waited on the thread */
	printf("released %d at %.0f ms, %s\n", tid, now() * 1e3,
	       let_go ? "told to" : "its time up");
	fflush(stdout);
	ret = 0;
out:
	if (ptrace(PTRACE_DETACH, tid, 0, sig))
		fprintf(stderr, "holdthread: cannot let thread %d go: %s\n", tid, strerror(errno));
	return ret;
gone:
	if (late) {
		/* still running: it is let go as this process exits */
		fprintf(stderr, "holdthread: thread %d did not reach %s in %d s: it waits (%lu steps, %u free runs)\n",
			tid, argv[2], REACH_S, steps, runs);
		return 1;
	}
	fprintf(stderr, "holdthread: thread %d is gone\n", tid);
	return 1;
}
