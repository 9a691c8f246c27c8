// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * proto.c: the failover protocol's decisions (proto.h).
 */
#include "proto.h"

bool shiftu_posted_from(struct shiftu_ring *sq, const struct shiftu_sq_gap *gap, uint64_t end,
			uint64_t n, uint64_t *from)
{
	bool bounded = gap->lo != gap->hi;
	uint64_t i = end, msgs = 0;

	for (; n; n--) {
		i = shiftu_posted_prev(sq, gap, i, &msgs);
		/* a ring back at most, and nothing below a gap was outstanding */
		if (end - i > (uint64_t)sq->mask + 1 ||
		    (bounded && shiftu_seq64_lt(i, gap->lo)))
			return false;
	}
	*from = i;
	return true;
}

void shiftu_plan_sends(struct shiftu_send_plan *p, struct shiftu_ring *sq, uint64_t from,
		       uint64_t posted, const struct shiftu_sq_gap *gap, uint64_t sent2,
		       bool peer_known, uint64_t peer)
{
	uint64_t i;

	p->cut = from;
	p->gap = *gap;
	p->atomic = p->two_sided = false;
	p->peer_known = peer_known;
	p->count_bad = peer_known && shiftu_seq64_lt(sent2, peer);
	for (i = from; i != sq->head; i++) {
		const struct shiftu_swqe *e = shiftu_swqe_at(sq, i);

		/* completed already: its message counts in the cut below */
		if (shiftu_gap_holds(gap, i, e->opcode))
			continue;
		p->atomic |= shiftu_op_atomic(e->opcode) && shiftu_seq64_lt(i, posted);
		if (!shiftu_op_two_sided(e->opcode))
			continue;
		p->two_sided = true;
		if (peer_known && shiftu_seq64_le(e->seq2, peer))
			p->cut = i + 1;
	}
	/* a replay from inside the gap leaves the rest of it on no QP too */
	p->next.lo = from;
	p->next.hi = gap->lo != gap->hi && shiftu_seq64_lt(p->cut, gap->hi) &&
		     shiftu_seq64_lt(from, gap->hi) ? gap->hi : p->cut;
}

enum shiftu_hs_act shiftu_hs_decide(const struct shiftu_hs_in *in)
{
	if (in->on_default && in->old_gen)
		return SHIFTU_HS_OLD;
	if (in->on_default && in->expected && in->on_twin && in->state == SHIFTU_SEND_FALLBACK &&
	    !in->ack)
		return SHIFTU_HS_FOLLOW_BACK;
	if (!in->on_default && !in->on_twin && in->state == SHIFTU_SEND_HANDSHAKE && !in->ack)
		return SHIFTU_HS_REJOIN;
	if (in->on_default == in->on_twin && in->state != SHIFTU_SEND_DEFAULT)
		return SHIFTU_HS_STALE;
	switch (in->state) {
	case SHIFTU_SEND_DEFAULT:
		if (in->ack || in->on_default)
			return SHIFTU_HS_DONE;
		return in->busy ? SHIFTU_HS_FOLLOW_OVER : SHIFTU_HS_ANSWER;
	case SHIFTU_SEND_HANDSHAKE:
		return SHIFTU_HS_REPLAY;
	default:
		return SHIFTU_HS_NOTE;
	}
}

enum shiftu_fb_reply shiftu_fb_answer(const struct shiftu_fb_in *in, bool *two_sided)
{
	bool mode = in->state != SHIFTU_SEND_DEFAULT || in->peer_twin_recvs;
	bool busy, leads;

	if (mode)
		busy = in->state != SHIFTU_SEND_FALLBACK || !in->on_twin || in->going ||
		       (in->asking && in->leader);
	else
		busy = in->posted;
	/*
	 * Two-sided, the peer's failover message, still on its way or not yet
	 * handled, would be taken after the failback for a new failover (a
	 * rejoin): not before it came.  One-sided, the peer asks only once it
	 * has our answer to that message (failback_step()), so we heard it;
	 * and our grant forgets it (a new exchange next), so a request asked
	 * again after a failed probe must not wait for it.
	 */
	if (mode)
		busy |= in->unheard;
	leads = mode && ((in->asking && in->leader) || in->going);
	*two_sided = mode;
	if (in->down)
		return SHIFTU_FB_DOWN;
	if (busy)
		return leads ? SHIFTU_FB_LEADS : SHIFTU_FB_BUSY;
	return SHIFTU_FB_GRANT;
}

bool shiftu_fb_cancel_wins(const struct shiftu_fb_cancel_in *in)
{
	/* a grant followed, or one the peer's rejoin took, is no longer open */
	return in->open && in->same && in->state == SHIFTU_SEND_FALLBACK && in->on_twin &&
	       in->tw_old && in->expected;
}
