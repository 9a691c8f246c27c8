// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_lockorder: the test build's check of the lock order (lock.h,
 * userlib/lockcheck.c, the order in lockorder.h) lets a thread take every
 * lock in that order, and aborts at the first take out of it, naming both
 * locks: a later class held, a leaf held, a second QP's lock, a third
 * CQ's, a lock let go that was not held.  A trylock, which cannot wait, is
 * not checked.  Each TEST runs in its own process (kselftest_harness
 * forks), so every thread starts holding nothing.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "lock.h"

#include "kselftest_harness.h"

#ifndef SHIFTU_TEST_BUILD
#error "build with -DSHIFTU_TEST_BUILD: the check is the test build's"
#endif

/* a mutex of its own for each take of a test */
static pthread_mutex_t mx[16] = {
	[0 ... 15] = PTHREAD_MUTEX_INITIALIZER,
};

/* take the classes @cls in turn, each on a mutex of its own */
static void take(const enum shiftu_lock_class *cls, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		shiftu_lock(&mx[i], cls[i]);
}

#define TAKE(...) do {								\
	static const enum shiftu_lock_class c_[] = { __VA_ARGS__ };		\
	take(c_, sizeof(c_) / sizeof(c_[0]));					\
} while (0)

TEST(the_whole_order)
{
	TAKE(SHIFTU_LOCK_SERVE, SHIFTU_LOCK_SHADOW, SHIFTU_LOCK_VQ, SHIFTU_LOCK_FO,
	     SHIFTU_LOCK_CQ_LIST, SHIFTU_LOCK_CQ, SHIFTU_LOCK_CQ, SHIFTU_LOCK_SRQ,
	     SHIFTU_LOCK_MR);
	/* let go out of order: the QP's lock before its fo_lock */
	shiftu_unlock(&mx[8], SHIFTU_LOCK_MR);
	shiftu_unlock(&mx[2], SHIFTU_LOCK_VQ);
	shiftu_unlock(&mx[7], SHIFTU_LOCK_SRQ);
	shiftu_unlock(&mx[6], SHIFTU_LOCK_CQ);
	shiftu_unlock(&mx[5], SHIFTU_LOCK_CQ);
	shiftu_unlock(&mx[4], SHIFTU_LOCK_CQ_LIST);
	shiftu_unlock(&mx[3], SHIFTU_LOCK_FO);
	/* what is still held allows a leaf, then another once it is let go */
	shiftu_lock(&mx[9], SHIFTU_LOCK_CONFIG);
	shiftu_unlock(&mx[9], SHIFTU_LOCK_CONFIG);
	shiftu_lock(&mx[9], SHIFTU_LOCK_HEALTH);
	shiftu_unlock(&mx[9], SHIFTU_LOCK_HEALTH);
	shiftu_unlock(&mx[1], SHIFTU_LOCK_SHADOW);
	shiftu_unlock(&mx[0], SHIFTU_LOCK_SERVE);
	/* and the same order again, from nothing held */
	TAKE(SHIFTU_LOCK_VQ, SHIFTU_LOCK_FO, SHIFTU_LOCK_CQ, SHIFTU_LOCK_SRQ);
}

/* a trylock cannot wait: taken out of order it is only noted */
TEST(trylock_unchecked)
{
	TAKE(SHIFTU_LOCK_CQ);
	ASSERT_EQ(0, shiftu_trylock(&mx[1], SHIFTU_LOCK_FO));
	shiftu_unlock(&mx[1], SHIFTU_LOCK_FO);
	shiftu_unlock(&mx[0], SHIFTU_LOCK_CQ);
}

/*
 * Run @fn in a child with its stderr on a pipe: it must die of SIGABRT
 * (which the harness keeps for its own assertions, hence the child) and
 * have said @want.
 */
static void aborts(struct __test_metadata *_metadata, void (*fn)(void), const char *want)
{
	char buf[512] = "";
	ssize_t n, got = 0;
	int fd[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(fd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		dup2(fd[1], STDERR_FILENO);
		fn();
		_exit(0);
	}
	close(fd[1]);
	while ((n = read(fd[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	close(fd[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	TH_LOG("%s", buf);
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(SIGABRT, WTERMSIG(status));
	ASSERT_NE(NULL, strstr(buf, want));
}

static void inversion(void)
{
	TAKE(SHIFTU_LOCK_FO, SHIFTU_LOCK_VQ);
}

static void shadow_under_a_qp(void)
{
	TAKE(SHIFTU_LOCK_VQ, SHIFTU_LOCK_SHADOW);
}

static void leaf_under_a_leaf(void)
{
	TAKE(SHIFTU_LOCK_MR, SHIFTU_LOCK_CONFIG);
}

static void lock_under_a_leaf(void)
{
	TAKE(SHIFTU_LOCK_HEALTH, SHIFTU_LOCK_SRQ);
}

static void two_qps(void)
{
	TAKE(SHIFTU_LOCK_VQ, SHIFTU_LOCK_VQ);
}

static void three_cqs(void)
{
	TAKE(SHIFTU_LOCK_CQ, SHIFTU_LOCK_CQ, SHIFTU_LOCK_CQ);
}

/* a trylock held still orders the takes after it */
static void under_a_trylock(void)
{
	if (!shiftu_trylock(&mx[0], SHIFTU_LOCK_SRQ))
		shiftu_lock(&mx[1], SHIFTU_LOCK_CQ);
}

static void not_held(void)
{
	pthread_mutex_lock(&mx[0]);
	shiftu_unlock(&mx[0], SHIFTU_LOCK_BOX);
}

static void names_all_held(void)
{
	TAKE(SHIFTU_LOCK_SHADOW, SHIFTU_LOCK_FO, SHIFTU_LOCK_VQ);
}

TEST(out_of_order)
{
	aborts(_metadata, inversion,
	       "taking a QP's lock while holding a QP's fo_lock (a later lock is held)");
	aborts(_metadata, shadow_under_a_qp,
	       "taking shadow_lock while holding a QP's lock (a later lock is held)");
	aborts(_metadata, under_a_trylock,
	       "taking a CQ's lock while holding srq_lock (a later lock is held)");
	aborts(_metadata, names_all_held,
	       "taking a QP's lock while holding shadow_lock, a QP's fo_lock (a later lock is held)");
}

TEST(under_a_leaf)
{
	aborts(_metadata, leaf_under_a_leaf,
	       "taking config_lock while holding mr_lock (a leaf is held)");
	aborts(_metadata, lock_under_a_leaf,
	       "taking srq_lock while holding health_lock (a leaf is held)");
}

TEST(too_many_of_a_class)
{
	aborts(_metadata, two_qps,
	       "taking a QP's lock while holding a QP's lock (one of its class is held)");
	aborts(_metadata, three_cqs,
	       "taking a CQ's lock while holding a CQ's lock, a CQ's lock (one of its class is held)");
}

TEST(let_go_unheld)
{
	aborts(_metadata, not_held, "letting go of box_lock, which this thread does not hold");
}

TEST_HARNESS_MAIN
