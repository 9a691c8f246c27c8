/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * wrid.h: the work-request ids of the library's own requests, named in one
 * place, and the one function that tells them from the application's.
 *
 * The library posts requests of its own on the application's QPs (a
 * drain's markers, a failback's probe, the handshake's control messages),
 * on their twins, and on the bells' QPs, whose CQs are the application's.
 * Their completions, good or flushed, are the library's: every path that
 * takes completions from a CQ, to hand them to the application or to
 * count a drain, asks shiftu_wrid_kind() what each one is, and none of
 * the library's ever reaches the application.  Each id starts with
 * "SHIFT" in ASCII (shiftu_wrid_ranged()).
 *
 * The application may use any id, those that start so included: the
 * library takes no part of the 64-bit space for itself.  A request of the
 * application's whose id starts with "SHIFT" is posted under a renamed
 * id, SHIFTU_WRID_RENAMED, which names a slot of its context's table that
 * keeps the application's id (wridtab.h); its completion gets that id
 * back as it leaves the library's poll for the application
 * (shiftu_wrid_out()), and not before.  So every id in a CQ that starts
 * with "SHIFT" is one the library posted, and shiftu_wrid_kind() is
 * exact: an application's id is never taken for the library's.  The
 * common posts test one byte for it (shiftu_wrid_maybe()): pointers and
 * indices never pass it.
 */
#ifndef _SHIFTU_WRID_H
#define _SHIFTU_WRID_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* "SHIFTMRK", "SHIFTRMK", "SHIFTPRB": a drain's markers, a probe */
#define MARKER_WR_ID		0x5348494654de4b52ULL
#define RMARKER_WR_ID		0x53484946545d4b52ULL
#define PROBE_WR_ID		0x5348494654505242ULL
/* the handshake's control messages (handshake.h): "SHIFTCTS", "SHIFTCTR" */
#define SHIFTU_CTRL_SEND_ID	0x5348494654435453ULL
#define SHIFTU_CTRL_RECV_ID	0x5348494654435452ULL
/*
 * A control receive on the default QP: "SHIFTD" and the QP's reconnect
 * generation (@vq->ctrl_gen), so that a message that came before the last
 * reset and still waits in the CQ is told from the one awaited now.
 */
#define SHIFTU_CTRL_DEF_ID(gen)	(0x5348494654440000ULL | (uint16_t)(gen))
/* a bell's receive (bell.h): "SHIFTBLL" */
#define SHIFTU_BELL_ID		0x5348494654424c4cULL
/*
 * An application's receive posted on an SRQ whose QPs the library moves
 * one by one: "SHIFT", the SRQ's table (one of SHIFTU_SRQ_TABLES: the top
 * three bits of the sixth byte set, which no id above has) and its entry
 * in the table (srqtab.h); its completion hands the application its own
 * id back.
 */
#define SHIFTU_SRQ_TABLES	32U
#define SHIFTU_SRQ_ID_BASE	0x5348494654e00000ULL
#define SHIFTU_SRQ_ID(t, i)	(SHIFTU_SRQ_ID_BASE | (uint64_t)((t) & 31) << 16 | (uint16_t)(i))
/*
 * An application's request renamed (wridtab.h): "SHIFT", the sixth byte's
 * top two bits 10 (0x80 to 0xbf, which no id above has), the slot's
 * generation (10 bits) and the slot (12 bits).
 */
#define SHIFTU_RENAMED_ID_BASE	0x5348494654800000ULL
#define SHIFTU_RENAMED_ID(gen, slot)	\
	(SHIFTU_RENAMED_ID_BASE | (uint64_t)((gen) & 0x3ff) << 12 | ((slot) & 0xfff))

/* The prefix every id of the library's starts with, "SHIFT". */
#define SHIFTU_WRID_PREFIX	0x5348494654ULL

/* @id is in the library's range: the application's is renamed. */
static inline bool shiftu_wrid_ranged(uint64_t id)
{
	return (id >> 24) == SHIFTU_WRID_PREFIX;
}

/*
 * @id may be in the library's range: its top byte is 'S'.  The posts'
 * common path tests this, one compare of a byte in memory; the cold path
 * it leads to asks shiftu_wrid_ranged().
 */
static inline bool shiftu_wrid_maybe(uint64_t id)
{
	return (uint8_t)(id >> 56) == (uint8_t)(SHIFTU_WRID_PREFIX >> 32);
}

/* @id is an SRQ table's (SHIFTU_WRID_SRQ below), in one compare. */
static inline bool shiftu_wrid_srq(uint64_t id)
{
	return (id & ~0x1fffffULL) == SHIFTU_SRQ_ID_BASE;
}

/* What a work request's id says it is. */
enum shiftu_wrid {
	SHIFTU_WRID_APP,	/* the application's */
	SHIFTU_WRID_MARKER,	/* a drain's marker behind the send queue */
	SHIFTU_WRID_RMARKER,	/* ... behind the receive queue */
	SHIFTU_WRID_PROBE,	/* a failback's probe */
	SHIFTU_WRID_CTRL_SEND,	/* a control message we sent */
	SHIFTU_WRID_CTRL_RECV,	/* a control receive on a twin */
	SHIFTU_WRID_CTRL_DEF,	/* a control receive on a default QP */
	SHIFTU_WRID_BELL,	/* a bell's receive */
	SHIFTU_WRID_SRQ,	/* an application's receive on a table's SRQ */
	SHIFTU_WRID_RENAMED,	/* an application's request whose id was in our range */
};

/* The kind of the work request id @id.  Any thread; no state read. */
static inline enum shiftu_wrid shiftu_wrid_kind(uint64_t id)
{
	/* one compare for the application's ids: in a CQ, they never start
	 * "SHIFT" (those that did were renamed) */
	if (!shiftu_wrid_ranged(id))
		return SHIFTU_WRID_APP;
	switch (id) {
	case MARKER_WR_ID:		return SHIFTU_WRID_MARKER;
	case RMARKER_WR_ID:		return SHIFTU_WRID_RMARKER;
	case PROBE_WR_ID:		return SHIFTU_WRID_PROBE;
	case SHIFTU_CTRL_SEND_ID:	return SHIFTU_WRID_CTRL_SEND;
	case SHIFTU_CTRL_RECV_ID:	return SHIFTU_WRID_CTRL_RECV;
	case SHIFTU_BELL_ID:		return SHIFTU_WRID_BELL;
	default:
		break;
	}
	if ((id & ~0xffffULL) == SHIFTU_CTRL_DEF_ID(0))
		return SHIFTU_WRID_CTRL_DEF;
	if (shiftu_wrid_srq(id))
		return SHIFTU_WRID_SRQ;
	if ((id & ~0x3fffffULL) == SHIFTU_RENAMED_ID_BASE)
		return SHIFTU_WRID_RENAMED;
	/* "SHIFT" and nothing we post: nobody's (the application's were renamed) */
	return SHIFTU_WRID_APP;
}

/*
 * A request of the application's, under its own id or under one of the
 * library's (an SRQ table's, a renamed one): what a drain counts and a
 * move carries over.
 */
static inline bool shiftu_wrid_app(uint64_t id)
{
	enum shiftu_wrid k = shiftu_wrid_kind(id);

	return k == SHIFTU_WRID_APP || k == SHIFTU_WRID_RENAMED;
}

/*
 * A completion of one of the library's own requests, never the
 * application's.  An SRQ table's id and a renamed one are not: they are
 * the application's requests under the library's names, given their own
 * back before the application sees them (shiftu_wrid_out()).  (A renamed
 * unsignaled send's good completion is the library's too: that one
 * shiftu_wrid_out() takes out.)
 */
static inline bool shiftu_wc_ours(const struct ibv_wc *wc)
{
	enum shiftu_wrid k = shiftu_wrid_kind(wc->wr_id);

	return k != SHIFTU_WRID_APP && k != SHIFTU_WRID_SRQ && k != SHIFTU_WRID_RENAMED;
}

/* The table and the entry an SRQ id names (SHIFTU_WRID_SRQ). */
static inline uint32_t shiftu_srq_id_table(uint64_t id)
{
	return (uint32_t)(id >> 16) & 31;
}

static inline uint32_t shiftu_srq_id_index(uint64_t id)
{
	return (uint16_t)id;
}

/* The slot and the generation a renamed id names (SHIFTU_WRID_RENAMED). */
static inline uint32_t shiftu_renamed_slot(uint64_t id)
{
	return (uint32_t)id & 0xfff;
}

static inline uint16_t shiftu_renamed_gen(uint64_t id)
{
	return (uint16_t)(id >> 12) & 0x3ff;
}

/* A control receive's generation on a default QP (SHIFTU_WRID_CTRL_DEF). */
static inline uint16_t shiftu_ctrl_def_gen(uint64_t id)
{
	return (uint16_t)id;
}

#endif /* _SHIFTU_WRID_H */
