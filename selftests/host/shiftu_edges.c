// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_edges: the library's control verbs at the device's limits do what
 * the plain verbs do, and its own room never runs out: a CQ keeps room for
 * the completions a failover adds for every protected QP on it (or leaves
 * the QP unprotected, with one log line, at the device's max_cqe); a QP
 * asked for at exactly the device's max_qp_wr is created (unprotected, one
 * log line); an inline request recorded for a QP granted no scatter entry
 * stays inside its slot, its bytes whole; an atomic is recorded with its
 * rkey and operands, and rebuilt from the record as it was posted.
 *
 * The library's exported verbs (qpverbs.c, cqsrq.c) run over a fake provider
 * (shiftu_real's pointers replaced) that refuses what a device past its
 * limits refuses.  Each TEST runs in its own process (kselftest_harness
 * forks).  Built against the library before these fixes too (73e2d0c), to
 * show each fail.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "config.h"
#include "interpose.h"
#include "log.h"
#include "qp.h"
#include "real.h"
#include "ring.h"

#include "kselftest_harness.h"

/* the fake device's limits */
#define MAX_QP_WR	1024
#define MAX_CQE		4096
/* what a failover adds to a CQ per QP (interpose.h) */
#define PER_QP		4

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp, (void)wr, (void)bad;
	return 0;
}

static struct ibv_context fake_ctx = {
	.ops = { .post_send = shiftu_post_send },
};
static struct ibv_pd fake_pd = { .context = &fake_ctx };
static struct shiftu_ctx sctx = {
	.ctx = &fake_ctx, .dev_name = "rxe0", .max_cqe = MAX_CQE,
	.post_send = fake_post_send,
};
static uint32_t next_qpn = 0x100;
static int max_cqe = MAX_CQE;
static int resizes;

static struct ibv_qp *fake_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp *qp;

	if (attr->cap.max_send_wr > MAX_QP_WR ||
	    (!attr->srq && attr->cap.max_recv_wr > MAX_QP_WR)) {
		errno = EINVAL;
		return NULL;
	}
	/* room past it: the provider's object, where a look for its rings
	 * would read (provq.c) */
	qp = calloc(1, 4096);
	if (!qp)
		return NULL;
	qp->context = pd->context;
	qp->pd = pd;
	qp->qp_num = next_qpn++;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->srq = attr->srq;
	qp->qp_type = attr->qp_type;
	return qp;
}

static int fake_destroy_qp(struct ibv_qp *qp)
{
	free(qp);
	return 0;
}

static struct ibv_cq *fake_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
				     struct ibv_comp_channel *channel, int comp_vector)
{
	struct ibv_cq *cq;

	(void)cq_context, (void)channel, (void)comp_vector;
	if (cqe < 1 || cqe > max_cqe) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	cq->context = ctx;
	cq->cqe = cqe;
	return cq;
}

#ifdef SHIFTU_CQ_PER_QP
static int fake_resize_cq(struct ibv_cq *cq, int cqe)
{
	if (cqe < 1 || cqe > max_cqe)
		return EINVAL;
	resizes++;
	cq->cqe = cqe;
	return 0;
}
#endif

static int fake_destroy_cq(struct ibv_cq *cq)
{
	free(cq);
	return 0;
}

/* The log lines of the library's objects, each kept (shiftu_log_line is
 * wrapped: -Wl,--wrap, Makefile). */
static char last_line[512];
static int lines;

void __wrap_shiftu_log_line(enum shiftu_log_level lvl, const char *fmt, ...);
void __wrap_shiftu_log_line(enum shiftu_log_level lvl, const char *fmt, ...)
{
	va_list ap;

	(void)lvl;
	va_start(ap, fmt);
	vsnprintf(last_line, sizeof(last_line), fmt, ap);
	va_end(ap);
	lines++;
}

static void fake_provider(void)
{
	setenv("SHIFTU_HEALTH_DEV", "/nonexistent/shift_ft", 1);
	setenv("SHIFTU_LOG", "info", 1);
	/* each request copied into the library's ring (no provider rings here) */
	setenv("SHIFTU_RECORD", "copy", 1);
	shiftu_config_start();
	if (!shiftu_real_verbs())
		abort();
	shiftu_real.create_qp = fake_create_qp;
	shiftu_real.destroy_qp = fake_destroy_qp;
	shiftu_real.create_cq = fake_create_cq;
	shiftu_real.destroy_cq = fake_destroy_cq;
#ifdef SHIFTU_CQ_PER_QP
	shiftu_real.resize_cq = fake_resize_cq;
#endif
	shiftu_ctx_list = &sctx;
}

static struct ibv_qp *rc_qp(struct ibv_cq *scq, struct ibv_cq *rcq, uint32_t wr)
{
	struct ibv_qp_init_attr a = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = wr, .max_recv_wr = wr, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	return ibv_create_qp(&fake_pd, &a);
}

static bool protected(struct ibv_qp *qp)
{
	struct shiftu_vqp *vq = (struct shiftu_vqp *)shiftu_qp_lookup(qp);

	return vq && vq->rings != SHIFTU_RINGS_NONE;
}

FIXTURE(dev) {
	int unused;
};

FIXTURE_SETUP(dev)
{
	fake_provider();
}

FIXTURE_TEARDOWN(dev)
{
}

/*
 * Twenty QPs on one CQ of 64: the CQ grows with them, so that their
 * failovers' completions fit beside the application's 64.  Before, it
 * kept 16 entries whatever the number of QPs (80 for twenty QPs' 80).
 */
TEST_F(dev, cq_room_scales)
{
	struct ibv_cq *cq = ibv_create_cq(&fake_ctx, 64, NULL, NULL, 0);
	struct ibv_cq *s, *r;
	struct ibv_qp *qp[20];
	int i, prot = 0;

	ASSERT_NE(NULL, cq);
	for (i = 0; i < 20; i++) {
		qp[i] = rc_qp(cq, cq, 16);
		ASSERT_NE(NULL, qp[i]);
		prot += protected(qp[i]);
	}
	TH_LOG("cq of 64 with %d protected QPs: %d entries, %d resizes", prot, cq->cqe, resizes);
	EXPECT_EQ(20, prot);
	EXPECT_GE(cq->cqe, 64 + PER_QP * prot);
	/* and two CQs, one for each queue: room on both */
	s = ibv_create_cq(&fake_ctx, 8, NULL, NULL, 0);
	r = ibv_create_cq(&fake_ctx, 8, NULL, NULL, 0);
	ASSERT_NE(NULL, s);
	ASSERT_NE(NULL, r);
	for (i = 0, prot = 0; i < 10; i++)
		prot += protected(rc_qp(s, r, 16));
	EXPECT_EQ(10, prot);
	EXPECT_GE(s->cqe, 8 + PER_QP * prot);
	EXPECT_GE(r->cqe, 8 + PER_QP * prot);
	for (i = 0; i < 20; i++)
		EXPECT_EQ(0, ibv_destroy_qp(qp[i]));
}

/*
 * At the device's max_cqe: the QPs that fit are protected, the next one
 * is created, unprotected, with one log line, and the CQ never asked past
 * the device's limit; a QP that goes gives its room to the next.
 */
TEST_F(dev, cq_room_at_limit)
{
	struct ibv_cq *cq;
	struct ibv_qp *qp[10], *last;
	int i, prot = 0;

	max_cqe = sctx.max_cqe = 100;
	cq = ibv_create_cq(&fake_ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	for (i = 0; i < 10; i++) {
		int before = lines;

		qp[i] = rc_qp(cq, cq, 16);
		ASSERT_NE(NULL, qp[i]);
		prot += protected(qp[i]);
		if (i == 9) {
			EXPECT_EQ(before + 1, lines);
			TH_LOG("the tenth: \"%s\"", last_line);
		}
	}
	TH_LOG("cq of 64 on a device of max_cqe 100: %d entries, %d QPs of 10 protected",
	       cq->cqe, prot);
	EXPECT_LE(cq->cqe, 100);
	EXPECT_GE(cq->cqe, 64 + PER_QP * prot);
	EXPECT_EQ(9, prot);
	EXPECT_FALSE(protected(qp[9]));
	EXPECT_NE(NULL, strstr(last_line, "unprotected"));
	/* one goes: the next takes its room */
	EXPECT_EQ(0, ibv_destroy_qp(qp[0]));
	last = rc_qp(cq, cq, 16);
	ASSERT_NE(NULL, last);
	EXPECT_TRUE(protected(last));
	EXPECT_LE(cq->cqe, 100);
}

/* A CQ of exactly max_cqe is created, as without the library. */
TEST_F(dev, cq_at_device_max)
{
	struct ibv_cq *cq = ibv_create_cq(&fake_ctx, MAX_CQE, NULL, NULL, 0);

	ASSERT_NE(NULL, cq);
	EXPECT_EQ(MAX_CQE, cq->cqe);
	/* a QP on it has no room there: unprotected, created all the same */
	EXPECT_NE(NULL, rc_qp(cq, cq, 16));
	EXPECT_EQ(NULL, ibv_create_cq(&fake_ctx, MAX_CQE + 1, NULL, NULL, 0));
}

/*
 * A QP of exactly max_qp_wr on each queue is created, as without the
 * library, which then does without its marker's slot: the QP is left
 * unprotected, with one log line, and reads back what it asked for.  One
 * entry below, it has its slot and is protected.  One above fails, as it
 * does without the library.
 */
TEST_F(dev, qp_at_device_max)
{
	struct ibv_cq *cq = ibv_create_cq(&fake_ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = MAX_QP_WR, .max_recv_wr = MAX_QP_WR,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp;
	int before = lines;

	ASSERT_NE(NULL, cq);
	qp = ibv_create_qp(&fake_pd, &a);
	TH_LOG("max_send_wr = max_recv_wr = max_qp_wr: %s", qp ? "created" : strerror(errno));
	ASSERT_NE(NULL, qp);
	EXPECT_EQ(MAX_QP_WR, a.cap.max_send_wr);
	EXPECT_EQ(MAX_QP_WR, a.cap.max_recv_wr);
	EXPECT_FALSE(protected(qp));
	EXPECT_EQ(before + 1, lines);
	TH_LOG("its line: \"%s\"", last_line);
	EXPECT_NE(NULL, strstr(last_line, "unprotected"));

	a.cap.max_send_wr = a.cap.max_recv_wr = MAX_QP_WR - 1;
	qp = ibv_create_qp(&fake_pd, &a);
	ASSERT_NE(NULL, qp);
	EXPECT_EQ(MAX_QP_WR - 1, a.cap.max_send_wr);
	EXPECT_EQ(MAX_QP_WR - 1, a.cap.max_recv_wr);
	EXPECT_TRUE(protected(qp));

	a.cap.max_send_wr = a.cap.max_recv_wr = MAX_QP_WR + 1;
	EXPECT_EQ(NULL, ibv_create_qp(&fake_pd, &a));
	EXPECT_EQ(EINVAL, errno);
}

/*
 * An inline request recorded for a QP granted no scatter entry
 * (max_send_sge 0, as a provider may grant an inline-only QP): its bytes
 * are kept whole, and nothing is written past its slot (the next one
 * stays as it was).  Before, the descriptor that points at the bytes was
 * written over their first 16, and 8 bytes past a slot of 8 inline bytes.
 */
TEST_F(dev, inline_no_sge)
{
	struct ibv_cq *cq = ibv_create_cq(&fake_ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 0,
			 .max_recv_sge = 1, .max_inline_data = 8 },
	};
	static const char payload[8] = "ABCDEFGH";
	struct ibv_sge sge = { .addr = (uintptr_t)payload, .length = sizeof(payload) };
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
	}, *bad;
	struct shiftu_vqp *vq;
	struct shiftu_swqe *e;
	struct ibv_qp *qp;
	unsigned char *next;
	uint32_t i;
	int dirty = 0;

	ASSERT_NE(NULL, cq);
	qp = ibv_create_qp(&fake_pd, &a);
	ASSERT_NE(NULL, qp);
	vq = (struct shiftu_vqp *)shiftu_qp_lookup(qp);
	ASSERT_NE(NULL, vq);
	ASSERT_EQ(SHIFTU_RINGS_COPY, vq->rings);
	TH_LOG("send ring: %u slots of %u bytes", vq->sq.mask + 1, vq->sq.stride);
	ASSERT_LE(2, vq->sq.mask + 1);
	ASSERT_EQ(0, ibv_post_send(qp, &wr, &bad));
	e = shiftu_swqe_at(&vq->sq, vq->sq.head - 1);
	EXPECT_EQ(7, e->wr_id);
	EXPECT_EQ(1, e->num_sge);
	EXPECT_EQ(sizeof(payload), e->sge[0].length);
	EXPECT_EQ(0, memcmp((void *)(uintptr_t)e->sge[0].addr, payload, sizeof(payload)));
	next = (unsigned char *)shiftu_swqe_at(&vq->sq, vq->sq.head);
	for (i = 0; i < vq->sq.stride; i++)
		dirty += next[i] != 0;
	TH_LOG("recorded: \"%.8s\"; %d bytes of the next slot written", (char *)(uintptr_t)e->sge[0].addr,
	       dirty);
	EXPECT_EQ(0, dirty);
}

/*
 * An atomic recorded: its remote address, its rkey (wr.atomic's, not
 * where wr.rdma's is, over its compare_add) and both operands, so that one
 * held while the QP waits (a failback's fence, the peer's count) is posted
 * as the application posted it.  Before, the record kept wr.rdma's rkey,
 * the low half of compare_add, and no operand: a held atomic went out with
 * rkey 0 and adds of 0.
 */
TEST_F(dev, atomic_recorded)
{
	struct ibv_cq *cq = ibv_create_cq(&fake_ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	static uint64_t result;
	struct ibv_sge sge = { .addr = (uintptr_t)&result, .length = 8, .lkey = 0x11 };
	struct ibv_send_wr wr = {
		.wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = { .remote_addr = 0x1000, .compare_add = 0x0123456789abcdefULL,
			       .swap = 0xfedcba9876543210ULL, .rkey = 0x4242 },
	}, *bad, w;
	struct shiftu_vqp *vq;
	struct shiftu_swqe *e;
	struct ibv_qp *qp;

	ASSERT_NE(NULL, cq);
	qp = ibv_create_qp(&fake_pd, &a);
	ASSERT_NE(NULL, qp);
	vq = (struct shiftu_vqp *)shiftu_qp_lookup(qp);
	ASSERT_NE(NULL, vq);
	ASSERT_EQ(SHIFTU_RINGS_COPY, vq->rings);
	ASSERT_EQ(0, ibv_post_send(qp, &wr, &bad));
	e = shiftu_swqe_at(&vq->sq, vq->sq.head - 1);
	EXPECT_EQ(0x1000, e->remote_addr);
	EXPECT_EQ(0x4242, e->rkey);
	EXPECT_EQ(0x0123456789abcdefULL, e->compare_add);
	EXPECT_EQ(0xfedcba9876543210ULL, e->swap);
	shiftu_swqe_wr(e, &w);
	EXPECT_EQ(IBV_WR_ATOMIC_CMP_AND_SWP, w.opcode);
	EXPECT_EQ(9, w.wr_id);
	EXPECT_EQ(0x1000, w.wr.atomic.remote_addr);
	EXPECT_EQ(0x4242, w.wr.atomic.rkey);
	EXPECT_EQ(0x0123456789abcdefULL, w.wr.atomic.compare_add);
	EXPECT_EQ(0xfedcba9876543210ULL, w.wr.atomic.swap);
	EXPECT_EQ(1, w.num_sge);
	EXPECT_EQ(0x11, w.sg_list[0].lkey);
	/* an RDMA WRITE after it: wr.rdma's, as before */
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = 0x2000;
	wr.wr.rdma.rkey = 0x77;
	ASSERT_EQ(0, ibv_post_send(qp, &wr, &bad));
	shiftu_swqe_wr(shiftu_swqe_at(&vq->sq, vq->sq.head - 1), &w);
	EXPECT_EQ(0x2000, w.wr.rdma.remote_addr);
	EXPECT_EQ(0x77, w.wr.rdma.rkey);
}

TEST_HARNESS_MAIN
