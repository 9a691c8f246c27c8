// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_fork: a child of fork(2) can take every lock of libshiftu, though
 * another thread of its parent held it when the parent forked.
 *
 * For each lock of the order in lockorder.h (the files' fork hooks, and the
 * locks of a QP's and a CQ's records, made here without a device), a thread takes
 * it, says so, and lets it go 300 ms later; the main thread forks as soon
 * as the lock is held.  The child must take the lock within 2 s, and so
 * must the parent once the thread has let it go.  The child also leaves
 * the parent's path reports' socket alone and starts its statistics at
 * zero.  Each TEST runs in its own process (kselftest_harness forks), so
 * library state is fresh.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/wait.h>

#include <infiniband/verbs.h>

#include "config.h"
#include "event.h"
#include "fork.h"
#include "interpose.h"
#include "lockorder.h"
#include "report.h"
#include "shadow.h"
#include "window.h"

#include "kselftest_harness.h"

#define HOLD_MS		300
#define CHILD_WAIT_S	2

struct holder {
	pthread_mutex_t *lock;
	pthread_mutex_t m;
	pthread_cond_t c;
	int held;
};

static void *hold(void *arg)
{
	struct holder *h = arg;

	pthread_mutex_lock(h->lock);
	pthread_mutex_lock(&h->m);
	h->held = 1;
	pthread_cond_signal(&h->c);
	pthread_mutex_unlock(&h->m);
	usleep(HOLD_MS * 1000);
	pthread_mutex_unlock(h->lock);
	return NULL;
}

/* 0 if @lock could be taken within @s seconds, else the error. */
static int take_within(pthread_mutex_t *lock, int s)
{
	struct timespec t;
	int err;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += s;
	err = pthread_mutex_timedlock(lock, &t);
	if (!err)
		pthread_mutex_unlock(lock);
	return err;
}

/* Records of a QP and a CQ, as the verbs would make them, without a device. */
static struct ibv_context fake_ibctx;
static struct shiftu_ctx fake_sctx;
static struct ibv_cq fake_cq = { .context = &fake_ibctx };
static struct shiftu_vqp *fake_vq;
static struct shiftu_cq *fake_c;

static void records(void)
{
	struct ibv_qp_init_attr a;

	fake_sctx.ctx = &fake_ibctx;
	fake_sctx.next = shiftu_ctx_list;
	shiftu_ctx_list = &fake_sctx;
	shiftu_shadow_cq(&fake_cq, 1);
	fake_c = shiftu_cq_find(&fake_cq);
	fake_vq = calloc(1, sizeof(*fake_vq));
	if (!fake_vq)
		return;
	pthread_mutex_init(&fake_vq->lock, NULL);
	pthread_mutex_init(&fake_vq->fo_lock, NULL);
	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_RC;
	shiftu_shadow_qp(fake_vq, &a);
}

static pthread_mutex_t *lock_named(const char *name)
{
	if (!strcmp(name, "qp"))
		return &fake_vq->lock;
	if (!strcmp(name, "qp_fo"))
		return &fake_vq->fo_lock;
	if (!strcmp(name, "cq"))
		return &fake_c->lock;
	if (!strcmp(name, "cq_lock"))
		return &cq_lock;
	return shiftu_fork_lock_named(name);
}

/*
 * Every rank of lockorder.h has its lock (or the records' take and
 * release), once, and fork takes them in rank order.
 */
TEST(every_rank_once)
{
	const struct shiftu_fork_hook *const *h;
	unsigned int i, n, seen[SHIFTU_RANK_NONE] = { 0 };
	int last = -1;

	h = shiftu_fork_hooks(&n);
	for (i = 0; i < n; i++) {
		EXPECT_LE(last, (int)h[i]->rank) TH_LOG("%s out of order", h[i]->name);
		last = h[i]->rank;
		if (h[i]->rank == SHIFTU_RANK_NONE) {
			EXPECT_TRUE(!h[i]->lock && !h[i]->take && h[i]->child) TH_LOG("%s", h[i]->name);
			continue;
		}
		EXPECT_TRUE(!!h[i]->lock != !!h[i]->take) TH_LOG("%s", h[i]->name);
		EXPECT_EQ(!!h[i]->take, !!h[i]->release) TH_LOG("%s", h[i]->name);
		seen[h[i]->rank]++;
	}
	for (i = 0; i < SHIFTU_RANK_NONE; i++) {
		unsigned int k = seen[i];

		EXPECT_EQ(1, k) TH_LOG("rank %u has %u locks", i, k);
	}
}

FIXTURE(held) {
	pthread_mutex_t *lock;
};

FIXTURE_VARIANT(held) {
	const char *name;
};

#define HELD(n) FIXTURE_VARIANT_ADD(held, n) { .name = #n }
HELD(serve_lock);
HELD(shadow_lock);
HELD(qp);
HELD(qp_fo);
HELD(cq_lock);
HELD(cq);
HELD(mr_lock);
HELD(forget_lock);
HELD(backer_lock);
HELD(nl_lock);
HELD(vqp_lock);
HELD(ctx_lock);
HELD(cqx_lock);
HELD(box_lock);
HELD(srq_lock);
HELD(reg_lock);
HELD(health_lock);
HELD(windows_lock);
HELD(ch_lock);
HELD(cb_lock);
HELD(config_lock);
HELD(wrid_lock);

FIXTURE_SETUP(held)
{
	/* no real device and no log lines on the test's stderr */
	setenv("SHIFTU_HEALTH_DEV", "/nonexistent/shift_ft", 1);
	setenv("SHIFTU_LOG", "off", 1);
	/* what the first verb does first */
	shiftu_config();
	records();
	ASSERT_NE(NULL, fake_vq);
	ASSERT_NE(NULL, fake_c);
	self->lock = lock_named(variant->name);
	ASSERT_NE(NULL, self->lock);
}

FIXTURE_TEARDOWN(held) {}

TEST_F(held, child_takes_it)
{
	struct holder h = { self->lock, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
	pthread_t th;
	int status;
	pid_t pid;

	ASSERT_EQ(0, pthread_create(&th, NULL, hold, &h));
	pthread_mutex_lock(&h.m);
	while (!h.held)
		pthread_cond_wait(&h.c, &h.m);
	pthread_mutex_unlock(&h.m);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(take_within(self->lock, CHILD_WAIT_S) ? 1 : 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("the child could not take %s within %d s", variant->name, CHILD_WAIT_S);
	}
	EXPECT_EQ(0, take_within(self->lock, CHILD_WAIT_S));
	ASSERT_EQ(0, pthread_join(th, NULL));
}

/* The process's open sockets. */
static int sockets(void)
{
	char path[300], link[64];
	struct dirent *d;
	int n = 0;
	DIR *dir;

	dir = opendir("/proc/self/fd");
	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len > 0 && !strncmp(link, "socket:", 7 < len ? 7 : len))
			n++;
	}
	closedir(dir);
	return n;
}

/*
 * The child closes its copy of the path reports' socket (the kernel
 * withdraws the parent's reports when the parent's goes, not when the
 * child's does), and its statistics start at zero; the parent keeps both.
 */
TEST(child_forgets)
{
	static const uint8_t gid[16] = { 0xfe, 0x80, [15] = 1 };
	int status, before;
	pid_t pid;

	setenv("SHIFTU_LOG", "off", 1);
	shiftu_config();
	/* no shift_ft on the build host: the socket is made all the same */
	shiftu_report_path("rxe0", 1, gid, true);
	before = sockets();
	ASSERT_LE(1, before);
	shiftu_stat_add(SHIFTU_STAT_FAILOVERS, 3);
	shiftu_window_register();
	shiftu_poll_open();
	shiftu_poll_close();
	ASSERT_EQ(1, shiftu_window_polls());
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit((sockets() == before - 1 ? 0 : 1) |
		      (shiftu_stat_lines[SHIFTU_STAT_FAILOVERS].v == 0 ? 0 : 2) |
		      (shiftu_window_polls() == 0 ? 0 : 4));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("child: 1 the socket stayed open, 2 failovers not zero, 4 polls not zero");
	}
	EXPECT_EQ(before, sockets());
	EXPECT_EQ(3, shiftu_stat_lines[SHIFTU_STAT_FAILOVERS].v);
	EXPECT_EQ(1, shiftu_window_polls());
}

TEST_HARNESS_MAIN
