// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_unit: libshiftu's pure logic on the build host: the health page
 * reader against pages laid out in memory, the QP registry, the pollers'
 * windows a move waits out, the configuration parsers and shiftu_set_options()
 * checks, and the signal mask of the library's own threads.
 *
 * The pages use strides and offsets different from the reader's sizeof(), so
 * a reader that used its own sizes would find the wrong rows.  Each TEST runs
 * in its own process (kselftest_harness forks), so library state is fresh.
 */
#define _GNU_SOURCE	/* memfd_create() */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <infiniband/verbs.h>
#include <shift_ft.h>

#include "shiftu.h"
#include "config.h"
#include "storeauth.h"
#include "health.h"
#include "interpose.h"
#include "log.h"
#include "provq.h"
#include "qp.h"
#include "quiesce.h"
#include "shadow.h"
#include "thread.h"
#include "window.h"
#include "wrid.h"

#include "kselftest_harness.h"

/* a future kernel's layout: rows larger than this reader's structs */
#define HDR_SIZE	160
#define PORT_OFF	256
#define PORT_STRIDE	(sizeof(struct shift_ft_page_port) + 40)
#define PORT_MAX	4
#define PATH_OFF	(PORT_OFF + PORT_MAX * PORT_STRIDE + 24)
#define PATH_STRIDE	(sizeof(struct shift_ft_page_path) + 24)
#define PATH_MAX_	3
#define PAGE_LEN	4096

static const uint8_t gid_a[16] = { 0xfe, 0x80, [15] = 0x0a };
static const uint8_t gid_b[16] = { 0xfe, 0x80, [15] = 0x0b };

#define PUT(row, type, field, val) do {					\
	__typeof__(((type *)0)->field) v_ = (val);			\
	memcpy((row) + offsetof(type, field), &v_, sizeof(v_));		\
} while (0)

static uint8_t *port_at(uint8_t *page, int i)
{
	return page + PORT_OFF + i * PORT_STRIDE;
}

static uint8_t *path_at(uint8_t *page, int i)
{
	return page + PATH_OFF + i * PATH_STRIDE;
}

static void put_port(uint8_t *page, int i, uint64_t guid, uint32_t num,
		     const char *name, uint8_t state, uint32_t backup)
{
	uint8_t *r = port_at(page, i);

	PUT(r, struct shift_ft_page_port, flags, SHIFT_FT_ROW_VALID);
	PUT(r, struct shift_ft_page_port, node_guid, guid);
	PUT(r, struct shift_ft_page_port, port_num, num);
	memcpy(r + offsetof(struct shift_ft_page_port, dev_name), name, strlen(name) + 1);
	PUT(r, struct shift_ft_page_port, state, state);
	PUT(r, struct shift_ft_page_port, down_count, (uint64_t)(10 + i));
	PUT(r, struct shift_ft_page_port, backup_index, backup);
	PUT(r, struct shift_ft_page_port, pair_state,
	    backup == SHIFT_FT_NO_PORT ? SHIFT_FT_PAIR_NONE : SHIFT_FT_PAIR_BOTH_UP);
}

/* A page with 3 valid ports (slot 1 empty) and 2 paths, seq @seq. */
static uint8_t *make_page(uint32_t seq)
{
	struct shift_ft_page_hdr *h;
	uint8_t *page, *r;

	page = aligned_alloc(4096, PAGE_LEN);
	if (!page)
		return NULL;
	/* garbage everywhere a sizeof()-based reader would look */
	memset(page, 0xa5, PAGE_LEN);
	memset(page, 0, HDR_SIZE);
	for (int i = 0; i < PORT_MAX; i++)
		memset(port_at(page, i), 0, PORT_STRIDE - 40);
	for (int i = 0; i < PATH_MAX_; i++)
		memset(path_at(page, i), 0, PATH_STRIDE - 24);
	h = (void *)page;
	h->magic = SHIFT_FT_PAGE_MAGIC;
	h->version = SHIFT_FT_PAGE_VERSION + 1;	/* newer, still compatible */
	h->compat_version = SHIFT_FT_PAGE_VERSION;
	h->hdr_size = HDR_SIZE;
	h->seq = seq;
	h->generation = 77;
	h->port_offset = PORT_OFF;
	h->port_entry_size = PORT_STRIDE;
	h->port_max = PORT_MAX;
	h->port_count = 3;
	h->path_offset = PATH_OFF;
	h->path_entry_size = PATH_STRIDE;
	h->path_max = PATH_MAX_;
	h->path_count = 2;
	h->map_size = PAGE_LEN;

	put_port(page, 0, 0x1111, 1, "mlx5_0", SHIFT_FT_PORT_ACTIVE, 2);
	put_port(page, 2, 0x2222, 1, "mlx5_1", SHIFT_FT_PORT_DOWN, 0);
	put_port(page, 3, 0x2222, 2, "mlx5_1", SHIFT_FT_PORT_ACTIVE, SHIFT_FT_NO_PORT);

	r = path_at(page, 0);
	PUT(r, struct shift_ft_page_path, flags, SHIFT_FT_ROW_VALID);
	PUT(r, struct shift_ft_page_path, port_index, 0);
	memcpy(r + offsetof(struct shift_ft_page_path, remote_gid), gid_a, 16);
	PUT(r, struct shift_ft_page_path, state, SHIFT_FT_PATH_UP);
	r = path_at(page, 2);
	PUT(r, struct shift_ft_page_path, flags, SHIFT_FT_ROW_VALID);
	PUT(r, struct shift_ft_page_path, port_index, 0);
	memcpy(r + offsetof(struct shift_ft_page_path, remote_gid), gid_b, 16);
	PUT(r, struct shift_ft_page_path, state, SHIFT_FT_PATH_DOWN);
	return page;
}

static void quiet_env(void)
{
	/* no real device and no log lines on the test's stderr */
	setenv("SHIFTU_HEALTH_DEV", "/nonexistent/shift_ft", 1);
	setenv("SHIFTU_LOG", "off", 1);
}

TEST(health_strides)
{
	struct shiftu_port_health ph;
	uint8_t *page = make_page(4);
	uint8_t st;

	quiet_env();
	ASSERT_NE(NULL, page);
	ASSERT_EQ(0, shiftu_health_attach_mem(page, PAGE_LEN));

	ASSERT_EQ(0, shiftu_health_port(0x1111, 1, &ph));
	EXPECT_EQ(0, ph.port_index);
	EXPECT_EQ(4, ph.seq);
	EXPECT_EQ(77, ph.generation);
	EXPECT_EQ(SHIFT_FT_PORT_ACTIVE, ph.state);
	EXPECT_STREQ("mlx5_0", ph.dev_name);
	EXPECT_EQ(10, ph.down_count);
	EXPECT_EQ(2, ph.backup_index);
	EXPECT_EQ(0x2222, ph.backup_node_guid);
	EXPECT_EQ(1, ph.backup_port_num);
	EXPECT_STREQ("mlx5_1", ph.backup_dev_name);
	EXPECT_EQ(SHIFT_FT_PORT_DOWN, ph.backup_state);

	/* same guid, other port: slot 3, no backup */
	ASSERT_EQ(0, shiftu_health_port(0x2222, 2, &ph));
	EXPECT_EQ(3, ph.port_index);
	EXPECT_EQ(13, ph.down_count);
	EXPECT_EQ(SHIFT_FT_NO_PORT, ph.backup_index);
	EXPECT_EQ(0, ph.backup_node_guid);

	EXPECT_EQ(-ENOENT, shiftu_health_port(0x3333, 1, &ph));

	ASSERT_EQ(0, shiftu_health_path(0, gid_a, &st, NULL));
	EXPECT_EQ(SHIFT_FT_PATH_UP, st);
	ASSERT_EQ(0, shiftu_health_path(0, gid_b, &st, NULL));
	EXPECT_EQ(SHIFT_FT_PATH_DOWN, st);
	EXPECT_EQ(-ENOENT, shiftu_health_path(2, gid_a, &st, NULL));

	/* a freed row is not found */
	PUT(port_at(page, 3), struct shift_ft_page_port, flags, 0);
	EXPECT_EQ(-ENOENT, shiftu_health_port(0x2222, 2, &ph));

	EXPECT_EQ(-EBUSY, shiftu_health_attach_mem(page, PAGE_LEN));
	shiftu_health_detach();
	free(page);
}

TEST(health_moved)
{
	struct shift_ft_page_hdr *h;
	uint8_t *page = make_page(8);
	uint32_t seen = 0;

	quiet_env();
	ASSERT_NE(NULL, page);
	h = (void *)page;
	/* no page: one move (0 -> the private odd word), then quiet */
	EXPECT_TRUE(shiftu_health_moved(&seen));
	EXPECT_FALSE(shiftu_health_moved(&seen));
	EXPECT_FALSE(shiftu_health_moved(&seen));
	/* attaching is a move, whatever the page's seq */
	ASSERT_EQ(0, shiftu_health_attach_mem(page, PAGE_LEN));
	EXPECT_TRUE(shiftu_health_moved(&seen));
	EXPECT_EQ(8, seen);
	EXPECT_FALSE(shiftu_health_moved(&seen));
	__atomic_store_n(&h->seq, 9, __ATOMIC_RELEASE);
	EXPECT_TRUE(shiftu_health_moved(&seen));
	__atomic_store_n(&h->seq, 10, __ATOMIC_RELEASE);
	EXPECT_TRUE(shiftu_health_moved(&seen));
	EXPECT_FALSE(shiftu_health_moved(&seen));
	shiftu_health_detach();
	free(page);
}

struct writer {
	uint8_t *page;
	int delay_ms;
};

/* Finish the write section the test left open, after a delay. */
static void *finish_write(void *arg)
{
	struct writer *w = arg;
	struct shift_ft_page_hdr *h = (void *)w->page;

	usleep(w->delay_ms * 1000);
	PUT(port_at(w->page, 0), struct shift_ft_page_port, state, SHIFT_FT_PORT_DOWN);
	PUT(port_at(w->page, 0), struct shift_ft_page_port, down_count, 99);
	__atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELEASE);
	return NULL;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

TEST(health_seq_odd_retries)
{
	struct writer w = { .delay_ms = 100 };
	struct shiftu_port_health ph;
	struct shift_ft_page_hdr *h;
	uint64_t t0, t1;
	pthread_t th;

	quiet_env();
	w.page = make_page(4);
	ASSERT_NE(NULL, w.page);
	h = (void *)w.page;
	ASSERT_EQ(0, shiftu_health_attach_mem(w.page, PAGE_LEN));
	/* a writer inside: the reader must wait, then see its result */
	h->seq = 5;
	t0 = mono_ms();
	ASSERT_EQ(0, pthread_create(&th, NULL, finish_write, &w));
	ASSERT_EQ(0, shiftu_health_port(0x1111, 1, &ph));
	t1 = mono_ms();
	pthread_join(th, NULL);
	EXPECT_GE(t1 - t0, 90);
	EXPECT_EQ(6, ph.seq);
	EXPECT_EQ(SHIFT_FT_PORT_DOWN, ph.state);
	EXPECT_EQ(99, ph.down_count);
	shiftu_health_detach();
	free(w.page);
}

TEST(health_seq_stuck)
{
	struct shiftu_port_health ph;
	struct shift_ft_page_hdr *h;
	uint8_t *page = make_page(4);
	uint8_t st;

	quiet_env();
	ASSERT_NE(NULL, page);
	h = (void *)page;
	ASSERT_EQ(0, shiftu_health_attach_mem(page, PAGE_LEN));
	h->seq = 7;	/* a writer that never leaves */
	EXPECT_EQ(-ESTALE, shiftu_health_port(0x1111, 1, &ph));
	EXPECT_EQ(-ESTALE, shiftu_health_path(0, gid_a, &st, NULL));
	shiftu_health_detach();
	free(page);
}

TEST(health_refused)
{
	struct shift_ft_page_hdr *h;
	struct shiftu_port_health ph;
	uint8_t *page = make_page(4);

	quiet_env();
	ASSERT_NE(NULL, page);
	h = (void *)page;

	h->compat_version = SHIFT_FT_PAGE_VERSION + 1;
	EXPECT_EQ(-EPROTONOSUPPORT, shiftu_health_attach_mem(page, PAGE_LEN));
	h->compat_version = SHIFT_FT_PAGE_VERSION;

	h->magic = 0x12345678;
	EXPECT_EQ(-EPROTO, shiftu_health_attach_mem(page, PAGE_LEN));
	h->magic = SHIFT_FT_PAGE_MAGIC;

	/* the path array does not fit in what is mapped */
	EXPECT_EQ(-EPROTO, shiftu_health_attach_mem(page, PATH_OFF + PATH_STRIDE));
	/* rows smaller than version 1's */
	h->port_entry_size = 64;
	EXPECT_EQ(-EPROTO, shiftu_health_attach_mem(page, PAGE_LEN));
	h->port_entry_size = PORT_STRIDE;
	EXPECT_EQ(-EPROTO, shiftu_health_attach_mem(page, 40));

	/* nothing attached: the device is tried, absent, so no page */
	EXPECT_EQ(-ENODEV, shiftu_health_port(0x1111, 1, &ph));
	EXPECT_EQ(-ENODEV, shiftu_health_fd());
	EXPECT_EQ(-ENODEV, shiftu_health_open());
	free(page);
}

/*
 * What a QP reads of its primary: its port (slot 0, up) and its path to
 * gid_b, down since 5000 ns.  A path that went down before the QP last came
 * back to its default QP does not count: the probe proved it since.
 */
TEST(vqp_primary_stale_path)
{
	struct shiftu_ctx *s = calloc(1, sizeof(*s));
	struct shiftu_vqp *vq = calloc(1, sizeof(*vq));
	struct shiftu_port_health ph;
	uint8_t *page = make_page(4), path;

	quiet_env();
	ASSERT_TRUE(s && vq && page);
	PUT(path_at(page, 2), struct shift_ft_page_path, last_change_ns, (uint64_t)5000);
	ASSERT_EQ(0, shiftu_health_attach_mem(page, PAGE_LEN));
	s->node_guid = 0x1111;
	vq->sctx = s;
	vq->port_num = 1;
	vq->has_dgid = 1;
	memcpy(vq->dgid, gid_b, 16);

	EXPECT_EQ(1, shiftu_vqp_primary(vq, &ph, &path));
	EXPECT_EQ(SHIFT_FT_PATH_DOWN, path);
	vq->back_ns = 4999;
	EXPECT_EQ(1, shiftu_vqp_primary(vq, &ph, &path));
	vq->back_ns = 5000;
	EXPECT_EQ(0, shiftu_vqp_primary(vq, &ph, &path));
	EXPECT_EQ(SHIFT_FT_PATH_DOWN, path);
	/* down again after that: it counts */
	PUT(path_at(page, 2), struct shift_ft_page_path, last_change_ns, (uint64_t)9000);
	EXPECT_EQ(1, shiftu_vqp_primary(vq, &ph, &path));
	/* down by the QP's own report: its probe tells */
	vq->reported = 1;
	EXPECT_EQ(0, shiftu_vqp_primary(vq, &ph, &path));
	/* the port itself down always counts */
	vq->reported = 0;
	vq->back_ns = ~0ULL;
	PUT(port_at(page, 0), struct shift_ft_page_port, state, SHIFT_FT_PORT_DOWN);
	EXPECT_EQ(1, shiftu_vqp_primary(vq, &ph, &path));
	/* a QP not bound to a port: unknown */
	vq->port_num = 0;
	EXPECT_EQ(-ENOENT, shiftu_vqp_primary(vq, &ph, &path));

	shiftu_health_detach();
	free(page);
	free(vq);
	free(s);
}

/*
 * A QP whose read of the page gave up on a writer that never left (the
 * page mid-write for SEQ_WAIT_NS) is read again by its next post and
 * poll: its seen words and its context's go back to 0, which no
 * published page rests at, and nothing about its port is decided.
 */
TEST(vqp_health_stale_reads_again)
{
	struct shiftu_ctx *s = calloc(1, sizeof(*s));
	struct shiftu_vqp *vq = calloc(1, sizeof(*vq));
	struct shift_ft_page_hdr *h;
	struct shiftu_port_health ph;
	uint8_t *page = make_page(4), path;

	quiet_env();
	ASSERT_TRUE(s && vq && page);
	h = (void *)page;
	ASSERT_EQ(0, shiftu_health_attach_mem(page, PAGE_LEN));
	s->node_guid = 0x1111;
	vq->sctx = s;
	vq->port_num = 1;
	vq->health_seen = vq->health_seen_r = s->health_seen = 8;
	h->seq = 7;	/* a writer that never leaves */
	EXPECT_EQ(-ESTALE, shiftu_vqp_primary(vq, &ph, &path));
	shiftu_vqp_health(vq);
	EXPECT_EQ(0, vq->health_seen);
	EXPECT_EQ(0, vq->health_seen_r);
	EXPECT_EQ(0, s->health_seen);
	EXPECT_EQ(0, vq->down);
	/* a read that answers leaves the words to their owners */
	h->seq = 8;
	vq->health_seen = vq->health_seen_r = s->health_seen = 8;
	shiftu_vqp_health(vq);
	EXPECT_EQ(8, vq->health_seen);
	EXPECT_EQ(8, s->health_seen);
	EXPECT_EQ(0, vq->down);

	shiftu_health_detach();
	free(page);
	free(vq);
	free(s);
}

#define NQP 2000

TEST(qp_registry)
{
	static struct ibv_qp qps[NQP];
	static struct shiftu_qp ent[NQP];
	struct shiftu_qp other = { 0 };
	int i;

	for (i = 0; i < NQP; i++) {
		/* every qp_num four times: four "devices" collide on purpose */
		qps[i].qp_num = i / 4;
		ent[i].app_qp = &qps[i];
		ASSERT_EQ(0, shiftu_qp_register(&ent[i]));
	}
	EXPECT_EQ(NQP, shiftu_qp_registered());
	for (i = 0; i < NQP; i++)
		ASSERT_EQ(&ent[i], shiftu_qp_lookup(&qps[i]));

	other.app_qp = &qps[5];
	EXPECT_EQ(-EEXIST, shiftu_qp_register(&other));
	/* only the registered entry removes its key */
	EXPECT_EQ(-ENOENT, shiftu_qp_unregister(&other));

	for (i = 0; i < NQP; i += 2)
		ASSERT_EQ(0, shiftu_qp_unregister(&ent[i]));
	EXPECT_EQ(NQP / 2, shiftu_qp_registered());
	for (i = 0; i < NQP; i++)
		ASSERT_EQ(i % 2 ? &ent[i] : NULL, shiftu_qp_lookup(&qps[i]));
	EXPECT_EQ(-ENOENT, shiftu_qp_unregister(&ent[0]));

	/* tombstones are reused and do not hide what lies past them */
	for (i = 0; i < NQP; i += 2)
		ASSERT_EQ(0, shiftu_qp_register(&ent[i]));
	for (i = 0; i < NQP; i++)
		ASSERT_EQ(&ent[i], shiftu_qp_lookup(&qps[i]));
	EXPECT_EQ(NULL, shiftu_qp_lookup(NULL));
	shiftu_qp_registry_fini();
	EXPECT_EQ(NULL, shiftu_qp_lookup(&qps[1]));
}

/* The data path's cache agrees with the table whoever holds a slot. */
TEST(qp_registry_cache)
{
	static struct ibv_qp qps[3];
	static struct shiftu_qp ent[3];
	int i;

	/* 7, 7 + SHIFTU_QP_CACHE: one slot; 8: another */
	qps[0].qp_num = 7;
	qps[1].qp_num = 7 + SHIFTU_QP_CACHE;
	qps[2].qp_num = 8;
	for (i = 0; i < 3; i++) {
		ent[i].app_qp = &qps[i];
		ASSERT_EQ(0, shiftu_qp_register(&ent[i]));
	}
	/* the first registered holds the slot; the other is found anyway */
	EXPECT_EQ(&qps[0], shiftu_qp_cache[7].key);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(&ent[i], shiftu_qp_find(&qps[i]));
	/* the holder leaves: its slot is empty, the other still found */
	ASSERT_EQ(0, shiftu_qp_unregister(&ent[0]));
	EXPECT_EQ(NULL, shiftu_qp_cache[7].key);
	EXPECT_EQ(NULL, shiftu_qp_find(&qps[0]));
	EXPECT_EQ(&ent[1], shiftu_qp_find(&qps[1]));
	/* one that is not the holder leaves: the holder keeps its slot */
	ASSERT_EQ(0, shiftu_qp_unregister(&ent[1]));
	EXPECT_EQ(&ent[2], shiftu_qp_find(&qps[2]));
	EXPECT_EQ(&qps[2], shiftu_qp_cache[8].key);
	shiftu_qp_registry_fini();
	EXPECT_EQ(NULL, shiftu_qp_cache[8].key);
	EXPECT_EQ(NULL, shiftu_qp_find(&qps[2]));
}

/*
 * A poster or poller that sits in its window until told to leave it.  A
 * poller's first poll leaves its window and enters it again on the way
 * (a slow path's), and it polls once more after: two polls.
 */
struct sitter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stage;		/* 1: inside, 2: may leave, 3: left */
	bool poll;
};

static void sitter_set(struct sitter *t, int stage)
{
	pthread_mutex_lock(&t->lock);
	t->stage = stage;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void sitter_wait(struct sitter *t, int stage)
{
	pthread_mutex_lock(&t->lock);
	while (t->stage < stage)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

static void *sitter(void *arg)
{
	struct sitter *t = arg;

	if (t->poll) {
		shiftu_window_register();
		shiftu_poll_open();
		shiftu_poll_leave();
		shiftu_poll_reenter();
	} else {
		shiftu_window_enter();
	}
	sitter_set(t, 1);
	sitter_wait(t, 2);
	if (t->poll) {
		shiftu_poll_leave();
		shiftu_poll_leave();	/* twice is once */
		shiftu_poll_open();
		shiftu_poll_close();
	} else {
		shiftu_window_leave();
		shiftu_window_leave();
	}
	sitter_set(t, 3);
	return NULL;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

FIXTURE(quiesce) {};
FIXTURE_VARIANT(quiesce) { bool poll; };
FIXTURE_VARIANT_ADD(quiesce, post) { .poll = false };
FIXTURE_VARIANT_ADD(quiesce, poll) { .poll = true };
FIXTURE_SETUP(quiesce) { quiet_env(); }
FIXTURE_TEARDOWN(quiesce) {}

/*
 * A move waits for a poster or a poller inside its window (posts and
 * polls have one each), up to its bound, and not for one outside it, nor
 * for itself, nor for a thread that has exited; nor, in a child of
 * fork(2), for the parent's other threads; nor, once a last wait gave up
 * on a thread, for that thread while it has not moved.  The poll window counts the
 * polls for the statistics, once each whatever their slow paths did, the
 * exited thread's included, and the one in progress not yet.
 */
TEST_F(quiesce, windows)
{
	struct sitter t = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, variant->poll };
	uint64_t polls, done = variant->poll ? 2 : 0;
	pthread_t th;
	double t0;
	int status;
	pid_t pid;

	shiftu_window_enter();		/* our own window never blocks us */
	ASSERT_TRUE(shiftu_quiesce(0, false));
	polls = shiftu_window_polls();
	ASSERT_EQ(0, pthread_create(&th, NULL, sitter, &t));
	sitter_wait(&t, 1);
	EXPECT_FALSE(shiftu_quiesce(50 * 1000 * 1000, false));
	EXPECT_EQ(polls, shiftu_window_polls());
	/* given up on by a last wait, it is given up on at once after */
	EXPECT_FALSE(shiftu_quiesce(50 * 1000 * 1000, true));
	t0 = now_s();
	EXPECT_FALSE(shiftu_quiesce(2000 * 1000 * 1000ULL, false));
	EXPECT_GT(0.5, now_s() - t0);
	/* a child has only the forking thread: nothing to wait for there */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(shiftu_quiesce(0, false) ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	sitter_set(&t, 2);
	sitter_wait(&t, 3);
	EXPECT_TRUE(shiftu_quiesce(50 * 1000 * 1000, false));
	EXPECT_EQ(polls + done, shiftu_window_polls());
	ASSERT_EQ(0, pthread_join(th, NULL));
	/* its words went with it, its polls stay counted */
	EXPECT_TRUE(shiftu_quiesce(0, false));
	EXPECT_EQ(polls + done, shiftu_window_polls());
	shiftu_window_leave();
	EXPECT_EQ(0, shiftu_window.seq & 1);
}

/* A poster or poller that exits inside its window, 100 ms after it says
 * it is in. */
static void *leaver(void *arg)
{
	struct sitter *t = arg;

	if (t->poll) {
		shiftu_window_register();
		shiftu_poll_open();
	} else {
		shiftu_window_enter();
	}
	sitter_set(t, 1);
	usleep(100 * 1000);
	return NULL;
}

/*
 * A thread that exits while a move waits for its window ends the wait:
 * its words go with it, and the wait does not read them after.
 */
TEST_F(quiesce, exit_inside)
{
	struct sitter t = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, variant->poll };
	pthread_t th;
	double t0;

	ASSERT_EQ(0, pthread_create(&th, NULL, leaver, &t));
	sitter_wait(&t, 1);
	t0 = now_s();
	EXPECT_TRUE(shiftu_quiesce(2000 * 1000 * 1000ULL, false));
	EXPECT_GT(1.0, now_s() - t0);
	ASSERT_EQ(0, pthread_join(th, NULL));
}

/*
 * What a direct batch counts (wrapi.c): the requests between an index and
 * Soft-RoCE's producer index, modulo the ring, and the two-sided among
 * them, read from the provider's own entries.
 */
TEST(provq_since)
{
	static const uint32_t ops[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND,
		IBV_WR_RDMA_READ, IBV_WR_SEND_WITH_IMM, IBV_WR_ATOMIC_FETCH_AND_ADD,
	};
	const uint32_t slots = 8, log2 = 9;	/* 512-byte slots hold a wqe */
	struct rxe_queue_buf *q;
	uint32_t i, n, two;
	bool maybe;

	ASSERT_LE(sizeof(struct rxe_send_wqe), 1U << log2);
	q = calloc(1, sizeof(*q) + (slots << log2));
	ASSERT_NE(NULL, q);
	q->log2_elem_size = log2;
	q->index_mask = slots - 1;
	/* six requests from slot 5 on: they wrap to slots 0..2 */
	for (i = 0; i < 6; i++)
		((struct rxe_send_wqe *)(q->data + (((5 + i) & 7) << log2)))->wr.opcode = ops[i];
	q->producer_index = (5 + 6) & 7;
	n = shiftu_provq_since(q, 5, SHIFTU_TWO_SIDED, &two, &maybe);
	EXPECT_EQ(6U, n);
	EXPECT_EQ(3U, two);	/* WRITE_WITH_IMM, SEND, SEND_WITH_IMM */
	EXPECT_FALSE(maybe);
	/* one id in the library's range among them: said (wrapi.c) */
	((struct rxe_send_wqe *)(q->data + (1 << log2)))->wr.wr_id = MARKER_WR_ID;
	n = shiftu_provq_since(q, 5, SHIFTU_TWO_SIDED, &two, &maybe);
	EXPECT_EQ(6U, n);
	EXPECT_TRUE(maybe);
	/* nothing published since: none */
	n = shiftu_provq_since(q, q->producer_index, SHIFTU_TWO_SIDED, &two, &maybe);
	EXPECT_EQ(0U, n);
	EXPECT_EQ(0U, two);
	free(q);
}

/*
 * The library's own work-request ids, each told for what it is, and an
 * application's never taken for one (wrid.h): every poll and drain path
 * asks this one function.
 */
TEST(wrid_kinds)
{
	static const uint64_t app[] = {
		0, 1, 2, 0x54440002, 0xffffffffULL, 0x00007f0012345678ULL,
		0xffffffffffffffffULL, 0x5348494654000000ULL, 0x5348494600000000ULL,
		0x5348494654450000ULL,
	};
	unsigned int i;
	uint16_t g;

	EXPECT_EQ(SHIFTU_WRID_MARKER, shiftu_wrid_kind(MARKER_WR_ID));
	EXPECT_EQ(SHIFTU_WRID_RMARKER, shiftu_wrid_kind(RMARKER_WR_ID));
	EXPECT_EQ(SHIFTU_WRID_PROBE, shiftu_wrid_kind(PROBE_WR_ID));
	EXPECT_EQ(SHIFTU_WRID_CTRL_SEND, shiftu_wrid_kind(SHIFTU_CTRL_SEND_ID));
	EXPECT_EQ(SHIFTU_WRID_CTRL_RECV, shiftu_wrid_kind(SHIFTU_CTRL_RECV_ID));
	EXPECT_EQ(SHIFTU_WRID_BELL, shiftu_wrid_kind(SHIFTU_BELL_ID));
	/* a control receive on a default QP, at every generation */
	for (g = 0;; g++) {
		EXPECT_EQ(SHIFTU_WRID_CTRL_DEF, shiftu_wrid_kind(SHIFTU_CTRL_DEF_ID(g)));
		EXPECT_EQ(g, shiftu_ctrl_def_gen(SHIFTU_CTRL_DEF_ID(g)));
		if (g == 0xffff)
			break;
	}
	for (i = 0; i < SHIFTU_ARRAY_SIZE(app); i++)
		EXPECT_EQ(SHIFTU_WRID_APP, shiftu_wrid_kind(app[i]));
}

TEST(qp_state_public)
{
	struct shiftu_qp_info info = { .size = sizeof(info) };
	struct ibv_qp qp = { .qp_num = 42 };
	struct shiftu_qp q = { .app_qp = &qp };

	quiet_env();
	EXPECT_EQ(-ENOENT, shiftu_qp_state(&qp, &info));
	ASSERT_EQ(0, shiftu_qp_register(&q));
	shiftu_qp_set_send_state(&q, SHIFTU_SEND_WAIT_DRAINED);
	shiftu_qp_set_recv_state(&q, SHIFTU_RECV_FALLBACK);
	shiftu_qp_set_flags(&q, SHIFTU_QP_F_PROTECTED);
	shiftu_qp_count(&q.failovers, 2);
	shiftu_qp_count(&q.replayed_wrs, 17);
	ASSERT_EQ(0, shiftu_qp_state(&qp, &info));
	EXPECT_EQ(sizeof(info), info.size);
	EXPECT_EQ(SHIFTU_SEND_WAIT_DRAINED, info.send_state);
	EXPECT_EQ(SHIFTU_RECV_FALLBACK, info.recv_state);
	EXPECT_EQ(SHIFTU_QP_F_PROTECTED, info.flags);
	EXPECT_EQ(2, info.failovers);
	EXPECT_EQ(17, info.replayed_wrs);
	info.size = SHIFTU_QP_INFO_SIZE_VER0 - 1;
	EXPECT_EQ(-EINVAL, shiftu_qp_state(&qp, &info));
	/* an older caller gets only what it knows */
	info.size = SHIFTU_QP_INFO_SIZE_VER0;
	ASSERT_EQ(0, shiftu_qp_state(&qp, &info));
	EXPECT_EQ(SHIFTU_QP_INFO_SIZE_VER0, info.size);
	ASSERT_EQ(0, shiftu_qp_unregister(&q));
	EXPECT_EQ(-ENOENT, shiftu_qp_state(&qp, &info));
}

TEST(config_parsers)
{
	char dir[PATH_MAX];
	struct shiftu_store s;
	enum shiftu_log_level l;
	uint32_t ms;
	bool b;

	EXPECT_EQ(0, shiftu_parse_store("redis://10.0.0.1:7000", &s));
	EXPECT_EQ(SHIFTU_STORE_REDIS, s.kind);
	EXPECT_STREQ("10.0.0.1", s.host);
	EXPECT_EQ(7000, s.port);
	EXPECT_EQ(0, shiftu_parse_store("redis://store.lab/0", &s));
	EXPECT_STREQ("store.lab", s.host);
	EXPECT_EQ(6379, s.port);
	EXPECT_EQ(0, shiftu_parse_store("redis://[fd00::1]:6380", &s));
	EXPECT_STREQ("fd00::1", s.host);
	EXPECT_EQ(6380, s.port);
	EXPECT_EQ(0, shiftu_parse_store("unix:///run/redis.sock", &s));
	EXPECT_EQ(SHIFTU_STORE_REDIS_UNIX, s.kind);
	EXPECT_STREQ("/run/redis.sock", s.host);
	EXPECT_EQ(0, shiftu_parse_store("none", &s));
	EXPECT_EQ(SHIFTU_STORE_NONE, s.kind);
	EXPECT_EQ(0, shiftu_parse_store("local", &s));
	EXPECT_EQ(SHIFTU_STORE_LOCAL, s.kind);
	EXPECT_EQ(-EINVAL, shiftu_parse_store("redis://", &s));
	EXPECT_EQ(-EINVAL, shiftu_parse_store("redis://h:0", &s));
	EXPECT_EQ(-EINVAL, shiftu_parse_store("redis://h:65536", &s));
	EXPECT_EQ(-EINVAL, shiftu_parse_store("redis://h:x", &s));
	EXPECT_EQ(-EINVAL, shiftu_parse_store("redis://:6379", &s));
	EXPECT_EQ(-EINVAL, shiftu_parse_store("redis://[fd00::1", &s));
	EXPECT_EQ(-EINVAL, shiftu_parse_store("unix:relative", &s));
	EXPECT_EQ(-EINVAL, shiftu_parse_store("http://h", &s));

	EXPECT_EQ(0, shiftu_parse_log_level("debug", &l));
	EXPECT_EQ(SHIFTU_LOG_DEBUG, l);
	EXPECT_EQ(-EINVAL, shiftu_parse_log_level("verbose", &l));
	EXPECT_EQ(-EINVAL, shiftu_parse_log_level("", &l));

	EXPECT_EQ(0, shiftu_parse_probe_ms("250", &ms));
	EXPECT_EQ(250, ms);
	EXPECT_EQ(-EINVAL, shiftu_parse_probe_ms("0", &ms));
	EXPECT_EQ(-EINVAL, shiftu_parse_probe_ms("-5", &ms));
	EXPECT_EQ(-EINVAL, shiftu_parse_probe_ms("10ms", &ms));
	EXPECT_EQ(-EINVAL, shiftu_parse_probe_ms("3600001", &ms));
	EXPECT_EQ(-EINVAL, shiftu_parse_probe_ms("99999999999999999999", &ms));
	EXPECT_EQ(0, shiftu_parse_ms("0", 0, 10000, &ms));
	EXPECT_EQ(0, ms);
	EXPECT_EQ(0, shiftu_parse_ms("10000", 0, 10000, &ms));
	EXPECT_EQ(10000, ms);
	EXPECT_EQ(-EINVAL, shiftu_parse_ms("10001", 0, 10000, &ms));
	EXPECT_EQ(-EINVAL, shiftu_parse_ms(" 5", 0, 10000, &ms));

	EXPECT_EQ(0, shiftu_parse_store_dir("/run/user/1000/shiftu", dir));
	EXPECT_STREQ("/run/user/1000/shiftu", dir);
	EXPECT_EQ(-EINVAL, shiftu_parse_store_dir("", dir));
	EXPECT_EQ(-EINVAL, shiftu_parse_store_dir("shiftu", dir));

	EXPECT_EQ(0, shiftu_parse_bool("1", &b));
	EXPECT_TRUE(b);
	EXPECT_EQ(-EINVAL, shiftu_parse_bool("2", &b));

	EXPECT_EQ(0, shiftu_parse_record("copy", &b));
	EXPECT_TRUE(b);
	EXPECT_EQ(0, shiftu_parse_record("auto", &b));
	EXPECT_FALSE(b);
	EXPECT_EQ(-EINVAL, shiftu_parse_record("provider", &b));
	EXPECT_EQ(-EINVAL, shiftu_parse_record("", &b));
}

/* Credentials in the store URL (storeauth.h): decoded, checked, hidden. */
TEST(store_url_credentials)
{
	struct shiftu_store s;
	char why[128], out[256];

	ASSERT_EQ(0, shiftu_parse_store("redis://shiftu:s3cret@10.0.0.1:7000/0", &s));
	EXPECT_EQ(SHIFTU_STORE_REDIS, s.kind);
	EXPECT_STREQ("10.0.0.1", s.host);
	EXPECT_EQ(7000, s.port);
	EXPECT_TRUE(s.auth.set);
	EXPECT_STREQ("shiftu", s.auth.user);
	EXPECT_STREQ("s3cret", s.auth.pass);
	EXPECT_STREQ("redis://shiftu:***@10.0.0.1:7000/0", s.url);
	EXPECT_EQ(NULL, strstr(s.url, "s3cret"));

	/* %-escapes; a raw '@' and '/' in the password: the last '@' ends it */
	ASSERT_EQ(0, shiftu_parse_store("redis://a%3Ab:p%40ss%25w/d@x@[fd00::1]:6380", &s));
	EXPECT_STREQ("a:b", s.auth.user);
	EXPECT_STREQ("p@ss%w/d@x", s.auth.pass);
	EXPECT_STREQ("fd00::1", s.host);
	EXPECT_EQ(6380, s.port);
	EXPECT_STREQ("redis://a%3Ab:***@[fd00::1]:6380", s.url);

	/* no user: Redis' default user */
	ASSERT_EQ(0, shiftu_parse_store("redis://:pw@h", &s));
	EXPECT_STREQ("default", s.auth.user);
	EXPECT_STREQ("pw", s.auth.pass);
	EXPECT_EQ(6379, s.port);

	/* the Unix socket, with and without */
	ASSERT_EQ(0, shiftu_parse_store("unix://shiftu:pw@/run/redis/redis.sock", &s));
	EXPECT_EQ(SHIFTU_STORE_REDIS_UNIX, s.kind);
	EXPECT_STREQ("/run/redis/redis.sock", s.host);
	EXPECT_STREQ("shiftu", s.auth.user);
	EXPECT_STREQ("pw", s.auth.pass);
	EXPECT_STREQ("unix://shiftu:***@/run/redis/redis.sock", s.url);
	ASSERT_EQ(0, shiftu_parse_store("unix:///run/a@b/redis.sock", &s));
	EXPECT_FALSE(s.auth.set);
	EXPECT_STREQ("/run/a@b/redis.sock", s.host);
	ASSERT_EQ(0, shiftu_parse_store("redis://h:1", &s));
	EXPECT_FALSE(s.auth.set);

	/* refused, each with a reason that names what and never the password */
#define BAD(url, reason) do {						\
	EXPECT_EQ(-EINVAL, shiftu_parse_store_why(url, &s, why, sizeof(why))); \
	EXPECT_NE(NULL, strstr(why, reason)) {				\
		TH_LOG("%s: %s", url, why);				\
	}								\
	EXPECT_EQ(NULL, strstr(why, "hunter2"));			\
} while (0)
	BAD("redis://shiftu@h", "a user without a password");
	BAD("redis://shiftu:@h", "an empty password");
	BAD("redis://@h", "no user and password");
	BAD("redis://u:hunter2%4@h", "bad %-escape in the password");
	BAD("redis://u:hunter2%zz@h", "bad %-escape in the password");
	BAD("redis://u%:hunter2@h", "bad %-escape in the user");
	BAD("redis://u:hunter2%00@h", "%00 in the password");
	BAD("redis://u:hunter2@", "no host");
	BAD("redis://u:hunter2@h:0", "invalid port");
	BAD("redis://u:hunter2@[fd00::1", "unterminated '['");
	BAD("unix://u:hunter2@relative", "not unix:/PATH");
	BAD("http://u:hunter2@h", "not none, local");
#undef BAD
	{
		char url[800];

		memset(url, 0, sizeof(url));
		strcpy(url, "redis://u:");
		memset(url + 10, 'p', 520);
		strcat(url, "@h");
		EXPECT_EQ(-EINVAL, shiftu_parse_store_why(url, &s, why, sizeof(why)));
	}

	/* what log lines show, for URLs that parse and that do not */
	shift_auth_redact("redis://u:hunter2@h:1", out, sizeof(out));
	EXPECT_STREQ("redis://u:***@h:1", out);
	shift_auth_redact("redis://u:hunter2@", out, sizeof(out));
	EXPECT_STREQ("redis://u:***@", out);
	shift_auth_redact("unix://u:hunter2@relative", out, sizeof(out));
	EXPECT_STREQ("unix://u:***@relative", out);
	shift_auth_redact("bogus://u:hunter2@h", out, sizeof(out));
	EXPECT_STREQ("bogus://u:***@h", out);
	shift_auth_redact("redis://h:6379", out, sizeof(out));
	EXPECT_STREQ("redis://h:6379", out);
	shift_auth_redact("unix:/run/redis.sock", out, sizeof(out));
	EXPECT_STREQ("unix:/run/redis.sock", out);
}

/* Write @text into a new file of mode @mode; its path in @path. */
static void cred_file(struct __test_metadata *_metadata, char *path,
		      const char *text, mode_t mode)
{
	int fd;

	strcpy(path, "/tmp/shiftu_cred.XXXXXX");
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)strlen(text), write(fd, text, strlen(text)));
	ASSERT_EQ(0, fchmod(fd, mode));
	close(fd);
}

/* The credentials file: read only when only its owner can read it. */
TEST(store_auth_file)
{
	struct shift_auth a;
	char path[64], why[192];

	cred_file(_metadata, path, "# the store\n\nshiftu:pass word:x\r\n", 0600);
	ASSERT_EQ(0, shift_auth_read_file(path, &a, why, sizeof(why))) {
		TH_LOG("%s", why);
	}
	EXPECT_TRUE(a.set);
	EXPECT_STREQ("shiftu", a.user);
	EXPECT_STREQ("pass word:x", a.pass);	/* literally, up to the line's end */

	/* group or others may read it, or write it: refused, as ssh does */
	ASSERT_EQ(0, chmod(path, 0644));
	EXPECT_EQ(-EPERM, shift_auth_read_file(path, &a, why, sizeof(why)));
	EXPECT_STREQ("refused: mode 0644 lets group or others at it (chmod 600 it)", why);
	EXPECT_FALSE(a.set);
	EXPECT_STREQ("", a.pass);
	ASSERT_EQ(0, chmod(path, 0640));
	EXPECT_EQ(-EPERM, shift_auth_read_file(path, &a, why, sizeof(why)));
	ASSERT_EQ(0, chmod(path, 0602));
	EXPECT_EQ(-EPERM, shift_auth_read_file(path, &a, why, sizeof(why)));
	ASSERT_EQ(0, chmod(path, 0400));
	EXPECT_EQ(0, shift_auth_read_file(path, &a, why, sizeof(why)));

	/* someone else's file, even one only they can read */
	if (geteuid() == 0) {
		ASSERT_EQ(0, chown(path, 65534, 65534));
		EXPECT_EQ(-EPERM, shift_auth_read_file(path, &a, why, sizeof(why)));
		EXPECT_NE(NULL, strstr(why, "owned by uid 65534, not by uid 0"));
	}
	unlink(path);
	EXPECT_EQ(-ENOENT, shift_auth_read_file(path, &a, why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "cannot open it"));
	EXPECT_EQ(-EPERM, shift_auth_read_file("/tmp", &a, why, sizeof(why)));

	/* what it holds */
	cred_file(_metadata, path, "shiftu\n", 0600);
	EXPECT_EQ(-EINVAL, shift_auth_read_file(path, &a, why, sizeof(why)));
	EXPECT_STREQ("line 1: a user without a password (USER:PASSWORD)", why);
	unlink(path);
	cred_file(_metadata, path, "a:b\nc:d\n", 0600);
	EXPECT_EQ(-EINVAL, shift_auth_read_file(path, &a, why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "line 2: a second credentials line"));
	unlink(path);
	cred_file(_metadata, path, "# nothing\n", 0600);
	EXPECT_EQ(-EINVAL, shift_auth_read_file(path, &a, why, sizeof(why)));
	EXPECT_STREQ("no USER:PASSWORD line", why);
	unlink(path);
	cred_file(_metadata, path, ":hunter2\n", 0600);
	EXPECT_EQ(0, shift_auth_read_file(path, &a, why, sizeof(why)));
	EXPECT_STREQ("default", a.user);
	unlink(path);
}

static char *bad_env(const char *name)
{
	if (!strcmp(name, "SHIFTU_LOG"))
		return "loud";
	if (!strcmp(name, "SHIFTU_LOG_TIME"))
		return "always";
	if (!strcmp(name, "SHIFTU_STORE"))
		return "redis://u:hunter2@h:99999";
	if (!strcmp(name, "SHIFTU_DISABLE"))
		return "maybe";
	if (!strcmp(name, "SHIFTU_PROBE_MS"))
		return "fast";
	if (!strcmp(name, "SHIFTU_HEALTH_DEV"))
		return "";
	if (!strcmp(name, "SHIFTU_STORE_DIR"))
		return "relative/dir";
	if (!strcmp(name, "SHIFTU_RECORD"))
		return "always";
	/* the test build's knobs: not even read by this (production) build */
	if (!strcmp(name, "SHIFTU_TEST_TWIN_RESET_MS"))
		return "-1";
	if (!strcmp(name, "SHIFTU_TEST_FAILBACK_DELAY_MS"))
		return "10001";
	if (!strcmp(name, "SHIFTU_TEST_SERVE_DELAY_MS"))
		return "1001";
	if (!strcmp(name, "SHIFTU_TEST_WATCH_DELAY_MS"))
		return "10001";
	if (!strcmp(name, "SHIFTU_TEST_REPLAY_FAIL"))
		return "65537";
	if (!strcmp(name, "SHIFTU_TEST_DRAIN_STALL_MS"))
		return "20001";
	if (!strcmp(name, "SHIFTU_TEST_FOLLOW_DELAY_MS"))
		return "20001";
	if (!strcmp(name, "SHIFTU_TEST_SCOUT_DELAY_MS"))
		return "60001";
	return NULL;
}

TEST(config_bad_values)
{
	char path[] = "/tmp/shiftu_unit.XXXXXX", buf[4096];
	struct shiftu_config cfg;
	int fd, lines = 0;
	ssize_t n;

	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, shiftu_log_setup(SHIFTU_LOG_WARN, path));
	/* every bad value: one line, and the default; the test build's
	 * knobs none (testbuild_only.sh tries them on libshiftu-test.so.0) */
	EXPECT_EQ(8, shiftu_config_from_env(&cfg, bad_env));
	EXPECT_EQ(SHIFTU_LOG_WARN, cfg.log_level);
	EXPECT_FALSE(cfg.log_time);
	EXPECT_EQ(SHIFTU_STORE_LOCAL, cfg.store.kind);
	EXPECT_FALSE(cfg.disabled);
	EXPECT_EQ(SHIFTU_PROBE_MS_DEFAULT, cfg.probe_ms);
	EXPECT_STREQ(SHIFTU_HEALTH_DEV_DEFAULT, cfg.health_dev);
	EXPECT_STREQ("", cfg.store.dir);
	EXPECT_FALSE(cfg.record_copy);

	n = read(fd, buf, sizeof(buf) - 1);
	ASSERT_LT(0, n);
	buf[n] = '\0';
	for (char *p = buf; (p = strchr(p, '\n')); p++)
		lines++;
	EXPECT_EQ(8, lines);
	EXPECT_NE(NULL, strstr(buf, "SHIFTU_LOG=loud"));
	EXPECT_NE(NULL, strstr(buf, "SHIFTU_LOG_TIME=always"));
	/* the reason, and never the password */
	EXPECT_NE(NULL, strstr(buf, "SHIFTU_STORE=redis://u:***@h:99999: invalid value (an invalid port"));
	EXPECT_EQ(NULL, strstr(buf, "hunter2"));
	EXPECT_NE(NULL, strstr(buf, "SHIFTU_DISABLE=maybe"));
	EXPECT_NE(NULL, strstr(buf, "SHIFTU_PROBE_MS=fast"));
	EXPECT_NE(NULL, strstr(buf, "SHIFTU_HEALTH_DEV="));
	EXPECT_NE(NULL, strstr(buf, "SHIFTU_STORE_DIR=relative/dir"));
	EXPECT_NE(NULL, strstr(buf, "SHIFTU_RECORD=always"));
	EXPECT_EQ(NULL, strstr(buf, "SHIFTU_TEST_"));
	EXPECT_EQ(0, strncmp(buf, "libshiftu[", 10));
	EXPECT_NE(NULL, strstr(buf, "]: warn: "));

	/* off means off */
	shiftu_log_set_level(SHIFTU_LOG_OFF);
	shiftu_config_from_env(&cfg, bad_env);
	EXPECT_EQ(0, read(fd, buf, sizeof(buf)));
	close(fd);
	unlink(path);
}

TEST(set_options)
{
	struct shiftu_options o = { .size = sizeof(o) };
	unsigned char big[sizeof(o) + 8] = { 0 };

	quiet_env();
	EXPECT_EQ(-EINVAL, shiftu_set_options(NULL));
	o.size = SHIFTU_OPTIONS_SIZE_VER0 - 4;
	EXPECT_EQ(-EINVAL, shiftu_set_options(&o));
	o.size = sizeof(o);
	o.mask = 1U << 31;
	EXPECT_EQ(-EOPNOTSUPP, shiftu_set_options(&o));
	o.mask = SHIFTU_OPT_PROBE_MS;
	o.probe_ms = 0;
	EXPECT_EQ(-EINVAL, shiftu_set_options(&o));
	o.mask = SHIFTU_OPT_STORE_URL;
	o.store_url = "redis://";
	EXPECT_EQ(-EINVAL, shiftu_set_options(&o));

	/* a newer caller's struct: accepted only with a zero tail */
	memcpy(big, &o, sizeof(o));
	((struct shiftu_options *)big)->size = sizeof(big);
	((struct shiftu_options *)big)->mask = 0;
	EXPECT_EQ(0, shiftu_set_options((void *)big));
	big[sizeof(o) + 3] = 1;
	EXPECT_EQ(-E2BIG, shiftu_set_options((void *)big));

	o.mask = SHIFTU_OPT_PROBE_MS | SHIFTU_OPT_BACKUP | SHIFTU_OPT_STORE_URL;
	o.probe_ms = 500;
	o.backup = SHIFTU_BACKUP_OFF;
	o.store_url = "redis://10.1.1.1";
	ASSERT_EQ(0, shiftu_set_options(&o));
	EXPECT_EQ(500, shiftu_config()->probe_ms);
	EXPECT_TRUE(shiftu_config()->disabled);
	EXPECT_EQ(SHIFTU_STORE_REDIS, shiftu_config()->store.kind);

	shiftu_config_start();
	o.probe_ms = 600;
	EXPECT_EQ(-EBUSY, shiftu_set_options(&o));
	EXPECT_EQ(500, shiftu_config()->probe_ms);
}

TEST(version_and_stats)
{
	struct shiftu_stats st = { .size = sizeof(st) };

	quiet_env();
	EXPECT_NE(NULL, shiftu_version());
	EXPECT_NE(0, strlen(shiftu_version()));
	ASSERT_EQ(0, shiftu_stats(&st));
	EXPECT_EQ(sizeof(st), st.size);
	EXPECT_EQ(0, st.qps);
	EXPECT_EQ(0, st.failovers);
	EXPECT_EQ(0, st.flags & SHIFTU_STATS_F_HEALTH_PAGE);
	st.size = 8;
	EXPECT_EQ(-EINVAL, shiftu_stats(&st));
}

/* ---- the library's threads leave the application's signals alone ---- */

static pthread_t usr1_on;
static volatile sig_atomic_t usr1_runs;
static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lib_cond = PTHREAD_COND_INITIALIZER;
static int lib_stage;		/* 1: the thread runs, 2: it may end */
static sigset_t lib_mask;

static void on_usr1(int sig)
{
	(void)sig;
	usr1_on = pthread_self();
	usr1_runs++;
}

static void *lib_thread(void *arg)
{
	(void)arg;
	pthread_sigmask(SIG_BLOCK, NULL, &lib_mask);
	pthread_mutex_lock(&lib_lock);
	lib_stage = 1;
	pthread_cond_broadcast(&lib_cond);
	while (lib_stage != 2)
		pthread_cond_wait(&lib_cond, &lib_lock);
	pthread_mutex_unlock(&lib_lock);
	return NULL;
}

/*
 * A signal sent to the process while every application thread blocks it
 * stays pending for them: were a library thread to leave it unblocked,
 * the kernel would deliver it there, and the handler would run on it.
 */
TEST(thread_signals)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigset_t usr1, before, after, pending;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pthread_sigmask(SIG_BLOCK, NULL, &before));
	ASSERT_EQ(0, shiftu_thread_start(lib_thread, NULL));
	/* the caller's mask is its own again */
	ASSERT_EQ(0, pthread_sigmask(SIG_BLOCK, NULL, &after));
	EXPECT_EQ(0, sigismember(&after, SIGUSR1));
	EXPECT_EQ(0, sigismember(&after, SIGINT));
	EXPECT_EQ(0, sigismember(&after, SIGTERM));
	/* from now on, the application's only thread blocks it */
	ASSERT_EQ(0, pthread_sigmask(SIG_BLOCK, &usr1, NULL));
	pthread_mutex_lock(&lib_lock);
	while (lib_stage != 1)
		pthread_cond_wait(&lib_cond, &lib_lock);
	pthread_mutex_unlock(&lib_lock);

	EXPECT_EQ(1, sigismember(&lib_mask, SIGUSR1));
	EXPECT_EQ(1, sigismember(&lib_mask, SIGINT));
	EXPECT_EQ(1, sigismember(&lib_mask, SIGALRM));
	EXPECT_EQ(1, sigismember(&lib_mask, SIGCHLD));
	EXPECT_EQ(0, sigismember(&lib_mask, SIGSEGV));
	EXPECT_EQ(0, sigismember(&lib_mask, SIGBUS));

	ASSERT_EQ(0, kill(getpid(), SIGUSR1));
	usleep(100 * 1000);
	EXPECT_EQ(0, usr1_runs);
	ASSERT_EQ(0, sigpending(&pending));
	EXPECT_EQ(1, sigismember(&pending, SIGUSR1));
	/* unblocked, it is delivered to this thread, before the call returns */
	ASSERT_EQ(0, pthread_sigmask(SIG_SETMASK, &before, NULL));
	EXPECT_EQ(1, usr1_runs);
	EXPECT_TRUE(pthread_equal(usr1_on, pthread_self()));

	pthread_mutex_lock(&lib_lock);
	lib_stage = 2;
	pthread_cond_broadcast(&lib_cond);
	pthread_mutex_unlock(&lib_lock);
}

/* The open descriptors of this process that name @ino. */
static int fds_of(ino_t ino)
{
	char path[64];
	struct stat st;
	int fd, n = 0;

	for (fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (!stat(path, &st) && st.st_ino == ino)
			n++;
	}
	return n;
}

/*
 * A region registered from a dma-buf keeps the dma-buf open for its twin
 * (NCCL closes its fd as soon as the MR is registered), with the offset,
 * until the MR goes or a rereg gives it the process's memory instead.
 * The lab cannot register a dma-buf on Soft-RoCE (dmabuf.sh skips): this
 * is what the host can check, on a memfd standing for the dma-buf.
 */
TEST(dmabuf_record)
{
	struct ibv_mr mr = { .lkey = 0x1234, .rkey = 0x1234 }, mr2 = mr;
	struct shiftu_mr *rec;
	struct stat st;
	int fd;

	setenv("SHIFTU_LOG", "off", 1);
	setenv("SHIFTU_HEALTH_DEV", "/nonexistent/shift_ft", 1);
	fd = memfd_create("dmabuf", MFD_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 1 << 16));
	ASSERT_EQ(0, fstat(fd, &st));
	shiftu_shadow_dmabuf_mr(&mr, 4096, 8192, 0x10000, fd, IBV_ACCESS_LOCAL_WRITE);
	close(fd);
	EXPECT_EQ(1, fds_of(st.st_ino));	/* the library's */
	shiftu_shadow_mr_gone(&mr);
	EXPECT_EQ(0, fds_of(st.st_ino));

	/* a rereg onto the process's memory lets the dma-buf go */
	fd = memfd_create("dmabuf2", MFD_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fstat(fd, &st));
	shiftu_shadow_dmabuf_mr(&mr2, 4096, 4096, 0, fd, 0);
	close(fd);
	EXPECT_EQ(1, fds_of(st.st_ino));
	shiftu_shadow_mr_rereg(&mr2, &rec);
	ASSERT_NE(NULL, rec);
	EXPECT_LE(0, rec->dmabuf_fd);
	EXPECT_EQ(4096, rec->dmabuf_offset);
	EXPECT_EQ(4096, rec->length);
	shiftu_shadow_mr_rereg_done(rec, 0, IBV_REREG_MR_CHANGE_TRANSLATION, &mr2, 64, 0);
	EXPECT_EQ(0, fds_of(st.st_ino));
	shiftu_shadow_mr_gone(&mr2);

	/* a registration the library cannot keep the dma-buf of: unprotected, no leak */
	shiftu_shadow_dmabuf_mr(&mr, 0, 4096, 0, -1, 0);
	shiftu_shadow_mr_rereg(&mr, &rec);
	EXPECT_EQ(NULL, rec);
}

TEST_HARNESS_MAIN
