// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * handshake.c: the control messages of the two-way handshake
 * (handshake.h); the watcher thread that waits for them is watcher.c.
 */
#include <endian.h>
#include <inttypes.h>
#include <unistd.h>

#include "cq.h"
#include "handshake.h"
#include "interpose.h"
#include "log.h"
#include "mailbox.h"
#include "serial.h"
#include "srq.h"
#include "testbuild.h"
#include "util.h"

int shiftu_ctrl_recv(struct shiftu_vqp *vq, bool twin)
{
	struct ibv_recv_wr w = { .wr_id = SHIFTU_CTRL_RECV_ID }, *bad;

	/* the peer of a QP on an SRQ writes its message into the mailbox */
	if (vq->app_srq && vq->mbox[twin].mr) {
		if (!twin) {
			++vq->ctrl_gen;
			shiftu_box_reset(vq, SHIFTU_BOX_DEFAULT);
		}
		return 0;
	}
	if (!twin) {
		w.wr_id = SHIFTU_CTRL_DEF_ID(++vq->ctrl_gen);
		shiftu_dbg("qp %u: a control receive on the default QP (generation %u)",
			   vq->reg.app_qp->qp_num, (uint16_t)vq->ctrl_gen);
	}

	/* the provider's own (the application's context's ops are ours), to
	 * the QP's SRQ if it has one */
	return twin ? shiftu_twin_post_recv(vq, &w, &bad) : vq->post_recv(vq->reg.app_qp, &w, &bad);
}

void shiftu_ctrl_rearm(struct shiftu_vqp *vq)
{
	if (!vq->ctrl_rq && !vq->twin_recvs && !shiftu_ctrl_recv(vq, true))
		vq->ctrl_rq = 1;
}

void shiftu_ctrl_recv_check(const struct ibv_wc *wc)
{
	enum shiftu_wrid kind = shiftu_wrid_kind(wc->wr_id);

	if ((kind != SHIFTU_WRID_CTRL_RECV && kind != SHIFTU_WRID_CTRL_DEF) ||
	    wc->status == IBV_WC_SUCCESS || wc->status == IBV_WC_WR_FLUSH_ERR)
		return;
	shiftu_warn("qp %u: a control receive on its %s completed with status %d: a message of the peer's application came where the peer's control message was due",
		    wc->qp_num, kind == SHIFTU_WRID_CTRL_DEF ? "default QP" : "twin", wc->status);
}

int shiftu_ctrl_send(struct shiftu_vqp *vq, bool ack)
{
	uint64_t count = __atomic_load_n(&vq->consumed, __ATOMIC_RELAXED);
	struct ibv_send_wr w = {
		.wr_id = SHIFTU_CTRL_SEND_ID,
		.opcode = IBV_WR_SEND_WITH_IMM,
		.imm_data = htobe32(shiftu_hs_count_put(count) | (ack ? SHIFTU_HS_ACK : 0)),
	}, *bad;
	bool due = !vq->on_twin && vq->init_attr.sq_sig_all;
	struct ibv_qp *qp;
	int ret;

	/*
	 * SHIFTU_TEST_SERVE_DELAY_MS: an answer on the default QP leaves
	 * half that late, so that it reaches the peer while its backup
	 * thread waits before its look (shiftu_app_serve()), not while the
	 * peer's move still drains its CQ and takes the answer itself.
	 */
	if (ack && !vq->on_twin && shiftu_test_serve_delay_ms())
		usleep(shiftu_test_serve_delay_ms() * 500U);
	/* its completion comes to the application's CQ: taken out by the
	 * slow poll, which the CQ keeps from before it can come until then */
	if (due)
		shiftu_ctrl_sent(vq);
	qp = vq->on_twin ? vq->bak_qp : vq->reg.app_qp;
	if (vq->peer.box_rkey[vq->on_twin])
		/* the peer's receives come from an SRQ: its mailbox */
		ret = shiftu_box_send(vq, vq->on_twin, be32toh(w.imm_data));
	else
		ret = vq->on_twin ? qp->context->ops.post_send(qp, &w, &bad) :
				    vq->post_send(qp, &w, &bad);
	if (ret && due)
		shiftu_ctrl_send_done(vq, false);
	if (!ret) {
		vq->hs_sent = 1;
		shiftu_dbg("qp %u: told the peer%s: %" PRIu64 " received", vq->reg.app_qp->qp_num,
			   ack ? " (answer)" : "", count);
	}
	return ret;
}
