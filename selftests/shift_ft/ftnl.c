// SPDX-License-Identifier: GPL-2.0
/*
 * ftnl: a small generic netlink client for the shift_ft family, for tests.
 *
 * It resolves the family and the "events" group by name, prints rows as
 * ftfmt.h describes, and reports errors as
 *	ftnl: <op>: <strerror> (<extack>) [<ENAME> <n>]
 * on stderr.  Exit 0 on success, 1 on error, 2 on usage error.  With
 * --expect-errno E1[,E2...] it exits 0 only if the request failed with one
 * of those errnos, and 1 otherwise (success included).
 */
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>
#include <sys/time.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <netlink/msg.h>
#include <netlink/attr.h>

#include "ftfmt.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

static const char *prog = "ftnl";

struct opts {
	const char *expect;	/* --expect-errno list */
	bool no_retry;
	bool verbose;
	bool dump;		/* raw: NLM_F_DUMP */
	bool have_flags;
	uint32_t flags;		/* report: SHIFT_FT_A_FLAGS */
	unsigned long count;	/* report/path-del: --count; monitor: -c */
	double seconds;		/* monitor: -T */
	bool hold;		/* --hold: keep the socket open once done */
	int del_source;		/* path-del: --source, 0: none */
	int max_restarts;
};

static struct opts o = { .count = 1, .max_restarts = 1000 };

struct ctx {
	struct nl_sock *sk;
	int family;
	const char *op;
	struct nl_msg *req;	/* the request, to name the attribute at OFFS */
	bool done;
	bool intr;
	int err;		/* positive errno from the kernel, 0: none */
	char extack[256];
	int bad_attr;		/* attribute at NLMSGERR_ATTR_OFFS, -1: none */
	/* rows of the current dump attempt, printed when it is complete */
	char *out;
	size_t out_len;
	FILE *outf;
	bool print_cmd;		/* prefix rows with the command name */
	unsigned long nmsg;
};

static void usage(void)
{
	fprintf(stderr,
"usage: %s [options] COMMAND [args]\n"
"  ports | pairs | paths                 dump (restart on NLM_F_DUMP_INTR)\n"
"  port DEV PORT | port @INDEX           one port\n"
"  pair DEV PORT | pair @INDEX           one pair\n"
"  path DEV PORT GID                     one path\n"
"  pair-set DEV PORT BDEV BPORT          override a backup\n"
"  pair-clear DEV PORT                   drop an override\n"
"  report DEV PORT GID up|down app|agent [--flags N] [--count N]\n"
"  path-del DEV PORT GID [--count N] [--source app|agent]\n"
"  monitor [-c COUNT] [-T SECONDS]       print multicast events\n"
"  raw [--dump] CMD [ATTR=TYPE:VALUE ...]\n"
"      CMD: name (PORT_GET) or number; ATTR: name (dev_name), number, or\n"
"      max+N (SHIFT_FT_A_MAX+N); TYPE: u8 u16 u32 u64 s32 str (NUL added)\n"
"      strn (no NUL) bin (hex) gid flag (empty)\n"
"options (anywhere): --expect-errno E[,E..]  --no-retry  -f FIELDS  -v\n"
"  --hold (after success, print \"# hold: <portid>\" and keep the socket\n"
"  open until killed: its F_WITHDRAW reports last as long)\n"
"  --count N (report/path-del: GID's last 32 bits count up from the one given)\n",
		prog);
	exit(2);
}

/* ---- error reporting ---- */

static int attr_at_offset(struct nl_msg *req, uint32_t offs)
{
	struct nlmsghdr *nlh = nlmsg_hdr(req);
	struct nlattr *nla;
	int rem, start = NLMSG_HDRLEN + GENL_HDRLEN;

	nla_for_each_attr(nla, (struct nlattr *)((char *)nlh + start),
			  nlh->nlmsg_len - start, rem) {
		if ((char *)nla - (char *)nlh == (long)offs)
			return nla_type(nla);
	}
	return -1;
}

static void parse_extack(struct ctx *c, struct nlmsghdr *nlh, struct nlmsgerr *e)
{
	struct nlattr *nla;
	size_t off = sizeof(*e);
	int rem, len;

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	len = (int)(nlh->nlmsg_len - NLMSG_HDRLEN) - (int)off;
	if (len <= 0)
		return;
	nla_for_each_attr(nla, (struct nlattr *)((char *)e + off), len, rem) {
		switch (nla_type(nla)) {
		case NLMSGERR_ATTR_MSG:
			snprintf(c->extack, sizeof(c->extack), "%.*s",
				 (int)strnlen(nla_data(nla), nla_len(nla)),
				 (char *)nla_data(nla));
			break;
		case NLMSGERR_ATTR_OFFS:
			if (c->req && nla_len(nla) == 4)
				c->bad_attr = attr_at_offset(c->req, nla_get_u32(nla));
			break;
		}
	}
}

static int err_cb(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct ctx *c = arg;
	struct nlmsghdr *nlh = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);

	(void)nla;
	c->err = -e->error;
	parse_extack(c, nlh, e);
	c->done = true;
	return NL_STOP;
}

static int ack_cb(struct nl_msg *msg, void *arg)
{
	struct ctx *c = arg;

	(void)msg;
	c->done = true;
	return NL_STOP;
}

static int finish_cb(struct nl_msg *msg, void *arg)
{
	struct ctx *c = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	/* A dump that fails midway carries the error in NLMSG_DONE. */
	if (nlh->nlmsg_len >= NLMSG_HDRLEN + sizeof(int)) {
		int e = *(int *)nlmsg_data(nlh);

		if (e < 0)
			c->err = -e;
	}
	c->done = true;
	return NL_STOP;
}

static int intr_cb(struct nl_msg *msg, void *arg)
{
	struct ctx *c = arg;

	(void)msg;
	c->intr = true;
	return NL_OK;
}

/* Report the outcome of an operation; returns the exit code. */
static int outcome(struct ctx *c, int err)
{
	char attr[48] = "";

	if (!err) {
		if (o.expect) {
			fprintf(stderr, "%s: %s: succeeded, expected %s\n",
				prog, c->op, o.expect);
			return 1;
		}
		return 0;
	}
	if (c->bad_attr >= 0) {
		if (c->bad_attr > 0 && c->bad_attr <= SHIFT_FT_A_MAX &&
		    ft_attr_name(c->bad_attr))
			snprintf(attr, sizeof(attr), " attr=%s",
				 ft_attr_name(c->bad_attr));
		else
			snprintf(attr, sizeof(attr), " attr=%d", c->bad_attr);
	}
	fprintf(stderr, "%s: %s: %s%s%s%s [%s %d]%s\n", prog, c->op,
		strerror(err), c->extack[0] ? " (" : "", c->extack,
		c->extack[0] ? ")" : "", ft_errno_name(err), err, attr);
	if (o.expect) {
		if (ft_errno_in(err, o.expect))
			return 0;
		fprintf(stderr, "%s: %s: expected %s, got %s\n", prog, c->op,
			o.expect, ft_errno_name(err));
	}
	return 1;
}

/* ---- sockets and requests ---- */

static struct nl_sock *open_sock(void)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct timeval tv = { .tv_sec = 10 };
	int one = 1;

	if (!sk) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(1);
	}
	if (genl_connect(sk)) {
		fprintf(stderr, "%s: connect: %s\n", prog, strerror(errno));
		exit(1);
	}
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one,
		   sizeof(one));
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_CAP_ACK, &one,
		   sizeof(one));
	/* never hang a test on a lost reply */
	setsockopt(nl_socket_get_fd(sk), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	nl_socket_disable_auto_ack(sk);
	return sk;
}

static int resolve_family(struct ctx *c)
{
	/* FTNL_FAMILY lets the tool's own plumbing be tried on another family */
	const char *name = getenv("FTNL_FAMILY") ?: SHIFT_FT_GENL_NAME;

	c->family = genl_ctrl_resolve(c->sk, name);
	if (c->family < 0) {
		fprintf(stderr, "%s: %s: family %s not found: %s [ENOENT %d]\n",
			prog, c->op, name, nl_geterror(c->family), ENOENT);
		return -1;
	}
	return 0;
}

static void print_msg(struct ctx *c, FILE *out, const char *prefix,
		      struct nlmsghdr *nlh);

static int valid_cb(struct nl_msg *msg, void *arg)
{
	struct ctx *c = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	if (nlh->nlmsg_type != c->family)
		return NL_OK;
	c->nmsg++;
	print_msg(c, c->outf, NULL, nlh);
	return NL_OK;
}

static struct nl_msg *new_req(struct ctx *c, int cmd, int flags)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (!msg || !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, c->family, 0,
				 flags | NLM_F_REQUEST, cmd,
				 SHIFT_FT_GENL_VERSION)) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(1);
	}
	return msg;
}

/*
 * Send @msg and collect replies into a memory buffer, printed by the caller
 * once the exchange is complete.  Returns a positive errno or 0.
 */
static int transact(struct ctx *c, struct nl_msg *msg)
{
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);
	int r;

	c->req = msg;
	c->done = c->intr = false;
	c->err = 0;
	c->extack[0] = '\0';
	c->bad_attr = -1;
	c->nmsg = 0;
	free(c->out);
	c->out = NULL;
	c->out_len = 0;
	c->outf = open_memstream(&c->out, &c->out_len);
	if (!cb || !c->outf) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(1);
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, valid_cb, c);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, finish_cb, c);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, ack_cb, c);
	nl_cb_set(cb, NL_CB_DUMP_INTR, NL_CB_CUSTOM, intr_cb, c);
	nl_cb_err(cb, NL_CB_CUSTOM, err_cb, c);

	r = nl_send_auto(c->sk, msg);
	if (r < 0) {
		c->err = EIO;
		snprintf(c->extack, sizeof(c->extack), "send: %s",
			 nl_geterror(r));
		goto out;
	}
	while (!c->done) {
		r = nl_recvmsgs(c->sk, cb);
		if (r < 0 && !c->done) {
			c->err = EIO;
			snprintf(c->extack, sizeof(c->extack), "receive: %s",
				 nl_geterror(r));
			break;
		}
	}
out:
	fflush(c->outf);
	fclose(c->outf);
	c->outf = NULL;
	nl_cb_put(cb);
	return c->err;
}

/* ---- printing ---- */

static void add_attr(struct ft_row *r, struct nlattr *nla)
{
	int t = nla_type(nla);
	int len = nla_len(nla);
	const struct ft_attr_desc *d = t > 0 && t <= SHIFT_FT_A_MAX ?
				       &ft_attrs[t] : NULL;
	struct ft_field *f;
	uint64_t v;

	if (t == SHIFT_FT_A_PAD)
		return;
	switch (d ? d->type : FT_T_NONE) {
	case FT_T_U8:
		if (len != 1)
			break;
		ft_row_num(r, t, nla_get_u8(nla));
		return;
	case FT_T_U16:
		if (len != 2)
			break;
		ft_row_num(r, t, nla_get_u16(nla));
		return;
	case FT_T_U32:
		if (len != 4)
			break;
		ft_row_num(r, t, nla_get_u32(nla));
		return;
	case FT_T_S32:
		if (len != 4)
			break;
		ft_row_num(r, t, (uint32_t)nla_get_s32(nla));
		return;
	case FT_T_U64:
		if (len != 8)
			break;
		memcpy(&v, nla_data(nla), 8);
		ft_row_num(r, t, v);
		return;
	case FT_T_STR:
		ft_row_str(r, t, nla_data(nla), len);
		return;
	case FT_T_GID:
		if (len != SHIFT_FT_GID_LEN)
			break;
		ft_row_gid(r, t, nla_data(nla));
		return;
	default:
		break;
	}
	/* unknown attribute, or a known one with an unexpected length */
	f = ft_row_add(r, t);
	if (f) {
		if (d)
			snprintf(f->key, sizeof(f->key), "%s!len%d", ft_attr_name(t), len);
		ft_fmt_hex(f->val, sizeof(f->val), nla_data(nla), len);
		f->attr = d ? t : 1000 + t;
	}
}

static void fill_row(struct ft_row *r, struct nlmsghdr *nlh)
{
	struct nlattr *nla;
	int rem, start = NLMSG_HDRLEN + GENL_HDRLEN;

	r->n = 0;
	if (nlh->nlmsg_len < (unsigned int)start)
		return;
	nla_for_each_attr(nla, (struct nlattr *)((char *)nlh + start),
			  nlh->nlmsg_len - start, rem)
		add_attr(r, nla);
}

static const char *cmd_name(int cmd, char *buf, size_t len)
{
	if (ft_cmd_name(cmd))
		return ft_cmd_name(cmd);
	snprintf(buf, len, "CMD%d", cmd);
	return buf;
}

static void print_msg(struct ctx *c, FILE *out, const char *prefix,
		      struct nlmsghdr *nlh)
{
	struct genlmsghdr *g = nlmsg_data(nlh);
	static struct ft_row row;
	char pfx[128], cbuf[16];

	fill_row(&row, nlh);
	if (c->print_cmd) {
		snprintf(pfx, sizeof(pfx), "%s%s%s", prefix ? prefix : "",
			 prefix ? "\t" : "", cmd_name(g->cmd, cbuf, sizeof(cbuf)));
		ft_row_print(out, pfx, &row);
	} else {
		ft_row_print(out, prefix, &row);
	}
}

/* ---- argument helpers ---- */

static uint32_t parse_u32(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v > UINT32_MAX) {
		fprintf(stderr, "%s: bad %s '%s'\n", prog, what, s);
		exit(2);
	}
	return v;
}

/* Name a port: "@INDEX" (one argument) or "DEV PORT" (two). */
static int put_port(struct nl_msg *m, char **argv, int argc, int i)
{
	if (i >= argc)
		usage();
	if (argv[i][0] == '@') {
		nla_put_u32(m, SHIFT_FT_A_PORT_INDEX,
			    parse_u32(argv[i] + 1, "port index"));
		return i + 1;
	}
	if (i + 1 >= argc)
		usage();
	nla_put_string(m, SHIFT_FT_A_DEV_NAME, argv[i]);
	nla_put_u32(m, SHIFT_FT_A_PORT_NUM, parse_u32(argv[i + 1], "port"));
	return i + 2;
}

static void gid_add(uint8_t *g, unsigned long k)
{
	uint32_t tail;

	memcpy(&tail, g + 12, 4);
	tail = htonl(ntohl(tail) + (uint32_t)k);
	memcpy(g + 12, &tail, 4);
}

static void get_gid(const char *s, uint8_t *g)
{
	if (sm_gid_parse(s, g)) {
		fprintf(stderr, "%s: bad GID '%s'\n", prog, s);
		exit(2);
	}
}

/* ---- commands ---- */

static int do_dump(struct ctx *c, int cmd)
{
	int restarts = 0, err;

	for (;;) {
		struct nl_msg *m = new_req(c, cmd, NLM_F_DUMP);

		err = transact(c, m);
		nlmsg_free(m);
		c->req = NULL;
		if (err || !c->intr)
			break;
		if (o.no_retry) {
			fwrite(c->out, 1, c->out_len, stdout);
			printf("INTR\n");
			fflush(stdout);
			return 0;
		}
		if (++restarts > o.max_restarts) {
			fprintf(stderr, "%s: %s: dump interrupted %d times, giving up\n",
				prog, c->op, restarts);
			return 1;
		}
	}
	if (err)
		return outcome(c, err);
	if (o.verbose)
		fprintf(stderr, "%s: %s: %lu rows, %d restarts\n", prog, c->op,
			c->nmsg, restarts);
	fwrite(c->out, 1, c->out_len, stdout);
	fflush(stdout);
	return outcome(c, 0);
}

static int do_doit(struct ctx *c, struct nl_msg *m)
{
	int err;

	/* a doit without a reply ends only with the ACK we ask for here */
	nlmsg_hdr(m)->nlmsg_flags |= NLM_F_ACK;
	err = transact(c, m);

	if (!err) {
		fwrite(c->out, 1, c->out_len, stdout);
		fflush(stdout);
	}
	nlmsg_free(m);
	c->req = NULL;
	return outcome(c, err);
}

static int cmd_get(struct ctx *c, int cmd, char **argv, int argc, int i,
		   bool gid)
{
	struct nl_msg *m = new_req(c, cmd, 0);
	uint8_t g[SHIFT_FT_GID_LEN];

	i = put_port(m, argv, argc, i);
	if (gid) {
		if (i >= argc)
			usage();
		get_gid(argv[i++], g);
		nla_put(m, SHIFT_FT_A_REMOTE_GID, sizeof(g), g);
	}
	if (i != argc)
		usage();
	return do_doit(c, m);
}

static int cmd_pair_set(struct ctx *c, char **argv, int argc, int i)
{
	struct nl_msg *m = new_req(c, SHIFT_FT_CMD_PAIR_SET, 0);

	if (argc - i != 4)
		usage();
	nla_put_string(m, SHIFT_FT_A_DEV_NAME, argv[i]);
	nla_put_u32(m, SHIFT_FT_A_PORT_NUM, parse_u32(argv[i + 1], "port"));
	nla_put_string(m, SHIFT_FT_A_BACKUP_DEV_NAME, argv[i + 2]);
	nla_put_u32(m, SHIFT_FT_A_BACKUP_PORT_NUM,
		    parse_u32(argv[i + 3], "backup port"));
	return do_doit(c, m);
}

static int cmd_pair_clear(struct ctx *c, char **argv, int argc, int i)
{
	struct nl_msg *m = new_req(c, SHIFT_FT_CMD_PAIR_CLEAR, 0);

	if (argc - i != 2)
		usage();
	nla_put_string(m, SHIFT_FT_A_DEV_NAME, argv[i]);
	nla_put_u32(m, SHIFT_FT_A_PORT_NUM, parse_u32(argv[i + 1], "port"));
	return do_doit(c, m);
}

/* report and path-del, possibly --count times with consecutive GIDs */
static int cmd_path_op(struct ctx *c, int cmd, char **argv, int argc, int i)
{
	uint8_t g0[SHIFT_FT_GID_LEN], g[SHIFT_FT_GID_LEN];
	int state = 0, src = 0, first = i, gi, rc;
	unsigned long k;

	/* count arguments: port spec is 1 or 2 words */
	gi = (i < argc && argv[i][0] == '@') ? i + 1 : i + 2;
	if (gi >= argc)
		usage();
	get_gid(argv[gi], g0);
	if (cmd == SHIFT_FT_CMD_PATH_REPORT) {
		if (argc - gi != 3)
			usage();
		if (!strcasecmp(argv[gi + 1], "up"))
			state = SHIFT_FT_PATH_UP;
		else if (!strcasecmp(argv[gi + 1], "down"))
			state = SHIFT_FT_PATH_DOWN;
		else
			state = parse_u32(argv[gi + 1], "state");
		if (!strcasecmp(argv[gi + 2], "app"))
			src = SHIFT_FT_SRC_APP;
		else if (!strcasecmp(argv[gi + 2], "agent"))
			src = SHIFT_FT_SRC_AGENT;
		else
			src = parse_u32(argv[gi + 2], "source");
	} else if (argc - gi != 1) {
		usage();
	}
	for (k = 0; k < o.count; k++) {
		struct nl_msg *m = new_req(c, cmd, 0);

		memcpy(g, g0, sizeof(g));
		gid_add(g, k);
		put_port(m, argv, argc, first);
		nla_put(m, SHIFT_FT_A_REMOTE_GID, sizeof(g), g);
		if (cmd == SHIFT_FT_CMD_PATH_REPORT) {
			nla_put_u8(m, SHIFT_FT_A_REPORT_STATE, state);
			nla_put_u8(m, SHIFT_FT_A_REPORT_SOURCE, src);
			if (o.have_flags)
				nla_put_u32(m, SHIFT_FT_A_FLAGS, o.flags);
		} else if (o.del_source) {
			nla_put_u8(m, SHIFT_FT_A_REPORT_SOURCE, o.del_source);
		}
		rc = do_doit(c, m);	/* frees m */
		if (rc || (o.expect && o.count > 1))
			return rc;
	}
	return 0;
}

/* ---- raw ---- */

static int parse_attr_id(const char *s)
{
	int i;

	if (!strncasecmp(s, "max+", 4))
		return SHIFT_FT_A_MAX + (int)parse_u32(s + 4, "attribute");
	for (i = 1; i <= SHIFT_FT_A_MAX; i++)
		if (ft_attr_name(i) && !strcasecmp(ft_attr_name(i), s))
			return i;
	return (int)parse_u32(s, "attribute");
}

static int parse_cmd(const char *s)
{
	int i = sm_value(&sm_cmd_names, s);

	return i >= 0 ? i : (int)parse_u32(s, "command");
}

static void put_raw(struct nl_msg *m, char *spec)
{
	char *eq = strchr(spec, '='), *colon, *val;
	uint8_t buf[4096];
	size_t n = 0;
	uint64_t v;
	int id;

	if (!eq)
		usage();
	*eq = '\0';
	id = parse_attr_id(spec);
	colon = strchr(eq + 1, ':');
	val = colon ? colon + 1 : (char *)"";
	if (colon)
		*colon = '\0';
	if (!strcmp(eq + 1, "str")) {
		nla_put(m, id, strlen(val) + 1, val);
	} else if (!strcmp(eq + 1, "strn")) {
		nla_put(m, id, strlen(val), val);
	} else if (!strcmp(eq + 1, "flag")) {
		nla_put(m, id, 0, NULL);
	} else if (!strcmp(eq + 1, "gid")) {
		get_gid(val, buf);
		nla_put(m, id, SHIFT_FT_GID_LEN, buf);
	} else if (!strcmp(eq + 1, "bin")) {
		unsigned int b;

		if (strlen(val) % 2 || strlen(val) / 2 > sizeof(buf))
			usage();
		for (n = 0; n < strlen(val) / 2; n++) {
			if (sscanf(val + 2 * n, "%2x", &b) != 1)
				usage();
			buf[n] = b;
		}
		nla_put(m, id, n, buf);
	} else {
		/* integers; an enum name works where the attribute has one */
		enum ft_names kind = id > 0 && id <= SHIFT_FT_A_MAX ?
				     ft_attrs[id].names : FT_N_NUM;

		if (ft_parse_enum(kind, val, &v)) {
			fprintf(stderr, "%s: bad value '%s'\n", prog, val);
			exit(2);
		}
		if (!strcmp(eq + 1, "u8")) {
			nla_put_u8(m, id, v);
		} else if (!strcmp(eq + 1, "u16")) {
			nla_put_u16(m, id, v);
		} else if (!strcmp(eq + 1, "u32") || !strcmp(eq + 1, "s32")) {
			nla_put_u32(m, id, v);
		} else if (!strcmp(eq + 1, "u64")) {
			nla_put_u64(m, id, v);
		} else {
			fprintf(stderr, "%s: bad type '%s'\n", prog, eq + 1);
			exit(2);
		}
	}
}

static int cmd_raw(struct ctx *c, char **argv, int argc, int i)
{
	struct nl_msg *m;
	int cmd;

	if (i >= argc)
		usage();
	cmd = parse_cmd(argv[i++]);
	m = new_req(c, cmd, o.dump ? NLM_F_DUMP : 0);
	for (; i < argc; i++)
		put_raw(m, argv[i]);
	c->print_cmd = true;
	if (o.dump) {
		int err = transact(c, m);

		nlmsg_free(m);
		c->req = NULL;
		if (!err) {
			fwrite(c->out, 1, c->out_len, stdout);
			if (c->intr)
				printf("INTR\n");
			fflush(stdout);
		}
		return outcome(c, err);
	}
	return do_doit(c, m);
}

/* ---- monitor ---- */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct mon {
	struct ctx *c;
	int ctrl_id;
	unsigned long seen;
};

/* From a CTRL_CMD_NEWFAMILY message: our family id and "events" group id. */
static int ctrl_family(struct nlmsghdr *nlh, int *fam, int *grp)
{
	struct nlattr *tb[CTRL_ATTR_MAX + 1], *nest, *g;
	int rem;

	if (genlmsg_parse(nlh, 0, tb, CTRL_ATTR_MAX, NULL) < 0 ||
	    !tb[CTRL_ATTR_FAMILY_NAME] || !tb[CTRL_ATTR_FAMILY_ID] ||
	    strcmp(nla_get_string(tb[CTRL_ATTR_FAMILY_NAME]), SHIFT_FT_GENL_NAME))
		return -1;
	*fam = nla_get_u16(tb[CTRL_ATTR_FAMILY_ID]);
	*grp = -1;
	nest = tb[CTRL_ATTR_MCAST_GROUPS];
	if (nest) {
		nla_for_each_nested(g, nest, rem) {
			struct nlattr *gb[CTRL_ATTR_MCAST_GRP_MAX + 1];

			if (nla_parse_nested(gb, CTRL_ATTR_MCAST_GRP_MAX, g, NULL) < 0 ||
			    !gb[CTRL_ATTR_MCAST_GRP_NAME] || !gb[CTRL_ATTR_MCAST_GRP_ID])
				continue;
			if (!strcmp(nla_get_string(gb[CTRL_ATTR_MCAST_GRP_NAME]),
				    SHIFT_FT_MCGRP_EVENTS))
				*grp = nla_get_u32(gb[CTRL_ATTR_MCAST_GRP_ID]);
		}
	}
	return 0;
}

static int mon_cb(struct nl_msg *msg, void *arg)
{
	struct mon *mo = arg;
	struct ctx *c = mo->c;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct genlmsghdr *g = nlmsg_data(nlh);
	char ts[32];
	int fam, grp;

	snprintf(ts, sizeof(ts), "%" PRIu64, ft_now_ns());
	if (nlh->nlmsg_type == GENL_ID_CTRL) {
		if (g->cmd == CTRL_CMD_DELFAMILY && !ctrl_family(nlh, &fam, &grp) &&
		    fam == c->family) {
			printf("%s\tFAMILY_DEL\tname=%s\n", ts, SHIFT_FT_GENL_NAME);
			fflush(stdout);
		} else if (g->cmd == CTRL_CMD_NEWFAMILY &&
			   !ctrl_family(nlh, &fam, &grp)) {
			/* the module came back: follow it */
			c->family = fam;
			if (grp >= 0)
				nl_socket_add_membership(c->sk, grp);
			printf("%s\tFAMILY_NEW\tname=%s\tfamily=%d\tgroup=%d\n",
			       ts, SHIFT_FT_GENL_NAME, fam, grp);
			fflush(stdout);
		}
		return NL_OK;
	}
	if (nlh->nlmsg_type != c->family) {
		printf("%s\tFOREIGN\ttype=%d\n", ts, nlh->nlmsg_type);
		fflush(stdout);
		return NL_OK;
	}
	{
		static struct ft_row row;
		char cbuf[16], pfx[96];
		const char *ev;

		fill_row(&row, nlh);
		ev = ft_row_get(&row, "event");
		snprintf(pfx, sizeof(pfx), "%s\t%s\t%s", ts,
			 cmd_name(g->cmd, cbuf, sizeof(cbuf)), ev ? ev : "-");
		ft_row_print(stdout, pfx, &row);
	}
	mo->seen++;
	if (o.count && mo->seen >= o.count)
		stop = 1;
	return NL_OK;
}

static int cmd_monitor(struct ctx *c)
{
	struct mon mo = { .c = c };
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);
	uint64_t deadline = 0;
	int grp, ctrl_grp, fd, big = 8 << 20;
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	grp = genl_ctrl_resolve_grp(c->sk, SHIFT_FT_GENL_NAME, SHIFT_FT_MCGRP_EVENTS);
	if (grp < 0) {
		fprintf(stderr, "%s: monitor: group %s/%s not found: %s [ENOENT %d]\n",
			prog, SHIFT_FT_GENL_NAME, SHIFT_FT_MCGRP_EVENTS,
			nl_geterror(grp), ENOENT);
		return 1;
	}
	if (nl_socket_add_membership(c->sk, grp)) {
		fprintf(stderr, "%s: monitor: join group: %s [%s %d]\n", prog,
			strerror(errno), ft_errno_name(errno), errno);
		return 1;
	}
	ctrl_grp = genl_ctrl_resolve_grp(c->sk, "nlctrl", "notify");
	if (ctrl_grp >= 0)
		nl_socket_add_membership(c->sk, ctrl_grp);
	nl_socket_disable_seq_check(c->sk);
	fd = nl_socket_get_fd(c->sk);
	/* many events arrive in bursts in the tests: do not overrun */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, mon_cb, &mo);
	if (o.seconds > 0)
		deadline = ft_now_ns() + (uint64_t)(o.seconds * 1e9);
	printf("# monitor: subscribed to %s/%s (family %d, group %d)\n",
	       SHIFT_FT_GENL_NAME, SHIFT_FT_MCGRP_EVENTS, c->family, grp);
	fflush(stdout);
	while (!stop) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int timeout = -1, r;

		if (deadline) {
			uint64_t now = ft_now_ns();

			if (now >= deadline)
				break;
			timeout = (int)((deadline - now) / 1000000) + 1;
		}
		r = poll(&p, 1, timeout);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		r = nl_recvmsgs(c->sk, cb);
		if (r == -NLE_NOMEM || r == -NLE_MSG_OVERFLOW) {
			/* ENOBUFS: the kernel dropped messages for us */
			printf("%" PRIu64 "\tOVERRUN\n", ft_now_ns());
			fflush(stdout);
		} else if (r < 0 && r != -NLE_INTR && r != -NLE_AGAIN) {
			fprintf(stderr, "%s: monitor: receive: %s\n", prog,
				nl_geterror(r));
			nl_cb_put(cb);
			return 1;
		}
	}
	nl_cb_put(cb);
	return 0;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
	struct ctx c = { .bad_attr = -1 };
	char *args[256];
	int n = 0, i, rc;
	char *fields = NULL;

	/* options may appear anywhere; everything else is positional */
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has_next = i + 1 < argc;

		if (!strcmp(a, "--expect-errno") && has_next)
			o.expect = argv[++i];
		else if (!strcmp(a, "--no-retry"))
			o.no_retry = true;
		else if (!strcmp(a, "-v"))
			o.verbose = true;
		else if (!strcmp(a, "--dump"))
			o.dump = true;
		else if (!strcmp(a, "--hold"))
			o.hold = true;
		else if (!strcmp(a, "--source") && has_next) {
			a = argv[++i];
			o.del_source = !strcasecmp(a, "app") ? SHIFT_FT_SRC_APP :
				       !strcasecmp(a, "agent") ? SHIFT_FT_SRC_AGENT :
				       (int)parse_u32(a, "source");
		}
		else if (!strcmp(a, "--flags") && has_next) {
			o.have_flags = true;
			o.flags = parse_u32(argv[++i], "flags");
		} else if ((!strcmp(a, "--count") || !strcmp(a, "-c")) && has_next)
			o.count = parse_u32(argv[++i], "count");
		else if (!strcmp(a, "-T") && has_next)
			o.seconds = atof(argv[++i]);
		else if ((!strcmp(a, "-f") || !strcmp(a, "--fields")) && has_next)
			fields = argv[++i];
		else if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			usage();
		else if (n < (int)FT_ARRAY_SIZE(args))
			args[n++] = argv[i];
	}
	if (!n)
		usage();
	if (fields)
		ft_set_fields(fields);
	c.op = args[0];
	c.sk = open_sock();
	if (resolve_family(&c))
		return 1;

	if (!strcmp(c.op, "ports") && n == 1)
		rc = do_dump(&c, SHIFT_FT_CMD_PORT_GET);
	else if (!strcmp(c.op, "pairs") && n == 1)
		rc = do_dump(&c, SHIFT_FT_CMD_PAIR_GET);
	else if (!strcmp(c.op, "paths") && n == 1)
		rc = do_dump(&c, SHIFT_FT_CMD_PATH_GET);
	else if (!strcmp(c.op, "port"))
		rc = cmd_get(&c, SHIFT_FT_CMD_PORT_GET, args, n, 1, false);
	else if (!strcmp(c.op, "pair"))
		rc = cmd_get(&c, SHIFT_FT_CMD_PAIR_GET, args, n, 1, false);
	else if (!strcmp(c.op, "path"))
		rc = cmd_get(&c, SHIFT_FT_CMD_PATH_GET, args, n, 1, true);
	else if (!strcmp(c.op, "pair-set"))
		rc = cmd_pair_set(&c, args, n, 1);
	else if (!strcmp(c.op, "pair-clear"))
		rc = cmd_pair_clear(&c, args, n, 1);
	else if (!strcmp(c.op, "report"))
		rc = cmd_path_op(&c, SHIFT_FT_CMD_PATH_REPORT, args, n, 1);
	else if (!strcmp(c.op, "path-del"))
		rc = cmd_path_op(&c, SHIFT_FT_CMD_PATH_DEL, args, n, 1);
	else if (!strcmp(c.op, "monitor") && n == 1) {
		/* for monitor, -c means a message count, default unlimited */
		bool counted = false;

		for (i = 1; i < argc; i++)
			if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--count"))
				counted = true;
		if (!counted)
			o.count = 0;
		rc = cmd_monitor(&c);
	} else if (!strcmp(c.op, "raw"))
		rc = cmd_raw(&c, args, n, 1);
	else
		usage();

	if (o.hold && !rc) {
		printf("# hold: %u\n", nl_socket_get_local_port(c.sk));
		fflush(stdout);
		for (;;)
			pause();
	}
	free(c.out);
	nl_socket_free(c.sk);
	return rc;
}
