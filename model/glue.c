// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * glue.c: the calls model/shift.pml makes into the library's protocol
 * decisions (userlib/proto.c, proto.h, serial.h), compiled into spin's
 * verifier.  Each function does what the failover files (move.c,
 * replay.c, failover.c: userlib/failover_int.h) and handshake.c do around
 * the same call, with the model's small numbers (counts and ring places as
 * offsets from a start near a wrap) turned into the library's 64-bit ones
 * and back.  Nothing here decides anything: a decision that changes in
 * proto.c changes in the model.
 *
 * The seeded defects (make -C model SEED=...) sit here, where the failover
 * files make the same calls, so that the model can be shown to catch them:
 *   SEED_31BIT     the peer's 31-bit count read as the low 32 bits of our
 *                  count (the cut one bit too narrow, issue 18)
 *   SEED_NO_FENCE  a move replays at once, without waiting for the peer's
 *                  count: a notification the peer had may go again, and
 *                  data may land after its notification
 *   SEED_ATOMIC    an atomic outstanding does not stop the replay
 *   SEED_GAP_WALK  a move takes the sends its drain flushed for the last
 *                  ones recorded, whatever a replay left on no QP (the
 *                  model's fourth finding on failback, fixed)
 * and those the model carries out itself (model_opts(), shift.pml):
 *   SEED_STAY_SPEAKS        a side that answered and stayed speaks again
 *                           when it moves (the library's defect the model
 *                           found first)
 *   SEED_FAILBACK_NO_DRAIN  a one-sided failback releases the requests it
 *                           held without waiting for the twin to complete
 *                           everything up to the fence
 *   SEED_ASK_UNHEARD        a side asks for, or grants two-sided, a failback
 *                           before the peer's failover message is handled
 *                           (the model's first finding on failback, fixed)
 *   SEED_KEEP_REQ           a side that grants the peer's two-sided
 *                           failback leaves its own request in the store
 *                           (the model's second finding on failback, fixed)
 *   SEED_TWIN_ERRORS        a twin that fails under the work gives its
 *                           errors to the application, as the library did
 *                           before session 28 (M_TD)
 * The open findings (OPEN_*, shift.pml) lift an assumption under which
 * the model holds, and show a defect of the library's.
 */
#include <stdint.h>

#include "proto.h"
#include "serial.h"
#include "shift_model.h"

_Static_assert(S_DEFAULT == SHIFTU_SEND_DEFAULT && S_FALLBACK == SHIFTU_SEND_FALLBACK &&
	       S_WAIT_SIGNALED == SHIFTU_SEND_WAIT_SIGNALED &&
	       S_WAIT_DRAINED == SHIFTU_SEND_WAIT_DRAINED && S_HANDSHAKE == SHIFTU_SEND_HANDSHAKE &&
	       S_DEAD == SHIFTU_SEND_DEAD,
	       "the model's send states are proto.h's");
_Static_assert(N_REPLAY == SHIFTU_SENDS_REPLAY && N_HOLD == SHIFTU_SENDS_HOLD &&
	       N_GIVE_UP == SHIFTU_SENDS_GIVE_UP, "the model's plans are proto.h's");
_Static_assert(F_GRANT == SHIFTU_FB_GRANT && F_BUSY == SHIFTU_FB_BUSY &&
	       F_LEADS == SHIFTU_FB_LEADS && F_DOWN == SHIFTU_FB_DOWN,
	       "the model's failback answers are proto.h's");
_Static_assert(A_OLD == SHIFTU_HS_OLD && A_STALE == SHIFTU_HS_STALE &&
	       A_FOLLOW_BACK == SHIFTU_HS_FOLLOW_BACK && A_REJOIN == SHIFTU_HS_REJOIN &&
	       A_FOLLOW_OVER == SHIFTU_HS_FOLLOW_OVER && A_ANSWER == SHIFTU_HS_ANSWER &&
	       A_DONE == SHIFTU_HS_DONE && A_REPLAY == SHIFTU_HS_REPLAY &&
	       A_NOTE == SHIFTU_HS_NOTE, "the model's handshake acts are proto.h's");

/*
 * The counts and ring places start here, as shiftu_count_start() lets the
 * test build start them: one below each wrap the handshake's count crosses
 * (2^31 on the wire, 2^32, 2^64), so that the first message crosses it.
 * The model picks one (start_i).
 */
static const uint64_t starts[M_STARTS] = {
	0, (1ULL << 31) - 1, (1ULL << 32) - 1, UINT64_MAX,
};

static const uint32_t opcodes[] = {
	[OP_WRITE] = IBV_WR_RDMA_WRITE, [OP_WIMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
	[OP_SEND] = IBV_WR_SEND, [OP_READ] = IBV_WR_RDMA_READ,
	[OP_FADD] = IBV_WR_ATOMIC_FETCH_AND_ADD,
};

/* A side's sends as post.c records them: ring places start + k. */
struct model_ring {
	struct shiftu_ring r;
	struct shiftu_swqe slot[4];
};
_Static_assert(M_L <= 4, "the ring holds a script");

/* sent2 after the first @head requests of @ops */
static uint64_t sent2_of(int start, const unsigned char *ops, int head)
{
	uint64_t sent2 = starts[start];
	int k;

	for (k = 0; k < head; k++)
		sent2 += shiftu_op_two_sided(opcodes[ops[k]]);
	return sent2;
}

static void lay_out(struct model_ring *b, int start, const unsigned char *ops, int head)
{
	uint64_t sent2 = starts[start];
	int k;

	b->r.slots = b->slot;
	b->r.mask = 3;
	b->r.stride = sizeof(struct shiftu_swqe);
	for (k = 0; k < head; k++) {
		struct shiftu_swqe *e = shiftu_swqe_at(&b->r, starts[start] + k);

		e->opcode = opcodes[ops[k]];
		sent2 += shiftu_op_two_sided(e->opcode);
		e->seq2 = sent2;
	}
	b->r.head = starts[start] + head;
}

/* The count a control message carries (shiftu_ctrl_send()): @consumed messages received. */
int model_wire(int start, int consumed)
{
	return (int)shiftu_hs_count_put(starts[start] + consumed);
}

/*
 * The peer's count as shiftu_hs_message() reads the 31 bits @wire: near
 * our own sent2, that of the first @head requests of @ops.
 */
uint64_t model_peer(int start, int wire, const unsigned char *ops, int head)
{
	uint64_t sent2 = sent2_of(start, ops, head);

#ifdef SEED_31BIT
	/* the defect: the wire's 31 bits taken for a 32-bit cut of our count */
	return (sent2 & ~(uint64_t)UINT32_MAX) | (uint32_t)wire;
#else
	return shiftu_hs_count_get((uint32_t)wire, sent2);
#endif
}

/* The gap [@lo, @hi) a replay left (proto.h), as the library's places. */
static struct shiftu_sq_gap gap_of(int start, int lo, int hi)
{
	return (struct shiftu_sq_gap){ .lo = starts[start] + lo, .hi = starts[start] + hi };
}

/*
 * Where a move finds the @n sends a drain flushed, the first @head of
 * @ops recorded and a replay's gap [@lo, @hi) left on no QP
 * (shiftu_posted_from()); -1 if it cannot.
 */
int model_from(int start, const unsigned char *ops, int head, int n, int lo, int hi)
{
	struct shiftu_sq_gap g = gap_of(start, lo, hi);
	struct model_ring b;
	uint64_t from;

	lay_out(&b, start, ops, head);
#ifdef SEED_GAP_WALK
	/* the defect: the flushed taken for the last ones recorded */
	(void)g;
	from = b.r.head - n;
#else
	if (!shiftu_posted_from(&b.r, &g, b.r.head, n, &from))
		return -1;
#endif
	return (int)(from - starts[start]);
}

/*
 * A move's plan (shiftu_move_locked(), then shiftu_replay()): the sends
 * [@from, @head) of @ops outstanding but those the gap [@lo, @hi) holds, those from
 * @posted on held (posted by no one yet), the peer's
 * count @peer if @known; @back for a failback (MOVE_BACK), which always
 * waits for the count.  Returns the shiftu_plan_next() outcome in bits
 * 0-1, plan.atomic in bit 2, plan.count_bad in bit 3, from bit 8 on one
 * bit per request k that shiftu_plan_replays() posts again, from bit 16
 * one per request k shiftu_plan_done() says an earlier replay completed,
 * and in bits 24-27 the end of the gap the replay leaves (it starts at
 * @from).
 */
int model_plan(int start, const unsigned char *ops, int from, int posted, int head, int lo,
	       int hi, int known, uint64_t peer, int back)
{
	struct shiftu_sq_gap g = gap_of(start, lo, hi);
	struct shiftu_send_plan p;
	struct model_ring b;
	enum shiftu_sends_next next;
	int k, out;

	lay_out(&b, start, ops, head);
	shiftu_plan_sends(&p, &b.r, starts[start] + from, starts[start] + posted, &g,
			  sent2_of(start, ops, head), known, peer);
#ifdef SEED_ATOMIC
	p.atomic = false;
#endif
	next = shiftu_plan_next(&p, false, back);
#ifdef SEED_NO_FENCE
	if (next == SHIFTU_SENDS_HOLD)
		next = SHIFTU_SENDS_REPLAY;
#endif
	out = next | p.atomic << 2 | p.count_bad << 3 |
	      (int)(p.next.hi - starts[start]) << 24;
	for (k = from; k < head; k++)
		if (shiftu_plan_done(&p, starts[start] + k, opcodes[ops[k]]))
			out |= 1 << (16 + k);
		else if (shiftu_plan_replays(&p, starts[start] + k, opcodes[ops[k]]))
			out |= 1 << (8 + k);
	return out;
}

/*
 * What a control message calls for (shiftu_hs_message()): on the twin (a
 * failover's) or, @on_default, on the default QP (a two-sided failback's,
 * which @expected says we granted).  The model resets a default QP once
 * at most (no failback is cut short), so no message is from an older
 * generation of it.
 */
int model_hs_decide(int state, int on_twin, int on_default, int ack, int expected, int busy)
{
	struct shiftu_hs_in in = {
		.state = state, .on_twin = on_twin, .on_default = on_default, .ack = ack,
		.expected = expected, .busy = busy,
	};

	return shiftu_hs_decide(&in);
}

/*
 * The answer to the peer's failback request (failback_answer(),
 * shiftu_fb_answer()): the reply in bits 0-1, two-sided in bit 2.  The
 * model's ports are up once the path is back: never "down".
 */
int model_fb_answer(int state, int on_twin, int posted, int going, int asking, int leader,
		    int peer_twin_recvs, int unheard)
{
	struct shiftu_fb_in in = {
		.state = state, .on_twin = on_twin, .posted = posted, .going = going,
		.asking = asking, .leader = leader, .peer_twin_recvs = peer_twin_recvs,
		.unheard = unheard,
	};
	bool two;
	int r;

#ifdef SEED_ASK_UNHEARD
	in.unheard = false;
#endif
	r = shiftu_fb_answer(&in, &two);
	return r | two << 2;
}

/* The switches the model reads once, at its start (shift_model.h's O_*). */
int model_opts(void)
{
	return 0
#ifdef SEED_STAY_SPEAKS
	       | O_STAY_SPEAKS
#endif
#ifdef SEED_FAILBACK_NO_DRAIN
	       | O_NO_DRAIN
#endif
#ifdef SEED_ASK_UNHEARD
	       | O_ASK_UNHEARD
#endif
#ifdef SEED_KEEP_REQ
	       | O_KEEP_REQ
#endif
#ifdef SEED_ASKER_NO_CTRL
	       | O_ASKER_NO_CTRL
#endif
#ifdef SEED_TWIN_ERRORS
	       | O_TWIN_ERRORS
#endif
	       ;
}
