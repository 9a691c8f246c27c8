/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proto.h: the failover protocol's decisions, as pure functions of what
 * the library recorded and what the peer said: no verbs, locks, clock or
 * allocation here, so that a host test can put every case to them
 * (selftests/host/shiftu_proto.c) and the failover files only carry them
 * out (failover_int.h).
 *
 * The boundary they keep (SHIFT, section 4): RC executes a QP's requests
 * in order, so the peer's count of the two-sided messages it received
 * (SEND, WRITE_WITH_IMM: each consumes a receive) tells which outstanding
 * requests executed.  Those up to the last message it received executed
 * and are not replayed (a message never arrives twice); every one after
 * is replayed, in order (a message never arrives before its data, and
 * none is lost).  Replaying is sound because everything else is
 * idempotent up to the next message: WRITEs and READs, whose responses
 * may be what was lost, so a READ is replayed even before the cut.  An
 * atomic is not idempotent: with one outstanding nothing is replayed and
 * the application gets the errors, as without the library.
 */
#ifndef _SHIFTU_PROTO_H
#define _SHIFTU_PROTO_H

#include <stdbool.h>
#include <stdint.h>

#include "ring.h"
#include "serial.h"
#include "shiftu.h"
#include "util.h"

/*
 * Internal send states beyond enum shiftu_send_state: waiting for the peer's
 * receive count before replaying (reported as FALLBACK); gave up, unprotected.
 */
#define SHIFTU_SEND_HANDSHAKE	0x40
#define SHIFTU_SEND_DEAD	0x80

static inline bool shiftu_op_two_sided(uint32_t opcode)
{
	return opcode < 32 && (SHIFTU_TWO_SIDED & (1U << opcode));
}

static inline bool shiftu_op_atomic(uint32_t opcode)
{
	return shiftu_wr_atomic(opcode);
}

/*
 * The sends of a QP's ring that are on no QP: entries [@lo, @hi) but for
 * their READs.  A replay completes good, without posting them, the sends
 * before its cut (they executed at the peer), and posts again the READs
 * among them (their responses may be what was lost): while such a READ is
 * outstanding, the sends posted on the QP the work went to are not the
 * last ones recorded, but those with these taken out.  A drain flushes
 * none of them, and no later move may post or complete them again.  Empty
 * (@lo == @hi) until a replay leaves some; a later replay from inside it
 * takes it over (shiftu_plan_sends()).
 */
struct shiftu_sq_gap {
	uint64_t lo;
	uint64_t hi;
};

static inline bool shiftu_gap_holds(const struct shiftu_sq_gap *g, uint64_t i, uint32_t opcode)
{
	return shiftu_seq64_le(g->lo, i) && shiftu_seq64_lt(i, g->hi) &&
	       opcode != IBV_WR_RDMA_READ;
}

/*
 * The last entry before @at of @sq that is not in @gap: the one posted
 * before it.  The messages among those skipped are added to *@msgs.
 */
static inline uint64_t shiftu_posted_prev(struct shiftu_ring *sq, const struct shiftu_sq_gap *gap,
					  uint64_t at, uint64_t *msgs)
{
	uint32_t op;

	for (;;) {
		op = shiftu_swqe_at(sq, --at)->opcode;
		if (!shiftu_gap_holds(gap, at, op))
			return at;
		*msgs += shiftu_op_two_sided(op);
	}
}

/*
 * Where the last @n sends posted before entry @end of @sq begin: the
 * first of them, in *@from.  Those in @gap are skipped.  Returns false
 * when @n cannot be found: more than a ring of entries back (a record
 * may have been overwritten), or below a gap, whose start nothing before
 * was outstanding at.
 */
bool shiftu_posted_from(struct shiftu_ring *sq, const struct shiftu_sq_gap *gap, uint64_t end,
			uint64_t n, uint64_t *from) SHIFTU_HIDDEN;

/* The sends outstanding at a move, surveyed (shiftu_plan_sends()). */
struct shiftu_send_plan {
	uint64_t cut;		/* [from, cut) executed at the peer */
	struct shiftu_sq_gap gap;	/* what was on no QP before the move */
	struct shiftu_sq_gap next;	/* ... and after its replay */
	bool atomic;		/* an atomic among them that was posted */
	bool two_sided;		/* a message among them */
	bool peer_known;	/* the cut is from the peer's count */
	bool count_bad;		/* that count is beyond what was sent */
};

/*
 * Survey the sends outstanding, entries [@from, @sq->head) of @sq but
 * those @gap holds, of a QP that has sent @sent2 messages in all.  Those
 * from @posted on were held, never posted (shiftu_posted_end(), replay.c): an
 * atomic among them goes for the first time, it is in flight nowhere.  With
 * @peer_known, @peer is the peer's count of messages received (64 bits,
 * extended from the wire's 31: serial.h), and the cut follows the last
 * message it covers; a count beyond @sent2 is bad (the peer cannot have
 * received more than we sent).  Without it the cut is @from: nothing is
 * known to have executed.
 */
void shiftu_plan_sends(struct shiftu_send_plan *p, struct shiftu_ring *sq, uint64_t from,
		       uint64_t posted, const struct shiftu_sq_gap *gap, uint64_t sent2,
		       bool peer_known, uint64_t peer) SHIFTU_HIDDEN;

/* What a move does with its outstanding sends. */
enum shiftu_sends_next {
	SHIFTU_SENDS_REPLAY,	/* replay them now (shiftu_plan_replays()) */
	SHIFTU_SENDS_HOLD,	/* hold them until the peer's count comes */
	SHIFTU_SENDS_GIVE_UP,	/* an atomic, or a bad count: the errors go
				 * to the application, nothing is replayed */
};

/*
 * After @p: whether the move replays now.  @asking: this side asks the
 * peer to join (its count comes in the answer); @back: a failback, which
 * always waits for the peer's count.  A message outstanding also waits for
 * it: only the peer knows whether it arrived.
 */
static inline enum shiftu_sends_next shiftu_plan_next(const struct shiftu_send_plan *p,
						      bool asking, bool back)
{
	if (p->atomic || p->count_bad)
		return SHIFTU_SENDS_GIVE_UP;
	if (asking || ((p->two_sided || back) && !p->peer_known))
		return SHIFTU_SENDS_HOLD;
	return SHIFTU_SENDS_REPLAY;
}

/*
 * Whether entry @i of @p (opcode @opcode) is posted again; if not, it
 * executed at the peer and completes good (when it was signaled).  The
 * ring's places compare as serial numbers, like the counts.
 */
static inline bool shiftu_plan_replays(const struct shiftu_send_plan *p, uint64_t i,
				       uint32_t opcode)
{
	return !shiftu_seq64_lt(i, p->cut) || opcode == IBV_WR_RDMA_READ;
}

/*
 * Whether entry @i of @p (opcode @opcode) was completed by an earlier
 * replay and is on no QP: neither posted nor completed again.
 */
static inline bool shiftu_plan_done(const struct shiftu_send_plan *p, uint64_t i, uint32_t opcode)
{
	return shiftu_gap_holds(&p->gap, i, opcode);
}

/*
 * The peer's control message (handshake.h), as the QP it came for stands:
 * what to do with it.  The message carries the peer's receive count and
 * says whether it answers ours; it came on the default QP (a two-sided
 * failback's) or on the twin (a failover's).
 */
struct shiftu_hs_in {
	uint8_t state;		/* the QP's send state: enum shiftu_send_state,
				 * SHIFTU_SEND_HANDSHAKE or SHIFTU_SEND_DEAD */
	bool on_twin;		/* the QP's work is on its twin */
	bool on_default;	/* the message came on the default QP */
	bool ack;		/* it answers ours */
	bool old_gen;		/* on the default QP, from before its last
				 * reset: a count for a failback a rejoin cut
				 * short, left in a CQ nobody polled */
	bool expected;		/* we granted the peer a failback, whose
				 * message comes on the default QP */
	bool busy;		/* the QP has posted work of its own */
};

enum shiftu_hs_act {
	SHIFTU_HS_OLD,		/* from before a reset: dropped, unseen */
	SHIFTU_HS_STALE,	/* from before the last move: dropped */
	SHIFTU_HS_FOLLOW_BACK,	/* the peer fails back: follow it */
	SHIFTU_HS_REJOIN,	/* the peer failed over again while we went
				 * back: follow it over, answering */
	SHIFTU_HS_FOLLOW_OVER,	/* the peer failed over: our work goes the
				 * same broken way, follow it */
	SHIFTU_HS_ANSWER,	/* it failed over, we have nothing to move:
				 * answer and stay */
	SHIFTU_HS_DONE,		/* an earlier exchange's answer: done */
	SHIFTU_HS_REPLAY,	/* the count our held sends waited for */
	SHIFTU_HS_NOTE,		/* a count to keep, nothing to do */
};

/*
 * What the message @in describes calls for.  Only a message that is not
 * an answer moves a QP; only one on the twin fails it over; one on the
 * default QP moves it back only for a failback we granted.
 */
enum shiftu_hs_act shiftu_hs_decide(const struct shiftu_hs_in *in) SHIFTU_HIDDEN;

/*
 * The peer asks us, through the store, to reset our default QP for its
 * failback (fbanswer.c: failback_answer()), as our QP stands.  One-sided if
 * we are on our default QP and the peer's receives are not on its twin:
 * the peer comes back behind its fence, and we take no part.  Two-sided
 * otherwise: both sides go back by the handshake, the peer first.
 */
struct shiftu_fb_in {
	uint8_t state;		/* our QP's send state, as shiftu_hs_in's */
	bool on_twin;		/* its work is on its twin */
	bool posted;		/* it has posted sends, or receives, of its own */
	bool going;		/* our own failback is granted: probing, going
				 * back due, taken, or under way */
	bool asking;		/* we ask the peer ourselves, not answered yet */
	bool leader;		/* of the two, we ask (the lower GID and QPN) */
	bool down;		/* our own port is down */
	bool peer_twin_recvs;	/* the peer's receives are on its twin */
	bool unheard;		/* the peer's message of the failover this
				 * failback ends has not been handled yet
				 * (two-sided: one-sided, the asker made sure) */
};

enum shiftu_fb_reply {
	SHIFTU_FB_GRANT,	/* reset the QP for it (if that fails: busy) */
	SHIFTU_FB_BUSY,		/* ask again soon: one-sided, a reset would
				 * drop what we posted; two-sided, we are not
				 * simply on our twin; either, the failover's
				 * exchange is not over on our side */
	SHIFTU_FB_LEADS,	/* we go back ourselves: the peer follows by
				 * the handshake */
	SHIFTU_FB_DOWN,		/* our own port is down: a probe would fail */
};

/*
 * The answer to the peer's failback request @in; *@two_sided gets whether
 * the failback is two-sided.
 */
enum shiftu_fb_reply shiftu_fb_answer(const struct shiftu_fb_in *in, bool *two_sided) SHIFTU_HIDDEN;

/*
 * The peer, going back by the two-sided failback we granted and hearing
 * nothing from us, asks us through the store to cancel it (failback.c:
 * cancel_ask()); as our QP stands (goback.c: shiftu_cancel_serve()).
 */
struct shiftu_fb_cancel_in {
	uint8_t state;		/* our QP's send state, as shiftu_hs_in's */
	bool on_twin;		/* its work is on its twin */
	bool tw_old;		/* that twin is still joined to the peer's old
				 * one (vq->tw_old) */
	bool expected;		/* the failback's message is awaited on our
				 * default QP (vq->ctrl_default) */
	bool open;		/* a two-sided grant of ours is not followed
				 * yet (vq->fb_grant_open) */
	bool same;		/* the cancel names that grant's request
				 * (vq->fb_granted): not an older failback's */
};

/*
 * Whether the cancel @in wins over our grant: we drop it and join the
 * peer's renewed twin, speaking first.  Not once we followed (our answer
 * is on its way to the peer's default QP, where it listens), nor for a
 * cancel of another failback than the one open.
 */
bool shiftu_fb_cancel_wins(const struct shiftu_fb_cancel_in *in) SHIFTU_HIDDEN;

#endif /* _SHIFTU_PROTO_H */
