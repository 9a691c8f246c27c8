// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_srq: the accounting of a QP's receives on an SRQ at a move
 * (srq.c) tells the receives outstanding, the one the NIC took and flushed
 * (a message cut in the middle), and refuses what does not add up, across
 * the ring's wrap; emptying the SRQ leaves nothing to consume twice.
 *
 * The SRQ's ring is a fake one in the format of <rdma/rdma_user_rxe.h>
 * (Soft-RoCE's, which the library reads in the lab), filled as the kernel
 * would have left it: a consumer index past what it took, a producer index
 * past what was posted.  Each TEST runs in its own process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_user_rxe.h>

#include "handshake.h"
#include "interpose.h"
#include "srq.h"

#include "kselftest_harness.h"

#define SLOTS	8		/* the ring's: index_mask 7 */
#define ELEM	64		/* a receive with one sge fits */

struct fake {
	struct rxe_queue_buf *q;
	struct shiftu_srq r;
	struct shiftu_vqp vq;
	struct ibv_qp qp;
	struct shiftu_ctx ctx;
};

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->q = calloc(1, sizeof(*f->q) + SLOTS * ELEM);
	f->q->index_mask = SLOTS - 1;
	f->q->log2_elem_size = 6;
	f->r.ring = f->q;
	f->vq.srq = &f->r;
	f->qp.qp_num = 17;
	f->vq.reg.app_qp = &f->qp;
	f->vq.sctx = &f->ctx;
}

static struct rxe_recv_wqe *at(struct fake *f, uint32_t i)
{
	return (void *)(f->q->data + (size_t)(i & (SLOTS - 1)) * ELEM);
}

/*
 * The ring after @posted receives from index @start (wr_ids 100, 101, ...),
 * @taken of them taken by the NIC; the QP counted @done complete.
 */
static void fill(struct fake *f, uint32_t start, uint32_t posted, uint32_t taken, uint64_t done)
{
	uint32_t i;

	for (i = 0; i < posted; i++)
		at(f, start + i)->wr_id = 100 + i;
	f->q->consumer_index = (start + taken) & (SLOTS - 1);
	f->q->producer_index = (start + posted) & (SLOTS - 1);
	f->vq.rq.head = 1000 + posted;
	f->vq.consumed = 1000 + done;
}

static struct ibv_wc flushed[4];

TEST(none_taken)
{
	struct fake f;
	uint64_t n_r;
	uint32_t t;

	fake_init(&f);
	/* 5 posted, 2 consumed and completed: 3 outstanding, all in the SRQ */
	fill(&f, 0, 5, 2, 2);
	ASSERT_EQ(0, shiftu_srq_outstanding(&f.vq, false, flushed, sizeof(flushed[0]), 0, -1,
					    &n_r, &t));
	EXPECT_EQ(3, n_r);
	EXPECT_EQ(0, t);
}

TEST(one_taken_one_cq)
{
	struct fake f;
	uint64_t n_r;
	uint32_t t;

	fake_init(&f);
	/* 3 taken, 2 completed: the third was cut, and flushed with the sends */
	fill(&f, 0, 5, 3, 2);
	flushed[0].wr_id = 7;
	flushed[1].wr_id = 102;
	ASSERT_EQ(0, shiftu_srq_outstanding(&f.vq, false, flushed, sizeof(flushed[0]), 2, -1,
					    &n_r, &t));
	EXPECT_EQ(3, n_r);
	EXPECT_EQ(1, t);
	/* not among the flushed: it may yet complete good, nothing is moved */
	flushed[1].wr_id = 8;
	EXPECT_EQ(-EPROTO, shiftu_srq_outstanding(&f.vq, false, flushed, sizeof(flushed[0]), 2,
						  -1, &n_r, &t));
}

TEST(two_cqs)
{
	struct fake f;
	uint64_t n_r;
	uint32_t t;

	fake_init(&f);
	fill(&f, 0, 5, 3, 2);
	EXPECT_EQ(0, shiftu_srq_outstanding(&f.vq, false, flushed, sizeof(flushed[0]), 3, 1,
					    &n_r, &t));
	EXPECT_EQ(1, t);
	/* the receive CQ says none was flushed: the counts disagree */
	EXPECT_EQ(-EPROTO, shiftu_srq_outstanding(&f.vq, false, flushed, sizeof(flushed[0]), 3,
						  0, &n_r, &t));
}

TEST(does_not_add_up)
{
	struct fake f;
	uint64_t n_r;
	uint32_t t;

	fake_init(&f);
	/* two taken and not completed: a receive would be lost */
	fill(&f, 0, 5, 4, 2);
	EXPECT_EQ(-EPROTO, shiftu_srq_outstanding(&f.vq, false, flushed, sizeof(flushed[0]), 0,
						  -1, &n_r, &t));
	/* more in the SRQ than outstanding: one would be consumed twice */
	fill(&f, 0, 5, 1, 2);
	EXPECT_EQ(-EPROTO, shiftu_srq_outstanding(&f.vq, false, flushed, sizeof(flushed[0]), 0,
						  -1, &n_r, &t));
}

TEST(wraps)
{
	struct fake f;
	uint64_t n_r;
	uint32_t t;

	fake_init(&f);
	/* from index 6: 6 posted (6, 7, 0, 1, 2, 3), 4 taken and completed */
	fill(&f, 6, 6, 4, 4);
	ASSERT_EQ(0, shiftu_srq_outstanding(&f.vq, false, flushed, sizeof(flushed[0]), 0, -1,
					    &n_r, &t));
	EXPECT_EQ(2, n_r);
	EXPECT_EQ(0, t);
	/* the QP's counts wrap too (serial arithmetic of 64-bit counts) */
	f.vq.rq.head = 1;
	f.vq.consumed = (uint64_t)-1;
	ASSERT_EQ(0, shiftu_srq_outstanding(&f.vq, false, flushed, sizeof(flushed[0]), 0, -1,
					    &n_r, &t));
	EXPECT_EQ(2, n_r);
}

TEST(control_receive_ahead)
{
	struct fake f;
	uint64_t n_r;
	uint32_t t;

	fake_init(&f);
	/* a failback's control receive, then the application's two */
	fill(&f, 0, 3, 0, 0);
	at(&f, 0)->wr_id = SHIFTU_CTRL_DEF_ID(3);
	f.vq.rq.head = 1002;
	EXPECT_EQ(0, shiftu_srq_outstanding(&f.vq, false, flushed, sizeof(flushed[0]), 0, -1,
					    &n_r, &t));
	EXPECT_EQ(2, n_r);
	EXPECT_EQ(0, t);
	/* one of ours still there, and one of the application's taken: not in order */
	f.vq.rq.head = 1003;
	EXPECT_EQ(-EPROTO, shiftu_srq_outstanding(&f.vq, false, flushed, sizeof(flushed[0]), 0,
						  -1, &n_r, &t));
}

TEST(rewind_empties)
{
	struct fake f;
	uint64_t n_r;
	uint32_t t;

	fake_init(&f);
	fill(&f, 6, 6, 4, 4);
	shiftu_srq_rewind(&f.vq, false);
	EXPECT_EQ(f.q->consumer_index, f.q->producer_index);
	/* nothing left to take: those outstanding are gone from it */
	f.vq.consumed = f.vq.rq.head;
	EXPECT_EQ(0, shiftu_srq_outstanding(&f.vq, false, flushed, sizeof(flushed[0]), 0, -1,
					    &n_r, &t));
	EXPECT_EQ(0, n_r);
}

TEST_HARNESS_MAIN
