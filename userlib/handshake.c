// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * handshake.c: the control messages of the two-way handshake, and the
 * watcher thread that waits for them (handshake.h).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "cq.h"
#include "failover.h"
#include "handshake.h"
#include "health.h"
#include "interpose.h"
#include "log.h"
#include "shadow.h"
#include "thread.h"
#include "util.h"

#define MAX_CHANNELS	16

static pthread_mutex_t ch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_comp_channel *channels[MAX_CHANNELS];
static unsigned int n_channels;
static bool watcher_started;

int shiftu_ctrl_recv(struct shiftu_vqp *vq, bool twin)
{
	struct ibv_recv_wr w = { .wr_id = SHIFTU_CTRL_RECV_ID }, *bad;

	if (!twin)
		w.wr_id = SHIFTU_CTRL_DEF_ID(++vq->ctrl_gen);

	/* the provider's own: the application's context's ops are ours */
	return twin ? vq->bak_qp->context->ops.post_recv(vq->bak_qp, &w, &bad) :
		      vq->post_recv(vq->reg.app_qp, &w, &bad);
}

int shiftu_ctrl_send(struct shiftu_vqp *vq, bool ack)
{
	uint32_t count = (uint32_t)__atomic_load_n(&vq->consumed, __ATOMIC_RELAXED) &
			 ~SHIFTU_HS_ACK;
	struct ibv_send_wr w = {
		.wr_id = SHIFTU_CTRL_SEND_ID,
		.opcode = IBV_WR_SEND_WITH_IMM,
		.imm_data = htobe32(count | (ack ? SHIFTU_HS_ACK : 0)),
	}, *bad;
	bool due = !vq->on_twin && vq->init_attr.sq_sig_all;
	struct ibv_qp *qp;
	int ret;

	/* its completion comes to the application's CQ: taken out by the
	 * slow poll, which the CQ keeps from before it can come until then */
	if (due)
		shiftu_ctrl_sent(vq);
	qp = vq->on_twin ? vq->bak_qp : vq->reg.app_qp;
	ret = vq->on_twin ? qp->context->ops.post_send(qp, &w, &bad) :
			    vq->post_send(qp, &w, &bad);
	if (ret && due)
		shiftu_ctrl_send_done(vq, false);
	if (!ret) {
		vq->hs_sent = 1;
		shiftu_dbg("qp %u: told the peer%s: %u received", vq->reg.app_qp->qp_num,
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

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&ch_lock);
		n = n_channels;
		for (i = 0; i < n; i++) {
			chs[i] = channels[i];
			fds[i].fd = chs[i]->fd;
			fds[i].events = POLLIN;
		}
		pthread_mutex_unlock(&ch_lock);
		fds[n].fd = page;	/* negative without a page: ignored */
		fds[n].events = POLLIN;
		/* new channels are picked up within 200 ms */
		if (poll(fds, n + 1, 200) <= 0)
			continue;
		for (i = 0; i < n; i++)
			if (fds[i].revents & POLLIN)
				channel_events(chs[i]);
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
	pthread_mutex_lock(&ch_lock);
	if (n_channels == MAX_CHANNELS) {
		pthread_mutex_unlock(&ch_lock);
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
	pthread_mutex_unlock(&ch_lock);
	s->bak_channel = ch;
	return ch;
}
