// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_proto: the failover protocol's decision on outstanding sends
 * (userlib/proto.h), put to every case of a bounded set.
 *
 * Every sequence of up to MAX_OUT outstanding sends over five opcodes
 * (WRITE, WRITE_WITH_IMM, SEND, READ, FETCH_AND_ADD), every prefix of it
 * posted (the rest held while the QP waited, posted by no one yet), every
 * prefix of those the peer executed before the failure (RC executes in
 * order), the
 * peer's count known or not, the count through the wire's 31 bits as the
 * library reads it, and the counts and ring places starting just below
 * each wrap (2^31, 2^32, 2^64).  Against each the guarantees:
 *
 *   - an atomic posted and outstanding: nothing replayed, the errors go
 *     up; one held goes like any other request;
 *   - none lost: every request the peer did not execute is replayed;
 *   - none twice: no request before the last message the peer received
 *     is replayed (a READ excepted, whose response may be what was lost),
 *     so neither that message nor the data it announced arrives again;
 *   - a message outstanding and no count: the sends wait for it;
 *   - a count beyond what was sent: nothing replayed.
 *
 * And the decision on a peer's control message (shiftu_hs_decide()) over
 * all its inputs: an answer never moves a QP, only a message on the twin
 * fails one over, one on the default QP moves it back only for a failback
 * it granted, a QP given up never moves, and every decision is reachable.
 *
 * And the answer to a peer's failback request (shiftu_fb_answer()) over
 * all its inputs: a port down answers down; one-sided only from the
 * default QP, with nothing posted that a reset would drop, and the peer's
 * receives not on its twin; two-sided only from Fallback on the twin,
 * neither going back already nor leading; a side that leads says so;
 * none before the failover's message of the peer was handled.
 *
 * And the peer's cancel of a two-sided failback we granted
 * (shiftu_fb_cancel_wins()) over all its inputs: it wins only over a
 * grant still open, the one it names, on the old twin, its message still
 * awaited; never once we followed or for an older failback.
 *
 * And two moves in a row, the second while the first one's replays are
 * outstanding: every request completes once over both (two_moves).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "proto.h"
#include "serial.h"

#include "kselftest_harness.h"

#define MAX_OUT		6
#define SLOTS		8

static const uint32_t ops[] = {
	IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND, IBV_WR_RDMA_READ,
	IBV_WR_ATOMIC_FETCH_AND_ADD,
};
#define N_OPS	(sizeof(ops) / sizeof(ops[0]))

/* where the ring's places and the two-sided counts start */
static const uint64_t starts[] = {
	0, (1ULL << 31) - 3, (1ULL << 32) - 3, UINT64_MAX - 2,
};

struct ring_buf {
	struct shiftu_ring r;
	struct shiftu_swqe slot[SLOTS];
};

/* no replay has left sends on no QP */
static const struct shiftu_sq_gap nogap;

/*
 * Lay out sequence number @seq (base N_OPS, @n digits) at ring places
 * [@from, @from + @n), after @sent0 messages: the count of two-sided
 * requests up to each goes in its seq2, as post.c records it.
 * Returns the count after them all.
 */
static uint64_t lay_out(struct ring_buf *b, unsigned int seq, int n, uint64_t from,
			uint64_t sent0)
{
	uint64_t sent2 = sent0;
	int k;

	memset(b, 0, sizeof(*b));
	b->r.slots = b->slot;
	b->r.mask = SLOTS - 1;
	b->r.stride = sizeof(struct shiftu_swqe);
	for (k = 0; k < n; k++, seq /= N_OPS) {
		struct shiftu_swqe *e = shiftu_swqe_at(&b->r, from + k);

		e->opcode = ops[seq % N_OPS];
		e->wr_id = k;
		sent2 += shiftu_op_two_sided(e->opcode);
		e->seq2 = sent2;
	}
	b->r.head = from + n;
	return sent2;
}

/*
 * One case: the first @posted of the @n laid out were posted, the rest
 * held (an atomic among those is in flight nowhere); the peer executed
 * the first @k of them; the library knows its count or not.  Returns the
 * number of guarantees broken (each said on stderr).
 */
static int one_case(struct ring_buf *b, int n, int posted, int k, uint64_t from, uint64_t sent0,
		    uint64_t sent2, bool known)
{
	struct shiftu_send_plan p;
	uint64_t peer = sent0, got;
	bool atomic = false, msg = false;
	enum shiftu_sends_next next;
	int i, last_msg = 0, bad = 0;

	for (i = 0; i < n; i++) {
		const struct shiftu_swqe *e = shiftu_swqe_at(&b->r, from + i);

		atomic |= shiftu_op_atomic(e->opcode) && i < posted;
		msg |= shiftu_op_two_sided(e->opcode);
		if (i < k && shiftu_op_two_sided(e->opcode)) {
			peer++;
			last_msg = i + 1;
		}
	}
	/* the count as the handshake carries it, read near our send count */
	got = shiftu_hs_count_get(shiftu_hs_count_put(peer), sent2);
	if (known && got != peer) {
		fprintf(stderr, "count %#llx came back as %#llx\n", (unsigned long long)peer,
			(unsigned long long)got);
		return 1;
	}
	shiftu_plan_sends(&p, &b->r, from, from + posted, &nogap, sent2, known, got);
	next = shiftu_plan_next(&p, false, false);
	if (atomic) {
		if (next != SHIFTU_SENDS_GIVE_UP) {
			fprintf(stderr, "an atomic outstanding, and the sends are not given up\n");
			bad++;
		}
		return bad;
	}
	if (next == SHIFTU_SENDS_GIVE_UP) {
		fprintf(stderr, "no atomic was posted, and the sends are given up\n");
		return 1;
	}
	if (p.count_bad) {
		fprintf(stderr, "a count of %#llx taken for bad after %#llx sent\n",
			(unsigned long long)got, (unsigned long long)sent2);
		return 1;
	}
	if (!known && msg) {
		if (next != SHIFTU_SENDS_HOLD) {
			fprintf(stderr, "a message outstanding and no count, and the sends do not wait\n");
			bad++;
		}
		return bad;
	}
	if (next != SHIFTU_SENDS_REPLAY) {
		fprintf(stderr, "nothing stops the replay, and it does not go on (%d)\n", next);
		return 1;
	}
	for (i = 0; i < n; i++) {
		const struct shiftu_swqe *e = shiftu_swqe_at(&b->r, from + i);
		bool again = shiftu_plan_replays(&p, from + i, e->opcode);

		if (i >= k && !again) {
			fprintf(stderr, "request %d (opcode %u), not executed, is not replayed: lost\n",
				i, e->opcode);
			bad++;
		}
		if (i < last_msg && e->opcode != IBV_WR_RDMA_READ && again) {
			fprintf(stderr, "request %d (opcode %u), before a message the peer received, is replayed: twice\n",
				i, e->opcode);
			bad++;
		}
	}
	return bad;
}

/* the sequence and the case, when one fails */
static void say_case(unsigned int seq, int n, int posted, int k, uint64_t start, bool known)
{
	char s[MAX_OUT * 3 + 1] = "";
	int i;

	for (i = 0; i < n; i++, seq /= N_OPS)
		snprintf(s + strlen(s), sizeof(s) - strlen(s), "%s%u", i ? "," : "", ops[seq % N_OPS]);
	fprintf(stderr, "  in: opcodes [%s], %d posted, %d executed, start %#llx, count %s\n", s,
		posted, k, (unsigned long long)start, known ? "known" : "not known");
}

TEST(every_case)
{
	unsigned long cases = 0, failed = 0;
	struct ring_buf b;
	unsigned int seq, n_seq = 1;
	size_t s;
	int n, k, posted, known;

	for (n = 0; n <= MAX_OUT; n++, n_seq *= N_OPS)
		for (seq = 0; seq < n_seq; seq++)
			for (s = 0; s < sizeof(starts) / sizeof(starts[0]); s++)
				for (posted = 0; posted <= n; posted++)
					for (k = 0; k <= posted; k++)
						for (known = 0; known < 2; known++) {
							uint64_t from = starts[s], sent2;

							sent2 = lay_out(&b, seq, n, from, from);
							cases++;
							if (!one_case(&b, n, posted, k, from, from, sent2,
								      known))
								continue;
							if (failed++ < 5)
								say_case(seq, n, posted, k, from, known);
						}
	fprintf(stderr, "# %lu cases, %lu broke a guarantee\n", cases, failed);
	EXPECT_EQ(0, failed);
}

/* A count the peer cannot have: more messages than were sent. */
TEST(count_beyond_sent)
{
	struct shiftu_send_plan p;
	struct ring_buf b;
	size_t s;

	for (s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
		/* SEND, WRITE, SEND */
		uint64_t sent2 = lay_out(&b, 2 + 0 * N_OPS + 2 * N_OPS * N_OPS, 3, starts[s], starts[s]);
		uint64_t d;

		ASSERT_EQ(starts[s] + 2, sent2);
		for (d = 0; d <= 2; d++) {
			shiftu_plan_sends(&p, &b.r, starts[s], b.r.head, &nogap, sent2, true, sent2 - d);
			EXPECT_FALSE(p.count_bad);
			EXPECT_EQ(SHIFTU_SENDS_REPLAY, shiftu_plan_next(&p, false, false));
		}
		for (d = 1; d <= 3; d++) {
			shiftu_plan_sends(&p, &b.r, starts[s], b.r.head, &nogap, sent2, true, sent2 + d);
			EXPECT_TRUE(p.count_bad);
			EXPECT_EQ(SHIFTU_SENDS_GIVE_UP, shiftu_plan_next(&p, false, false));
		}
	}
}

/* messages among ring places @at[0..n) */
static uint64_t msgs_at(struct ring_buf *b, const uint64_t *at, int n)
{
	uint64_t m = 0;
	int i;

	for (i = 0; i < n; i++)
		m += shiftu_op_two_sided(shiftu_swqe_at(&b->r, at[i])->opcode);
	return m;
}

/*
 * The second of two moves (the first replayed onto @p0's QP what it
 * posts, @posted[0..n_p) in order, and completed @done the rest): the
 * peer executed the first @j of them and we had the acks of the first
 * @a.  Every request must complete exactly once over both moves, and
 * no message the peer received go again.  Returns the guarantees broken.
 */
static int second_move(struct ring_buf *b, const struct shiftu_send_plan *p0, const uint8_t *done,
		       const uint64_t *posted, int n_p, int a, int j, uint64_t from,
		       uint64_t sent2, uint64_t peer1)
{
	uint64_t i, start, want = a < n_p ? posted[a] : b->r.head;
	uint64_t peer2 = peer1 + msgs_at(b, posted, j);
	struct shiftu_send_plan p;
	uint8_t comp[MAX_OUT];
	int t, bad = 0;

	memcpy(comp, done, sizeof(comp));
	for (t = 0; t < a; t++)
		comp[posted[t] - from]++;
	/* the drain flushed the n_p - a not acked: where do they start? */
	if (!shiftu_posted_from(&b->r, &p0->next, b->r.head, n_p - a, &start) || start != want) {
		fprintf(stderr, "the %d flushed begin at %#llx, not found there\n", n_p - a,
			(unsigned long long)want);
		return 1;
	}
	shiftu_plan_sends(&p, &b->r, start, b->r.head, &p0->next, sent2, true, peer2);
	if (shiftu_plan_next(&p, false, true) != SHIFTU_SENDS_REPLAY) {
		fprintf(stderr, "the count known, the second move does not replay\n");
		return 1;
	}
	for (i = start; i != b->r.head; i++) {
		const struct shiftu_swqe *e = shiftu_swqe_at(&b->r, i);

		if (shiftu_plan_done(&p, i, e->opcode))
			continue;
		/* replayed or completed good now: once either way */
		comp[i - from]++;
		if (shiftu_plan_replays(&p, i, e->opcode) && shiftu_op_two_sided(e->opcode) &&
		    shiftu_seq64_le(e->seq2, peer2)) {
			fprintf(stderr, "request %llu, a message the peer received, goes again\n",
				(unsigned long long)(i - from));
			bad++;
		}
	}
	for (i = from; i != b->r.head; i++)
		if (comp[i - from] != 1) {
			fprintf(stderr, "request %llu completes %u times\n",
				(unsigned long long)(i - from), comp[i - from]);
			bad++;
		}
	return bad;
}

/*
 * Two moves in a row: a failover replays, READs before its cut included,
 * and a failback drains that QP while some of them are outstanding (the
 * spin model's fourth finding: the flushed were taken for the last ones
 * recorded, one completed twice and a READ lost).  Every sequence of up
 * to MAX_OUT - 1 sends without an atomic, every prefix the peer executed
 * before each move and every prefix acked before the second.
 */
TEST(two_moves)
{
	unsigned long cases = 0, failed = 0;
	unsigned int seq, q, n_seq = 1;
	struct shiftu_send_plan p;
	uint64_t posted[MAX_OUT], i;
	uint8_t done[MAX_OUT];
	struct ring_buf b;
	int n, k, n_p, a, j;
	size_t s;

	for (n = 1; n < MAX_OUT; n++) {
		n_seq *= N_OPS;
		for (seq = 0; seq < n_seq; seq++) {
			for (q = seq, k = 0; k < n && ops[q % N_OPS] != IBV_WR_ATOMIC_FETCH_AND_ADD;
			     k++, q /= N_OPS)
				;
			if (k < n)
				continue;
			for (s = 0; s < sizeof(starts) / sizeof(starts[0]); s++)
				for (k = 0; k <= n; k++) {
					uint64_t from = starts[s], sent2, peer1;

					sent2 = lay_out(&b, seq, n, from, from);
					for (peer1 = from, i = 0; i < (uint64_t)k; i++)
						peer1 += shiftu_op_two_sided(shiftu_swqe_at(&b.r, from + i)->opcode);
					shiftu_plan_sends(&p, &b.r, from, b.r.head, &nogap, sent2, true, peer1);
					memset(done, 0, sizeof(done));
					for (n_p = 0, i = from; i != b.r.head; i++)
						if (shiftu_plan_replays(&p, i, shiftu_swqe_at(&b.r, i)->opcode))
							posted[n_p++] = i;
						else
							done[i - from] = 1;
					for (a = 0; a <= n_p; a++)
						for (j = a; j <= n_p; j++) {
							cases++;
							if (!second_move(&b, &p, done, posted, n_p, a, j,
									 from, sent2, peer1))
								continue;
							if (failed++ < 5)
								say_case(seq, n, n, k, from, true);
						}
				}
		}
	}
	fprintf(stderr, "# %lu cases, %lu broke a guarantee\n", cases, failed);
	EXPECT_EQ(0, failed);
}

/* A side that asks, and a failback, wait for the count whatever is outstanding. */
TEST(ask_and_back_wait)
{
	struct shiftu_send_plan p;
	struct ring_buf b;

	lay_out(&b, 0, 1, 5, 5);	/* one WRITE */
	shiftu_plan_sends(&p, &b.r, 5, b.r.head, &nogap, 5, false, 0);
	EXPECT_EQ(SHIFTU_SENDS_REPLAY, shiftu_plan_next(&p, false, false));
	EXPECT_EQ(SHIFTU_SENDS_HOLD, shiftu_plan_next(&p, true, false));
	EXPECT_EQ(SHIFTU_SENDS_HOLD, shiftu_plan_next(&p, false, true));
	shiftu_plan_sends(&p, &b.r, 5, b.r.head, &nogap, 5, true, 5);
	EXPECT_EQ(SHIFTU_SENDS_HOLD, shiftu_plan_next(&p, true, false));
	EXPECT_EQ(SHIFTU_SENDS_REPLAY, shiftu_plan_next(&p, false, true));
	/* nothing outstanding */
	lay_out(&b, 0, 0, 5, 5);
	shiftu_plan_sends(&p, &b.r, 5, b.r.head, &nogap, 5, false, 0);
	EXPECT_EQ(SHIFTU_SENDS_REPLAY, shiftu_plan_next(&p, false, false));
	EXPECT_EQ(5, p.cut);
}

static const uint8_t states[] = {
	SHIFTU_SEND_DEFAULT, SHIFTU_SEND_FALLBACK, SHIFTU_SEND_WAIT_SIGNALED,
	SHIFTU_SEND_WAIT_DRAINED, SHIFTU_SEND_HANDSHAKE, SHIFTU_SEND_DEAD,
};

TEST(hs_decisions)
{
	unsigned int seen = 0, bits;
	size_t st;

	for (st = 0; st < sizeof(states) / sizeof(states[0]); st++)
		for (bits = 0; bits < 64; bits++) {
			struct shiftu_hs_in in = {
				.state = states[st], .on_twin = bits & 1, .on_default = bits & 2,
				.ack = bits & 4, .old_gen = bits & 8, .expected = bits & 16,
				.busy = bits & 32,
			};
			enum shiftu_hs_act a = shiftu_hs_decide(&in);
			bool moves = a == SHIFTU_HS_FOLLOW_BACK || a == SHIFTU_HS_REJOIN ||
				     a == SHIFTU_HS_FOLLOW_OVER;

			seen |= 1U << a;
			EXPECT_EQ(in.on_default && in.old_gen, a == SHIFTU_HS_OLD)
				TH_LOG("state %#x, inputs %#x: %d", in.state, bits, a);
			if (in.ack)
				EXPECT_FALSE(moves || a == SHIFTU_HS_ANSWER)
					TH_LOG("state %#x, inputs %#x: an answer moved the QP (%d)",
					       in.state, bits, a);
			if (a == SHIFTU_HS_FOLLOW_OVER || a == SHIFTU_HS_ANSWER)
				EXPECT_TRUE(!in.on_default && in.state == SHIFTU_SEND_DEFAULT)
					TH_LOG("state %#x, inputs %#x: a failover followed from %d",
					       in.state, bits, a);
			if (a == SHIFTU_HS_FOLLOW_OVER)
				EXPECT_TRUE(in.busy);
			if (a == SHIFTU_HS_FOLLOW_BACK)
				EXPECT_TRUE(in.on_default && in.expected && in.on_twin &&
					    in.state == SHIFTU_SEND_FALLBACK)
					TH_LOG("state %#x, inputs %#x: a failback not granted", in.state, bits);
			if (a == SHIFTU_HS_REJOIN)
				EXPECT_TRUE(!in.on_default && !in.on_twin &&
					    in.state == SHIFTU_SEND_HANDSHAKE);
			if (a == SHIFTU_HS_REPLAY)
				EXPECT_EQ(SHIFTU_SEND_HANDSHAKE, in.state);
			if (in.state == SHIFTU_SEND_DEAD)
				EXPECT_TRUE(a == SHIFTU_HS_OLD || a == SHIFTU_HS_STALE ||
					    a == SHIFTU_HS_NOTE)
					TH_LOG("inputs %#x: a QP given up acted (%d)", bits, a);
		}
	EXPECT_EQ((1U << (SHIFTU_HS_NOTE + 1)) - 1, seen);
}

/* The cases the protocol is told in (Documentation/libshiftu.rst). */
TEST(hs_cases)
{
	/* the peer failed over: its message on our twin; we follow if busy */
	struct shiftu_hs_in in = { .state = SHIFTU_SEND_DEFAULT, .busy = true };

	EXPECT_EQ(SHIFTU_HS_FOLLOW_OVER, shiftu_hs_decide(&in));
	in.busy = false;
	EXPECT_EQ(SHIFTU_HS_ANSWER, shiftu_hs_decide(&in));
	/* its answer to our failover's message, while we held our sends */
	in = (struct shiftu_hs_in){ .state = SHIFTU_SEND_HANDSHAKE, .on_twin = true, .ack = true };
	EXPECT_EQ(SHIFTU_HS_REPLAY, shiftu_hs_decide(&in));
	/* it fails back (on the default QP) after we granted it */
	in = (struct shiftu_hs_in){ .state = SHIFTU_SEND_FALLBACK, .on_twin = true,
				    .on_default = true, .expected = true };
	EXPECT_EQ(SHIFTU_HS_FOLLOW_BACK, shiftu_hs_decide(&in));
	/* not granted: a message on the QP we left, from before we left it */
	in.expected = false;
	EXPECT_EQ(SHIFTU_HS_STALE, shiftu_hs_decide(&in));
	/* our own failover's count, the answer come late: kept */
	in = (struct shiftu_hs_in){ .state = SHIFTU_SEND_FALLBACK, .on_twin = true, .ack = true };
	EXPECT_EQ(SHIFTU_HS_NOTE, shiftu_hs_decide(&in));
	/* a twin's message while we are back on the default QP: stale */
	in = (struct shiftu_hs_in){ .state = SHIFTU_SEND_FALLBACK, .on_twin = false };
	EXPECT_EQ(SHIFTU_HS_STALE, shiftu_hs_decide(&in));
	/* we went back, the peer failed over again */
	in = (struct shiftu_hs_in){ .state = SHIFTU_SEND_HANDSHAKE };
	EXPECT_EQ(SHIFTU_HS_REJOIN, shiftu_hs_decide(&in));
}

TEST(fb_answers)
{
	unsigned int seen = 0, bits;
	size_t st;

	for (st = 0; st < sizeof(states) / sizeof(states[0]); st++)
		for (bits = 0; bits < 256; bits++) {
			struct shiftu_fb_in in = {
				.state = states[st], .on_twin = bits & 1, .posted = bits & 2,
				.going = bits & 4, .asking = bits & 8, .leader = bits & 16,
				.down = bits & 32, .peer_twin_recvs = bits & 64,
				.unheard = bits & 128,
			};
			bool two;
			enum shiftu_fb_reply r = shiftu_fb_answer(&in, &two);

			seen |= 1U << (r + 4 * two);
			EXPECT_EQ(in.down, r == SHIFTU_FB_DOWN)
				TH_LOG("state %#x, inputs %#x: %d", in.state, bits, r);
			EXPECT_EQ(in.state != SHIFTU_SEND_DEFAULT || in.peer_twin_recvs, two)
				TH_LOG("state %#x, inputs %#x: two-sided %d", in.state, bits, two);
			if (r == SHIFTU_FB_GRANT && !two)
				EXPECT_TRUE(in.state == SHIFTU_SEND_DEFAULT && !in.posted &&
					    !in.peer_twin_recvs)
					TH_LOG("state %#x, inputs %#x: a reset under our own work",
					       in.state, bits);
			if (r == SHIFTU_FB_GRANT && two)
				EXPECT_TRUE(in.state == SHIFTU_SEND_FALLBACK && in.on_twin &&
					    !in.going && !(in.asking && in.leader))
					TH_LOG("state %#x, inputs %#x: granted while not on the twin, going or leading",
					       in.state, bits);
			if (r == SHIFTU_FB_LEADS)
				EXPECT_TRUE(two && (in.going || (in.asking && in.leader)));
			if (in.state == SHIFTU_SEND_DEAD)
				EXPECT_NE(SHIFTU_FB_GRANT, r);
			/* the failover's message would come after the failback */
			if (in.unheard && two)
				EXPECT_NE(SHIFTU_FB_GRANT, r)
					TH_LOG("state %#x, inputs %#x: granted before the peer's failover was heard",
					       in.state, bits);
		}
	/* every reply, one-sided and two-sided, but leads one-sided */
	EXPECT_EQ(0xff & ~(1U << SHIFTU_FB_LEADS), seen);
}

/* The cases the failback is told in (Documentation/libshiftu.rst). */
TEST(fb_cases)
{
	/* perftest's server: stayed on its default QP, posts nothing */
	struct shiftu_fb_in in = { .state = SHIFTU_SEND_DEFAULT };
	bool two;

	EXPECT_EQ(SHIFTU_FB_GRANT, shiftu_fb_answer(&in, &two));
	EXPECT_FALSE(two);
	/* ... but with receives of its own: busy, the reset would drop them */
	in.posted = true;
	EXPECT_EQ(SHIFTU_FB_BUSY, shiftu_fb_answer(&in, &two));
	/* both on their twins: the one that does not ask grants */
	in = (struct shiftu_fb_in){ .state = SHIFTU_SEND_FALLBACK, .on_twin = true, .posted = true };
	EXPECT_EQ(SHIFTU_FB_GRANT, shiftu_fb_answer(&in, &two));
	EXPECT_TRUE(two);
	/* both ask: the leader says it leads, the other grants */
	in.asking = true;
	EXPECT_EQ(SHIFTU_FB_GRANT, shiftu_fb_answer(&in, &two));
	in.leader = true;
	EXPECT_EQ(SHIFTU_FB_LEADS, shiftu_fb_answer(&in, &two));
	/* going back already (its probe good, the move due or made) */
	in.asking = in.leader = false;
	in.going = true;
	EXPECT_EQ(SHIFTU_FB_LEADS, shiftu_fb_answer(&in, &two));
	/* the peer's failover message not handled yet: busy two-sided */
	in = (struct shiftu_fb_in){ .state = SHIFTU_SEND_FALLBACK, .on_twin = true, .unheard = true };
	EXPECT_EQ(SHIFTU_FB_BUSY, shiftu_fb_answer(&in, &two));
	/* ... but one-sided the asker made sure of it, and our grant of a
	 * first request forgot it: a request asked again is granted */
	in = (struct shiftu_fb_in){ .state = SHIFTU_SEND_DEFAULT, .unheard = true };
	EXPECT_EQ(SHIFTU_FB_GRANT, shiftu_fb_answer(&in, &two));
	/* our own port still down: down, whatever else */
	in.down = true;
	EXPECT_EQ(SHIFTU_FB_DOWN, shiftu_fb_answer(&in, &two));
}

TEST(fb_cancels)
{
	unsigned int bits, wins = 0;
	size_t st;

	for (st = 0; st < sizeof(states) / sizeof(states[0]); st++)
		for (bits = 0; bits < 32; bits++) {
			struct shiftu_fb_cancel_in in = {
				.state = states[st], .on_twin = bits & 1, .tw_old = bits & 2,
				.expected = bits & 4, .open = bits & 8, .same = bits & 16,
			};
			bool w = shiftu_fb_cancel_wins(&in);

			wins += w;
			/* only from the old twin a grant left us on: never a
			 * QP on its default QP, going back, or given up */
			if (w)
				EXPECT_TRUE(in.state == SHIFTU_SEND_FALLBACK && in.on_twin &&
					    in.tw_old)
					TH_LOG("state %#x, inputs %#x: cancel won off the old twin",
					       in.state, bits);
			/* followed already, or another failback's: nothing */
			if (!in.open || !in.same)
				EXPECT_FALSE(w)
					TH_LOG("state %#x, inputs %#x: a followed or older grant cancelled",
					       in.state, bits);
		}
	/* reachable, and in one case only */
	EXPECT_EQ(1U, wins);
}

/* The cases the cancel is told in (Documentation/libshiftu.rst). */
TEST(fb_cancel_cases)
{
	/* we granted, the asker's message has not come (or waits for fo_lock) */
	struct shiftu_fb_cancel_in in = {
		.state = SHIFTU_SEND_FALLBACK, .on_twin = true, .tw_old = true,
		.expected = true, .open = true, .same = true,
	};

	EXPECT_TRUE(shiftu_fb_cancel_wins(&in));
	/* we followed first: back on the default QP, the grant closed */
	in = (struct shiftu_fb_cancel_in){ .state = SHIFTU_SEND_DEFAULT, .same = true };
	EXPECT_FALSE(shiftu_fb_cancel_wins(&in));
	/* the peer asked us to rejoin first, and we did: renewed, closed */
	in = (struct shiftu_fb_cancel_in){ .state = SHIFTU_SEND_FALLBACK, .on_twin = true,
					   .same = true };
	EXPECT_FALSE(shiftu_fb_cancel_wins(&in));
	/* a cancel of an older failback, taken late from the store */
	in = (struct shiftu_fb_cancel_in){
		.state = SHIFTU_SEND_FALLBACK, .on_twin = true, .tw_old = true,
		.expected = true, .open = true,
	};
	EXPECT_FALSE(shiftu_fb_cancel_wins(&in));
}

TEST_HARNESS_MAIN
