// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * box.c: the mailboxes of twins whose receives come from an SRQ
 * (handshake.h).
 *
 * A control receive of the library's cannot wait at the head of a twin
 * SRQ: the application's receives for the other QPs on the SRQ go there
 * too, and one of their peers' messages would land in the library's empty
 * receive (Soft-RoCE fails it: "remote operation error" at the sender).
 * Nor can the peer's message take one of the application's receives: a
 * twin SRQ holds none while every QP on the SRQ is on its default QP, and
 * the message would wait there (RNR) for the move it is meant to start.
 * An RDMA WRITE needs no receive: the peer writes its message into the
 * QP's mailbox, and the watcher thread looks at every mailbox every
 * SHIFTU_BOX_MS.
 *
 * A mailbox has SHIFTU_BOX_SLOTS slots; message k goes to slot k modulo
 * their number, so that two messages written between two looks are both
 * read, in order.  A peer writes a mailbox only through the twin it
 * belongs to, which a renewal resets: no message of an old connection
 * lands after a new one's.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "failover.h"
#include "fork.h"
#include "handshake.h"
#include "interpose.h"
#include "log.h"

#define SHIFTU_BOX_SLOTS	4

/* The QPs with a mailbox: a leaf lock (interpose.h); fork.h. */
pthread_mutex_t box_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shiftu_vqp **boxes;
static unsigned int n_boxes, cap_boxes;

int shiftu_box_open(struct shiftu_vqp *vq, struct ibv_pd *bak_pd)
{
	struct shiftu_box *b;
	struct ibv_mr *mr;
	int ret;

	if (vq->box)
		return 0;
	ret = posix_memalign((void **)&b, 64, SHIFTU_BOX_SLOTS * sizeof(*b));
	if (ret)
		return -ret;
	memset(b, 0, SHIFTU_BOX_SLOTS * sizeof(*b));
	mr = shiftu_real.reg_mr(bak_pd, b, SHIFTU_BOX_SLOTS * sizeof(*b),
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr) {
		ret = -errno;
		free(b);
		return ret ? ret : -EIO;
	}
	pthread_mutex_lock(&box_lock);
	if (n_boxes == cap_boxes) {
		unsigned int cap = cap_boxes ? 2 * cap_boxes : 16;
		struct shiftu_vqp **v = realloc(boxes, cap * sizeof(*v));

		if (!v) {
			pthread_mutex_unlock(&box_lock);
			shiftu_real.dereg_mr(mr);
			free(b);
			return -ENOMEM;
		}
		boxes = v;
		cap_boxes = cap;
	}
	vq->box = b;
	vq->box_mr = mr;
	vq->box_seen = 0;
	vq->box_sent = 0;
	boxes[n_boxes++] = vq;
	pthread_mutex_unlock(&box_lock);
	return 0;
}

void shiftu_box_close(struct shiftu_vqp *vq)
{
	unsigned int i;

	if (!vq->box)
		return;
	pthread_mutex_lock(&box_lock);
	for (i = 0; i < n_boxes; i++)
		if (boxes[i] == vq) {
			boxes[i] = boxes[--n_boxes];
			break;
		}
	pthread_mutex_unlock(&box_lock);
	/* the sweep reads a mailbox only under box_lock */
	if (shiftu_real.dereg_mr(vq->box_mr))
		shiftu_warn("qp %u: cannot deregister its mailbox", vq->reg.app_qp->qp_num);
	free(vq->box);
	vq->box = NULL;
	vq->box_mr = NULL;
}

/* Message @seq of @vq's mailbox, if it has come whole: true, its word in *@w. */
static bool box_read(const struct shiftu_vqp *vq, uint32_t seq, uint64_t *w)
{
	const struct shiftu_box *b = &vq->box[seq % SHIFTU_BOX_SLOTS];
	uint64_t word = __atomic_load_n(&b->word, __ATOMIC_ACQUIRE);
	uint64_t check = __atomic_load_n(&b->check, __ATOMIC_ACQUIRE);

	if ((word ^ SHIFTU_BOX_KEY) != check || (uint32_t)(word >> 32) != seq)
		return false;
	*w = word;
	return true;
}

bool shiftu_box_sweep(void)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	unsigned int i, n = 0;
	bool any;
	uint64_t w;

	pthread_mutex_lock(&box_lock);
	any = n_boxes > 0;
	for (i = 0; i < n_boxes && n < SHIFTU_HS_BATCH; i++) {
		struct shiftu_vqp *vq = boxes[i];

		while (n < SHIFTU_HS_BATCH && box_read(vq, vq->box_seen + 1, &w)) {
			vq->box_seen++;
			__atomic_fetch_add(&vq->pins, 1, __ATOMIC_RELAXED);
			msgs[n++] = (struct shiftu_hs_msg){
				.vq = vq, .imm = (uint32_t)w,
				.gen = __atomic_load_n(&vq->reconnects, __ATOMIC_RELAXED),
			};
		}
	}
	pthread_mutex_unlock(&box_lock);
	/* pinned: a QP destroyed meanwhile waits for its message's turn */
	for (i = 0; i < n; i++) {
		shiftu_hs_message(&msgs[i]);
		__atomic_fetch_sub(&msgs[i].vq->pins, 1, __ATOMIC_RELEASE);
	}
	return any;
}

int shiftu_box_send(struct shiftu_vqp *vq, uint32_t imm)
{
	uint32_t seq = vq->box_sent + 1;
	struct shiftu_box m = {
		.word = (uint64_t)seq << 32 | imm,
	};
	struct ibv_sge sge = { .addr = (uintptr_t)&m, .length = sizeof(m) };
	struct ibv_send_wr w = {
		.wr_id = SHIFTU_CTRL_SEND_ID,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_INLINE,
		.wr.rdma = {
			.remote_addr = vq->peer.box_addr +
				       (seq % SHIFTU_BOX_SLOTS) * sizeof(struct shiftu_box),
			.rkey = vq->peer.box_rkey,
		},
	}, *bad;
	struct ibv_qp *t = vq->bak_qp;
	int ret;

	m.check = m.word ^ SHIFTU_BOX_KEY;
	ret = t->context->ops.post_send(t, &w, &bad);
	if (!ret)
		vq->box_sent = seq;
	return ret;
}
