// SPDX-License-Identifier: GPL-2.0
/*
 * ftreuse: a netlink port bound again while the socket that had it is
 * being released, and a SHIFT_FT_REPORT_F_WITHDRAW report made on it at
 * once.  Netlink frees a port before it tells its release
 * (NETLINK_URELEASE), so the new socket's report can land before shift_ft
 * hears that the old one went: that release must not take the new
 * socket's report with it.
 *
 *   ftreuse DEV PORT GID_A GID_B ROUNDS
 *
 * Each round: socket A, bound to a port of its own, reports the path to
 * GID_A + round DOWN with F_WITHDRAW; a thread binds socket B to the same
 * port as soon as it is free (trying in a loop) and reports GID_B + round
 * the same way, while the main thread closes A, and another thread dumps
 * the path table in a loop (each dump takes the table's lock, which the
 * release's notifier must wait for: the window widens).  B stays open.
 * Then prints
 *	rounds=N tries=T
 *	# hold: B sockets open
 * and waits to be killed (B's reports last until then).  Exit 1 on error,
 * 2 on usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>

#include <shift_ft.h>

#define MAX_ROUNDS	256	/* the low byte of the port */

static const char *dev;
static unsigned int port_num;
static int family;
static atomic_bool stop;

static void die(const char *what, int err)
{
	fprintf(stderr, "ftreuse: %s: %s\n", what, nl_geterror(err));
	exit(1);
}

/* A socket bound to netlink port @pid (0: any); NULL if it is taken. */
static struct nl_sock *sock_on(uint32_t pid)
{
	struct nl_sock *sk = nl_socket_alloc();
	int err;

	if (!sk)
		die("socket", -NLE_NOMEM);
	if (pid)
		nl_socket_set_local_port(sk, pid);
	err = genl_connect(sk);
	if (err) {
		nl_socket_free(sk);
		if (pid && err == -NLE_EXIST)
			return NULL;
		die("connect", err);
	}
	return sk;
}

/* @g with @k added to its last 32 bits */
static void gid_at(const struct in6_addr *base, unsigned int k, uint8_t *g)
{
	uint32_t last;

	memcpy(g, base, SHIFT_FT_GID_LEN);
	memcpy(&last, g + 12, 4);
	last = htonl(ntohl(last) + k);
	memcpy(g + 12, &last, 4);
}

/* Report @gid DOWN from an application, withdrawn with @sk's socket. */
static int report(struct nl_sock *sk, const uint8_t *gid)
{
	struct nl_msg *m = nlmsg_alloc();
	int err;

	if (!m || !genlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, NLM_F_REQUEST,
			       SHIFT_FT_CMD_PATH_REPORT, SHIFT_FT_GENL_VERSION))
		die("message", -NLE_NOMEM);
	if (nla_put_string(m, SHIFT_FT_A_DEV_NAME, dev) ||
	    nla_put_u32(m, SHIFT_FT_A_PORT_NUM, port_num) ||
	    nla_put(m, SHIFT_FT_A_REMOTE_GID, SHIFT_FT_GID_LEN, gid) ||
	    nla_put_u8(m, SHIFT_FT_A_REPORT_STATE, SHIFT_FT_PATH_DOWN) ||
	    nla_put_u8(m, SHIFT_FT_A_REPORT_SOURCE, SHIFT_FT_SRC_APP) ||
	    nla_put_u32(m, SHIFT_FT_A_FLAGS, SHIFT_FT_REPORT_F_WITHDRAW))
		die("message", -NLE_NOMEM);
	err = nl_send_sync(sk, m);	/* frees m, waits for the ack */
	return err;
}

struct binder {
	uint32_t pid;
	uint8_t gid[SHIFT_FT_GID_LEN];
	struct nl_sock *sk;
	atomic_ulong tries;
	int err;
};

/* B: the port as soon as it is free, and the report on it at once. */
static void *bind_again(void *arg)
{
	struct binder *b = arg;

	while (!(b->sk = sock_on(b->pid)))
		atomic_fetch_add(&b->tries, 1);
	b->err = report(b->sk, b->gid);
	return NULL;
}

/* The reports in the middle of a dump change the table: it goes on. */
static int dump_intr(struct nl_msg *msg, void *arg)
{
	(void)msg;
	(void)arg;
	return NL_OK;
}

/* Dumps of the path table, each under its lock, until told to stop. */
static void *dumper(void *arg)
{
	struct nl_sock *sk = sock_on(0);
	int err;

	(void)arg;
	nl_socket_modify_cb(sk, NL_CB_DUMP_INTR, NL_CB_CUSTOM, dump_intr, NULL);
	while (!atomic_load(&stop)) {
		struct nl_msg *m = nlmsg_alloc();

		if (!m || !genlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0,
				       NLM_F_REQUEST | NLM_F_DUMP, SHIFT_FT_CMD_PATH_GET,
				       SHIFT_FT_GENL_VERSION))
			die("message", -NLE_NOMEM);
		err = nl_send_auto(sk, m);
		if (err >= 0)
			err = nl_recvmsgs_default(sk);
		if (err < 0)
			die("dump", err);
		nlmsg_free(m);
	}
	nl_socket_free(sk);
	return NULL;
}

int main(int argc, char **argv)
{
	static struct binder b[MAX_ROUNDS];
	struct in6_addr ga, gb;
	uint8_t gid[SHIFT_FT_GID_LEN];
	unsigned long tries = 0;
	pthread_t dump_thr;
	unsigned int rounds, r;
	struct nl_sock *sk;
	int err;

	if (argc != 6 || inet_pton(AF_INET6, argv[3], &ga) != 1 ||
	    inet_pton(AF_INET6, argv[4], &gb) != 1) {
		fprintf(stderr, "usage: ftreuse DEV PORT GID_A GID_B ROUNDS\n");
		return 2;
	}
	dev = argv[1];
	port_num = strtoul(argv[2], NULL, 0);
	rounds = strtoul(argv[5], NULL, 0);
	if (!port_num || !rounds || rounds > MAX_ROUNDS) {
		fprintf(stderr, "ftreuse: PORT must be 1-255, ROUNDS 1-%d\n", MAX_ROUNDS);
		return 2;
	}
	sk = sock_on(0);
	family = genl_ctrl_resolve(sk, SHIFT_FT_GENL_NAME);
	if (family < 0)
		die(SHIFT_FT_GENL_NAME, family);
	nl_socket_free(sk);
	if (pthread_create(&dump_thr, NULL, dumper, NULL))
		die("thread", -NLE_FAILURE);

	for (r = 0; r < rounds; r++) {
		pthread_t thr;

		/* a port no autobind picks: positive, and not a pid */
		b[r].pid = 0x7f000000u | (getpid() & 0xffff) << 8 | (r & 0xff);
		sk = sock_on(b[r].pid);
		if (!sk) {
			fprintf(stderr, "ftreuse: port %#x is taken\n", b[r].pid);
			return 1;
		}
		gid_at(&ga, r, gid);
		err = report(sk, gid);
		if (err)
			die("report on A", err);
		gid_at(&gb, r, b[r].gid);
		if (pthread_create(&thr, NULL, bind_again, &b[r]))
			die("thread", -NLE_FAILURE);
		/* B is trying: A goes, its port is free again */
		while (!atomic_load(&b[r].tries))
			sched_yield();
		nl_socket_free(sk);
		pthread_join(thr, NULL);
		if (b[r].err)
			die("report on B", b[r].err);
		tries += b[r].tries;
	}
	atomic_store(&stop, true);
	pthread_join(dump_thr, NULL);
	printf("rounds=%u tries=%lu\n# hold: B sockets open\n", rounds, tries);
	fflush(stdout);
	for (;;)
		pause();
}
