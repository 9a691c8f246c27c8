// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * report.c: telling shift_ft what the transport said about a path.
 *
 * A QP that fails over on a retry-exceeded completion learnt something the
 * health table did not show: its path to the peer is broken although the
 * port is up (a dead switch port, a cable cut further on).  Reported to the
 * kernel (SHIFT_FT_CMD_PATH_REPORT, source APP), the path shows DOWN on every
 * process's page, and their QPs to that peer move at once instead of each
 * waiting out its own transport timeout.  When the reporter's probe finds
 * the path good again it reports it UP, and the others come back.
 *
 * One generic netlink socket, opened on the first report and kept for the
 * life of the process; reports carry SHIFT_FT_REPORT_F_WITHDRAW, so the
 * kernel withdraws them when the socket is closed (uapi/shift_ft.h): a
 * reporter that exits cannot leave a path down.  Reporting needs CAP_NET_ADMIN; without it the library says so
 * once and goes on (its own QPs are not affected).
 *
 * Context: the shadow thread (a report is a syscall and a reply).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "report.h"

#define NL_BUF	1024

static pthread_mutex_t nl_lock = PTHREAD_MUTEX_INITIALIZER;
static int nl_fd = -1;
static uint16_t nl_family;
static uint32_t nl_seq;
static int nl_refused;		/* the kernel said no (errno): stop asking */

struct nl_req {
	struct nlmsghdr n;
	struct genlmsghdr g;
	char attrs[256];
};

static void put_attr(struct nl_req *r, uint16_t type, const void *data, size_t len)
{
	struct nlattr *a = (struct nlattr *)((char *)r + NLMSG_ALIGN(r->n.nlmsg_len));

	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	memcpy((char *)a + NLA_HDRLEN, data, len);
	r->n.nlmsg_len = NLMSG_ALIGN(r->n.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static void req_init(struct nl_req *r, uint16_t family, uint8_t cmd, uint8_t version)
{
	memset(r, 0, sizeof(*r));
	r->n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	r->n.nlmsg_type = family;
	r->n.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	r->n.nlmsg_seq = ++nl_seq;
	r->g.cmd = cmd;
	r->g.version = version;
}

/*
 * Send @r and read until its ack.  With @family_out, the reply to a
 * CTRL_CMD_GETFAMILY gives the family's id.  Returns 0 or -errno (the
 * kernel's, or the socket's).  Context: nl_lock held.
 */
static int nl_talk(struct nl_req *r, uint16_t *family_out)
{
	char buf[NL_BUF] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nlmsghdr *h;
	ssize_t len;

	if (send(nl_fd, r, r->n.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		len = recv(nl_fd, buf, sizeof(buf), 0);
		if (len < 0)
			return -errno;	/* EAGAIN: no answer within the timeout */
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != r->n.nlmsg_seq)
				continue;	/* a late answer to an earlier request */
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error;
			}
			if (family_out && h->nlmsg_type == GENL_ID_CTRL) {
				struct nlattr *a = (struct nlattr *)((char *)NLMSG_DATA(h) +
								     GENL_HDRLEN);
				int left = (int)h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);

				for (; left >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
				       a->nla_len <= left;
				     left -= NLA_ALIGN(a->nla_len),
				     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len)))
					if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID &&
					    a->nla_len == NLA_HDRLEN + sizeof(uint16_t))
						memcpy(family_out, (char *)a + NLA_HDRLEN,
						       sizeof(uint16_t));
			}
		}
	}
}

/* The socket and the family's id.  Context: nl_lock held. */
static int nl_open(void)
{
	struct timeval tv = { .tv_sec = 1 };
	struct nl_req r;
	uint16_t family = 0;
	int ret;

	if (nl_fd >= 0 && nl_family)
		return 0;
	if (nl_fd < 0) {
		nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
		if (nl_fd < 0)
			return -errno;
		setsockopt(nl_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	req_init(&r, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1);
	put_attr(&r, CTRL_ATTR_FAMILY_NAME, SHIFT_FT_GENL_NAME, sizeof(SHIFT_FT_GENL_NAME));
	ret = nl_talk(&r, &family);
	if (ret)
		return ret;
	if (!family)
		return -ENOENT;
	nl_family = family;
	return 0;
}

int shiftu_report_path(const char *dev_name, uint32_t port_num,
		       const uint8_t gid[SHIFT_FT_GID_LEN], bool down)
{
	uint8_t state = down ? SHIFT_FT_PATH_DOWN : SHIFT_FT_PATH_UP;
	uint8_t source = SHIFT_FT_SRC_APP;
	uint32_t flags = SHIFT_FT_REPORT_F_WITHDRAW;
	struct nl_req r;
	int ret;

	shiftu_lock(&nl_lock, SHIFTU_LOCK_NL);
	if (nl_refused) {
		shiftu_unlock(&nl_lock, SHIFTU_LOCK_NL);
		return -nl_refused;
	}
	ret = nl_open();
	if (!ret) {
		req_init(&r, nl_family, SHIFT_FT_CMD_PATH_REPORT, SHIFT_FT_GENL_VERSION);
		put_attr(&r, SHIFT_FT_A_DEV_NAME, dev_name, strlen(dev_name) + 1);
		put_attr(&r, SHIFT_FT_A_PORT_NUM, &port_num, sizeof(port_num));
		put_attr(&r, SHIFT_FT_A_REMOTE_GID, gid, SHIFT_FT_GID_LEN);
		put_attr(&r, SHIFT_FT_A_REPORT_STATE, &state, sizeof(state));
		put_attr(&r, SHIFT_FT_A_REPORT_SOURCE, &source, sizeof(source));
		put_attr(&r, SHIFT_FT_A_FLAGS, &flags, sizeof(flags));
		ret = nl_talk(&r, NULL);
	}
	if (ret == -EPERM || ret == -ENOENT || ret == -EPROTONOSUPPORT) {
		/* no right, no module: it will not change while we run */
		nl_refused = -ret;
		shiftu_info("path reports to shift_ft: %s: other processes are not told of paths this one finds down",
			    ret == -EPERM ? "not permitted (CAP_NET_ADMIN)" :
					    "no shift_ft family");
	}
	shiftu_unlock(&nl_lock, SHIFTU_LOCK_NL);
	return ret;
}

/*
 * fork(2) (fork.c): the socket, and with it the reports, are the parent's.
 * The child closes its copy, which neither withdraws them (the parent's
 * copy keeps the socket) nor keeps them past the parent's exit; a report
 * of the child's own opens its own socket.
 */
static void shiftu_report_fork_child(void)
{
	if (nl_fd >= 0)
		close(nl_fd);
	nl_fd = -1;
	nl_family = 0;
}

SHIFTU_FORK_HOOK(nl, .rank = SHIFTU_RANK_NL, .name = "nl_lock",
		 .lock = &nl_lock, .child = shiftu_report_fork_child);
