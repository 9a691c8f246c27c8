/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * handshake.h: the two-way handshake of a two-sided failover (SHIFT paper
 * 4.1 and 4.3.2), and the watcher thread that hears it.
 *
 * Each side of a connection counts the receives its NIC completed
 * (@consumed) and numbers its two-sided sends (SEND, WRITE_WITH_IMM:
 * @seq2).  When a side fails over, it reposts its outstanding receives on
 * its twin first, then sends the peer one control message on the twin: a
 * zero-length SEND_WITH_IMM whose immediate is its receive count (a SEND
 * rather than the paper's WRITE_WITH_IMM: it needs no memory key).  It
 * lands in the control receive the library keeps at the head of every
 * twin's receive queue, ahead of any receive of the application's.  The
 * peer, woken by the completion event, does the same if it had not failed
 * over yet (its message is then the answer, SHIFTU_HS_ACK), and each side
 * replays its outstanding sends from the first one the other had not
 * received: a notification is never delivered twice, and the data before
 * it was written before it.  Sends wait for the count only when two-sided
 * ones are outstanding; a side with nothing to move answers and stays.
 *
 * The watcher thread (watcher.c) sleeps in poll(2) on the completion
 * channels of the twin CQs and hands what it finds to failover.c.
 */
#ifndef _SHIFTU_HANDSHAKE_H
#define _SHIFTU_HANDSHAKE_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "mailbox.h"
#include "wrid.h"

struct shiftu_cq;
struct shiftu_ctx;
struct shiftu_vqp;

/* the control messages' work-request ids are in wrid.h */

/*
 * the immediate: bit 31 marks an answer, bits 0-30 the receive count,
 * modulo 2^31 (serial.h: shiftu_hs_count_put(), shiftu_hs_count_get())
 */
#define SHIFTU_HS_ACK		0x80000000U
#define SHIFTU_HS_BATCH		8

struct shiftu_hs_msg {
	struct shiftu_vqp *vq;
	uint32_t imm;
	bool on_default;		/* came on the default QP, not the twin */
	/* not a SEND_WITH_IMM: a WRITE_WITH_IMM of the peer's application
	 * took the control receive, and its immediate is no count */
	bool foreign;
	/* on the default QP: its control receive's generation; on a twin:
	 * the twin's renewals when the message was polled */
	uint16_t gen;
};

/* A QP on an SRQ hears its peer through its mailboxes (mailbox.h). */

/*
 * @vq's mailbox on @side, registered on @pd (that side's protection
 * domain).  Returns 0 or -errno.  Context: the shadow thread.
 */
int shiftu_box_open(struct shiftu_vqp *vq, enum shiftu_box_side side, struct ibv_pd *pd);

/* ...both gone with its QP.  Context: the destroy verb, the twin destroyed. */
void shiftu_box_close(struct shiftu_vqp *vq);

/*
 * Hand the handshake every message a peer wrote into a mailbox since the
 * last look.  Returns whether any mailbox is open.  Context: the watcher,
 * no lock held.
 */
bool shiftu_box_sweep(void);

/*
 * Write @imm into the peer's mailbox on @side, through that side's QP.
 * Returns 0 or an errno.  Context: fo_lock.
 */
int shiftu_box_send(struct shiftu_vqp *vq, enum shiftu_box_side side, uint32_t imm);

/*
 * The messages in @vq's mailbox on @side are old: its QP there was just
 * reset, and only what comes after counts.  Context: the QP reset.
 */
void shiftu_box_reset(struct shiftu_vqp *vq, enum shiftu_box_side side);

/* Post a control receive on @vq's twin, or (!@twin) on its default QP being
 * reset for a two-sided failback.  Returns 0 or an errno.  A QP on an SRQ
 * takes none: its peer's message comes to its mailbox. */
int shiftu_ctrl_recv(struct shiftu_vqp *vq, bool twin);

/*
 * A control receive at the head of @vq's twin for the peer's next
 * failover, a new exchange, if it has none and holds none of the
 * application's receives (behind them it would take the peer's first
 * SEND, not its message).  Context: fo_lock held.
 */
void shiftu_ctrl_rearm(struct shiftu_vqp *vq);

/*
 * @wc, a completion of one of the library's control receives taken out of
 * a CQ: one that failed other than flushed is warned of, since a message
 * of the peer's application took the place of the peer's control message
 * (an empty receive: Soft-RoCE fails the QP, and the peer's request gets
 * IBV_WC_REM_OP_ERR).  Context: any.
 */
void shiftu_ctrl_recv_check(const struct ibv_wc *wc);

/* Send the peer our receive count (@ack: as an answer), on the QP the work
 * is on (@vq->on_twin).  Context: fo_lock. */
int shiftu_ctrl_send(struct shiftu_vqp *vq, bool ack);

/*
 * The completion channel for the twin CQs of @s, created on first use
 * (and the watcher thread with it); NULL if it cannot be.  Context: the
 * shadow thread.
 */
struct ibv_comp_channel *shiftu_hs_channel(struct shiftu_ctx *s);

/*
 * @ch, a backup context's channel whose twin CQs are all gone, leaves the
 * watcher and is destroyed.  Context: no library lock held (it waits for
 * the watcher's round, which takes CQ locks).
 */
void shiftu_hs_channel_gone(struct ibv_comp_channel *ch);

#endif /* _SHIFTU_HANDSHAKE_H */
