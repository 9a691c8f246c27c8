// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * box.c: the mailboxes of QPs whose receives come from an SRQ
 * (mailbox.h, handshake.h).
 *
 * A control receive of the library's cannot wait in an SRQ: the
 * application's receives for the other QPs on the SRQ go there too, and
 * one of their peers' messages would land in the library's empty receive
 * (Soft-RoCE fails it: "remote operation error" at the sender).  Nor can
 * the peer's message take one of the application's receives: the side it
 * comes to may hold none yet (a twin SRQ, while every QP on the SRQ is on
 * its default QP), and the message would wait there (RNR) for the move
 * it is meant to start.  An RDMA WRITE needs no receive: the peer writes
 * its message into the QP's mailbox on that side, and the watcher thread
 * looks at every mailbox every SHIFTU_BOX_MS (watcher.c, box_int.h).
 *
 * Message k goes to slot k modulo SHIFTU_BOX_SLOTS, so that messages
 * written between two looks are all read, in order.  A peer writes a
 * mailbox only through the QP of that side, which a reconnection resets:
 * no message of an old connection lands after the reset, and those of
 * before are marked seen then (shiftu_box_reset()).  A message leaves
 * from the sender's own mailbox's out slots (registered memory: the
 * application's QP may take no inline data).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "box_int.h"
#include "handshake.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "mailbox.h"
#include "real.h"

/* The QPs with mailboxes: a leaf lock (lockorder.h); watcher.c sweeps them. */
pthread_mutex_t box_lock = PTHREAD_MUTEX_INITIALIZER;
struct shiftu_vqp **boxes;
unsigned int n_boxes;
static unsigned int cap_boxes;

static const char *const box_side[] = { "default QP", "twin" };

/* @vq joins the watcher's list.  box_lock. */
static int list_add(struct shiftu_vqp *vq)
{
	if (vq->mboxed)
		return 0;
	if (n_boxes == cap_boxes) {
		unsigned int cap = cap_boxes ? 2 * cap_boxes : 16;
		struct shiftu_vqp **v = realloc(boxes, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		boxes = v;
		cap_boxes = cap;
	}
	boxes[n_boxes++] = vq;
	vq->mboxed = 1;
	return 0;
}

int shiftu_box_open(struct shiftu_vqp *vq, enum shiftu_box_side side, struct ibv_pd *pd)
{
	struct shiftu_mailbox *m = &vq->mbox[side];
	size_t len = 2 * SHIFTU_BOX_SLOTS * sizeof(struct shiftu_box);
	struct shiftu_box *b;
	struct ibv_mr *mr;
	int ret;

	if (m->mr)
		return 0;
	ret = posix_memalign((void **)&b, 64, len);
	if (ret)
		return -ret;
	memset(b, 0, len);
	/* libibverbs' ibv_reg_mr calls ibv_reg_mr_iova2 by its exported
	 * name, which is the library's own (pdmr.c): the real one */
	mr = shiftu_real.reg_mr_iova2(pd, b, len, (uintptr_t)b,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr) {
		ret = errno ? -errno : -EIO;
		free(b);
		return ret;
	}
	shiftu_lock(&box_lock, SHIFTU_LOCK_BOX);
	ret = list_add(vq);
	if (!ret) {
		m->slots = b;
		m->mr = mr;
		m->seen = 0;
		m->sent = 0;
	}
	shiftu_unlock(&box_lock, SHIFTU_LOCK_BOX);
	if (ret) {
		shiftu_real.dereg_mr(mr);
		free(b);
	}
	return ret;
}

void shiftu_box_close(struct shiftu_vqp *vq)
{
	struct shiftu_mailbox *m;
	unsigned int i;

	if (!vq->mboxed)
		return;
	shiftu_lock(&box_lock, SHIFTU_LOCK_BOX);
	for (i = 0; i < n_boxes; i++)
		if (boxes[i] == vq) {
			boxes[i] = boxes[--n_boxes];
			break;
		}
	vq->mboxed = 0;
	shiftu_unlock(&box_lock, SHIFTU_LOCK_BOX);
	/* the sweep reads a mailbox only under box_lock, of a listed QP */
	for (m = vq->mbox; m < vq->mbox + SHIFTU_BOX_SIDES; m++) {
		if (!m->mr)
			continue;
		if (shiftu_real.dereg_mr(m->mr))
			shiftu_warn("qp %u: cannot deregister its mailbox",
				    vq->reg.app_qp->qp_num);
		free(m->slots);
		memset(m, 0, sizeof(*m));
	}
}

void shiftu_box_reset(struct shiftu_vqp *vq, enum shiftu_box_side side)
{
	struct shiftu_mailbox *m = &vq->mbox[side];
	unsigned int i;
	uint64_t w;

	shiftu_lock(&box_lock, SHIFTU_LOCK_BOX);
	for (i = 0; m->mr && i < SHIFTU_BOX_SLOTS; i++)
		/* the newest whole message of before the reset, in serial order */
		if (slot_whole(&m->slots[i], &w) && (int32_t)((uint32_t)(w >> 32) - m->seen) > 0)
			m->seen = (uint32_t)(w >> 32);
	shiftu_unlock(&box_lock, SHIFTU_LOCK_BOX);
}

int shiftu_box_send(struct shiftu_vqp *vq, enum shiftu_box_side side, uint32_t imm)
{
	struct shiftu_mailbox *m = &vq->mbox[side];
	uint32_t seq = m->sent + 1;
	struct shiftu_box *out;
	struct ibv_sge sge;
	struct ibv_send_wr w = {
		.wr_id = SHIFTU_CTRL_SEND_ID,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = {
			.remote_addr = vq->peer.box_addr[side] +
				       (seq % SHIFTU_BOX_SLOTS) * sizeof(struct shiftu_box),
			.rkey = vq->peer.box_rkey[side],
		},
	}, *bad;
	struct ibv_qp *qp = side == SHIFTU_BOX_TWIN ? vq->bak_qp : vq->reg.app_qp;
	int ret;

	if (!m->mr)
		return EINVAL;
	/* an out slot is written again only SHIFTU_BOX_SLOTS messages later */
	out = &m->slots[SHIFTU_BOX_SLOTS + seq % SHIFTU_BOX_SLOTS];
	out->word = (uint64_t)seq << 32 | imm;
	out->check = out->word ^ SHIFTU_BOX_KEY;
	sge = (struct ibv_sge){ .addr = (uintptr_t)out, .length = sizeof(*out),
				.lkey = m->mr->lkey };
	/* the provider's own: the application's context's ops are ours */
	ret = side == SHIFTU_BOX_TWIN ? qp->context->ops.post_send(qp, &w, &bad) :
					vq->post_send(qp, &w, &bad);
	if (!ret)
		m->sent = seq;
	else
		shiftu_dbg("qp %u: cannot write the peer's mailbox on its %s: %s",
			   vq->reg.app_qp->qp_num, box_side[side], strerror(ret));
	return ret;
}

/*
 * fork(2) (fork.c): the parent's QPs are not the child's to move; the
 * child's watcher, if it starts, looks at its own QPs' mailboxes only.
 */
static void shiftu_box_fork_child(void)
{
	unsigned int i;

	for (i = 0; i < n_boxes; i++)
		boxes[i]->mboxed = 0;
	n_boxes = 0;
}

SHIFTU_FORK_HOOK(box, .rank = SHIFTU_RANK_BOX, .name = "box_lock",
		 .lock = &box_lock, .child = shiftu_box_fork_child);
