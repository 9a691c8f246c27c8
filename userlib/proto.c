// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * proto.c: the failover protocol's decisions (proto.h).
 */
#include "proto.h"

void shiftu_plan_sends(struct shiftu_send_plan *p, struct shiftu_ring *sq, uint64_t from,
		       uint64_t sent2, bool peer_known, uint64_t peer)
{
	uint64_t i;

	p->from = from;
	p->head = sq->head;
	p->cut = from;
	p->atomic = p->two_sided = false;
	p->peer_known = peer_known;
	p->count_bad = peer_known && shiftu_seq64_lt(sent2, peer);
	for (i = from; i != sq->head; i++) {
		const struct shiftu_swqe *e = shiftu_swqe_at(sq, i);

		p->atomic |= shiftu_op_atomic(e->opcode);
		if (!shiftu_op_two_sided(e->opcode))
			continue;
		p->two_sided = true;
		if (peer_known && shiftu_seq64_le(e->seq2, peer))
			p->cut = i + 1;
	}
}
