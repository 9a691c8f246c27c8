// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_serial: the counts libshiftu's two-way handshake puts on the wire
 * and compares survive their wrap-arounds (2^31 on the wire, 2^32, 2^64).
 *
 * The handshake (handshake.h) tells the peer its receive count in 31 bits
 * of a SEND_WITH_IMM; the peer compares it with the 64-bit numbers of its
 * outstanding two-sided sends and replays only those the count does not
 * cover.  These tests drive the library's own code on both ends, with
 * fake QPs whose post_send records what the library posts: the peer's
 * shiftu_ctrl_send() encodes its count, the sender's shiftu_hs_message()
 * decodes it and replays.  Every message must then be either replayed (the
 * peer had not received it) or completed good (it had), never both,
 * never neither: one replayed although received is a duplicate, one
 * completed although not received is lost.  Each TEST runs in its own
 * process (kselftest_harness forks).
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "config.h"
#include "failover.h"
#include "handshake.h"
#include "interpose.h"
#include "serial.h"
#include "shadow.h"

#include "kselftest_harness.h"

/* outstanding two-sided sends at the failover (a queue's worth) */
#define OUT		8
#define SLOTS		16

/* What the library posted through the fake QPs. */
struct posted {
	uint64_t wr_id;
	uint32_t imm;			/* big endian, as posted */
};

static struct posted posted[64];
static unsigned int n_posted;

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	for (; wr; wr = wr->next) {
		if (n_posted == sizeof(posted) / sizeof(posted[0])) {
			*bad = wr;
			return ENOMEM;
		}
		posted[n_posted++] = (struct posted){ wr->wr_id, wr->imm_data };
	}
	return 0;
}

static uint64_t recv_ids[8];
static unsigned int n_recv_ids;

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	for (; wr; wr = wr->next) {
		if (n_recv_ids == sizeof(recv_ids) / sizeof(recv_ids[0])) {
			*bad = wr;
			return ENOMEM;
		}
		recv_ids[n_recv_ids++] = wr->wr_id;
	}
	return 0;
}

static struct ibv_context fake_ctx = {
	.ops = { .post_send = fake_post_send, .post_recv = fake_post_recv },
};
static struct ibv_qp app_qp = { .context = &fake_ctx, .qp_num = 0x11 };
static struct ibv_qp twin_qp = { .context = &fake_ctx, .qp_num = 0x22 };
static struct shiftu_ctx sctx = { .dev_name = "rxe0", .bak_name = "rxe1", .bak_port = 1 };

/* One side's QP, on its twin after a failover, with @sent two-sided sends
 * numbered before the OUT outstanding ones it recorded. */
struct side {
	struct shiftu_vqp vq;
	struct shiftu_cq cq;
};

static struct side *side_new(uint64_t sent)
{
	struct side *s = calloc(1, sizeof(*s));
	struct shiftu_vqp *vq;

	if (!s)
		return NULL;
	vq = &s->vq;
	pthread_mutex_init(&vq->fo_lock, NULL);
	pthread_mutex_init(&vq->lock, NULL);
	pthread_mutex_init(&s->cq.lock, NULL);
	s->cq.sctx = &sctx;
	vq->sctx = &sctx;
	vq->reg.app_qp = &app_qp;
	vq->bak_qp = &twin_qp;
	vq->scq = vq->rcq = &s->cq;
	vq->post_send = fake_post_send;
	vq->post_recv = fake_post_recv;
	vq->sq.mask = SLOTS - 1;
	vq->sq.stride = sizeof(struct shiftu_swqe);
	vq->sq.slots = calloc(SLOTS, vq->sq.stride);
	vq->sent2 = sent;
	vq->consumed = sent;
	vq->rq.head = sent;
	vq->on_twin = 1;
	vq->state = SHIFTU_SEND_FALLBACK;
	if (!vq->sq.slots) {
		free(s);
		return NULL;
	}
	return s;
}

static void side_free(struct side *s)
{
	free(s->vq.sq.slots);
	free(s->cq.stash);
	free(s);
}

/*
 * The peer, with @consumed receives completed, tells its count as the
 * library does (as an answer: @ack); the immediate as the receiving side
 * reads it from its completion, host order.
 */
static int peer_says(uint64_t consumed, bool ack, uint32_t *imm)
{
	struct side *p = side_new(0);
	int ret;

	if (!p)
		return ENOMEM;
	p->vq.consumed = consumed;
	n_posted = 0;
	ret = shiftu_ctrl_send(&p->vq, ack);
	if (!ret && n_posted != 1)
		ret = EPROTO;
	if (!ret)
		*imm = be32toh(posted[0].imm);
	side_free(p);
	return ret;
}

/*
 * A sender whose two-sided count was @start: OUT signaled SENDs recorded
 * (numbered @start + 1 on by the library's own recording) and held for
 * the peer's count, which says it received @got of them (its count is
 * @start + @got).  Returns how many were wrong (duplicated or lost), the
 * first wrong one described in @why.
 */
static int handshake(uint64_t start, unsigned int got, char *why, size_t len)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct shiftu_hs_msg m = { .on_default = false };
	bool replayed[OUT] = { false }, completed[OUT] = { false };
	struct side *s = side_new(start);
	unsigned int i, wrong = 0;
	uint32_t imm;
	uint64_t id;

	if (!s) {
		snprintf(why, len, "out of memory");
		return OUT;
	}
	/* earlier sends, long completed: the ring's index differs from the count */
	s->vq.sq.head = 1000;
	s->vq.replay_start = s->vq.sq.head;
	s->vq.state = SHIFTU_SEND_HANDSHAKE;
	s->vq.hs_sent = 1;
	for (i = 0; i < OUT; i++) {
		wr.wr_id = i;
		shiftu_record_send(&s->vq, &wr);
	}
	if (peer_says(start + got, true, &imm)) {
		snprintf(why, len, "the peer could not send its count");
		side_free(s);
		return OUT;
	}
	m.vq = &s->vq;
	m.imm = imm;
	n_posted = 0;
	shiftu_hs_message(&m);
	for (i = 0; i < n_posted; i++)
		if (posted[i].wr_id < OUT)
			replayed[posted[i].wr_id] = true;
	for (i = 0; i < s->cq.stash_n; i++) {
		id = s->cq.stash[(s->cq.stash_head + i) % s->cq.stash_cap].wr_id;
		if (id < OUT)
			completed[id] = true;
	}
	for (i = 0; i < OUT; i++) {
		bool received = i < got, ok = received ? completed[i] && !replayed[i] :
						       replayed[i] && !completed[i];

		if (ok)
			continue;
		if (!wrong++)
			snprintf(why, len, "count start %#llx, peer received %u of %u: send %u (number %#llx) %s%s",
				 (unsigned long long)start, got, OUT, i,
				 (unsigned long long)(start + i + 1),
				 replayed[i] ? "replayed" : "not replayed",
				 completed[i] ? ", completed good" : ", not completed");
	}
	if (s->vq.state != SHIFTU_SEND_FALLBACK && !wrong++)
		snprintf(why, len, "count start %#llx: the QP did not move on (state %#x)",
			 (unsigned long long)start, s->vq.state);
	side_free(s);
	return wrong;
}

/* counts from @lo to @hi (wrapping) across every possible peer count */
static int sweep(struct __test_metadata *_metadata, uint64_t lo, uint64_t hi)
{
	unsigned int got, cases = 0, bad_cases = 0;
	char why[256];
	uint64_t s;
	int wrong;

	for (s = lo;; s++) {
		for (got = 0; got <= OUT; got++) {
			cases++;
			wrong = handshake(s, got, why, sizeof(why));
			if (wrong && bad_cases++ < 4)
				TH_LOG("%d wrong: %s", wrong, why);
		}
		if (s == hi)
			break;
	}
	if (bad_cases)
		TH_LOG("%u of %u handshakes wrong between count starts %#llx and %#llx",
		       bad_cases, cases, (unsigned long long)lo, (unsigned long long)hi);
	return bad_cases;
}

FIXTURE(replay) {};
FIXTURE_VARIANT(replay) { uint64_t wrap; };
/* no wrap: the counts of the first hours */
FIXTURE_VARIANT_ADD(replay, start) { .wrap = OUT + 2 };
/* the wire's 31 bits */
FIXTURE_VARIANT_ADD(replay, wrap31) { .wrap = 1ULL << 31 };
/* the upper half of 32 bits, far from any wrap: bit 31 set in the numbers */
FIXTURE_VARIANT_ADD(replay, upper31) { .wrap = 3ULL << 30 };
/* the immediate's 32 bits, and a 32-bit truncation of the send numbers */
FIXTURE_VARIANT_ADD(replay, wrap32) { .wrap = 1ULL << 32 };
/* the 64-bit counters themselves (only a test build starts there) */
FIXTURE_VARIANT_ADD(replay, wrap64) { .wrap = 0 };
/* the next wraps of the 31-bit count: 3 * 2^31, and 2^33 */
FIXTURE_VARIANT_ADD(replay, wrap31_3) { .wrap = 3ULL << 31 };
FIXTURE_VARIANT_ADD(replay, wrap33) { .wrap = 1ULL << 33 };
FIXTURE_SETUP(replay)
{
	setenv("SHIFTU_LOG", "error", 1);
	shiftu_config();
}
FIXTURE_TEARDOWN(replay) {}

/*
 * Around @wrap, with the outstanding sends' numbers on either side of it
 * and straddling it, and every count the peer may answer (none of them
 * received up to all): each send replayed or completed, exactly once.
 */
TEST_F(replay, exactly_once)
{
	uint64_t w = variant->wrap;

	EXPECT_EQ(0, sweep(_metadata, w - OUT - 2, w + 2));
}

/*
 * The helpers themselves, at each wrap: the order of two counts a little
 * apart on either side of it, and the 64-bit count a 31-bit one stands for
 * near a count of ours, up to 2^30 - 1 above it and 2^30 below.
 */
TEST(serial_helpers)
{
	static const uint64_t wraps[] = { 0, 1ULL << 31, 1ULL << 32, 3ULL << 31, 1ULL << 33,
					  1ULL << 63 };
	static const int64_t offs[] = { -(1LL << 30), -(1LL << 30) + 1, -1000, -9, -1, 0, 1,
					9, 1000, (1LL << 30) - 1 };
	unsigned int i, j, k;
	uint64_t a, b, near, c;

	for (i = 0; i < SHIFTU_ARRAY_SIZE(wraps); i++) {
		for (j = 0; j < 16; j++) {
			a = wraps[i] - 8 + j;
			b = a + 5;
			EXPECT_TRUE(shiftu_seq64_lt(a, b));
			EXPECT_FALSE(shiftu_seq64_lt(b, a));
			EXPECT_TRUE(shiftu_seq64_le(a, a));
			EXPECT_FALSE(shiftu_seq64_lt(a, a));
			EXPECT_TRUE(shiftu_seq32_lt((uint32_t)a, (uint32_t)b));
			EXPECT_FALSE(shiftu_seq32_le((uint32_t)b, (uint32_t)a));
			EXPECT_TRUE(shiftu_seq32_le((uint32_t)a, (uint32_t)a));
			EXPECT_TRUE(shiftu_seq31_lt(shiftu_hs_count_put(a), shiftu_hs_count_put(b)));
			EXPECT_FALSE(shiftu_seq31_le(shiftu_hs_count_put(b), shiftu_hs_count_put(a)));
			EXPECT_TRUE(shiftu_seq31_le(shiftu_hs_count_put(a), shiftu_hs_count_put(a)));
			EXPECT_EQ(0, shiftu_hs_count_put(a) & SHIFTU_HS_ACK);
			for (k = 0; k < SHIFTU_ARRAY_SIZE(offs); k++) {
				near = a;
				c = near + (uint64_t)offs[k];
				EXPECT_EQ(c, shiftu_hs_count_get(shiftu_hs_count_put(c), near));
				/* the answer bit is not part of the count */
				EXPECT_EQ(c, shiftu_hs_count_get(shiftu_hs_count_put(c) | SHIFTU_HS_ACK,
								 near));
			}
		}
	}
	/* half the 31-bit space apart: RFC 1982 leaves the order undefined, not equal */
	EXPECT_NE(0, shiftu_seq31_diff(0, 1U << 30));
}

/*
 * A message on the default QP carries the generation of the reset that
 * posted its control receive (16 bits of its wr_id): across the
 * generation's wrap, the one awaited is taken and one from before the
 * last reset is dropped.
 */
TEST(ctrl_gen_wrap)
{
	struct shiftu_hs_msg m = { .on_default = true, .imm = 5 | SHIFTU_HS_ACK };
	struct side *s = side_new(0);
	uint16_t gens[] = { 0xfffe, 0xffff, 0, 1 };
	unsigned int i;

	ASSERT_NE(NULL, s);
	s->vq.on_twin = 0;
	s->vq.state = SHIFTU_SEND_DEFAULT;
	s->vq.ctrl_gen = 0xfffd;
	for (i = 0; i < sizeof(gens) / sizeof(gens[0]); i++) {
		n_recv_ids = 0;
		ASSERT_EQ(0, shiftu_ctrl_recv(&s->vq, false));
		ASSERT_EQ(1, n_recv_ids);
		ASSERT_EQ(SHIFTU_WRID_CTRL_DEF, shiftu_wrid_kind(recv_ids[0]));
		EXPECT_EQ(gens[i], (uint16_t)recv_ids[0]);
		EXPECT_EQ(gens[i], s->vq.ctrl_gen);
		/* the one before: dropped, the failback's receive still awaited */
		s->vq.ctrl_default = 1;
		m.vq = &s->vq;
		m.gen = (uint16_t)(gens[i] - 1);
		shiftu_hs_message(&m);
		EXPECT_EQ(1, s->vq.ctrl_default);
		/* this one: taken (as cq.c reads it: the wr_id's low 16 bits) */
		m.gen = (uint16_t)recv_ids[0];
		shiftu_hs_message(&m);
		EXPECT_EQ(0, s->vq.ctrl_default);
	}
	side_free(s);
}

TEST_HARNESS_MAIN
