// SPDX-License-Identifier: GPL-2.0
/*
 * forkhelper.so: a thread in a preloaded program that forks it on request,
 * the way a training job's DataLoader workers or multiprocessing pool are
 * forked from a process whose RDMA is up.
 *
 *   LD_PRELOAD="libshiftu.so.0 forkhelper.so" FORKHELPER_FIFO=F FORKHELPER_OUT=O PROG ...
 *
 * When FORKHELPER_FIFO is set, a thread of its own (named "forkhelper")
 * reads commands from that FIFO, one a line, and appends what happened to
 * FORKHELPER_OUT, one line each; it first writes "tid TID", its thread id.
 *
 *   open	fork a child that opens rxe0, makes a PD, an MR, a CQ and an
 *		RC QP, takes them down, closes the device and exit(3)s (so the
 *		library's exit statistics run in the child too)
 *   traffic GIDX
 *		fork a child that opens rxe0 itself and runs RDMA WRITEs
 *		between two RC QPs of its own, joined over rxe0's GID GIDX
 *		(Soft-RoCE loops them back), until the library has logged both
 *		QPs protected (SHIFTU_LOG_FILE, its own pid's lines) and 2000
 *		WRITEs are done and checked, 20 s at most; then _exit(2)s
 *   kick	a thread of its own opens rxe0, allocates a PD, frees it and
 *		closes the device, giving the library's shadow thread work (it
 *		may otherwise sleep until something changes); the thread may
 *		wait on the library's locks while this one goes on, and says
 *		"kick done" when it is through
 *
 * For each, the line "CMD pid PID fork_ms F wait_ms W status S forked_at_ms
 * T" says how long fork() took in the parent, how long the child ran after
 * that, its wait status as "exit N" or "signal N", and when fork()
 * returned (CLOCK_MONOTONIC, ms).  A child gets SIGALRM in 30 s:
 * a child that hangs dies of it ("signal 14").  The traffic child's
 * verdict comes first on a line of its own: "traffic pid PID writes N
 * protected N ok" (or "failed: WHY").
 *
 * The forking thread holds no lock of the program's; the program's own
 * threads run on while it forks, as in a job's trainer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define CHILD_ALARM_S	30
#define TRAFFIC_S	20
#define WRITES_MIN	2000
#define BUF		4096

static const char *out_path;

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* One line to FORKHELPER_OUT, in one write. */
static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int fd, n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	fd = open(out_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, n) != n)
		n = -1;
	close(fd);
}

static struct ibv_context *open_rxe0(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "rxe0"))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

/* The open child: every kind of object once, and exit(3). */
static int child_open(void)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	static char buf[BUF];
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	ctx = open_rxe0();
	if (!ctx)
		return 2;
	pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = cq;
	qp = pd && cq ? ibv_create_qp(pd, &qa) : NULL;
	if (!qp)
		return 3;
	if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq) || ibv_dereg_mr(mr) ||
	    ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		return 4;
	return 0;
}

struct lo {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	char *buf;		/* two halves: qp[0] writes its half into the other */
	union ibv_gid gid;
	int gidx;
};

static int lo_join(struct lo *l, int i)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(l->qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = l->qp[!i]->qp_num;
	a.rq_psn = 100 + !i;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = l->gid;
	a.ah_attr.grh.sgid_index = l->gidx;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(l->qp[i], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 100 + i;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(l->qp[i], &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Lines "libshiftu[PID]: info: qp N on rxe0: protected by" of ours, for
 * our two QPs. */
static int protected_qps(const struct lo *l)
{
	const char *log = getenv("SHIFTU_LOG_FILE");
	char line[1024], want[2][96];
	bool seen[2] = { false, false };
	FILE *f;
	int i;

	if (!log || !(f = fopen(log, "r")))
		return 0;
	for (i = 0; i < 2; i++)
		snprintf(want[i], sizeof(want[i]), "libshiftu[%d]: info: qp %u on rxe0: protected by",
			 (int)getpid(), l->qp[i]->qp_num);
	while (fgets(line, sizeof(line), f))
		for (i = 0; i < 2; i++)
			if (strstr(line, want[i]))
				seen[i] = true;
	fclose(f);
	return seen[0] + seen[1];
}

/* WRITE @n's pattern from qp[0]'s half into qp[1]'s, and wait for it. */
static int lo_write(struct lo *l, unsigned int n)
{
	struct ibv_sge sge = { (uintptr_t)l->buf, BUF, l->mr->lkey };
	struct ibv_send_wr w = { .wr_id = n, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { (uintptr_t)l->buf + BUF, l->mr->rkey } }, *bad;
	struct ibv_wc wc;
	double until = now_ms() + 5000;
	int k;

	memset(l->buf, (int)(n & 0xff), BUF);
	if (ibv_post_send(l->qp[0], &w, &bad))
		return -1;
	do {
		k = ibv_poll_cq(l->cq, 1, &wc);
		if (k < 0 || (k == 1 && (wc.status != IBV_WC_SUCCESS || wc.wr_id != n)))
			return -1;
	} while (!k && now_ms() < until);
	if (!k)
		return -1;
	return memcmp(l->buf, l->buf + BUF, BUF) ? -1 : 0;
}

static int child_traffic(int gidx)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	double until = now_ms() + TRAFFIC_S * 1000;
	struct lo l = { .gidx = gidx };
	unsigned int n = 0;
	int i, prot = 0;

	l.ctx = open_rxe0();
	if (!l.ctx) {
		say("traffic pid %d failed: cannot open rxe0", (int)getpid());
		return 1;
	}
	l.buf = calloc(2, BUF);
	l.pd = ibv_alloc_pd(l.ctx);
	l.mr = l.pd && l.buf ? ibv_reg_mr(l.pd, l.buf, 2 * BUF, IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_WRITE) : NULL;
	l.cq = ibv_create_cq(l.ctx, 64, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = l.cq;
	for (i = 0; i < 2; i++)
		l.qp[i] = l.mr && l.cq ? ibv_create_qp(l.pd, &qa) : NULL;
	if (!l.qp[0] || !l.qp[1] || ibv_query_gid(l.ctx, 1, gidx, &l.gid) ||
	    lo_join(&l, 0) || lo_join(&l, 1)) {
		say("traffic pid %d failed: cannot set up two QPs on rxe0: %s", (int)getpid(),
		    strerror(errno));
		return 1;
	}
	while (now_ms() < until) {
		if (lo_write(&l, n)) {
			say("traffic pid %d failed: WRITE %u did not complete or arrived wrong",
			    (int)getpid(), n);
			return 1;
		}
		n++;
		if (n % 100 == 0 && n >= WRITES_MIN && (prot = protected_qps(&l)) == 2)
			break;
	}
	prot = protected_qps(&l);
	if (prot < 2) {
		say("traffic pid %d failed: writes %u, protected %d of 2 QPs after %d s",
		    (int)getpid(), n, prot, TRAFFIC_S);
		return 1;
	}
	ibv_destroy_qp(l.qp[1]);
	ibv_destroy_qp(l.qp[0]);
	ibv_destroy_cq(l.cq);
	ibv_dereg_mr(l.mr);
	ibv_dealloc_pd(l.pd);
	ibv_close_device(l.ctx);
	say("traffic pid %d writes %u protected %d ok", (int)getpid(), n, prot);
	return 0;
}

static void *kicker(void *arg)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;

	(void)arg;
	ctx = open_rxe0();
	if (!ctx) {
		say("kick failed: cannot open rxe0");
		return NULL;
	}
	pd = ibv_alloc_pd(ctx);
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	say("kick done");
	return NULL;
}

static void kick(void)
{
	pthread_t t;
	int ret;

	ret = pthread_create(&t, NULL, kicker, NULL);
	if (ret) {
		say("kick failed: %s", strerror(ret));
		return;
	}
	pthread_detach(t);
}

static void run(const char *cmd)
{
	char what[16];
	double t0, t1;
	int gidx = 0, status;
	pid_t pid;

	if (sscanf(cmd, "%15s %d", what, &gidx) < 1)
		return;
	if (!strcmp(what, "kick")) {
		kick();
		return;
	}
	if (strcmp(what, "open") && strcmp(what, "traffic")) {
		say("%s: unknown command", what);
		return;
	}
	/* what the program has buffered is written once, not once more by
	 * the child's exit() */
	fflush(NULL);
	t0 = now_ms();
	pid = fork();
	if (pid < 0) {
		say("%s fork failed: %s", what, strerror(errno));
		return;
	}
	if (!pid) {
		sigset_t none;

		/* the program's handlers are not the child's, and this
		 * thread's mask (all blocked) must not keep its alarm out */
		sigemptyset(&none);
		pthread_sigmask(SIG_SETMASK, &none, NULL);
		signal(SIGALRM, SIG_DFL);
		signal(SIGUSR1, SIG_DFL);
		signal(SIGUSR2, SIG_DFL);
		alarm(CHILD_ALARM_S);
		if (!strcmp(what, "open"))
			exit(child_open());
		_exit(child_traffic(gidx));
	}
	t1 = now_ms();
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	say("%s pid %d fork_ms %.0f wait_ms %.0f status %s %d forked_at_ms %.0f", what, (int)pid,
	    t1 - t0, now_ms() - t1, WIFEXITED(status) ? "exit" : "signal",
	    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), t1);
}

static void *helper(void *arg)
{
	const char *fifo = arg;
	char line[128];
	FILE *f;

	say("tid %ld", (long)syscall(SYS_gettid));
	for (;;) {
		f = fopen(fifo, "r");
		if (!f)
			return NULL;
		while (fgets(line, sizeof(line), f))
			run(line);
		fclose(f);
	}
	return NULL;
}

static void __attribute__((constructor)) forkhelper_start(void)
{
	const char *fifo = getenv("FORKHELPER_FIFO");
	sigset_t all, old;
	pthread_t t;

	out_path = getenv("FORKHELPER_OUT");
	if (!fifo || !out_path)
		return;
	/* the program's signals stay with its own threads */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (!pthread_create(&t, NULL, helper, (void *)fifo)) {
		pthread_setname_np(t, "forkhelper");
		pthread_detach(t);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
