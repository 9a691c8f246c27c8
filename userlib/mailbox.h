/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mailbox.h: a QP's mailboxes, the memory its peer writes the handshake's
 * control messages into when the QP's receives come from an SRQ.  Types
 * and constants only, for struct shiftu_vqp (vqpstate.h), which holds one
 * on each side; box.c fills them and the watcher's sweep reads them
 * (watcher.c, box_int.h), their functions in handshake.h.
 */
#ifndef _SHIFTU_MAILBOX_H
#define _SHIFTU_MAILBOX_H

#include <stdint.h>

struct ibv_mr;

/*
 * A QP whose receives come from an SRQ cannot keep a control receive of
 * the library's in the SRQ (srq.h): the peer writes its messages into the
 * QP's mailboxes instead (box.c), one on each side, 16-byte slots of the
 * library's memory registered for remote writes on the protection domain
 * of that side's QP and published with the twin.  A slot's @word is the
 * message's sequence number (high half) and the immediate a SEND would
 * carry (low half); @check is @word ^ SHIFTU_BOX_KEY, so that a look that
 * meets a write half done waits for the next one.  The watcher looks
 * every SHIFTU_BOX_MS.  A QP whose peer has mailboxes has some too, for
 * the messages it writes (they leave from registered memory).
 */
struct shiftu_box {
	uint64_t word;
	uint64_t check;
};

#define SHIFTU_BOX_KEY		0x5348494654424f58ULL	/* "SHIFTBOX" */
#define SHIFTU_BOX_MS		5
#define SHIFTU_BOX_SLOTS	4

enum shiftu_box_side {
	SHIFTU_BOX_DEFAULT,		/* on the application's QP */
	SHIFTU_BOX_TWIN,
	SHIFTU_BOX_SIDES,
};

/* A QP's mailbox on one side: SHIFTU_BOX_SLOTS slots in, as many out. */
struct shiftu_mailbox {
	struct shiftu_box *slots;
	struct ibv_mr *mr;
	uint32_t seen;			/* the last message handed over (box_lock) */
	uint32_t sent;			/* the last one written to the peer's (fo_lock) */
};

#endif /* _SHIFTU_MAILBOX_H */
