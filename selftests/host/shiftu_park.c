// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_park: a peer's control message that a poll takes beyond its
 * caller's batch (SHIFTU_HS_BATCH) waits in its CQ's park (cqpark.c) and
 * is handed to the handshake later, none lost, in the order the CQ gave
 * them, even when handing one over starts a move that polls and parks
 * more, or unparks again; a QP that goes takes its parked messages with
 * it.  And a poll of a twin CQ that completes the fences of several QPs
 * at once lets each of them release its held requests
 * (shiftu_cq_fences(), cqtwin.c).
 *
 * The handshake is not run: shiftu_hs_message() and shiftu_try_drain() are
 * wrapped (-Wl,--wrap) to record what reaches them.  Each TEST runs in its
 * own process.
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

/* the QPs told to release their held requests, in order */
static const struct shiftu_vqp *drained[8];
static unsigned int n_drained;

void __real_shiftu_hs_message(const struct shiftu_hs_msg *m);
void __real_shiftu_try_drain(struct shiftu_vqp *vq);

void __wrap_shiftu_try_drain(struct shiftu_vqp *vq)
{
	if (n_drained < SHIFTU_ARRAY_SIZE(drained))
		drained[n_drained++] = vq;
}

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
	shiftu_hs_deliver(msgs, n);
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
	shiftu_hs_deliver(msgs, n);
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

/*
 * Two QPs of one CQ wait for their fences on their twins, a third has not
 * posted its fence yet: one poll of the twin CQ takes a send completion of
 * each.  Both waiting ones are told (the poll used to name only the last
 * one it saw, and the other's held requests stayed held for good, its
 * fence done: ib_write_bw -q 16 left 10 of 16 QPs on their twins); the
 * third is not.
 */
TEST(fences_of_several_qps)
{
	struct ibv_qp twins[3] = { { .qp_num = 33 }, { .qp_num = 34 }, { .qp_num = 35 } };
	struct ibv_qp app3 = { .qp_num = 19 };
	struct shiftu_vqp vq3 = { 0 };
	struct shiftu_vqp *v[3] = { &vqs[0], &vqs[1], &vq3 };
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	struct ibv_wc wc[6] = { 0 };
	int i, k, n = 0;

	setup();
	vq3.reg.app_qp = &app3;
	vq3.sctx = &ctx;
	for (i = 0; i < 3; i++) {
		v[i]->bak_qp = &twins[i];
		v[i]->state = i < 2 ? SHIFTU_SEND_WAIT_DRAINED : SHIFTU_SEND_WAIT_SIGNALED;
		cq.twins[cq.n_twins++] = v[i];
	}
	/* QP 0's fence, QP 1's last two, QP 2's last one */
	for (i = 0; i < 4; i++) {
		wc[i].wr_id = i;
		wc[i].opcode = IBV_WC_RDMA_WRITE;
		wc[i].qp_num = twins[i ? (i + 1) / 2 : 0].qp_num;
	}
	pthread_mutex_lock(&cq.lock);
	k = shiftu_twin_take(&cq, wc, 4, msgs, &n);
	pthread_mutex_unlock(&cq.lock);
	EXPECT_EQ(4, k);
	EXPECT_EQ(0, n);
	/* renamed to the application's QPs, counted on each */
	EXPECT_EQ(17U, wc[0].qp_num);
	EXPECT_EQ(19U, wc[3].qp_num);
	EXPECT_EQ(1U, vqs[0].twin_done);
	EXPECT_EQ(2U, vqs[1].twin_done);
	EXPECT_EQ(1U, vq3.twin_done);
	shiftu_cq_fences(&cq);
	ASSERT_EQ(2U, n_drained);
	EXPECT_TRUE(drained[0] == &vqs[0]);
	EXPECT_TRUE(drained[1] == &vqs[1]);
	/* once: the next poll that takes nothing of theirs looks at none */
	shiftu_cq_fences(&cq);
	EXPECT_EQ(2U, n_drained);
}

TEST_HARNESS_MAIN
