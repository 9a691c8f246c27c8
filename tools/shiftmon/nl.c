// SPDX-License-Identifier: GPL-2.0
/*
 * nl.c: the shift_ft generic netlink family.
 *
 * The family and its "events" group are resolved by name.  Requests ask for
 * extended acks; a refusal prints
 *	Unable to <verb> <object>: <strerror> (<extended ack text>)
 * on stderr.  Dumps restart while the kernel marks them NLM_F_DUMP_INTR
 * (the table changed under the dump).  The listener follows the family
 * through module unloads: it watches nlctrl's "notify" group for
 * CTRL_CMD_DELFAMILY and CTRL_CMD_NEWFAMILY and joins "events" again.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <netlink/msg.h>
#include <netlink/attr.h>

#include "shiftmon.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

#define SM_DUMP_RESTARTS	100
#define SM_RCVBUF		(4 << 20)

/* ---- rows ---- */

void sm_rows_free(struct sm_rows *rows)
{
	free(rows->v);
	rows->v = NULL;
	rows->n = rows->cap = 0;
}

static struct sm_row *rows_add(struct sm_rows *rows)
{
	if (rows->n == rows->cap) {
		size_t cap = rows->cap ? 2 * rows->cap : 16;
		struct sm_row *v = realloc(rows->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		rows->v = v;
		rows->cap = cap;
	}
	return &rows->v[rows->n++];
}

static void unknown(struct sm_row *r, int type, int len)
{
	if (r->n_unknown < SM_ARRAY_SIZE(r->unknown)) {
		r->unknown[r->n_unknown].type = type;
		r->unknown[r->n_unknown].len = len;
	}
	r->n_unknown++;
}

static void get_str(char *dst, size_t size, const struct nlattr *a)
{
	size_t n = strnlen(nla_data(a), nla_len(a));

	if (n >= size)
		n = size - 1;
	memcpy(dst, nla_data(a), n);
	dst[n] = '\0';
}

/*
 * The nest of events by cause: u64s whose types are enum shift_ft_event
 * values.  Type 0 pads; a cause newer than this tool is left out here (the
 * total, EVENT_COUNT, still has it).
 */
static void get_ev_counts(struct sm_row *r, const struct nlattr *nest)
{
	struct nlattr *a;
	int rem;

	r->have |= 1ULL << SHIFT_FT_A_EVENT_COUNTS;
	nla_for_each_nested(a, nest, rem) {
		int t = nla_type(a);

		if (t > 0 && t < __SHIFT_FT_EV_MAX && nla_len(a) == 8)
			memcpy(&r->ev_counts[t], nla_data(a), 8);
	}
}

/* Expected payload length per attribute; 0: string; -1: not ours. */
static int attr_len(int type)
{
	switch (type) {
	case SHIFT_FT_A_LINK_LAYER: case SHIFT_FT_A_STATE:
	case SHIFT_FT_A_PHYS_STATE: case SHIFT_FT_A_WIDTH:
	case SHIFT_FT_A_BACKUP_STATE: case SHIFT_FT_A_PAIR_STATE:
	case SHIFT_FT_A_PATH_STATE: case SHIFT_FT_A_REPORT_STATE:
	case SHIFT_FT_A_REPORT_SOURCE:
		return 1;
	case SHIFT_FT_A_PORT_INDEX: case SHIFT_FT_A_DEV_INDEX:
	case SHIFT_FT_A_PORT_NUM: case SHIFT_FT_A_IFINDEX:
	case SHIFT_FT_A_NUMA_NODE: case SHIFT_FT_A_SPEED: case SHIFT_FT_A_MTU:
	case SHIFT_FT_A_LAST_EVENT: case SHIFT_FT_A_BACKUP_INDEX:
	case SHIFT_FT_A_BACKUP_PORT_NUM: case SHIFT_FT_A_PAIR_FLAGS:
	case SHIFT_FT_A_PATH_INDEX: case SHIFT_FT_A_REPORT_PID:
	case SHIFT_FT_A_FLAGS: case SHIFT_FT_A_EVENT:
		return 4;
	case SHIFT_FT_A_GENERATION: case SHIFT_FT_A_NODE_GUID:
	case SHIFT_FT_A_LAST_CHANGE: case SHIFT_FT_A_DOWN_COUNT:
	case SHIFT_FT_A_EVENT_COUNT: case SHIFT_FT_A_REPORT_TIME:
		return 8;
	case SHIFT_FT_A_REMOTE_GID:
		return SHIFT_FT_GID_LEN;
	case SHIFT_FT_A_DEV_NAME: case SHIFT_FT_A_NETDEV:
	case SHIFT_FT_A_BACKUP_DEV_NAME:
		return 0;
	default:
		return -1;
	}
}

int sm_parse_row(const void *hdr, struct sm_row *r)
{
	const struct nlmsghdr *nlh = hdr;
	const struct genlmsghdr *g;
	struct nlattr *a;
	int rem, start = NLMSG_HDRLEN + GENL_HDRLEN;

	memset(r, 0, sizeof(*r));
	if (nlh->nlmsg_len < (unsigned int)start)
		return -1;
	g = nlmsg_data(nlh);
	r->cmd = g->cmd;
	nla_for_each_attr(a, (struct nlattr *)((char *)nlh + start),
			  (int)nlh->nlmsg_len - start, rem) {
		int t = nla_type(a), want = attr_len(t), len = nla_len(a);
		uint64_t u = 0;

		if (t == SHIFT_FT_A_PAD)
			continue;
		if (t == SHIFT_FT_A_EVENT_COUNTS) {
			get_ev_counts(r, a);
			continue;
		}
		if (want < 0 || (want > 0 && len != want) || (!want && len < 1)) {
			unknown(r, t, len);
			continue;
		}
		if (want == 1)
			u = nla_get_u8(a);
		else if (want == 4)
			u = nla_get_u32(a);
		else if (want == 8)
			memcpy(&u, nla_data(a), 8);
		r->have |= 1ULL << t;
		switch (t) {
		case SHIFT_FT_A_GENERATION:	r->generation = u; break;
		case SHIFT_FT_A_PORT_INDEX:	r->port_index = u; break;
		case SHIFT_FT_A_DEV_NAME:	get_str(r->dev_name, sizeof(r->dev_name), a); break;
		case SHIFT_FT_A_DEV_INDEX:	r->dev_index = u; break;
		case SHIFT_FT_A_PORT_NUM:	r->port_num = u; break;
		case SHIFT_FT_A_NODE_GUID:	r->node_guid = u; break;
		case SHIFT_FT_A_LINK_LAYER:	r->link_layer = u; break;
		case SHIFT_FT_A_NETDEV:		get_str(r->netdev, sizeof(r->netdev), a); break;
		case SHIFT_FT_A_IFINDEX:	r->ifindex = u; break;
		case SHIFT_FT_A_NUMA_NODE:	r->numa_node = (int32_t)(uint32_t)u; break;
		case SHIFT_FT_A_STATE:		r->state = u; break;
		case SHIFT_FT_A_PHYS_STATE:	r->phys_state = u; break;
		case SHIFT_FT_A_SPEED:		r->speed = u; break;
		case SHIFT_FT_A_WIDTH:		r->width = u; break;
		case SHIFT_FT_A_MTU:		r->mtu = u; break;
		case SHIFT_FT_A_LAST_CHANGE:	r->last_change = u; break;
		case SHIFT_FT_A_DOWN_COUNT:	r->down_count = u; break;
		case SHIFT_FT_A_LAST_EVENT:	r->last_event = u; break;
		case SHIFT_FT_A_EVENT_COUNT:	r->event_count = u; break;
		case SHIFT_FT_A_BACKUP_INDEX:	r->backup_index = u; break;
		case SHIFT_FT_A_BACKUP_DEV_NAME:
			get_str(r->backup_dev_name, sizeof(r->backup_dev_name), a);
			break;
		case SHIFT_FT_A_BACKUP_PORT_NUM: r->backup_port_num = u; break;
		case SHIFT_FT_A_BACKUP_STATE:	r->backup_state = u; break;
		case SHIFT_FT_A_PAIR_STATE:	r->pair_state = u; break;
		case SHIFT_FT_A_PAIR_FLAGS:	r->pair_flags = u; break;
		case SHIFT_FT_A_PATH_INDEX:	r->path_index = u; break;
		case SHIFT_FT_A_REMOTE_GID:
			memcpy(r->remote_gid, nla_data(a), SHIFT_FT_GID_LEN);
			break;
		case SHIFT_FT_A_PATH_STATE:	r->path_state = u; break;
		case SHIFT_FT_A_REPORT_STATE:	r->report_state = u; break;
		case SHIFT_FT_A_REPORT_SOURCE:	r->report_source = u; break;
		case SHIFT_FT_A_REPORT_PID:	r->report_pid = u; break;
		case SHIFT_FT_A_REPORT_TIME:	r->report_time = u; break;
		case SHIFT_FT_A_FLAGS:		r->flags = u; break;
		case SHIFT_FT_A_EVENT:		r->event = u; break;
		}
	}
	return 0;
}

/* ---- sockets ---- */

static struct nl_sock *open_sock(void)
{
	struct nl_sock *sk = nl_socket_alloc();
	int one = 1;

	if (!sk)
		return NULL;
	if (genl_connect(sk)) {
		nl_socket_free(sk);
		return NULL;
	}
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one,
		   sizeof(one));
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_CAP_ACK, &one,
		   sizeof(one));
	return sk;
}

static void print_missing(const char *verb, const char *object)
{
	fprintf(stderr,
		"Unable to %s %s: generic netlink family %s not found (is the shift_ft module loaded?)\n",
		verb, object, SHIFT_FT_GENL_NAME);
}

int sm_nl_open(struct sm_nl *nl, const char *verb, const char *object)
{
	struct timeval tv = { .tv_sec = 10 };

	nl->events_grp = -1;
	nl->sk = open_sock();
	if (!nl->sk) {
		fprintf(stderr, "Unable to %s %s: netlink socket: %s\n", verb,
			object, strerror(errno));
		return -1;
	}
	/* a request is answered at once; never hang on a lost reply */
	setsockopt(nl_socket_get_fd(nl->sk), SOL_SOCKET, SO_RCVTIMEO, &tv,
		   sizeof(tv));
	nl_socket_disable_auto_ack(nl->sk);
	nl->family = genl_ctrl_resolve(nl->sk, SHIFT_FT_GENL_NAME);
	if (nl->family < 0) {
		print_missing(verb, object);
		sm_nl_close(nl);
		return -1;
	}
	return 0;
}

void sm_nl_close(struct sm_nl *nl)
{
	if (nl->sk)
		nl_socket_free(nl->sk);
	nl->sk = NULL;
}

struct nl_msg *sm_nl_msg(struct sm_nl *nl, int cmd, int flags)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (msg && genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->family, 0,
			       flags | NLM_F_REQUEST, cmd, SHIFT_FT_GENL_VERSION))
		return msg;
	nlmsg_free(msg);
	fprintf(stderr, "Unable to build request: %s\n", strerror(ENOMEM));
	return NULL;
}

/* ---- one exchange ---- */

struct xact {
	struct sm_nl *nl;
	struct nl_msg *req;
	struct sm_rows *rows;
	bool done, intr, oom;
	int err;		/* positive errno, 0: none */
	char ack[256];		/* extended ack text */
	int bad_attr;		/* attribute the ack points at, -1: none */
};

static int attr_at(struct nl_msg *req, uint32_t offs)
{
	struct nlmsghdr *nlh = nlmsg_hdr(req);
	struct nlattr *a;
	int rem, start = NLMSG_HDRLEN + GENL_HDRLEN;

	nla_for_each_attr(a, (struct nlattr *)((char *)nlh + start),
			  (int)nlh->nlmsg_len - start, rem)
		if ((char *)a - (char *)nlh == (long)offs)
			return nla_type(a);
	return -1;
}

static int err_cb(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	struct xact *x = arg;
	struct nlmsghdr *nlh = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);
	struct nlattr *a;
	size_t off = sizeof(*e);
	int rem, len;

	(void)who;
	x->err = -e->error;
	x->done = true;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return NL_STOP;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	len = (int)(nlh->nlmsg_len - NLMSG_HDRLEN) - (int)off;
	if (len <= 0)
		return NL_STOP;
	nla_for_each_attr(a, (struct nlattr *)((char *)e + off), len, rem) {
		if (nla_type(a) == NLMSGERR_ATTR_MSG)
			get_str(x->ack, sizeof(x->ack), a);
		else if (nla_type(a) == NLMSGERR_ATTR_OFFS && nla_len(a) == 4 && x->req)
			x->bad_attr = attr_at(x->req, nla_get_u32(a));
	}
	return NL_STOP;
}

static int ack_cb(struct nl_msg *msg, void *arg)
{
	struct xact *x = arg;

	(void)msg;
	x->done = true;
	return NL_STOP;
}

static int finish_cb(struct nl_msg *msg, void *arg)
{
	struct xact *x = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	/* a dump that fails midway says so in NLMSG_DONE */
	if (nlh->nlmsg_len >= NLMSG_HDRLEN + sizeof(int)) {
		int e = *(int *)nlmsg_data(nlh);

		if (e < 0)
			x->err = -e;
	}
	x->done = true;
	return NL_STOP;
}

static int intr_cb(struct nl_msg *msg, void *arg)
{
	struct xact *x = arg;

	(void)msg;
	x->intr = true;
	return NL_OK;
}

static int valid_cb(struct nl_msg *msg, void *arg)
{
	struct xact *x = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct sm_row *r;

	if (nlh->nlmsg_type != x->nl->family || !x->rows)
		return NL_OK;
	r = rows_add(x->rows);
	if (!r) {
		x->oom = true;
		return NL_OK;
	}
	if (sm_parse_row(nlh, r))
		x->rows->n--;
	return NL_OK;
}

static void print_error(const struct xact *x, const char *verb,
			const char *object)
{
	char attr[64] = "";
	char nbuf[24];

	if (x->bad_attr >= 0)
		snprintf(attr, sizeof(attr), "%sattribute %s", x->ack[0] ? ", " : "",
			 sm_name(&sm_attr_names, x->bad_attr, nbuf));
	if (x->ack[0] || attr[0])
		fprintf(stderr, "Unable to %s %s: %s (%s%s)\n", verb, object,
			strerror(x->err), x->ack, attr);
	else
		fprintf(stderr, "Unable to %s %s: %s\n", verb, object,
			strerror(x->err));
}

/* Send @msg (consumed) and receive until the answer is complete. */
static int exchange(struct xact *x, struct nl_msg *msg)
{
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);
	int r;

	x->req = msg;
	x->done = x->intr = x->oom = false;
	x->err = 0;
	x->ack[0] = '\0';
	x->bad_attr = -1;
	if (!cb) {
		x->err = ENOMEM;
		goto out;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, valid_cb, x);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, finish_cb, x);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, ack_cb, x);
	nl_cb_set(cb, NL_CB_DUMP_INTR, NL_CB_CUSTOM, intr_cb, x);
	nl_cb_err(cb, NL_CB_CUSTOM, err_cb, x);

	r = nl_send_auto(x->nl->sk, msg);
	if (r < 0) {
		x->err = EIO;
		snprintf(x->ack, sizeof(x->ack), "send: %s", nl_geterror(r));
		goto out;
	}
	while (!x->done) {
		r = nl_recvmsgs(x->nl->sk, cb);
		if (r < 0 && !x->done) {
			x->err = errno && errno != EINTR ? errno : EIO;
			snprintf(x->ack, sizeof(x->ack), "receive: %s",
				 nl_geterror(r));
			break;
		}
	}
	if (!x->err && x->oom)
		x->err = ENOMEM;
out:
	nl_cb_put(cb);
	nlmsg_free(msg);
	x->req = NULL;
	return x->err;
}

int sm_nl_request(struct sm_nl *nl, struct nl_msg *msg, struct sm_rows *rows,
		  const char *verb, const char *object)
{
	struct xact x = { .nl = nl, .rows = rows };

	/* a doit without a reply ends only with the ACK asked for here */
	nlmsg_hdr(msg)->nlmsg_flags |= NLM_F_ACK;
	if (exchange(&x, msg)) {
		print_error(&x, verb, object);
		return -x.err;
	}
	return 0;
}

int sm_nl_dump(struct sm_nl *nl, int cmd, struct sm_rows *rows,
	       const char *verb, const char *object)
{
	struct xact x = { .nl = nl, .rows = rows };
	int tries;

	for (tries = 0; tries <= SM_DUMP_RESTARTS; tries++) {
		struct nl_msg *msg = sm_nl_msg(nl, cmd, NLM_F_DUMP);

		if (!msg)
			return -ENOMEM;
		rows->n = 0;
		if (exchange(&x, msg)) {
			print_error(&x, verb, object);
			return -x.err;
		}
		if (!x.intr)
			return 0;
	}
	fprintf(stderr, "Unable to %s %s: %s (the table kept changing during %d dumps)\n",
		verb, object, strerror(EAGAIN), SM_DUMP_RESTARTS);
	return -EAGAIN;
}

/* ---- the listener ---- */

/* From a CTRL_CMD_{NEW,DEL}FAMILY message: is it ours, and its ids. */
static bool ctrl_ours(struct nlmsghdr *nlh, int *family, int *grp)
{
	struct nlattr *tb[CTRL_ATTR_MAX + 1], *g;
	int rem;

	*family = -1;
	*grp = -1;
	if (genlmsg_parse(nlh, 0, tb, CTRL_ATTR_MAX, NULL) < 0 ||
	    !tb[CTRL_ATTR_FAMILY_NAME] || !tb[CTRL_ATTR_FAMILY_ID] ||
	    strcmp(nla_get_string(tb[CTRL_ATTR_FAMILY_NAME]), SHIFT_FT_GENL_NAME))
		return false;
	*family = nla_get_u16(tb[CTRL_ATTR_FAMILY_ID]);
	if (!tb[CTRL_ATTR_MCAST_GROUPS])
		return true;
	nla_for_each_nested(g, tb[CTRL_ATTR_MCAST_GROUPS], rem) {
		struct nlattr *gb[CTRL_ATTR_MCAST_GRP_MAX + 1];

		if (nla_parse_nested(gb, CTRL_ATTR_MCAST_GRP_MAX, g, NULL) < 0 ||
		    !gb[CTRL_ATTR_MCAST_GRP_NAME] || !gb[CTRL_ATTR_MCAST_GRP_ID])
			continue;
		if (!strcmp(nla_get_string(gb[CTRL_ATTR_MCAST_GRP_NAME]),
			    SHIFT_FT_MCGRP_EVENTS))
			*grp = nla_get_u32(gb[CTRL_ATTR_MCAST_GRP_ID]);
	}
	return true;
}

static int listen_join(struct sm_listener *l, int family, int grp)
{
	if (grp < 0)
		grp = genl_ctrl_resolve_grp(l->nl.sk, SHIFT_FT_GENL_NAME,
					    SHIFT_FT_MCGRP_EVENTS);
	if (grp < 0) {
		fprintf(stderr, "Unable to join group %s/%s: %s\n",
			SHIFT_FT_GENL_NAME, SHIFT_FT_MCGRP_EVENTS, nl_geterror(grp));
		return -1;
	}
	if (nl_socket_add_membership(l->lsk, grp)) {
		fprintf(stderr, "Unable to join group %s/%s: %s\n",
			SHIFT_FT_GENL_NAME, SHIFT_FT_MCGRP_EVENTS, strerror(errno));
		return -1;
	}
	l->nl.family = family;
	l->nl.events_grp = grp;
	l->present = true;
	return 0;
}

static int listen_cb(struct nl_msg *msg, void *arg)
{
	struct sm_listener *l = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct genlmsghdr *g = nlmsg_data(nlh);
	struct sm_row row;
	int family, grp;

	if (nlh->nlmsg_type == GENL_ID_CTRL) {
		if (!ctrl_ours(nlh, &family, &grp))
			return NL_OK;
		if (g->cmd == CTRL_CMD_DELFAMILY && l->present) {
			l->present = false;
			l->nl.events_grp = -1;
			l->fn(SM_LISTEN_FAMILY_GONE, NULL, l->arg);
		} else if (g->cmd == CTRL_CMD_NEWFAMILY &&
			   (!l->present || family != l->nl.family)) {
			if (!listen_join(l, family, grp))
				l->fn(SM_LISTEN_FAMILY_BACK, NULL, l->arg);
		}
		return NL_OK;
	}
	if (sm_parse_row(nlh, &row))
		return NL_OK;
	if (nlh->nlmsg_type != l->nl.family) {
		row.cmd = nlh->nlmsg_type;
		l->fn(SM_LISTEN_FOREIGN, &row, l->arg);
		return NL_OK;
	}
	l->fn(SM_LISTEN_EVENT, &row, l->arg);
	return NL_OK;
}

static int no_seq_check(struct nl_msg *msg, void *arg)
{
	(void)msg;
	(void)arg;
	return NL_OK;
}

int sm_listen_open(struct sm_listener *l, sm_listen_fn fn, void *arg)
{
	int fd, size = SM_RCVBUF, family, grp;

	memset(l, 0, sizeof(*l));
	l->fn = fn;
	l->arg = arg;
	l->nl.events_grp = -1;
	l->nl.sk = open_sock();
	l->lsk = open_sock();
	l->cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!l->nl.sk || !l->lsk || !l->cb) {
		fprintf(stderr, "Unable to open netlink socket: %s\n",
			strerror(errno ? errno : ENOMEM));
		goto fail;
	}
	nl_socket_set_nonblocking(l->lsk);
	fd = nl_socket_get_fd(l->lsk);
	/* events come in bursts (a device going away): room for them */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	nl_cb_set(l->cb, NL_CB_VALID, NL_CB_CUSTOM, listen_cb, l);
	/* multicast messages carry no sequence number of ours */
	nl_cb_set(l->cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, no_seq_check, NULL);

	/* the family's comings and goings, before looking for it: no gap */
	l->ctrl_grp = genl_ctrl_resolve_grp(l->nl.sk, "nlctrl", "notify");
	if (l->ctrl_grp < 0 || nl_socket_add_membership(l->lsk, l->ctrl_grp)) {
		fprintf(stderr, "Unable to join group nlctrl/notify: %s\n",
			l->ctrl_grp < 0 ? nl_geterror(l->ctrl_grp) : strerror(errno));
		goto fail;
	}
	family = genl_ctrl_resolve(l->nl.sk, SHIFT_FT_GENL_NAME);
	if (family < 0)
		return 0;	/* not loaded: wait for CTRL_CMD_NEWFAMILY */
	grp = genl_ctrl_resolve_grp(l->nl.sk, SHIFT_FT_GENL_NAME,
				    SHIFT_FT_MCGRP_EVENTS);
	if (grp < 0) {
		/* unloaded between the two lookups: the notification follows */
		return 0;
	}
	if (listen_join(l, family, grp))
		goto fail;
	return 0;
fail:
	sm_listen_close(l);
	return -1;
}

int sm_listen_fd(const struct sm_listener *l)
{
	return nl_socket_get_fd(l->lsk);
}

int sm_listen_process(struct sm_listener *l)
{
	int r;

	for (;;) {
		r = nl_recvmsgs_report(l->lsk, l->cb);
		if (r > 0)
			continue;
		if (r == 0 || r == -NLE_AGAIN || r == -NLE_INTR)
			return 0;
		if (r == -NLE_NOMEM || r == -NLE_MSG_OVERFLOW) {
			/* ENOBUFS: the kernel dropped messages for this socket */
			l->fn(SM_LISTEN_OVERRUN, NULL, l->arg);
			continue;
		}
		fprintf(stderr, "Unable to receive events: %s\n", nl_geterror(r));
		return -1;
	}
}

void sm_listen_close(struct sm_listener *l)
{
	if (l->cb)
		nl_cb_put(l->cb);
	if (l->lsk)
		nl_socket_free(l->lsk);
	sm_nl_close(&l->nl);
	l->cb = NULL;
	l->lsk = NULL;
}
