// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * handshake.c: the control messages of the two-way handshake, and the
 * watcher thread that waits for them (handshake.h).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "cq.h"
#include "handshake.h"
#include "health.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "mailbox.h"
#include "real.h"
#include "serial.h"
#include "srq.h"
#include "testbuild.h"
#include "thread.h"
#include "util.h"

#define MAX_CHANNELS	16

/*
 * The channels the watcher waits on, under ch_lock; ch_gen counts their
 * removals.  The watcher serves one round of events under serve_lock, and
 * only if ch_gen has not moved since it copied the list: a channel that
 * goes (shiftu_hs_channel_gone) waits out the round in progress, after
 * which no round uses it.  Order: serve_lock, then ch_lock (lockorder.h).
 */
static pthread_mutex_t ch_lock = PTHREAD_MUTEX_INITIALIZER;
SHIFTU_FORK_HOOK(ch, .rank = SHIFTU_RANK_CH, .name = "ch_lock", .lock = &ch_lock);
static pthread_mutex_t serve_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_comp_channel *channels[MAX_CHANNELS];
static unsigned int n_channels;
static uint64_t ch_gen;
static bool watcher_started;

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

/* One channel's events: each names a twin CQ (its cq_context). */
static void channel_events(struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq;
	void *cq_context;

	while (!shiftu_real.get_cq_event(ch, &cq, &cq_context)) {
		shiftu_real.ack_cq_events(cq, 1);
		shiftu_twin_serve(cq_context);
	}
}

/*
 * The page moved: re-read it for every QP, as a post or poll would, for
 * the application that makes neither while it sleeps in its completion
 * channel (a failover started here wakes it through the bell, bell.c).
 */
static void page_moved(int fd)
{
	uint64_t gen;

	/* reading re-arms the file's POLLIN (uapi/shift_ft.h) */
	if (read(fd, &gen, sizeof(gen)) == sizeof(gen))
		shiftu_health_sweep();
}

static void *watcher(void *arg)
{
	struct pollfd fds[MAX_CHANNELS + 1];
	struct ibv_comp_channel *chs[MAX_CHANNELS];
	int page = shiftu_health_fd();
	unsigned int i, n;
	uint64_t gen;
	bool stale, boxes = false;
	int ret;

	(void)arg;
	for (;;) {
		shiftu_lock(&ch_lock, SHIFTU_LOCK_CH);
		n = n_channels;
		gen = ch_gen;
		for (i = 0; i < n; i++) {
			chs[i] = channels[i];
			fds[i].fd = chs[i]->fd;
			fds[i].events = POLLIN;
		}
		shiftu_unlock(&ch_lock, SHIFTU_LOCK_CH);
		fds[n].fd = page;	/* negative without a page: ignored */
		fds[n].events = POLLIN;
		/* new channels are picked up within 200 ms; mailboxes are
		 * looked at every SHIFTU_BOX_MS */
		ret = poll(fds, n + 1, boxes ? SHIFTU_BOX_MS : 200);
		boxes = shiftu_box_sweep();
		if (ret <= 0)
			continue;
		/* SHIFTU_TEST_WATCH_DELAY_MS: the peers' messages pile up */
		if (shiftu_test_watch_delay_ms() && n &&
		    !(fds[n].revents & POLLIN))
			usleep(shiftu_test_watch_delay_ms() * 1000U);
		shiftu_lock(&serve_lock, SHIFTU_LOCK_SERVE);
		shiftu_lock(&ch_lock, SHIFTU_LOCK_CH);
		stale = gen != ch_gen;
		shiftu_unlock(&ch_lock, SHIFTU_LOCK_CH);
		for (i = 0; i < n && !stale; i++)
			if (fds[i].revents & POLLIN)
				channel_events(chs[i]);
		shiftu_unlock(&serve_lock, SHIFTU_LOCK_SERVE);
		if (fds[n].revents & POLLIN)
			page_moved(page);
	}
	return NULL;
}

struct ibv_comp_channel *shiftu_hs_channel(struct shiftu_ctx *s)
{
	struct ibv_comp_channel *ch;
	int ret;

	if (s->bak_channel)
		return s->bak_channel;
	ch = shiftu_real.create_comp_channel(s->bak_ctx);
	if (!ch) {
		shiftu_warn("%s: cannot create a completion channel: %s: peers' failovers are heard late",
			    s->bak_name, strerror(errno));
		return NULL;
	}
	/* the watcher reads events until there are none */
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	shiftu_lock(&ch_lock, SHIFTU_LOCK_CH);
	if (n_channels == MAX_CHANNELS) {
		shiftu_unlock(&ch_lock, SHIFTU_LOCK_CH);
		return NULL;
	}
	channels[n_channels++] = ch;
	if (!watcher_started) {
		ret = shiftu_thread_start(watcher, NULL);
		if (ret)
			shiftu_warn("cannot start the watcher thread: %s: peers' failovers are not heard",
				    strerror(ret));
		watcher_started = !ret;
	}
	shiftu_unlock(&ch_lock, SHIFTU_LOCK_CH);
	s->bak_channel = ch;
	return ch;
}

void shiftu_hs_channel_gone(struct ibv_comp_channel *ch)
{
	unsigned int i;
	int ret;

	shiftu_lock(&ch_lock, SHIFTU_LOCK_CH);
	for (i = 0; i < n_channels && channels[i] != ch; i++)
		;
	if (i < n_channels) {
		channels[i] = channels[--n_channels];
		ch_gen++;
	}
	shiftu_unlock(&ch_lock, SHIFTU_LOCK_CH);
	/* a round that began before the removal ends before this returns */
	shiftu_lock(&serve_lock, SHIFTU_LOCK_SERVE);
	shiftu_unlock(&serve_lock, SHIFTU_LOCK_SERVE);
	/*
	 * EBUSY: a CQ of the application outlived its device (perftest's
	 * send_bw client leaves its receive CQ), and the twin with it, as
	 * libibverbs lets it; the channel stays with them.
	 */
	ret = shiftu_real.destroy_comp_channel(ch);
	if (ret)
		shiftu_dbg("a backup context's completion channel stays: %s", strerror(ret));
}

/*
 * fork(2) (fork.c): the channels are the parent's twins', and the watcher
 * is not in the child; the child's first twin CQ starts it again.
 */
static void shiftu_hs_fork_child(void)
{
	n_channels = 0;
	watcher_started = false;
}

SHIFTU_FORK_HOOK(serve, .rank = SHIFTU_RANK_SERVE, .name = "serve_lock",
		 .lock = &serve_lock, .child = shiftu_hs_fork_child);
