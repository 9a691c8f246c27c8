// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * watcher.c: the watcher thread, which waits for the peers' control
 * messages (handshake.h): the twin CQs' completion channels it sleeps on,
 * the mailboxes it looks at, and the health page's moves it hears for the
 * application that sleeps in its own channel.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "box_int.h"
#include "cq.h"
#include "failover.h"
#include "handshake.h"
#include "health.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "mailbox.h"
#include "real.h"
#include "testbuild.h"
#include "thread.h"

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

/* Message @seq of mailbox @m, if it has come whole: true, its word in *@w. */
static bool box_read(const struct shiftu_mailbox *m, uint32_t seq, uint64_t *w)
{
	return slot_whole(&m->slots[seq % SHIFTU_BOX_SLOTS], w) && (uint32_t)(*w >> 32) == seq;
}

bool shiftu_box_sweep(void)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	unsigned int i, s, n = 0;
	bool any;
	uint64_t w;

	shiftu_lock(&box_lock, SHIFTU_LOCK_BOX);
	any = n_boxes > 0;
	for (i = 0; i < n_boxes && n < SHIFTU_HS_BATCH; i++) {
		struct shiftu_vqp *vq = boxes[i];

		for (s = 0; s < SHIFTU_BOX_SIDES; s++) {
			struct shiftu_mailbox *m = &vq->mbox[s];

			while (m->mr && n < SHIFTU_HS_BATCH && box_read(m, m->seen + 1, &w)) {
				m->seen++;
				__atomic_fetch_add(&vq->pins, 1, __ATOMIC_RELAXED);
				msgs[n++] = (struct shiftu_hs_msg){
					.vq = vq, .imm = (uint32_t)w,
					.on_default = s == SHIFTU_BOX_DEFAULT,
					.gen = s == SHIFTU_BOX_DEFAULT ?
						       __atomic_load_n(&vq->ctrl_gen, __ATOMIC_RELAXED) :
						       __atomic_load_n(&vq->reconnects, __ATOMIC_RELAXED),
				};
			}
		}
	}
	shiftu_unlock(&box_lock, SHIFTU_LOCK_BOX);
	/* pinned: a QP destroyed meanwhile waits for its message's turn */
	for (i = 0; i < n; i++) {
		shiftu_hs_message(&msgs[i]);
		__atomic_fetch_sub(&msgs[i].vq->pins, 1, __ATOMIC_RELEASE);
	}
	return any;
}

static void *watcher(void *arg)
{
	struct pollfd fds[MAX_CHANNELS + 1];
	struct ibv_comp_channel *chs[MAX_CHANNELS];
	int page = shiftu_health_fd();
	unsigned int i, n;
	uint64_t gen;
	bool stale, swept = false;
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
		ret = poll(fds, n + 1, swept ? SHIFTU_BOX_MS : 200);
		swept = shiftu_box_sweep();
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
