// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_park: a peer's control message that a poll takes beyond its
 * caller's batch (SHIFTU_HS_BATCH) waits in its CQ's park (cq.c) and is
 * handed to the handshake later, none lost, in the order the CQ gave them,
 * even when handing one over starts a move that polls and parks more, or
 * unparks again; a QP that goes takes its parked messages with it.
 *
 * The handshake is not run: shiftu_hs_message() is wrapped (-Wl,--wrap)
 * to record what reaches it.  Each TEST runs in its own process.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "cq.h"
#include "handshake.h"
#include "interpose.h"
#include "shadow.h"

#include "kselftest_harness.h"

#define MAX_SEEN	256

static struct shiftu_ctx ctx = { .bak_name = "rxe1" };
static struct shiftu_cq cq = { .sctx = &ctx, .lock = PTHREAD_MUTEX_INITIALIZER };
static struct ibv_qp qps[2] = { { .qp_num = 17 }, { .qp_num = 18 } };
static struct shiftu_vqp vqs[2];

/* what reached the handshake, in order */
static uint32_t seen[MAX_SEEN];
static unsigned int n_seen;
/* on the message with this immediate, the handshake's move polls again */
static uint32_t poll_on = UINT32_MAX;
static unsigned int poll_more;

void __real_shiftu_hs_message(const struct shiftu_hs_msg *m);

static void fake_poll(unsigned int k, uint32_t first);

void __wrap_shiftu_hs_message(const struct shiftu_hs_msg *m)
{
	if (n_seen < MAX_SEEN)
		seen[n_seen++] = m->imm;
	if (m->imm == poll_on) {
		/* a move it starts drains the same CQ, and unparks after */
		fake_poll(poll_more, 1000);
		shiftu_hs_unpark(&cq);
	}
}

/*
 * A poll of the CQ that found @k control messages, immediates @first
 * on: kept as a poller does (c->lock held), then handed over.
 */
static void fake_poll(unsigned int k, uint32_t first)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH], m = { 0 };
	int n = 0;
	unsigned int i;

	pthread_mutex_lock(&cq.lock);
	for (i = 0; i < k; i++) {
		m.vq = &vqs[i % 2];
		m.imm = first + i;
		shiftu_hs_keep(&cq, msgs, &n, &m);
	}
	pthread_mutex_unlock(&cq.lock);
	shiftu_hs_deliver(msgs, n, NULL);
	shiftu_hs_unpark(&cq);
}

static void setup(void)
{
	vqs[0].reg.app_qp = &qps[0];
	vqs[1].reg.app_qp = &qps[1];
	vqs[0].sctx = vqs[1].sctx = &ctx;
}

/* every message once, in the order the CQ gave them */
static int in_order(uint32_t first, unsigned int n)
{
	unsigned int i;

	if (n_seen != n)
		return 0;
	for (i = 0; i < n; i++)
		if (seen[i] != first + i)
			return 0;
	return 1;
}

TEST(within_batch_nothing_parked)
{
	setup();
	fake_poll(SHIFTU_HS_BATCH, 1);
	EXPECT_EQ(1, in_order(1, SHIFTU_HS_BATCH));
	EXPECT_EQ(0U, cq.park_n);
}

TEST(beyond_batch_none_lost)
{
	setup();
	/* one poll of 16, and one of 100 (the park grows) */
	fake_poll(16, 1);
	EXPECT_EQ(1, in_order(1, 16));
	EXPECT_EQ(0U, cq.park_n);
	n_seen = 0;
	fake_poll(100, 1);
	EXPECT_EQ(1, in_order(1, 100));
	EXPECT_EQ(0U, cq.park_n);
	EXPECT_FALSE(cq.unparking);
}

TEST(nothing_overtakes_the_park)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH], m = { .vq = &vqs[0] };
	int n = 0;
	unsigned int i;

	setup();
	/* a poll parks 2 and leaves them (as if its thread had not
	 * unparked yet); the next poll's message has room in its array, yet
	 * goes behind them */
	pthread_mutex_lock(&cq.lock);
	for (i = 0; i < SHIFTU_HS_BATCH + 2; i++) {
		m.imm = 1 + i;
		shiftu_hs_keep(&cq, msgs, &n, &m);
	}
	pthread_mutex_unlock(&cq.lock);
	EXPECT_EQ(SHIFTU_HS_BATCH, n);
	EXPECT_EQ(2U, cq.park_n);
	shiftu_hs_deliver(msgs, n, NULL);
	fake_poll(1, SHIFTU_HS_BATCH + 3);
	EXPECT_EQ(1, in_order(1, SHIFTU_HS_BATCH + 3));
	EXPECT_EQ(0U, cq.park_n);
}

TEST(a_move_that_parks_more)
{
	unsigned int i;

	setup();
	/*
	 * The 12th message starts a move whose drain finds 20 more and
	 * unparks.  The park still holds 17 to 20 then: the 20 go behind
	 * them, and the move's unpark leaves them to the one under way.
	 */
	poll_on = 12;
	poll_more = 20;
	fake_poll(20, 1);
	ASSERT_EQ(40U, n_seen);
	for (i = 0; i < 20; i++)
		EXPECT_EQ(1 + i, seen[i]);
	for (i = 0; i < 20; i++)
		EXPECT_EQ(1000 + i, seen[20 + i]);
	EXPECT_EQ(0U, cq.park_n);
	EXPECT_FALSE(cq.unparking);
}

TEST(a_qp_that_goes)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH], m = { 0 };
	int n = SHIFTU_HS_BATCH;	/* the caller's array is full */
	unsigned int i;

	setup();
	pthread_mutex_lock(&cq.lock);
	for (i = 0; i < 10; i++) {
		m.vq = &vqs[i % 2];
		m.imm = 1 + i;
		shiftu_hs_keep(&cq, msgs, &n, &m);
	}
	EXPECT_EQ(10U, cq.park_n);
	shiftu_hs_park_forget(&cq, &vqs[1]);
	EXPECT_EQ(5U, cq.park_n);
	pthread_mutex_unlock(&cq.lock);
	shiftu_hs_unpark(&cq);
	ASSERT_EQ(5U, n_seen);
	for (i = 0; i < 5; i++)
		EXPECT_EQ(1 + 2 * i, seen[i]);
}

TEST_HARNESS_MAIN
