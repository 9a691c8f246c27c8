// SPDX-License-Identifier: GPL-2.0
/*
 * posters: several threads posting to one RC QP at once, checked end to end.
 *
 *   posters [-d DEV] [-i IBPORT] [-x GIDIDX] [-p TCPPORT] [-T THREADS]
 *           [-D SECONDS] [-q DEPTH] [--wr-api] [SERVER_ADDR]
 *
 * The client's THREADS threads each post SENDs of their own numbered
 * messages to the one QP, with no lock between them (the verbs allow it:
 * the provider locks its queues), each with ibv_post_send or, with
 * --wr-api, as one-request batches of the extended send API, yielding the
 * CPU inside each batch so that another thread's batch starts meanwhile (a
 * second wr_start then waits for the first batch, as the verbs say).  A
 * thread keeps at most DEPTH / THREADS of its messages outstanding; the
 * main thread reaps the send completions.  The server's THREADS threads
 * poll the one receive CQ (in turn, under a mutex that also orders the
 * check) and post the receives back to the QP at once, without it.
 *
 * The server checks that every message of every client thread arrives
 * exactly once and in that thread's order: message k of thread t must be
 * the next of t (else lost, dup or reorder), and at the end the count of
 * each thread must be what the client says it sent.  The client's QP
 * retries forever (retry_cnt and rnr_retry 7), so without a library a
 * pulled cable only stalls it; the server's receive queue is its flow
 * control (receiver not ready: retried).
 *
 * Out of band, over TCP: the client sends HELLO (its QP number, GID,
 * THREADS, DEPTH), the server answers READY (its QP number and GID) once
 * its receives are posted and its QP is in RTR; at the end the client
 * sends DONE (its count per thread), the server answers its verdict.
 *
 * Output, one flushed line per side:
 *   posters: role=client threads=T sent=N errors=N elapsed=S result=ok|fail
 *   posters: role=server threads=T msgs=N lost=N dup=N reorder=N errors=N result=ok|fail
 * Exit 0 when every check passed on both sides, 1 otherwise, 2 on bad
 * arguments.  A watchdog (alarm) ends a stalled run after SECONDS + 40 s.
 * SIGUSR1 ends a client's run early, as if SECONDS had passed: a test
 * ends it once what it waits for has happened, SECONDS only bounds it.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#define MAX_THREADS	16

struct msg {
	uint32_t thread;
	uint32_t pad;
	uint64_t seq;
};

/* the out-of-band exchange, big endian */
struct wire {
	uint32_t kind;			/* 1 HELLO, 2 READY, 3 DONE, 4 RESULT */
	uint32_t qpn;
	uint32_t threads;
	uint32_t depth;
	uint8_t gid[16];
	uint64_t count[MAX_THREADS];	/* DONE: sent per thread; RESULT: 0 ok */
};

static const char *dev_name = "rxe0";
static int ib_port = 1, gid_idx = 1, tcp_port = 18515, nthreads = 2, depth = 64;
static double duration = 8;
static bool wr_api;
static const char *srv_addr;

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *scq, *rcq;
static struct ibv_qp *qp;
static struct ibv_qp_ex *qpx;
static struct ibv_mr *mr;
static struct msg *bufs;		/* depth slots */
static int sock = -1;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "posters: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void wire_send(struct wire *w)
{
	struct wire b = *w;
	int i;

	b.kind = htobe32(w->kind), b.qpn = htobe32(w->qpn);
	b.threads = htobe32(w->threads), b.depth = htobe32(w->depth);
	for (i = 0; i < MAX_THREADS; i++)
		b.count[i] = htobe64(w->count[i]);
	if (write(sock, &b, sizeof(b)) != sizeof(b))
		die("write");
}

static void wire_recv(struct wire *w)
{
	size_t got = 0;
	ssize_t n;
	int i;

	while (got < sizeof(*w)) {
		n = read(sock, (char *)w + got, sizeof(*w) - got);
		if (n <= 0) {
			fprintf(stderr, "posters: the peer closed the connection\n");
			exit(1);
		}
		got += n;
	}
	w->kind = be32toh(w->kind), w->qpn = be32toh(w->qpn);
	w->threads = be32toh(w->threads), w->depth = be32toh(w->depth);
	for (i = 0; i < MAX_THREADS; i++)
		w->count[i] = be64toh(w->count[i]);
}

static void tcp_connect(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	char port[16];
	int one = 1, i;

	snprintf(port, sizeof(port), "%d", tcp_port);
	if (srv_addr) {
		if (getaddrinfo(srv_addr, port, &hints, &ai))
			die("getaddrinfo");
		for (i = 0; i < 100; i++) {
			sock = socket(AF_INET, SOCK_STREAM, 0);
			if (!connect(sock, ai->ai_addr, ai->ai_addrlen))
				break;
			close(sock);
			sock = -1;
			usleep(100000);
		}
		if (sock < 0)
			die("connect");
		freeaddrinfo(ai);
		return;
	}
	{
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(tcp_port) };
		int l = socket(AF_INET, SOCK_STREAM, 0);

		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1))
			die("listen");
		sock = accept(l, NULL, NULL);
		if (sock < 0)
			die("accept");
		close(l);
	}
}

static void setup(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD,
	};
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			break;
	if (!list || !list[i]) {
		fprintf(stderr, "posters: no device %s\n", dev_name);
		exit(1);
	}
	ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("ibv_open_device");
	ibv_free_device_list(list);
	pd = ibv_alloc_pd(ctx);
	scq = ibv_create_cq(ctx, depth * 2, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, depth * 2, NULL, NULL, 0);
	bufs = calloc(depth, sizeof(*bufs));
	if (!pd || !scq || !rcq || !bufs)
		die("resources");
	mr = ibv_reg_mr(pd, bufs, depth * sizeof(*bufs), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	ia.pd = pd;
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	if (wr_api) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = IBV_QP_EX_WITH_SEND;
		qp = ibv_create_qp_ex(ctx, &ia);
		if (qp)
			qpx = ibv_qp_to_qp_ex(qp);
	} else {
		struct ibv_qp_init_attr a = { .send_cq = scq, .recv_cq = rcq, .cap = ia.cap,
					      .qp_type = IBV_QPT_RC };

		qp = ibv_create_qp(pd, &a);
	}
	if (!qp)
		die("ibv_create_qp");
}

static void to_init(void)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = ib_port,
		/* remote write: the library's failback probes with a WRITE */
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		die("modify to INIT");
}

static void to_rtr(uint32_t rqpn, const uint8_t *rgid)
{
	struct ibv_qp_attr a = { 0 };

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = rqpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = ib_port;
	memcpy(a.ah_attr.grh.dgid.raw, rgid, 16);
	a.ah_attr.grh.sgid_index = gid_idx;
	a.ah_attr.grh.hop_limit = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify to RTR");
}

static void to_rts(void)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.sq_psn = 0, .max_rd_atomic = 1,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify to RTS");
}

/* ---- client ---- */

static volatile sig_atomic_t stop;
static uint64_t posted[MAX_THREADS], done[MAX_THREADS];
static int cli_errors;

static int post_one(int t, uint64_t seq)
{
	int win = depth / nthreads;
	struct msg *m = &bufs[t * win + seq % win];
	struct ibv_sge sge = { .addr = (uintptr_t)m, .length = sizeof(*m), .lkey = mr->lkey };
	uint64_t wr_id = (uint64_t)t << 32 | (uint32_t)seq;

	m->thread = t;
	m->seq = seq;
	if (wr_api) {
		ibv_wr_start(qpx);
		qpx->wr_id = wr_id;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, sge.lkey, sge.addr, sge.length);
		/* another thread's batch starts meanwhile, and waits for ours */
		sched_yield();
		return ibv_wr_complete(qpx);
	}
	{
		struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		return ibv_post_send(qp, &wr, &bad);
	}
}

static void *poster(void *arg)
{
	int t = (int)(intptr_t)arg, win = depth / nthreads, ret;

	while (!stop) {
		if (posted[t] - __atomic_load_n(&done[t], __ATOMIC_ACQUIRE) >= (uint64_t)win) {
			sched_yield();
			continue;
		}
		ret = post_one(t, posted[t]);
		if (ret) {
			fprintf(stderr, "posters: thread %d: post %" PRIu64 ": %s\n", t, posted[t],
				strerror(ret));
			__atomic_fetch_add(&cli_errors, 1, __ATOMIC_RELAXED);
			stop = 1;
			break;
		}
		posted[t]++;
	}
	return NULL;
}

static int client(void)
{
	pthread_t th[MAX_THREADS];
	struct ibv_wc wc[16];
	struct wire w = { .kind = 1 };
	union ibv_gid gid;
	uint64_t sent = 0, out;
	double t0, tend;
	int i, n, t;
	bool ok;

	setup();
	if (ibv_query_gid(ctx, ib_port, gid_idx, &gid))
		die("ibv_query_gid");
	tcp_connect();
	w.qpn = qp->qp_num, w.threads = nthreads, w.depth = depth;
	memcpy(w.gid, gid.raw, 16);
	wire_send(&w);
	wire_recv(&w);
	if (w.kind != 2) {
		fprintf(stderr, "posters: no READY from the server\n");
		return 1;
	}
	to_init();
	to_rtr(w.qpn, w.gid);
	to_rts();
	t0 = now_s();
	tend = t0 + duration;
	for (t = 0; t < nthreads; t++)
		pthread_create(&th[t], NULL, poster, (void *)(intptr_t)t);
	for (;;) {
		n = ibv_poll_cq(scq, 16, wc);
		for (i = 0; i < n; i++) {
			t = wc[i].wr_id >> 32;
			if (wc[i].status != IBV_WC_SUCCESS || t >= nthreads) {
				fprintf(stderr, "posters: send completion: %s (wr_id 0x%" PRIx64 ")\n",
					ibv_wc_status_str(wc[i].status), wc[i].wr_id);
				__atomic_fetch_add(&cli_errors, 1, __ATOMIC_RELAXED);
				stop = 1;
				continue;
			}
			__atomic_fetch_add(&done[t], 1, __ATOMIC_RELEASE);
		}
		if (!stop && now_s() >= tend)
			stop = 1;
		if (stop) {
			static bool joined;

			if (!joined) {
				for (t = 0; t < nthreads; t++)
					pthread_join(th[t], NULL);
				joined = true;
			}
			for (t = 0, out = 0; t < nthreads; t++)
				out += posted[t] - done[t];
			if (!out || cli_errors)
				break;
		}
	}
	w = (struct wire){ .kind = 3, .threads = nthreads };
	for (t = 0; t < nthreads; t++) {
		w.count[t] = posted[t];
		sent += posted[t];
	}
	wire_send(&w);
	wire_recv(&w);
	ok = !cli_errors && w.kind == 4 && !w.count[0];
	printf("posters: role=client threads=%d sent=%" PRIu64 " errors=%d elapsed=%.1f peer=%s result=%s\n",
	       nthreads, sent, cli_errors, now_s() - t0, w.count[0] ? "fail" : "ok",
	       ok ? "ok" : "fail");
	fflush(stdout);
	return ok ? 0 : 1;
}

/* ---- server ---- */

static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t expect[MAX_THREADS], msgs, lost, dups, reorders;
static int srv_errors;
static volatile int srv_stop;

static void post_recv_slot(int slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)&bufs[slot], .length = sizeof(*bufs),
			       .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad)) {
		fprintf(stderr, "posters: post_recv failed\n");
		__atomic_fetch_add(&srv_errors, 1, __ATOMIC_RELAXED);
	}
}

/* message @m checked in its thread's order; check_lock held */
static void check(const struct msg *m)
{
	if (m->thread >= (uint32_t)nthreads) {
		reorders++;
		return;
	}
	if (m->seq == expect[m->thread]) {
		expect[m->thread]++;
	} else if (m->seq < expect[m->thread]) {
		if (dups++ < 5)
			fprintf(stderr, "posters: thread %u: message %" PRIu64 " again (next %" PRIu64 ")\n",
				m->thread, m->seq, expect[m->thread]);
	} else {
		if (lost++ < 5)
			fprintf(stderr, "posters: thread %u: message %" PRIu64 " while %" PRIu64 " is next\n",
				m->thread, m->seq, expect[m->thread]);
		reorders++;
		expect[m->thread] = m->seq + 1;
	}
	msgs++;
}

static void *receiver(void *arg)
{
	struct ibv_wc wc[8];
	int i, n;

	(void)arg;
	while (!srv_stop) {
		int slots[8], k = 0;

		pthread_mutex_lock(&check_lock);
		n = ibv_poll_cq(rcq, 8, wc);
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "posters: receive completion: %s\n",
					ibv_wc_status_str(wc[i].status));
				srv_errors++;
				continue;
			}
			check(&bufs[wc[i].wr_id]);
			slots[k++] = (int)wc[i].wr_id;
		}
		pthread_mutex_unlock(&check_lock);
		/* posted back by this thread, while the others poll and post */
		for (i = 0; i < k; i++)
			post_recv_slot(slots[i]);
		if (!n)
			sched_yield();
	}
	return NULL;
}

static int server(void)
{
	pthread_t th[MAX_THREADS];
	struct wire w;
	union ibv_gid gid;
	uint64_t want = 0, have;
	double t0;
	int i, t;
	bool ok;

	tcp_connect();
	wire_recv(&w);
	if (w.kind != 1 || !w.threads || w.threads > MAX_THREADS || !w.depth) {
		fprintf(stderr, "posters: bad HELLO\n");
		return 1;
	}
	nthreads = w.threads, depth = w.depth;
	setup();
	to_init();
	for (i = 0; i < depth; i++)
		post_recv_slot(i);
	to_rtr(w.qpn, w.gid);
	to_rts();
	if (ibv_query_gid(ctx, ib_port, gid_idx, &gid))
		die("ibv_query_gid");
	w = (struct wire){ .kind = 2, .qpn = qp->qp_num };
	memcpy(w.gid, gid.raw, 16);
	wire_send(&w);
	for (t = 0; t < nthreads; t++)
		pthread_create(&th[t], NULL, receiver, NULL);
	wire_recv(&w);
	/* every message the client sent has completed there: wait for ours */
	for (t = 0; t < nthreads; t++)
		want += w.count[t];
	t0 = now_s();
	do {
		pthread_mutex_lock(&check_lock);
		have = msgs;
		pthread_mutex_unlock(&check_lock);
		if (have >= want)
			break;
		usleep(10000);
	} while (now_s() - t0 < 10);
	srv_stop = 1;
	for (t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	for (t = 0; t < nthreads; t++)
		if (expect[t] != w.count[t]) {
			fprintf(stderr, "posters: thread %d: %" PRIu64 " sent, %" PRIu64 " arrived in order\n",
				t, w.count[t], expect[t]);
			lost++;
		}
	ok = !lost && !dups && !reorders && !srv_errors && msgs == want;
	printf("posters: role=server threads=%d msgs=%" PRIu64 " lost=%" PRIu64 " dup=%" PRIu64
	       " reorder=%" PRIu64 " errors=%d result=%s\n",
	       nthreads, msgs, lost, dups, reorders, srv_errors, ok ? "ok" : "fail");
	fflush(stdout);
	w = (struct wire){ .kind = 4 };
	w.count[0] = !ok;
	wire_send(&w);
	return ok ? 0 : 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: posters [-d DEV] [-i IBPORT] [-x GIDIDX] [-p TCPPORT] [-T THREADS]\n"
			"               [-D SECONDS] [-q DEPTH] [--wr-api] [SERVER_ADDR]\n");
	exit(2);
}

/* SIGUSR1: the client stops posting, as at the end of -D */
static void on_usr1(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_alarm(int sig)
{
	(void)sig;
	fprintf(stderr, "posters: watchdog: the run stalled\n");
	_exit(1);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "wr-api", no_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "d:i:x:p:T:D:q:", lo, NULL)) != -1) {
		switch (c) {
		case 'd': dev_name = optarg; break;
		case 'i': ib_port = atoi(optarg); break;
		case 'x': gid_idx = atoi(optarg); break;
		case 'p': tcp_port = atoi(optarg); break;
		case 'T': nthreads = atoi(optarg); break;
		case 'D': duration = atof(optarg); break;
		case 'q': depth = atoi(optarg); break;
		case 'w': wr_api = true; break;
		default: usage();
		}
	}
	if (optind < argc)
		srv_addr = argv[optind++];
	if (optind != argc || nthreads < 1 || nthreads > MAX_THREADS || depth < nthreads ||
	    duration <= 0)
		usage();
	signal(SIGALRM, on_alarm);
	if (srv_addr)
		signal(SIGUSR1, on_usr1);
	alarm((unsigned int)duration + 40);
	return srv_addr ? client() : server();
}
