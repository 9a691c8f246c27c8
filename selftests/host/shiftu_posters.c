// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_posters: threads posting to one QP at once leave the library's
 * counts of its requests exact, or the QP given up: never counts two
 * threads wrote at once (posters.h).
 *
 * The library's own ibv_post_send and ibv_post_recv (post.c) drive a
 * fake QP whose provider post counts what it takes with an atomic add, from
 * several threads on the build host's cores, with no lock between them, as
 * the verbs allow.  At the end the library's counts (sq.head, sent2,
 * rq.head), which a failover places the provider's rings and numbers the
 * handshake with, must equal what the provider took; the only other
 * outcome allowed is the QP left unprotected (Dead, not protected), whose
 * counts nobody reads.  Threads that take turns under a mutex hand the
 * queue over and keep the QP protected.  Before posters.h (d440094) the
 * counts came short: plain increments from two cores lose some.  Each
 * TEST runs in its own process (kselftest_harness forks).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "interpose.h"
#include "qp.h"

/* built against the library before posters.h too, to show it fail */
#if __has_include("posters.h")
#include "posters.h"
#include "quiesce.h"
#endif

#include "kselftest_harness.h"

#define THREADS		2
#define POSTS		200000		/* per thread and round */
/* rounds of the concurrent runs: threads that did not overlap in one
 * (the other core busy) may in the next */
#define ROUNDS		20

static uint64_t taken, taken2, taken_r;

/* a provider's post takes a moment: long enough for posts to overlap */
static void provider_work(void)
{
	volatile int i;

	for (i = 0; i < 2; i++)
		;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp, (void)bad;
	provider_work();
	for (; wr; wr = wr->next) {
		__atomic_fetch_add(&taken, 1, __ATOMIC_RELAXED);
		if (wr->opcode == IBV_WR_SEND)
			__atomic_fetch_add(&taken2, 1, __ATOMIC_RELAXED);
	}
	return 0;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp, (void)bad;
	provider_work();
	for (; wr; wr = wr->next)
		__atomic_fetch_add(&taken_r, 1, __ATOMIC_RELAXED);
	return 0;
}

/* the application's verbs reach the library's data path, as on a device
 * the library opened; the provider's are the fakes above */
static struct ibv_context fake_ctx = {
	.ops = { .post_send = shiftu_post_send, .post_recv = shiftu_post_recv },
};
static struct ibv_qp app_qp = { .context = &fake_ctx, .qp_num = 0x123 };
static struct shiftu_ctx sctx = { .dev_name = "rxe0" };
static struct shiftu_vqp *vq;

/* A protected QP at rest on its default QP, counting into the provider's
 * rings (the Soft-RoCE way), registered so that the data verbs find it. */
static struct shiftu_vqp *vq_new(void)
{
	struct shiftu_vqp *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	pthread_mutex_init(&v->fo_lock, NULL);
	pthread_mutex_init(&v->lock, NULL);
	v->sctx = &sctx;
	v->reg.app_qp = &app_qp;
	v->reg.flags = SHIFTU_QP_F_PROTECTED;
	v->post_send = fake_post_send;
	v->post_recv = fake_post_recv;
	v->rings = SHIFTU_RINGS_PROVIDER;
	v->state = SHIFTU_SEND_DEFAULT;
#ifdef SHIFTU_POSTER_NONE
	v->poster = v->poster_r = SHIFTU_POSTER_NONE;
#endif
	if (shiftu_qp_register(&v->reg)) {
		free(v);
		return NULL;
	}
	return v;
}

static pthread_mutex_t turn = PTHREAD_MUTEX_INITIALIZER;
static bool in_turn;
/* the threads of a run start together */
static pthread_barrier_t start;

/*
 * Each post is a single WRITE, a single SEND (numbered for the handshake)
 * or, one in eight, a chain of a WRITE and a SEND (counted out of line);
 * or a receive, a chain of two one in eight.
 */
static void *sender(void *arg)
{
	struct ibv_send_wr w[2], *bad;
	int i;

	(void)arg;
	pthread_barrier_wait(&start);
	for (i = 0; i < POSTS; i++) {
		memset(w, 0, sizeof(w));
		w[0].opcode = i & 1 ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
		if (!(i & 7)) {
			w[0].opcode = IBV_WR_RDMA_WRITE;
			w[0].next = &w[1];
			w[1].opcode = IBV_WR_SEND;
		}
		if (in_turn)
			pthread_mutex_lock(&turn);
		if (ibv_post_send(&app_qp, w, &bad))
			abort();
		if (in_turn)
			pthread_mutex_unlock(&turn);
	}
	return NULL;
}

static void *receiver(void *arg)
{
	struct ibv_recv_wr w[2], *bad;
	int i;

	(void)arg;
	pthread_barrier_wait(&start);
	for (i = 0; i < POSTS; i++) {
		memset(w, 0, sizeof(w));
		if (!(i & 7))
			w[0].next = &w[1];
		if (in_turn)
			pthread_mutex_lock(&turn);
		if (ibv_post_recv(&app_qp, w, &bad))
			abort();
		if (in_turn)
			pthread_mutex_unlock(&turn);
	}
	return NULL;
}

static void run(void *(*fn)(void *), int n)
{
	pthread_t t[THREADS * 2];
	int i;

	pthread_barrier_init(&start, NULL, n);
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, fn, NULL))
			abort();
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

/* the QP was given up: unprotected, and it never fails over */
static bool given_up(void)
{
	return vq->state == SHIFTU_SEND_DEAD && !(vq->reg.flags & SHIFTU_QP_F_PROTECTED);
}

FIXTURE(qp) {
	int unused;
};

FIXTURE_SETUP(qp)
{
	setenv("SHIFTU_LOG", "info", 1);
	vq = vq_new();
	ASSERT_NE(NULL, vq);
	taken = taken2 = taken_r = 0;
}

FIXTURE_TEARDOWN(qp)
{
}

/* Two threads send at once: exact counts, or the QP given up. */
TEST_F(qp, concurrent_sends)
{
	int r;

	for (r = 0; r < ROUNDS; r++)
		run(sender, THREADS);
	TH_LOG("provider took %llu sends (%llu two-sided); library counted %llu (%llu); %s",
	       (unsigned long long)taken, (unsigned long long)taken2,
	       (unsigned long long)vq->sq.head, (unsigned long long)vq->sent2,
	       given_up() ? "given up" : "protected");
#ifdef SHIFTU_POSTER_NONE
	TH_LOG("%llu changes of poster", (unsigned long long)vq->poster_changes);
#endif
	if (given_up())
		return;
	EXPECT_EQ(taken, vq->sq.head);
	EXPECT_EQ(taken2, vq->sent2);
	EXPECT_EQ(SHIFTU_SEND_DEFAULT, vq->state);
}

/* Two threads post receives at once, as two sending: the same. */
TEST_F(qp, concurrent_recvs)
{
	int r;

	for (r = 0; r < ROUNDS; r++)
		run(receiver, THREADS);
	TH_LOG("provider took %llu receives; library counted %llu; %s",
	       (unsigned long long)taken_r, (unsigned long long)vq->rq.head,
	       given_up() ? "given up" : "protected");
#ifdef SHIFTU_POSTER_NONE
	TH_LOG("%llu changes of poster", (unsigned long long)vq->poster_changes);
#endif
	if (given_up())
		return;
	EXPECT_EQ(taken_r, vq->rq.head);
}

/* Senders and receivers at once: each queue has its own poster. */
TEST_F(qp, sends_and_recvs)
{
	pthread_t s, r;

	pthread_barrier_init(&start, NULL, 2);
	ASSERT_EQ(0, pthread_create(&s, NULL, sender, NULL));
	ASSERT_EQ(0, pthread_create(&r, NULL, receiver, NULL));
	pthread_join(s, NULL);
	pthread_join(r, NULL);
	EXPECT_FALSE(given_up());
	EXPECT_EQ(taken, vq->sq.head);
	EXPECT_EQ(taken2, vq->sent2);
	EXPECT_EQ(taken_r, vq->rq.head);
#ifdef SHIFTU_POSTER_NONE
	/* one thread per queue: each took its queue once, from no one */
	EXPECT_EQ(0, vq->poster_changes);
#endif
}

/*
 * Threads that take turns under the application's mutex (a pool, a
 * proxy): a hand-over each time, never taken for an overlap: the QP stays
 * protected, its counts exact.  Without membarrier(2) the library gives
 * the QP up at the first hand-over instead, as it says.
 */
TEST_F(qp, mutex_handover)
{
	in_turn = true;
	run(sender, THREADS);
	run(receiver, THREADS);
#ifdef SHIFTU_POSTER_NONE
	if (!shiftu_quiesce_barrier()) {
		EXPECT_TRUE(given_up());
		SKIP(return, "no membarrier(2) here: the QP is given up, as documented");
	}
	TH_LOG("%llu changes of poster", (unsigned long long)vq->poster_changes);
	EXPECT_LT(0, vq->poster_changes);
#endif
	EXPECT_FALSE(given_up());
	EXPECT_EQ(taken, vq->sq.head);
	EXPECT_EQ(taken2, vq->sent2);
	EXPECT_EQ(taken_r, vq->rq.head);
}

#ifdef SHIFTU_POSTER_NONE
/* Tags: unique among the live threads, never 0 or NONE, given back. */
TEST(tags)
{
	static uint8_t seen[65536];
	uint64_t t, first;
	uint32_t i, n = 0;

	/* this process's threads took none yet (each TEST forks) */
	first = shiftu_poster_tag_get();
	ASSERT_NE(0, first);
	shiftu_poster_tag_put(first);
	while ((t = shiftu_poster_tag_get())) {
		i = (uint32_t)(t >> SHIFTU_POSTER_SHIFT);
		ASSERT_EQ(0, t & ((1ULL << SHIFTU_POSTER_SHIFT) - 1));
		ASSERT_NE(0, i);
		ASSERT_NE(SHIFTU_POSTER_NONE, i);
		ASSERT_EQ(0, seen[i]);
		seen[i] = 1;
		n++;
	}
	EXPECT_EQ(SHIFTU_POSTER_NONE - 1, n);
	/* one given back is the next one out */
	shiftu_poster_tag_put(5ULL << SHIFTU_POSTER_SHIFT);
	EXPECT_EQ(5ULL << SHIFTU_POSTER_SHIFT, shiftu_poster_tag_get());
	EXPECT_EQ(0, shiftu_poster_tag_get());
	/* a fork's child keeps only its own */
	shiftu_poster_tags_fork_child(7ULL << SHIFTU_POSTER_SHIFT);
	for (n = 0; (t = shiftu_poster_tag_get()); n++)
		ASSERT_NE(7ULL << SHIFTU_POSTER_SHIFT, t);
	EXPECT_EQ(SHIFTU_POSTER_NONE - 2, n);
}
#endif

TEST_HARNESS_MAIN
