// SPDX-License-Identifier: GPL-2.0
/*
 * ftfuzz: random and mutated requests to the "shift_ft" generic netlink
 * family, and abuse of /dev/shift_ft's read, poll, ioctl and mmap.
 *
 *   ftfuzz nl  [-n MSGS] [-s SEED] [-u UID] [-x INDEX] [-v]
 *   ftfuzz dev [-n ROUNDS] [-s SEED] [-u UID] [-j JOBS]
 *
 * nl:  MSGS (default 10000) messages on raw NETLINK_GENERIC sockets.  Most
 *      start as a valid request of one of the family's commands built from
 *      uapi/shift_ft.h (every command, reply-only ones included, and every
 *      attribute with its own type), then get zero or more mutations:
 *      attributes dropped, duplicated, retyped, resized, truncated, nested,
 *      flagged NLA_F_NESTED/NLA_F_NET_BYTEORDER, unknown or reply-only
 *      attributes added, nla_len and nlmsg_len set to 0, short or huge,
 *      bytes flipped, the generic header's version and reserved byte and the
 *      nlmsg_flags (NLM_F_DUMP, ACK, ECHO and the rest) randomised, other
 *      message types, several messages or garbage in one datagram; some are
 *      random bytes.  Replies are drained after each message (sometimes
 *      not, or the socket is closed in the middle of a dump), an "events"
 *      listener is kept subscribed so that every change is built as an
 *      event, and sockets are replaced now and then, so that
 *      F_WITHDRAW reports are withdrawn by the release notifier.
 *      Checked for each message: every reply parses (lengths inside the
 *      datagram, attributes inside the message); a request whose headers
 *      are clean is answered with an errno the ABI names; with -u, every
 *      admin command (PAIR_SET, PAIR_CLEAR, PATH_REPORT, PATH_DEL) is
 *      refused with EPERM (EINVAL when the generic header itself is bad),
 *      and as root none is.
 * dev: ROUNDS (default 2000) rounds per job of JOBS (default 2) processes,
 *      each round one of: open/close in every mode; read(2) with sizes
 *      0..16 and bad buffers; poll; lseek and write; SHIFT_FT_IOC_INFO with
 *      sizes 0..8192 (every one of 0..4200 once), flags, non-zero tails,
 *      NULL, unmapped, read-only and page-straddling pointers; every ioctl
 *      number of our magic with every direction and many sizes, and random
 *      numbers; mmap with PROT_WRITE/EXEC, MAP_PRIVATE, offsets and lengths,
 *      mprotect, madvise, mremap and fork of a mapping.  Each result is
 *      checked against uapi/shift_ft.h (e.g. -E2BIG above
 *      SHIFT_FT_INFO_SIZE_MAX, no writable or executable mapping ever).
 *
 * -s SEED (default: from the clock) makes the run reproducible: the seed is
 * printed first; each job derives its own from it.  -x INDEX prints the
 * bytes of message INDEX (nl) and -v every failed check's message.
 * -u UID drops to UID (gid UID, no groups) with setresuid before starting.
 * The last line is a summary:
 *	# ftfuzz nl: msgs=N seconds=S per_s=R ... failures=F
 * Exit 0 if no check failed, 1 otherwise, 2 usage, 4 cannot run here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/fs.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <shift_ft.h>

#define KSFT_SKIP	4
#ifndef SOL_NETLINK
#define SOL_NETLINK	270
#endif
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static const char *mode;
static unsigned long failures;
static bool verbose;
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* ---- reproducible randomness (splitmix64) ---- */

static uint64_t rs;

static uint64_t rnd(void)
{
	uint64_t z = (rs += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rn(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

/* true with probability 1/n */
static bool one_in(uint32_t n)
{
	return rn(n) == 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void hexdump(const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len && i < 512; i++)
		printf("%s%02x", i % 32 ? "" : "\n#   ", b[i]);
	printf("%s\n", len > 512 ? " ..." : "");
}

static void failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failed(const char *fmt, ...)
{
	va_list ap;

	failures++;
	if (failures > 20)
		return;	/* counted; the first ones say enough */
	printf("# FAIL %s: ", mode);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void drop_privileges(long uid)
{
	if (uid < 0)
		return;
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	    setresuid(uid, uid, uid)) {
		printf("# ftfuzz: cannot become uid %ld: %s\n", uid, strerror(errno));
		exit(KSFT_SKIP);
	}
}

/* ======================================================================== */
/* netlink                                                                   */
/* ======================================================================== */

#define MSG_MAX		(128 * 1024)
#define RX_MAX		(256 * 1024)

static uint16_t family_id;
static uint32_t events_grp;
static uint8_t rx[RX_MAX];

/* errno histogram of the replies: index = errno (0: ack), 255: other */
static unsigned long hist[256];
static unsigned long n_replies, n_rows, n_dumps_done, n_events, n_socks;

static int nl_socket(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int one = 1, buf = 1 << 20;

	if (fd < 0) {
		printf("# ftfuzz: socket: %s\n", strerror(errno));
		exit(KSFT_SKIP);
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		printf("# ftfuzz: bind: %s\n", strerror(errno));
		exit(1);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	/* each socket takes its own mix of the reply options */
	if (rn(2))
		setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	if (rn(2))
		setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	if (rn(2))
		setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof(one));
	n_socks++;
	return fd;
}

static int nl_send(int fd, const void *buf, size_t len)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	return sendto(fd, buf, len, 0, (struct sockaddr *)&sa, sizeof(sa));
}

/* Resolves the family and its group with CTRL_CMD_GETFAMILY. */
static void nl_resolve(int fd)
{
	struct {
		struct nlmsghdr n;
		struct genlmsghdr g;
		uint8_t a[64];
	} req = {
		.n.nlmsg_type = GENL_ID_CTRL,
		.n.nlmsg_flags = NLM_F_REQUEST,
		.n.nlmsg_seq = 1,
		.g.cmd = CTRL_CMD_GETFAMILY,
		.g.version = 1,
	};
	struct nlattr *na = (struct nlattr *)req.a;
	struct nlmsghdr *n;
	ssize_t len;

	na->nla_type = CTRL_ATTR_FAMILY_NAME;
	na->nla_len = NLA_HDRLEN + sizeof(SHIFT_FT_GENL_NAME);
	memcpy((char *)na + NLA_HDRLEN, SHIFT_FT_GENL_NAME, sizeof(SHIFT_FT_GENL_NAME));
	req.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN) + NLA_ALIGN(na->nla_len);
	if (nl_send(fd, &req, req.n.nlmsg_len) < 0 ||
	    (len = recv(fd, rx, sizeof(rx), 0)) < 0) {
		printf("# ftfuzz: family lookup: %s\n", strerror(errno));
		exit(1);
	}
	n = (struct nlmsghdr *)rx;
	if (!NLMSG_OK(n, len) || n->nlmsg_type == NLMSG_ERROR) {
		printf("# ftfuzz: no family %s (module not loaded?)\n", SHIFT_FT_GENL_NAME);
		exit(KSFT_SKIP);
	}
	/* walk the top level for the id and the groups */
	{
		uint8_t *p = (uint8_t *)NLMSG_DATA(n) + GENL_HDRLEN;
		uint8_t *end = (uint8_t *)n + n->nlmsg_len;

		while (p + NLA_HDRLEN <= end) {
			struct nlattr *a = (struct nlattr *)p;

			if (a->nla_len < NLA_HDRLEN || p + a->nla_len > end)
				break;
			if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID)
				memcpy(&family_id, p + NLA_HDRLEN, 2);
			if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_MCAST_GROUPS) {
				uint8_t *g = p + NLA_HDRLEN;

				/* nest of nests of NAME and ID */
				while (g + NLA_HDRLEN <= p + a->nla_len) {
					struct nlattr *ga = (struct nlattr *)g;
					uint8_t *q = g + NLA_HDRLEN, *qe = g + ga->nla_len;
					uint32_t id = 0;
					bool ours = false;

					if (ga->nla_len < NLA_HDRLEN)
						break;
					while (q + NLA_HDRLEN <= qe) {
						struct nlattr *qa = (struct nlattr *)q;

						if (qa->nla_len < NLA_HDRLEN)
							break;
						if (qa->nla_type == CTRL_ATTR_MCAST_GRP_ID)
							memcpy(&id, q + NLA_HDRLEN, 4);
						if (qa->nla_type == CTRL_ATTR_MCAST_GRP_NAME &&
						    !strcmp((char *)q + NLA_HDRLEN,
							    SHIFT_FT_MCGRP_EVENTS))
							ours = true;
						q += NLA_ALIGN(qa->nla_len);
					}
					if (ours)
						events_grp = id;
					g += NLA_ALIGN(ga->nla_len);
				}
			}
			p += NLA_ALIGN(a->nla_len);
		}
	}
	if (!family_id) {
		printf("# ftfuzz: family %s has no id\n", SHIFT_FT_GENL_NAME);
		exit(1);
	}
}

/* ---- what the UAPI says ---- */

enum vt { V_NONE, V_U8, V_U32, V_S32, V_U64, V_STR, V_GID, V_NEST };

/* each attribute's type as the header comment gives it */
static const uint8_t attr_type[__SHIFT_FT_A_MAX] = {
	[SHIFT_FT_A_PAD] = V_NONE,
	[SHIFT_FT_A_GENERATION] = V_U64,	[SHIFT_FT_A_PORT_INDEX] = V_U32,
	[SHIFT_FT_A_DEV_NAME] = V_STR,		[SHIFT_FT_A_DEV_INDEX] = V_U32,
	[SHIFT_FT_A_PORT_NUM] = V_U32,		[SHIFT_FT_A_NODE_GUID] = V_U64,
	[SHIFT_FT_A_LINK_LAYER] = V_U8,		[SHIFT_FT_A_NETDEV] = V_STR,
	[SHIFT_FT_A_IFINDEX] = V_U32,		[SHIFT_FT_A_NUMA_NODE] = V_S32,
	[SHIFT_FT_A_STATE] = V_U8,		[SHIFT_FT_A_PHYS_STATE] = V_U8,
	[SHIFT_FT_A_SPEED] = V_U32,		[SHIFT_FT_A_WIDTH] = V_U8,
	[SHIFT_FT_A_MTU] = V_U32,		[SHIFT_FT_A_LAST_CHANGE] = V_U64,
	[SHIFT_FT_A_DOWN_COUNT] = V_U64,	[SHIFT_FT_A_LAST_EVENT] = V_U32,
	[SHIFT_FT_A_EVENT_COUNT] = V_U64,	[SHIFT_FT_A_BACKUP_INDEX] = V_U32,
	[SHIFT_FT_A_BACKUP_DEV_NAME] = V_STR,	[SHIFT_FT_A_BACKUP_PORT_NUM] = V_U32,
	[SHIFT_FT_A_BACKUP_STATE] = V_U8,	[SHIFT_FT_A_PAIR_STATE] = V_U8,
	[SHIFT_FT_A_PAIR_FLAGS] = V_U32,	[SHIFT_FT_A_PATH_INDEX] = V_U32,
	[SHIFT_FT_A_REMOTE_GID] = V_GID,	[SHIFT_FT_A_PATH_STATE] = V_U8,
	[SHIFT_FT_A_REPORT_STATE] = V_U8,	[SHIFT_FT_A_REPORT_SOURCE] = V_U8,
	[SHIFT_FT_A_REPORT_PID] = V_U32,	[SHIFT_FT_A_REPORT_TIME] = V_U64,
	[SHIFT_FT_A_FLAGS] = V_U32,		[SHIFT_FT_A_EVENT] = V_U32,
	[SHIFT_FT_A_EVENT_COUNTS] = V_NEST,
};

static bool cmd_admin(uint8_t cmd)
{
	return cmd == SHIFT_FT_CMD_PAIR_SET || cmd == SHIFT_FT_CMD_PAIR_CLEAR ||
	       cmd == SHIFT_FT_CMD_PATH_REPORT || cmd == SHIFT_FT_CMD_PATH_DEL;
}

static bool cmd_request(uint8_t cmd)
{
	return cmd_admin(cmd) || cmd == SHIFT_FT_CMD_PORT_GET ||
	       cmd == SHIFT_FT_CMD_PAIR_GET || cmd == SHIFT_FT_CMD_PATH_GET;
}

/* ---- a message as a list of attributes, before it is serialised ---- */

#define ATTR_MAX	64
#define VAL_MAX		8192

struct fattr {
	uint16_t type;		/* with NLA_F_* bits */
	uint16_t len;		/* payload bytes */
	uint8_t *val;
};

struct fmsg {
	uint16_t nl_type;
	uint16_t nl_flags;
	uint32_t seq;
	uint32_t pid;
	uint8_t cmd, version;
	uint16_t reserved;
	unsigned int n;
	struct fattr a[ATTR_MAX];
	uint8_t vals[ATTR_MAX][VAL_MAX];
	bool mutated;
};

static struct fmsg fm;
static uint8_t tx[MSG_MAX + 64];

static const char *const dev_names[] = {
	"rxe0", "rxe1", "rxe2", "rxe", "rxe00", "", "mlx5_0", "x",
};

static void a_raw(uint16_t type, const void *v, size_t len)
{
	struct fattr *a;

	if (fm.n >= ATTR_MAX)
		return;
	if (len > VAL_MAX)
		len = VAL_MAX;
	a = &fm.a[fm.n];
	a->type = type;
	a->len = len;
	a->val = fm.vals[fm.n++];
	if (len)
		memcpy(a->val, v, len);
}

static void a_u8(uint16_t t, uint8_t v) { a_raw(t, &v, 1); }
static void a_u32(uint16_t t, uint32_t v) { a_raw(t, &v, 4); }
static void a_u64(uint16_t t, uint64_t v) { a_raw(t, &v, 8); }
static void a_str(uint16_t t, const char *s) { a_raw(t, s, strlen(s) + 1); }

static uint32_t some_u32(void)
{
	static const uint32_t edge[] = { 0, 1, 2, 3, 255, 256, 0x7fffffff,
					 0x80000000, 0xfffffffe, 0xffffffff };

	return rn(3) ? edge[rn(ARRAY_SIZE(edge))] : (uint32_t)rnd();
}

static void some_name(char *buf)
{
	size_t len;

	switch (rn(8)) {
	case 0:	/* 63, 64 or 65 bytes: at and beyond the limit */
		len = 63 + rn(3);
		memset(buf, 'n', len);
		buf[len] = 0;
		break;
	case 1:
		len = rn(200);
		for (size_t i = 0; i < len; i++)
			buf[i] = 1 + rn(255);
		buf[len] = 0;
		break;
	default:
		strcpy(buf, dev_names[rn(ARRAY_SIZE(dev_names))]);
	}
}

static void a_name(uint16_t t)
{
	char buf[256];

	some_name(buf);
	a_str(t, buf);
}

static void a_gid(void)
{
	uint8_t g[16] = { 0xfe, 0x80 };

	if (one_in(8)) {
		for (int i = 0; i < 16; i++)
			g[i] = rnd();
	} else {
		/* a small pool, so that reports, gets and deletes meet */
		g[15] = rn(48);
	}
	a_raw(SHIFT_FT_A_REMOTE_GID, g, 16);
}

static void a_port(void)
{
	if (rn(3) == 0) {
		a_u32(SHIFT_FT_A_PORT_INDEX, rn(4) ? rn(4) : some_u32());
		return;
	}
	a_name(SHIFT_FT_A_DEV_NAME);
	a_u32(SHIFT_FT_A_PORT_NUM, rn(4) ? 1 : some_u32());
}

/* an attribute of type @t with a value of its own type */
static void a_typed(uint16_t t)
{
	uint8_t v[64];

	switch (t < __SHIFT_FT_A_MAX ? attr_type[t] : rn(V_NEST + 1)) {
	case V_NONE:
		a_raw(t, NULL, 0);
		break;
	case V_U8:
		a_u8(t, rn(2) ? rn(5) : rnd());
		break;
	case V_U32:
	case V_S32:
		a_u32(t, some_u32());
		break;
	case V_U64:
		a_u64(t, rnd());
		break;
	case V_STR:
		a_name(t);
		break;
	case V_GID:
		for (int i = 0; i < 16; i++)
			v[i] = rnd();
		a_raw(t, v, 16);
		break;
	case V_NEST: {
		/* u64 counts by event, as the kernel sends them */
		uint8_t nest[12 * 8];
		unsigned int k, n = rn(8);

		for (k = 0; k < n; k++) {
			struct nlattr *na = (struct nlattr *)(nest + 12 * k);
			uint64_t c = rnd();

			na->nla_len = 12;
			na->nla_type = rn(__SHIFT_FT_EV_MAX + 2);
			memcpy(na + 1, &c, 8);
		}
		a_raw(t | (rn(2) ? NLA_F_NESTED : 0), nest, 12 * n);
		break;
	}
	}
}

/* Appends the attributes of a valid request (or event) of @cmd. */
static void build_attrs(uint8_t cmd, bool dump)
{
	switch (cmd) {
	case SHIFT_FT_CMD_PORT_GET:
	case SHIFT_FT_CMD_PAIR_GET:
		if (!dump || one_in(4))
			a_port();
		break;
	case SHIFT_FT_CMD_PAIR_SET:
		a_name(SHIFT_FT_A_DEV_NAME);
		a_u32(SHIFT_FT_A_PORT_NUM, rn(4) ? 1 : some_u32());
		a_name(SHIFT_FT_A_BACKUP_DEV_NAME);
		a_u32(SHIFT_FT_A_BACKUP_PORT_NUM, rn(4) ? 1 : some_u32());
		break;
	case SHIFT_FT_CMD_PAIR_CLEAR:
		a_name(SHIFT_FT_A_DEV_NAME);
		a_u32(SHIFT_FT_A_PORT_NUM, rn(4) ? 1 : some_u32());
		break;
	case SHIFT_FT_CMD_PATH_GET:
		if (!dump || one_in(4)) {
			a_port();
			a_gid();
		}
		break;
	case SHIFT_FT_CMD_PATH_REPORT:
		a_port();
		a_gid();
		a_u8(SHIFT_FT_A_REPORT_STATE, rn(4) ? 1 + rn(2) : rnd());
		a_u8(SHIFT_FT_A_REPORT_SOURCE, rn(4) ? 2 + rn(2) : rnd());
		if (rn(2))
			a_u32(SHIFT_FT_A_FLAGS, rn(4) ? rn(4) : some_u32());
		break;
	case SHIFT_FT_CMD_PATH_DEL:
		a_port();
		a_gid();
		if (rn(2))
			a_u8(SHIFT_FT_A_REPORT_SOURCE, rn(4) ? 2 + rn(2) : rnd());
		break;
	default:
		/* an event or reply, or no command: the attributes it carries */
		for (unsigned int k = 0, n = rn(8); k < n; k++)
			a_typed(rn(__SHIFT_FT_A_MAX));
	}
}

/* A valid request (or event) of @cmd, as the UAPI describes it. */
static void build_valid(uint8_t cmd, bool dump)
{
	memset(&fm, 0, offsetof(struct fmsg, vals));
	fm.nl_type = family_id;
	fm.nl_flags = NLM_F_REQUEST | (rn(4) ? NLM_F_ACK : 0) | (dump ? NLM_F_DUMP : 0);
	fm.cmd = cmd;
	fm.version = SHIFT_FT_GENL_VERSION;
	build_attrs(cmd, dump);
}

/* Structural mutations of the attribute list. */
static void mutate_attrs(void)
{
	unsigned int i = fm.n ? rn(fm.n) : 0;
	struct fattr *a = &fm.a[i];
	uint8_t buf[VAL_MAX];

	fm.mutated = true;
	switch (rn(14)) {
	case 0:	/* drop one */
		if (fm.n) {
			memmove(&fm.a[i], &fm.a[i + 1], (fm.n - i - 1) * sizeof(*a));
			fm.n--;
		}
		break;
	case 1:	/* duplicate one (same value or another) */
		if (fm.n && fm.n < ATTR_MAX) {
			if (rn(2))
				a_raw(a->type, a->val, a->len);
			else
				a_typed(a->type & NLA_TYPE_MASK);
		}
		break;
	case 2:	/* unknown attribute */
		a_typed(__SHIFT_FT_A_MAX + rn(rn(2) ? 4 : NLA_TYPE_MASK));
		break;
	case 3:	/* any attribute of the family, reply-only ones included */
		a_typed(rn(__SHIFT_FT_A_MAX));
		break;
	case 4:	/* retype */
		if (fm.n)
			a->type = rn(2) ? rn(__SHIFT_FT_A_MAX + 2) : (uint16_t)rnd();
		break;
	case 5:	/* resize: shorter, longer, empty, big */
		if (fm.n) {
			static const uint16_t sizes[] = { 0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17,
							  63, 64, 65, 255, 256, 4000, VAL_MAX };
			uint16_t len = rn(2) ? sizes[rn(ARRAY_SIZE(sizes))] : rn(VAL_MAX);

			if (len > a->len)
				memset(a->val + a->len, rn(2) ? 0 : 'A' + rn(26), len - a->len);
			a->len = len;
		}
		break;
	case 6:	/* NLA_F_NESTED or NLA_F_NET_BYTEORDER */
		if (fm.n)
			a->type |= rn(2) ? NLA_F_NESTED : NLA_F_NET_BYTEORDER;
		break;
	case 7:	/* wrap some attributes into a nest, maybe deep */
		if (fm.n) {
			unsigned int depth = 1 + rn(rn(4) ? 3 : 40), k;
			size_t len = NLA_ALIGN(a->len) + NLA_HDRLEN;
			struct nlattr *na;

			if (len + depth * NLA_HDRLEN > VAL_MAX)
				break;
			na = (struct nlattr *)buf;
			na->nla_type = a->type;
			na->nla_len = NLA_HDRLEN + a->len;
			memcpy(buf + NLA_HDRLEN, a->val, a->len);
			for (k = 1; k < depth; k++) {
				memmove(buf + NLA_HDRLEN, buf, len);
				na->nla_type = rn(__SHIFT_FT_A_MAX + 2) | (rn(2) ? NLA_F_NESTED : 0);
				len += NLA_HDRLEN;
				na->nla_len = len;
			}
			memcpy(a->val, buf, len);
			a->len = len;
			a->type = (rn(2) ? SHIFT_FT_A_EVENT_COUNTS : rn(__SHIFT_FT_A_MAX)) |
				  (rn(2) ? NLA_F_NESTED : 0);
		}
		break;
	case 8:	/* a string without its NUL, or with one inside */
		if (fm.n && a->len > 1) {
			if (rn(2))
				a->len--;
			else
				a->val[rn(a->len)] = 0;
			if (rn(2))
				a->val[a->len - 1] = 'z';
		}
		break;
	case 9:	/* value extremes */
		if (fm.n && a->len)
			memset(a->val, rn(2) ? 0xff : 0, a->len);
		break;
	case 10: /* flip bits of a value */
		if (fm.n && a->len)
			a->val[rn(a->len)] ^= 1 << rn(8);
		break;
	case 11: /* many attributes */
		for (unsigned int k = 0, n = rn(ATTR_MAX); k < n; k++)
			a_typed(rn(__SHIFT_FT_A_MAX + 1));
		break;
	case 12: /* shuffle */
		for (unsigned int k = fm.n; k > 1; k--) {
			unsigned int j = rn(k);
			struct fattr t = fm.a[k - 1];

			fm.a[k - 1] = fm.a[j];
			fm.a[j] = t;
		}
		break;
	case 13: /* the attributes of another command too */
		build_attrs(1 + rn(SHIFT_FT_CMD_MAX), false);
		break;
	}
}

/* Header mutations. */
static void mutate_header(void)
{
	static const uint16_t types[] = { NLMSG_NOOP, NLMSG_ERROR, NLMSG_DONE,
					  NLMSG_OVERRUN, GENL_ID_CTRL, 0, 0xffff };
	static const uint16_t flags[] = { NLM_F_REQUEST, NLM_F_MULTI, NLM_F_ACK,
					  NLM_F_ECHO, NLM_F_DUMP_INTR, NLM_F_DUMP_FILTERED,
					  NLM_F_ROOT, NLM_F_MATCH, NLM_F_ATOMIC,
					  NLM_F_CAPPED, NLM_F_ACK_TLVS, 0x8000 };

	fm.mutated = true;
	switch (rn(6)) {
	case 0:
		fm.cmd = rn(2) ? rn(__SHIFT_FT_CMD_MAX + 2) : rnd();
		break;
	case 1:
		fm.version = rnd();
		break;
	case 2:
		fm.reserved = rn(2) ? 1 : rnd();
		break;
	case 3:	/* any mix of flags */
		fm.nl_flags = 0;
		for (unsigned int k = 0, n = rn(5); k < n; k++)
			fm.nl_flags |= flags[rn(ARRAY_SIZE(flags))];
		if (rn(2))
			fm.nl_flags |= NLM_F_REQUEST;
		break;
	case 4:
		fm.nl_type = rn(2) ? types[rn(ARRAY_SIZE(types))] : family_id + rn(3) - 1;
		break;
	case 5:
		fm.pid = rnd();
		fm.seq = rnd();
		break;
	}
}

/* Serialises fm into tx; returns the length. */
static size_t serialise(void)
{
	struct nlmsghdr *n = (struct nlmsghdr *)tx;
	struct genlmsghdr *g = NLMSG_DATA(n);
	size_t off = NLMSG_LENGTH(GENL_HDRLEN);
	unsigned int i;

	memset(tx, 0, off);
	g->cmd = fm.cmd;
	g->version = fm.version;
	g->reserved = fm.reserved;
	for (i = 0; i < fm.n; i++) {
		struct fattr *a = &fm.a[i];
		struct nlattr *na = (struct nlattr *)(tx + off);
		size_t len = NLA_HDRLEN + a->len;

		if (off + NLA_ALIGN(len) > MSG_MAX)
			break;
		na->nla_type = a->type;
		na->nla_len = len > 0xffff ? 0xffff : len;
		memcpy(tx + off + NLA_HDRLEN, a->val, a->len);
		memset(tx + off + len, 0, NLA_ALIGN(len) - len);
		off += NLA_ALIGN(len);
	}
	n->nlmsg_len = off;
	n->nlmsg_type = fm.nl_type;
	n->nlmsg_flags = fm.nl_flags;
	n->nlmsg_seq = fm.seq;
	n->nlmsg_pid = fm.pid;
	return off;
}

/* Byte mutations of the serialised message; returns the length to send. */
static size_t mutate_bytes(size_t len)
{
	struct nlmsghdr *n = (struct nlmsghdr *)tx;
	size_t off;

	fm.mutated = true;
	switch (rn(7)) {
	case 0:	/* nlmsg_len wrong */
		{
			static const uint32_t v[] = { 0, 1, 15, 16, 19, 20, 21, 0xffff, 0xffffffff };

			n->nlmsg_len = rn(2) ? v[rn(ARRAY_SIZE(v))] : n->nlmsg_len + rn(9) - 4;
		}
		break;
	case 1:	/* nla_len of the first or some attribute wrong */
		off = NLMSG_LENGTH(GENL_HDRLEN);
		if (len >= off + NLA_HDRLEN) {
			struct nlattr *na;
			unsigned int skip = rn(4);

			while (skip-- && off + NLA_HDRLEN <= len) {
				na = (struct nlattr *)(tx + off);
				if (na->nla_len < NLA_HDRLEN)
					break;
				if (off + NLA_ALIGN(na->nla_len) + NLA_HDRLEN > len)
					break;
				off += NLA_ALIGN(na->nla_len);
			}
			na = (struct nlattr *)(tx + off);
			{
				static const uint16_t v[] = { 0, 1, 2, 3, 4, 5, 8, 0xfff, 0xffff };

				na->nla_len = rn(2) ? v[rn(ARRAY_SIZE(v))] : na->nla_len + rn(9) - 4;
			}
		}
		break;
	case 2:	/* truncated, header kept or not */
		len = rn(len + 1);
		if (rn(2) && len >= NLMSG_HDRLEN)
			n->nlmsg_len = len;
		break;
	case 3:	/* random bytes flipped */
		for (unsigned int k = 0, m = 1 + rn(8); k < m && len; k++)
			tx[rn(len)] ^= 1 << rn(8);
		break;
	case 4:	/* trailing garbage */
		{
			size_t extra = rn(64);

			for (size_t k = 0; k < extra && len < sizeof(tx); k++)
				tx[len++] = rnd();
		}
		break;
	case 5:	/* two copies in one datagram */
		if (len * 2 <= sizeof(tx) && NLMSG_ALIGN(len) == len) {
			memcpy(tx + len, tx, len);
			len *= 2;
		}
		break;
	case 6:	/* zero-length or header-only datagram */
		len = rn(2) ? 0 : rn(NLMSG_HDRLEN + GENL_HDRLEN + 1);
		break;
	}
	return len;
}

/* What a clean request must be answered with; -1: no rule. */
struct expect {
	bool clean;		/* one message, headers well formed */
	bool admin;
	bool request;		/* a command the family has */
	bool hdr_bad;		/* genl_header_check refuses it */
	bool dump;		/* NLM_F_DUMP */
};

static struct expect classify(size_t len)
{
	const struct nlmsghdr *n = (const struct nlmsghdr *)tx;
	const struct genlmsghdr *g = NLMSG_DATA(n);
	struct expect e = { 0 };
	uint16_t flags;

	if (len < NLMSG_LENGTH(GENL_HDRLEN) || n->nlmsg_len != len ||
	    n->nlmsg_type != family_id || !(n->nlmsg_flags & NLM_F_REQUEST))
		return e;
	e.clean = true;
	e.admin = cmd_admin(g->cmd);
	e.request = cmd_request(g->cmd);
	flags = n->nlmsg_flags;
	e.dump = (flags & NLM_F_DUMP) == NLM_F_DUMP;
	if (e.dump)
		flags &= ~NLM_F_DUMP;
	/* all our commands are from resv_start_op on: checked */
	e.hdr_bad = g->cmd >= SHIFT_FT_CMD_PORT_GET &&
		    (g->reserved || (flags & ~(NLM_F_REQUEST | NLM_F_ACK | NLM_F_ECHO)));
	return e;
}

static bool errno_named(int e)
{
	/*
	 * the ABI's (EBUSY: PATH_DEL of a row another source reported), the
	 * core's (EMSGSIZE, ENOBUFS; EBUSY: a dump is still running on the
	 * socket), the allocator's
	 */
	return e == 0 || e == EINVAL || e == ERANGE || e == EOPNOTSUPP ||
	       e == ENODEV || e == ENOENT || e == ENOSPC || e == EPERM ||
	       e == EMSGSIZE || e == ENOBUFS || e == ENOMEM || e == EBUSY;
}

/* Checks the attributes of a reply or event: all inside the message. */
static bool attrs_ok(const uint8_t *p, const uint8_t *end)
{
	while (p + NLA_HDRLEN <= end) {
		const struct nlattr *a = (const struct nlattr *)p;

		if (a->nla_len < NLA_HDRLEN || p + a->nla_len > end)
			return false;
		if ((a->nla_type & NLA_TYPE_MASK) == SHIFT_FT_A_EVENT_COUNTS &&
		    !attrs_ok(p + NLA_HDRLEN, p + a->nla_len))
			return false;
		p += NLA_ALIGN(a->nla_len);
	}
	return true;
}

/*
 * Drains @fd; returns the error of the last NLMSG_ERROR answering sequence
 * number @seq (0: an ack or none; *got says whether there was one).  Others
 * answer messages whose replies were left queued.
 */
static bool overrun;

static int drain(int fd, bool *got, bool check, uint32_t seq)
{
	int err = 0;

	*got = false;
	overrun = false;
	for (;;) {
		ssize_t len = recv(fd, rx, sizeof(rx), MSG_DONTWAIT);
		struct nlmsghdr *n;

		if (len < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (errno == ENOBUFS) {
				/* replies were lost: no verdict on this one */
				hist[ENOBUFS]++;
				overrun = true;
				continue;
			}
			failed("recv: %s", strerror(errno));
			break;
		}
		for (n = (struct nlmsghdr *)rx; NLMSG_OK(n, len); n = NLMSG_NEXT(n, len)) {
			n_replies++;
			if (n->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(n);

				if (n->nlmsg_len < NLMSG_LENGTH(sizeof(*e))) {
					failed("short NLMSG_ERROR");
					continue;
				}
				hist[-e->error >= 0 && -e->error < 255 ? -e->error : 255]++;
				if (n->nlmsg_seq == seq) {
					err = -e->error;
					*got = true;
				}
				continue;
			}
			if (n->nlmsg_type == NLMSG_DONE) {
				n_dumps_done++;
				continue;
			}
			if (n->nlmsg_type != family_id)
				continue;	/* a message of another type was answered */
			n_rows++;
			if (n->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN) ||
			    !attrs_ok((uint8_t *)NLMSG_DATA(n) + GENL_HDRLEN,
				      (uint8_t *)n + n->nlmsg_len))
				failed("malformed reply (cmd %u, %u bytes)",
				       ((struct genlmsghdr *)NLMSG_DATA(n))->cmd, n->nlmsg_len);
		}
		if (len > 0 && check)
			failed("%zd bytes of a reply not a whole message", len);
	}
	return err;
}

static void drain_events(int fd)
{
	bool got;
	unsigned long before = n_rows;

	drain(fd, &got, false, 0);
	n_events += n_rows - before;
	n_rows = before;
}

static void check_answer(const struct expect *e, bool got, int err, bool uid_set,
			 unsigned long idx, size_t len)
{
	const char *why = NULL;
	char buf[128];

	if (!e->clean)
		return;
	if (e->hdr_bad) {
		if (!got || err != EINVAL)
			why = "a bad generic header must get EINVAL";
	} else if (!e->request) {
		if (!got || err != EOPNOTSUPP)
			why = "a command the family does not take must get EOPNOTSUPP";
	} else if (uid_set && e->admin) {
		/*
		 * Since 6.2 the core looks a command up as a doit or a dumpit
		 * before it checks the permission: a dump of an admin
		 * command, which has none, is EOPNOTSUPP there.
		 */
		if (!got || (err != EPERM && !(e->dump && err == EOPNOTSUPP)))
			why = "an admin command must get EPERM without CAP_NET_ADMIN";
	} else if (got && err == EPERM) {
		why = uid_set ? "a read was refused with EPERM" :
				"root was refused with EPERM";
	} else if (got && !errno_named(err)) {
		snprintf(buf, sizeof(buf), "errno %d (%s) is not one the ABI names",
			 err, strerror(err));
		why = buf;
	}
	if (!why)
		return;
	failed("message %lu (cmd %u): %s; got %s%s", idx,
	       ((struct genlmsghdr *)NLMSG_DATA((struct nlmsghdr *)tx))->cmd, why,
	       got ? "" : "no answer", got ? strerror(err) : "");
	if (verbose && failures <= 20)
		hexdump(tx, len);
}

static int run_nl(unsigned long msgs, long uid, long show)
{
	int fd, lfd, fds[4];
	unsigned long i, sent = 0;
	double t0;

	drop_privileges(uid);
	fd = nl_socket();
	nl_resolve(fd);
	close(fd);
	lfd = nl_socket();
	if (events_grp &&
	    setsockopt(lfd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &events_grp,
		       sizeof(events_grp)))
		printf("# ftfuzz: cannot join %s: %s\n", SHIFT_FT_MCGRP_EVENTS,
		       strerror(errno));
	for (i = 0; i < ARRAY_SIZE(fds); i++)
		fds[i] = nl_socket();

	t0 = now_s();
	for (i = 0; i < msgs && !stop; i++) {
		unsigned int s = rn(ARRAY_SIZE(fds));
		struct expect e;
		size_t len;
		bool got, drained = true;
		int err;

		if (rn(16) == 0) {
			/* pure noise, or an empty family message */
			memset(&fm, 0, offsetof(struct fmsg, vals));
			len = rn(rn(2) ? 64 : 4096);
			for (size_t k = 0; k < len; k++)
				tx[k] = rnd();
			if (len >= NLMSG_HDRLEN && rn(2)) {
				((struct nlmsghdr *)tx)->nlmsg_type = family_id;
				((struct nlmsghdr *)tx)->nlmsg_len = len;
				((struct nlmsghdr *)tx)->nlmsg_flags |= NLM_F_REQUEST;
			}
			fm.mutated = true;
		} else {
			uint8_t cmd = rn(8) ? 1 + rn(SHIFT_FT_CMD_MAX) : rn(256);
			bool dump = rn(3) == 0;

			build_valid(cmd, dump);
			fm.seq = i;
			if (rn(3)) {
				unsigned int k, m = 1 + rn(rn(4) ? 2 : 6);

				for (k = 0; k < m; k++)
					if (rn(3))
						mutate_attrs();
					else
						mutate_header();
			}
			len = serialise();
			if (one_in(6))
				len = mutate_bytes(len);
		}
		if (show == (long)i) {
			printf("# message %lu, %zu bytes:", i, len);
			hexdump(tx, len);
		}
		e = classify(len);
		/* an empty datagram is refused with ENODATA */
		if (nl_send(fds[s], tx, len) < 0 && !(len == 0 && errno == ENODATA) &&
		    errno != ENOBUFS)
			failed("message %lu: send of %zu bytes: %s", i, len, strerror(errno));
		sent++;

		if (one_in(50)) {
			/* leave the replies (and a dump's rest) queued */
			drained = false;
		} else {
			err = drain(fds[s], &got, true,
				    len >= NLMSG_HDRLEN ? ((struct nlmsghdr *)tx)->nlmsg_seq : 0);
			if (!overrun)
				check_answer(&e, got, err, uid >= 0, i, len);
		}
		if (one_in(drained ? 400 : 4)) {
			/* the socket goes, with its reports and maybe a dump */
			close(fds[s]);
			fds[s] = nl_socket();
		}
		if (i % 64 == 0)
			drain_events(lfd);
	}
	t0 = now_s() - t0;
	for (i = 0; i < ARRAY_SIZE(fds); i++)
		close(fds[i]);
	drain_events(lfd);
	close(lfd);

	printf("# ftfuzz nl: msgs=%lu seconds=%.1f per_s=%.0f uid=%ld replies=%lu rows=%lu "
	       "dumps=%lu events=%lu sockets=%lu", sent, t0, sent / (t0 > 0 ? t0 : 1),
	       (long)getuid(),
	       n_replies, n_rows, n_dumps_done, n_events, n_socks);
	printf(" ack=%lu", hist[0]);
	for (int k = 1; k < 256; k++)
		if (hist[k])
			printf(" %s=%lu", k == 255 ? "other" : strerrorname_np(k) ?: "?", hist[k]);
	printf(" failures=%lu\n", failures);
	return failures ? 1 : 0;
}

/* ======================================================================== */
/* /dev/shift_ft                                                             */
/* ======================================================================== */

static long pagesz;
static uint8_t *bad_ro;		/* a read-only page */
static uint8_t *bad_edge;	/* a page followed by an unmapped one */
static struct shift_ft_info kinfo;	/* what a valid SHIFT_FT_IOC_INFO says */
static sigjmp_buf segv_jmp;
static volatile sig_atomic_t segv_armed;
static unsigned long n_ok, n_maps;
static bool is_root;

static void on_segv(int sig)
{
	(void)sig;
	if (segv_armed)
		siglongjmp(segv_jmp, 1);
	_exit(3);
}

static int dev_open(int flags)
{
	return open(SHIFT_FT_DEVICE_PATH, flags | O_CLOEXEC);
}

static void expect_err(const char *what, long ret, int want)
{
	if (want == 0 ? ret >= 0 : (ret == -1 && errno == want))
		return;
	failed("%s: got %ld (%s), expected %s", what, ret, ret < 0 ? strerror(errno) : "ok",
	       want ? strerror(want) : "success");
}

/* SHIFT_FT_IOC_INFO with a caller's struct of @usize bytes at @p. */
static void info_call(int fd, uint32_t usize, uint32_t flags, bool tail)
{
	size_t room = usize < 8192 ? usize : 8192;
	uint8_t *buf = calloc(1, room + 64 > 4096 ? room + 64 : 4096);
	struct shift_ft_info *in = (struct shift_ft_info *)buf;
	int want;
	long r;

	in->size = usize;
	in->flags = flags;
	if (tail && room > sizeof(*in))
		buf[sizeof(*in) + rn(room - sizeof(*in))] = 1 + rn(255);
	if (usize < SHIFT_FT_INFO_SIZE_VER0)
		want = EINVAL;
	else if (usize > SHIFT_FT_INFO_SIZE_MAX)
		want = E2BIG;
	else if (tail && room > sizeof(*in))
		want = E2BIG;
	else if (flags)
		want = EOPNOTSUPP;
	else
		want = 0;
	r = ioctl(fd, SHIFT_FT_IOC_INFO, buf);
	expect_err("SHIFT_FT_IOC_INFO", r, want);
	if (!r) {
		if (in->size != (usize < sizeof(*in) ? usize : sizeof(*in)))
			failed("SHIFT_FT_IOC_INFO: size %u for a caller's %u", in->size, usize);
		if (in->map_size != kinfo.map_size || in->page_version != kinfo.page_version)
			failed("SHIFT_FT_IOC_INFO: map_size %llu, version %u changed",
			       (unsigned long long)in->map_size, in->page_version);
		for (size_t k = in->size; k < room; k++)
			if (buf[k]) {
				failed("SHIFT_FT_IOC_INFO wrote byte %zu beyond size %u", k, in->size);
				break;
			}
		n_ok++;
	}
	free(buf);
}

static void round_ioctl(int fd)
{
	static uint32_t sweep;
	static const uint32_t sizes[] = { 0, 1, 8, 39, 40, 41, 71, 72, 73, 4095,
					  SHIFT_FT_INFO_SIZE_MAX,
					  SHIFT_FT_INFO_SIZE_MAX + 1, 8192,
					  0x7fffffff, 0xffffffff };
	unsigned int dir, nr, size;
	unsigned long cmd;
	uint8_t buf[512] = { 0 };
	long r;

	switch (rn(8)) {
	case 0:	/* the sweep: every size of 0..4200 once over the run */
		for (int k = 0; k < 16; k++) {
			info_call(fd, sweep, 0, false);
			sweep = (sweep + 1) % 4201;
		}
		break;
	case 1:
		info_call(fd, sizes[rn(ARRAY_SIZE(sizes))], rn(4) ? 0 : (uint32_t)rnd(), rn(4) == 0);
		break;
	case 2:	/* bad pointers */
		{
			static const uintptr_t ptrs[] = { 0, 1, 4096, 0xffffffff81000000ull,
							  0xffff888000000000ull, 0x00007ffffffff000ull,
							  0xdead0000 };

			r = ioctl(fd, SHIFT_FT_IOC_INFO, (void *)ptrs[rn(ARRAY_SIZE(ptrs))]);
			expect_err("SHIFT_FT_IOC_INFO on a bad pointer", r, EFAULT);
		}
		break;
	case 3:	/* read-only memory: the kernel's answer cannot be written */
		/* the page holds a valid request, set up before its mprotect */
		r = ioctl(fd, SHIFT_FT_IOC_INFO, bad_ro);
		expect_err("SHIFT_FT_IOC_INFO into read-only memory", r, EFAULT);
		break;
	case 4:	/* a struct straddling into an unmapped page */
		{
			uint32_t usize = 40 + rn(200);
			uint8_t *p = bad_edge + pagesz - 4 - rn(usize);
			int want;

			memset(p, 0, bad_edge + pagesz - p);
			*(uint32_t *)p = usize;
			want = p + usize > bad_edge + pagesz ? EFAULT : 0;
			r = ioctl(fd, SHIFT_FT_IOC_INFO, p);
			expect_err("SHIFT_FT_IOC_INFO across a page end", r, want);
		}
		break;
	case 5:	/* every number of our magic, any direction and size */
		dir = rn(4);
		nr = rn(256);
		size = rn(2) ? rn(1 << _IOC_SIZEBITS) : sizeof(struct shift_ft_info) + rn(9) - 4;
		cmd = _IOC(dir, SHIFT_FT_IOC_MAGIC, nr, size);
		memset(buf, 0, sizeof(buf));
		*(uint32_t *)buf = sizeof(struct shift_ft_info);
		r = ioctl(fd, cmd, buf);
		expect_err("an ioctl near ours", r, cmd == SHIFT_FT_IOC_INFO ? 0 : ENOTTY);
		break;
	case 6:	/* neighbours of our magic */
		cmd = _IOC(rn(4), SHIFT_FT_IOC_MAGIC + rn(3) - 1, rn(4), rn(128));
		if (cmd != SHIFT_FT_IOC_INFO) {
			r = ioctl(fd, cmd, buf);
			expect_err("an ioctl of a neighbouring magic", r, ENOTTY);
		}
		break;
	case 7:	/* anything, with no rule but no crash (VFS takes some) */
		cmd = (uint32_t)rnd();
		if (cmd == FIOCLEX || cmd == FIONCLEX || cmd == FIONBIO || cmd == FIOASYNC ||
		    cmd == FIFREEZE || cmd == FITHAW)
			break;
		ioctl(fd, cmd, rn(2) ? (void *)buf : NULL);
		break;
	}
}

static void round_rw(int fd, int oflags)
{
	bool rd = (oflags & O_ACCMODE) != O_WRONLY;
	uint8_t buf[32];
	long r;
	size_t len = rn(17);

	switch (rn(5)) {
	case 0:
		r = read(fd, buf, len);
		expect_err("read", r, !rd ? EBADF : len < 8 ? EINVAL : 0);
		if (r > 0 && r != 8)
			failed("read returned %ld bytes", r);
		break;
	case 1:
		r = read(fd, rn(2) ? NULL : (void *)(bad_edge + pagesz - rn(8)), 8 + rn(8));
		if (r >= 0 && r != 8)
			failed("read into a bad buffer returned %ld", r);
		break;
	case 2:
		r = read(fd, bad_ro, 8);
		expect_err("read into read-only memory", r, rd ? EFAULT : EBADF);
		break;
	case 3:
		{
			struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT | POLLPRI };

			poll(&p, 1, rn(3));
		}
		break;
	case 4:
		r = lseek(fd, rn(4096), rn(3));
		expect_err("lseek", r, ESPIPE);
		r = write(fd, buf, rn(16));
		if (r >= 0)
			failed("write succeeded");
		break;
	}
}

/* Reads every page of a mapping; false if that faulted. */
static bool __attribute__((noinline)) read_mapping(const uint8_t *p, size_t len)
{
	volatile const struct shift_ft_page_hdr *h = (const void *)p;
	volatile bool ok = true;

	segv_armed = 1;
	if (!sigsetjmp(segv_jmp, 1)) {
		if (h->magic != SHIFT_FT_PAGE_MAGIC)
			failed("mapped page has magic %#x", h->magic);
		for (size_t k = 0; k < len; k += pagesz)
			(void)((volatile const uint8_t *)p)[k];
	} else {
		ok = false;
	}
	segv_armed = 0;
	return ok;
}

static void round_mmap(int fd, int oflags)
{
	static const int prots[] = { PROT_READ, PROT_READ | PROT_WRITE, PROT_WRITE,
				     PROT_READ | PROT_EXEC, PROT_EXEC, PROT_NONE,
				     PROT_READ | PROT_WRITE | PROT_EXEC };
	size_t map = kinfo.map_size;
	size_t lens[] = { 0, 1, pagesz, map, map + 1, map + pagesz, map * 2, (size_t)1 << 40 };
	off_t offs[] = { 0, 0, 0, pagesz, 1, map, -pagesz, (off_t)1 << 40 };
	int prot = rn(3) ? PROT_READ : prots[rn(ARRAY_SIZE(prots))];
	int flags = rn(4) ? MAP_SHARED : MAP_PRIVATE;
	size_t len = rn(2) ? map : lens[rn(ARRAY_SIZE(lens))];
	off_t off = rn(2) ? 0 : offs[rn(ARRAY_SIZE(offs))];
	uint8_t *p;
	int r;

	if (rn(8) == 0)
		flags |= MAP_POPULATE;
	p = mmap(NULL, len, prot, flags, fd, off);
	if (p == MAP_FAILED)
		return;
	n_maps++;
	if (prot & (PROT_WRITE | PROT_EXEC))
		failed("mmap prot %#x flags %#x open %#x succeeded", prot, flags, oflags);
	if (off != 0 || len > map || len == 0)
		failed("mmap of %zu bytes at offset %lld succeeded", len, (long long)off);
	if ((prot & PROT_READ) && !read_mapping(p, len))
		failed("reading the mapping faulted");
	r = mprotect(p, len, rn(2) ? PROT_READ | PROT_WRITE : rn(2) ? PROT_EXEC : PROT_WRITE);
	if (!r)
		failed("mprotect to write or exec succeeded (open %#x, flags %#x)", oflags, flags);

	switch (rn(6)) {
	case 0:	/* grow: VM_DONTEXPAND must refuse */
		{
			void *q = mremap(p, len, len + pagesz, MREMAP_MAYMOVE);

			if (q != MAP_FAILED) {
				failed("mremap grew the mapping");
				p = q;
				len += pagesz;
			}
		}
		break;
	case 1:	/* move it */
		{
			void *q = mremap(p, len, len, MREMAP_MAYMOVE);

			if (q != MAP_FAILED)
				p = q;
		}
		break;
	case 2:	/* a child inherits it and reads it */
		if (prot & PROT_READ) {
			pid_t c = fork();

			if (c == 0) {
				_exit(((volatile const struct shift_ft_page_hdr *)p)->magic !=
				      SHIFT_FT_PAGE_MAGIC);
			}
			if (c > 0) {
				int st;

				waitpid(c, &st, 0);
				if (!WIFEXITED(st) || WEXITSTATUS(st))
					failed("a forked child could not read the mapping (status %#x)", st);
			}
		}
		break;
	case 3:
		madvise(p, len, rn(2) ? MADV_DONTFORK : MADV_DOFORK);
		break;
	case 4:	/* unmap part of it first */
		if (len > (size_t)pagesz) {
			munmap(p + pagesz, pagesz);
		}
		break;
	case 5:	/* close the file first: the mapping lives on */
		break;
	}
	munmap(p, len);
}

static int dev_job(unsigned long rounds)
{
	static const int modes[] = { O_RDONLY, O_RDONLY | O_NONBLOCK, O_WRONLY,
				     O_RDWR, O_RDONLY | O_NOCTTY };
	unsigned long i;
	int fd = -1, oflags = O_RDONLY;

	for (i = 0; i < rounds && !stop; i++) {
		if (fd < 0 || one_in(8)) {
			int m = modes[rn(ARRAY_SIZE(modes))];

			if (fd >= 0)
				close(fd);
			fd = dev_open(m);
			if (fd < 0) {
				if ((m & O_ACCMODE) != O_RDONLY && !is_root && errno == EACCES)
					continue;
				if (errno == ENOENT || errno == ENXIO || errno == ENODEV)
					continue;	/* the module is going or coming */
				failed("open %#x: %s", m, strerror(errno));
				continue;
			}
			if ((m & O_ACCMODE) != O_RDONLY && !is_root)
				failed("open %#x as uid %d succeeded on a 0444 node", m, getuid());
			oflags = m;
		}
		switch (rn(4)) {
		case 0:
			round_ioctl(fd);
			break;
		case 1:
			round_rw(fd, oflags);
			break;
		case 2:
			round_mmap(fd, oflags);
			break;
		case 3:	/* open and close quickly, some with a mapping left */
			{
				int f = dev_open(O_RDONLY);
				void *p;

				if (f < 0)
					break;
				p = mmap(NULL, pagesz, PROT_READ, MAP_SHARED, f, 0);
				close(f);
				if (p != MAP_FAILED)
					munmap(p, pagesz);
			}
			break;
		}
	}
	if (fd >= 0)
		close(fd);
	printf("# ftfuzz dev: job uid=%d rounds=%lu info_ok=%lu maps=%lu failures=%lu\n",
	       getuid(), i, n_ok, n_maps, failures);
	return failures ? 1 : 0;
}

static int run_dev(unsigned long rounds, long uid, unsigned int jobs, uint64_t seed)
{
	struct sigaction sa = { .sa_handler = on_segv };
	unsigned int j, bad = 0;
	pid_t kids[64] = { 0 };
	double t0 = now_s();
	int fd;

	drop_privileges(uid);
	is_root = geteuid() == 0;
	pagesz = sysconf(_SC_PAGESIZE);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);

	fd = dev_open(O_RDONLY);
	if (fd < 0) {
		printf("# ftfuzz: %s: %s\n", SHIFT_FT_DEVICE_PATH, strerror(errno));
		return KSFT_SKIP;
	}
	kinfo.size = sizeof(kinfo);
	if (ioctl(fd, SHIFT_FT_IOC_INFO, &kinfo)) {
		printf("# ftfuzz: SHIFT_FT_IOC_INFO: %s\n", strerror(errno));
		return 1;
	}
	close(fd);
	bad_ro = mmap(NULL, pagesz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bad_edge = mmap(NULL, 2 * pagesz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (bad_ro == MAP_FAILED || bad_edge == MAP_FAILED)
		return 1;
	*(uint32_t *)bad_ro = sizeof(struct shift_ft_info);
	mprotect(bad_ro, pagesz, PROT_READ);
	munmap(bad_edge + pagesz, pagesz);

	for (j = 0; j < jobs && j < ARRAY_SIZE(kids); j++) {
		kids[j] = fork();
		if (kids[j] == 0) {
			rs = seed ^ (0x5851f42d4c957f2dull * (j + 1));
			exit(dev_job(rounds));
		}
	}
	for (j = 0; j < jobs && j < ARRAY_SIZE(kids); ) {
		int st;

		if (wait(&st) < 0) {
			if (errno != EINTR)
				break;
			/* told to stop: so are the jobs */
			for (unsigned int k = 0; k < jobs && k < ARRAY_SIZE(kids); k++)
				if (kids[k] > 0)
					kill(kids[k], SIGTERM);
			continue;
		}
		j++;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	printf("# ftfuzz dev: jobs=%u rounds=%lu seconds=%.1f uid=%ld failed_jobs=%u\n",
	       jobs, rounds, now_s() - t0, (long)getuid(), bad);
	return bad ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ftfuzz nl  [-n MSGS] [-s SEED] [-u UID] [-x INDEX] [-v]\n"
		"       ftfuzz dev [-n ROUNDS] [-s SEED] [-u UID] [-j JOBS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long n = 0;
	uint64_t seed = 0;
	bool have_seed = false;
	long uid = -1, show = -1;
	unsigned int jobs = 2;
	struct sigaction sa = { .sa_handler = on_term };
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		usage();
	mode = argv[1];
	optind = 2;
	while ((c = getopt(argc, argv, "n:s:u:x:j:v")) != -1) {
		switch (c) {
		case 'n': n = strtoul(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); have_seed = true; break;
		case 'u': uid = strtol(optarg, NULL, 0); break;
		case 'x': show = strtol(optarg, NULL, 0); break;
		case 'j': jobs = strtoul(optarg, NULL, 0); break;
		case 'v': verbose = true; break;
		default: usage();
		}
	}
	if (!have_seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ getpid();
	}
	printf("# ftfuzz %s: seed=%#" PRIx64 " (rerun with -s %#" PRIx64 ")\n", mode, seed, seed);
	rs = seed;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!strcmp(mode, "nl"))
		return run_nl(n ?: 10000, uid, show);
	if (!strcmp(mode, "dev"))
		return run_dev(n ?: 2000, uid, jobs, seed);
	usage();
	return 2;
}
