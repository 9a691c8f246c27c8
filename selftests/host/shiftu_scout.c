// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_scout: the look ahead for the peer's backup keys (scout.c) reads
 * the remote keys a QP's requests name from the provider's send ring
 * (shiftu_provq_rkeys(), provq.c): those of RDMA WRITE, WRITE_WITH_IMM,
 * READ and the atomics, each once, none of a SEND, no zero key, no more
 * than asked for, whichever slots of the ring hold them.
 *
 * The ring is a fake one in the format of <rdma/rdma_user_rxe.h>
 * (Soft-RoCE's, which the library reads in the lab).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_user_rxe.h>

#include "fakering.h"
#include "provq.h"

#include "kselftest_harness.h"

static void put(struct rxe_queue_buf *q, uint32_t i, uint32_t op, uint32_t rkey)
{
	struct rxe_send_wqe *w = at(q, i);

	w->wr.opcode = op;
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		w->wr.wr.atomic.rkey = rkey;
	else
		w->wr.wr.rdma.rkey = rkey;
}

static int has(const uint32_t *k, unsigned int n, uint32_t rkey)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (k[i] == rkey)
			return 1;
	return 0;
}

TEST(keys_of_remote_requests_once)
{
	struct rxe_queue_buf *q = ring();
	uint32_t k[8];
	unsigned int n;

	put(q, 0, IBV_WR_RDMA_WRITE, 0x1100);
	put(q, 1, IBV_WR_RDMA_WRITE_WITH_IMM, 0x1100);
	put(q, 2, IBV_WR_SEND, 0x2200);		/* a SEND names no memory */
	put(q, 3, IBV_WR_SEND_WITH_IMM, 0x2300);
	put(q, 5, IBV_WR_RDMA_READ, 0x3300);
	put(q, 9, IBV_WR_ATOMIC_FETCH_AND_ADD, 0x4400);
	put(q, 15, IBV_WR_ATOMIC_CMP_AND_SWP, 0x5500);	/* the last slot */
	/* every other slot is zero: a WRITE to key 0, which is none */
	n = shiftu_provq_rkeys(q, k, 0, 8);
	EXPECT_EQ(4U, n);
	EXPECT_TRUE(has(k, n, 0x1100));
	EXPECT_TRUE(has(k, n, 0x3300));
	EXPECT_TRUE(has(k, n, 0x4400));
	EXPECT_TRUE(has(k, n, 0x5500));
	EXPECT_FALSE(has(k, n, 0x2200));
	EXPECT_FALSE(has(k, n, 0x2300));
	EXPECT_FALSE(has(k, n, 0));
	free(q);
}

TEST(no_more_than_asked)
{
	struct rxe_queue_buf *q = ring();
	uint32_t k[5];
	unsigned int n, i;

	for (i = 0; i < SLOTS; i++)
		put(q, i, IBV_WR_RDMA_WRITE, 0x100 + i);
	k[4] = 0xdeadbeef;
	n = shiftu_provq_rkeys(q, k, 0, 4);
	EXPECT_EQ(4U, n);
	EXPECT_EQ(0xdeadbeefU, k[4]);
	/* after the ones the caller has: added, never repeated */
	k[0] = 0x100;
	n = shiftu_provq_rkeys(q, k, 1, 3);
	EXPECT_EQ(3U, n);
	EXPECT_EQ(0x100U, k[0]);
	EXPECT_EQ(0x101U, k[1]);
	EXPECT_EQ(0x102U, k[2]);
	free(q);
}

TEST(an_empty_ring)
{
	struct rxe_queue_buf *q = ring();
	uint32_t k[4];

	EXPECT_EQ(0U, shiftu_provq_rkeys(q, k, 0, 4));
	free(q);
}

TEST_HARNESS_MAIN
