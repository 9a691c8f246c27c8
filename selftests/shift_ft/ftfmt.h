/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ftfmt.h: the field names and value formats that ftnl and ftpage share, so
 * that a netlink dump and a page read of the same row print the same text.
 *
 * A row is a list of key=value fields separated by tabs, always in
 * attribute-number order (enum shift_ft_attr), whatever order the kernel
 * sent them in.  "-f a,b,c" selects and orders fields; a selected field the
 * row lacks prints as "key=-".  Enumerations print by name (the enum
 * constant without its prefix), unknown values as numbers.
 */
#ifndef FTFMT_H
#define FTFMT_H

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <shift_ft.h>

#define FT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum ft_vtype { FT_T_NONE, FT_T_U8, FT_T_U16, FT_T_U32, FT_T_U64, FT_T_S32,
		FT_T_STR, FT_T_GID };

enum ft_names { FT_N_NUM, FT_N_HEX, FT_N_PORT_STATE, FT_N_LINK, FT_N_PAIR,
		FT_N_PAIR_FLAGS, FT_N_PATH, FT_N_SRC, FT_N_EVENT, FT_N_INDEX,
		FT_N_REPORT_FLAGS };

struct ft_attr_desc {
	const char *name;
	enum ft_vtype type;
	enum ft_names names;
};

static const struct ft_attr_desc ft_attrs[__SHIFT_FT_A_MAX] = {
	[SHIFT_FT_A_PAD]		= { "pad",		FT_T_NONE, FT_N_HEX },
	[SHIFT_FT_A_GENERATION]		= { "generation",	FT_T_U64, FT_N_NUM },
	[SHIFT_FT_A_PORT_INDEX]		= { "port_index",	FT_T_U32, FT_N_INDEX },
	[SHIFT_FT_A_DEV_NAME]		= { "dev_name",		FT_T_STR, FT_N_NUM },
	[SHIFT_FT_A_DEV_INDEX]		= { "dev_index",	FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_PORT_NUM]		= { "port_num",		FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_NODE_GUID]		= { "node_guid",	FT_T_U64, FT_N_HEX },
	[SHIFT_FT_A_LINK_LAYER]		= { "link_layer",	FT_T_U8, FT_N_LINK },
	[SHIFT_FT_A_NETDEV]		= { "netdev",		FT_T_STR, FT_N_NUM },
	[SHIFT_FT_A_IFINDEX]		= { "ifindex",		FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_NUMA_NODE]		= { "numa_node",	FT_T_S32, FT_N_NUM },
	[SHIFT_FT_A_STATE]		= { "state",		FT_T_U8, FT_N_PORT_STATE },
	[SHIFT_FT_A_PHYS_STATE]		= { "phys_state",	FT_T_U8, FT_N_NUM },
	[SHIFT_FT_A_SPEED]		= { "speed",		FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_WIDTH]		= { "width",		FT_T_U8, FT_N_NUM },
	[SHIFT_FT_A_MTU]		= { "mtu",		FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_LAST_CHANGE]	= { "last_change",	FT_T_U64, FT_N_NUM },
	[SHIFT_FT_A_DOWN_COUNT]		= { "down_count",	FT_T_U64, FT_N_NUM },
	[SHIFT_FT_A_LAST_EVENT]		= { "last_event",	FT_T_U32, FT_N_EVENT },
	[SHIFT_FT_A_EVENT_COUNT]	= { "event_count",	FT_T_U64, FT_N_NUM },
	[SHIFT_FT_A_BACKUP_INDEX]	= { "backup_index",	FT_T_U32, FT_N_INDEX },
	[SHIFT_FT_A_BACKUP_DEV_NAME]	= { "backup_dev_name",	FT_T_STR, FT_N_NUM },
	[SHIFT_FT_A_BACKUP_PORT_NUM]	= { "backup_port_num",	FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_BACKUP_STATE]	= { "backup_state",	FT_T_U8, FT_N_PORT_STATE },
	[SHIFT_FT_A_PAIR_STATE]		= { "pair_state",	FT_T_U8, FT_N_PAIR },
	[SHIFT_FT_A_PAIR_FLAGS]		= { "pair_flags",	FT_T_U32, FT_N_PAIR_FLAGS },
	[SHIFT_FT_A_PATH_INDEX]		= { "path_index",	FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_REMOTE_GID]		= { "remote_gid",	FT_T_GID, FT_N_NUM },
	[SHIFT_FT_A_PATH_STATE]		= { "path_state",	FT_T_U8, FT_N_PATH },
	[SHIFT_FT_A_REPORT_STATE]	= { "report_state",	FT_T_U8, FT_N_PATH },
	[SHIFT_FT_A_REPORT_SOURCE]	= { "report_source",	FT_T_U8, FT_N_SRC },
	[SHIFT_FT_A_REPORT_PID]		= { "report_pid",	FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_REPORT_TIME]	= { "report_time",	FT_T_U64, FT_N_NUM },
	[SHIFT_FT_A_FLAGS]		= { "flags",		FT_T_U32, FT_N_REPORT_FLAGS },
	[SHIFT_FT_A_EVENT]		= { "event",		FT_T_U32, FT_N_EVENT },
};

static const char *const ft_cmd_names[__SHIFT_FT_CMD_MAX] = {
	[SHIFT_FT_CMD_UNSPEC]		= "UNSPEC",
	[SHIFT_FT_CMD_PORT_GET]		= "PORT_GET",
	[SHIFT_FT_CMD_PORT_NEW]		= "PORT_NEW",
	[SHIFT_FT_CMD_PORT_DEL]		= "PORT_DEL",
	[SHIFT_FT_CMD_PAIR_GET]		= "PAIR_GET",
	[SHIFT_FT_CMD_PAIR_NEW]		= "PAIR_NEW",
	[SHIFT_FT_CMD_PAIR_SET]		= "PAIR_SET",
	[SHIFT_FT_CMD_PAIR_CLEAR]	= "PAIR_CLEAR",
	[SHIFT_FT_CMD_PATH_GET]		= "PATH_GET",
	[SHIFT_FT_CMD_PATH_NEW]		= "PATH_NEW",
	[SHIFT_FT_CMD_PATH_DEL]		= "PATH_DEL",
	[SHIFT_FT_CMD_PATH_REPORT]	= "PATH_REPORT",
};

static const char *const ft_port_state_names[] = {
	[SHIFT_FT_PORT_NOP]		= "NOP",
	[SHIFT_FT_PORT_DOWN]		= "DOWN",
	[SHIFT_FT_PORT_INIT]		= "INIT",
	[SHIFT_FT_PORT_ARMED]		= "ARMED",
	[SHIFT_FT_PORT_ACTIVE]		= "ACTIVE",
	[SHIFT_FT_PORT_ACTIVE_DEFER]	= "ACTIVE_DEFER",
};

static const char *const ft_link_names[] = {
	[SHIFT_FT_LINK_UNSPEC]		= "UNSPEC",
	[SHIFT_FT_LINK_INFINIBAND]	= "INFINIBAND",
	[SHIFT_FT_LINK_ETHERNET]	= "ETHERNET",
};

static const char *const ft_pair_names[] = {
	[SHIFT_FT_PAIR_NONE]		= "NONE",
	[SHIFT_FT_PAIR_BOTH_UP]		= "BOTH_UP",
	[SHIFT_FT_PAIR_PRIMARY_DOWN]	= "PRIMARY_DOWN",
	[SHIFT_FT_PAIR_BACKUP_DOWN]	= "BACKUP_DOWN",
	[SHIFT_FT_PAIR_BOTH_DOWN]	= "BOTH_DOWN",
};

static const char *const ft_path_names[] = {
	[SHIFT_FT_PATH_UNKNOWN]		= "UNKNOWN",
	[SHIFT_FT_PATH_UP]		= "UP",
	[SHIFT_FT_PATH_DOWN]		= "DOWN",
};

static const char *const ft_src_names[] = {
	[SHIFT_FT_SRC_NONE]		= "NONE",
	[SHIFT_FT_SRC_LOCAL]		= "LOCAL",
	[SHIFT_FT_SRC_APP]		= "APP",
	[SHIFT_FT_SRC_AGENT]		= "AGENT",
};

static const char *const ft_event_names[__SHIFT_FT_EV_MAX] = {
	[SHIFT_FT_EV_NONE]		= "NONE",
	[SHIFT_FT_EV_PORT_ACTIVE]	= "PORT_ACTIVE",
	[SHIFT_FT_EV_PORT_ERR]		= "PORT_ERR",
	[SHIFT_FT_EV_LID_CHANGE]	= "LID_CHANGE",
	[SHIFT_FT_EV_PKEY_CHANGE]	= "PKEY_CHANGE",
	[SHIFT_FT_EV_SM_CHANGE]		= "SM_CHANGE",
	[SHIFT_FT_EV_CLIENT_REREGISTER]	= "CLIENT_REREGISTER",
	[SHIFT_FT_EV_GID_CHANGE]	= "GID_CHANGE",
	[SHIFT_FT_EV_DEVICE_FATAL]	= "DEVICE_FATAL",
	[SHIFT_FT_EV_DEVICE_ADD]	= "DEVICE_ADD",
	[SHIFT_FT_EV_DEVICE_REMOVE]	= "DEVICE_REMOVE",
	[SHIFT_FT_EV_DEVICE_RENAME]	= "DEVICE_RENAME",
	[SHIFT_FT_EV_PAIR_CONFIG]	= "PAIR_CONFIG",
	[SHIFT_FT_EV_PATH_REPORT]	= "PATH_REPORT",
	[SHIFT_FT_EV_PATH_DELETE]	= "PATH_DELETE",
};

struct ft_name_table {
	const char *const *names;
	unsigned int n;
};

static inline struct ft_name_table ft_table_of(enum ft_names kind)
{
	struct ft_name_table t = { NULL, 0 };

#define FT_TBL(a) do { t.names = (a); t.n = FT_ARRAY_SIZE(a); } while (0)
	switch (kind) {
	case FT_N_PORT_STATE:	FT_TBL(ft_port_state_names); break;
	case FT_N_LINK:		FT_TBL(ft_link_names); break;
	case FT_N_PAIR:		FT_TBL(ft_pair_names); break;
	case FT_N_PATH:		FT_TBL(ft_path_names); break;
	case FT_N_SRC:		FT_TBL(ft_src_names); break;
	case FT_N_EVENT:	FT_TBL(ft_event_names); break;
	default:		break;
	}
#undef FT_TBL
	return t;
}

/* Name to value for an enumerated attribute; numbers are accepted too. */
static inline int ft_parse_enum(enum ft_names kind, const char *s, uint64_t *v)
{
	struct ft_name_table t = ft_table_of(kind);
	char *end;
	unsigned int i;

	for (i = 0; i < t.n; i++)
		if (t.names[i] && !strcasecmp(t.names[i], s)) {
			*v = i;
			return 0;
		}
	if (kind == FT_N_PAIR_FLAGS && !strcasecmp(s, "CONFIGURED")) {
		*v = SHIFT_FT_PAIR_F_CONFIGURED;
		return 0;
	}
	if (kind == FT_N_REPORT_FLAGS && !strcasecmp(s, "NOCREATE")) {
		*v = SHIFT_FT_REPORT_F_NOCREATE;
		return 0;
	}
	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		return -EINVAL;
	return 0;
}

static inline void ft_fmt_flags(char *buf, size_t len, uint64_t v,
				uint64_t bit, const char *name)
{
	if (!v) {
		snprintf(buf, len, "0");
	} else if (v == bit) {
		snprintf(buf, len, "%s", name);
	} else if (v & bit) {
		snprintf(buf, len, "%s|0x%" PRIx64, name, v & ~bit);
	} else {
		snprintf(buf, len, "0x%" PRIx64, v);
	}
}

/* Format a numeric value of attribute @attr. */
static inline void ft_fmt_num(char *buf, size_t len, int attr, uint64_t v)
{
	const struct ft_attr_desc *d = attr > 0 && attr <= SHIFT_FT_A_MAX ?
				       &ft_attrs[attr] : NULL;
	enum ft_names kind = d ? d->names : FT_N_NUM;
	struct ft_name_table t = ft_table_of(kind);

	if (t.names) {
		if (v < t.n && t.names[v])
			snprintf(buf, len, "%s", t.names[v]);
		else
			snprintf(buf, len, "%" PRIu64, v);
		return;
	}
	switch (kind) {
	case FT_N_HEX:
		snprintf(buf, len, "0x%016" PRIx64, v);
		break;
	case FT_N_INDEX:
		if (v == SHIFT_FT_NO_PORT)
			snprintf(buf, len, "none");
		else
			snprintf(buf, len, "%" PRIu64, v);
		break;
	case FT_N_PAIR_FLAGS:
		ft_fmt_flags(buf, len, v, SHIFT_FT_PAIR_F_CONFIGURED, "CONFIGURED");
		break;
	case FT_N_REPORT_FLAGS:
		ft_fmt_flags(buf, len, v, SHIFT_FT_REPORT_F_NOCREATE, "NOCREATE");
		break;
	default:
		if (d && d->type == FT_T_S32)
			snprintf(buf, len, "%" PRId32, (int32_t)v);
		else
			snprintf(buf, len, "%" PRIu64, v);
	}
}

/* A GID prints as eight groups of four hex digits, which inet_pton reads. */
static inline void ft_fmt_gid(char *buf, size_t len, const uint8_t *g)
{
	snprintf(buf, len,
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
		 g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]);
}

static inline int ft_parse_gid(const char *s, uint8_t *g)
{
	unsigned int i, b;

	if (inet_pton(AF_INET6, s, g) == 1)
		return 0;
	if (strlen(s) != 2 * SHIFT_FT_GID_LEN)
		return -EINVAL;
	for (i = 0; i < SHIFT_FT_GID_LEN; i++) {
		if (!isxdigit((unsigned char)s[2 * i]) ||
		    !isxdigit((unsigned char)s[2 * i + 1]) ||
		    sscanf(s + 2 * i, "%2x", &b) != 1)
			return -EINVAL;
		g[i] = b;
	}
	return 0;
}

/* Strings from the kernel are printed with separators made harmless. */
static inline void ft_fmt_str(char *buf, size_t len, const char *s, size_t n)
{
	size_t i, o = 0;

	for (i = 0; i < n && s[i] && o + 1 < len; i++)
		buf[o++] = (s[i] == '\t' || s[i] == '\n' || s[i] == ' ' ||
			    !isprint((unsigned char)s[i])) ? '?' : s[i];
	buf[o] = '\0';
}

static inline void ft_fmt_hex(char *buf, size_t len, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < n && o + 3 < len; i++)
		o += snprintf(buf + o, len - o, "%02x", b[i]);
	if (i < n && len > 4)
		snprintf(buf + len - 4, 4, "...");
}

/* ---- rows ---- */

#define FT_ROW_MAX 64
#define FT_VAL_LEN 160

struct ft_field {
	int attr;			/* sort key; > SHIFT_FT_A_MAX: unknown */
	char key[24];
	char val[FT_VAL_LEN];
};

struct ft_row {
	int n;
	struct ft_field f[FT_ROW_MAX];
};

/* Field selection from "-f a,b,c"; NULL: every field. */
static char *ft_select[FT_ROW_MAX];
static int ft_nselect;

static inline void ft_set_fields(char *list)
{
	char *tok, *save = NULL;

	ft_nselect = 0;
	for (tok = strtok_r(list, ",", &save); tok && ft_nselect < FT_ROW_MAX;
	     tok = strtok_r(NULL, ",", &save))
		ft_select[ft_nselect++] = tok;
}

static inline struct ft_field *ft_row_add(struct ft_row *r, int attr)
{
	struct ft_field *f;

	if (r->n >= FT_ROW_MAX)
		return NULL;
	f = &r->f[r->n++];
	f->attr = attr;
	if (attr > 0 && attr <= SHIFT_FT_A_MAX && ft_attrs[attr].name)
		snprintf(f->key, sizeof(f->key), "%s", ft_attrs[attr].name);
	else
		snprintf(f->key, sizeof(f->key), "attr%d", attr);
	f->val[0] = '\0';
	return f;
}

static inline void ft_row_num(struct ft_row *r, int attr, uint64_t v)
{
	struct ft_field *f = ft_row_add(r, attr);

	if (f)
		ft_fmt_num(f->val, sizeof(f->val), attr, v);
}

static inline void ft_row_str(struct ft_row *r, int attr, const char *s, size_t n)
{
	struct ft_field *f = ft_row_add(r, attr);

	if (f)
		ft_fmt_str(f->val, sizeof(f->val), s, n);
}

static inline void ft_row_gid(struct ft_row *r, int attr, const uint8_t *g)
{
	struct ft_field *f = ft_row_add(r, attr);

	if (f)
		ft_fmt_gid(f->val, sizeof(f->val), g);
}

static inline int ft_field_cmp(const void *a, const void *b)
{
	const struct ft_field *x = a, *y = b;

	return x->attr - y->attr;
}

static inline const char *ft_row_get(const struct ft_row *r, const char *key)
{
	int i;

	for (i = 0; i < r->n; i++)
		if (!strcmp(r->f[i].key, key))
			return r->f[i].val;
	return NULL;
}

/* Print @prefix (if any) then the row, one line, flushed. */
static inline void ft_row_print(FILE *out, const char *prefix, struct ft_row *r)
{
	const char *sep = "";
	int i;

	qsort(r->f, r->n, sizeof(r->f[0]), ft_field_cmp);
	if (prefix) {
		fputs(prefix, out);
		sep = "\t";
	}
	if (ft_nselect) {
		for (i = 0; i < ft_nselect; i++) {
			const char *v = ft_row_get(r, ft_select[i]);

			fprintf(out, "%s%s=%s", sep, ft_select[i], v ? v : "-");
			sep = "\t";
		}
	} else {
		for (i = 0; i < r->n; i++) {
			fprintf(out, "%s%s=%s", sep, r->f[i].key, r->f[i].val);
			sep = "\t";
		}
	}
	fputc('\n', out);
	fflush(out);
}

/* ---- errno names, so that tests can assert on them ---- */

#define FT_E(x) { x, #x }
static const struct { int e; const char *name; } ft_errnos[] = {
	FT_E(EPERM), FT_E(ENOENT), FT_E(ESRCH), FT_E(EINTR), FT_E(EIO),
	FT_E(ENXIO), FT_E(E2BIG), FT_E(EBADF), FT_E(EAGAIN), FT_E(ENOMEM),
	FT_E(EACCES), FT_E(EFAULT), FT_E(EBUSY), FT_E(EEXIST), FT_E(ENODEV),
	FT_E(EINVAL), FT_E(ENOSPC), FT_E(ERANGE), FT_E(ENOTTY), FT_E(EMSGSIZE),
	FT_E(EOPNOTSUPP), FT_E(EPROTO), FT_E(ENOBUFS), FT_E(EBADMSG),
	FT_E(ETIMEDOUT), FT_E(ECONNREFUSED), FT_E(EPROTONOSUPPORT),
	FT_E(EAFNOSUPPORT), FT_E(ENOLINK), FT_E(EOVERFLOW), FT_E(ENOSYS),
	{ 524, "ENOTSUPP" },	/* kernel-internal, must never reach userspace */
};
#undef FT_E

static inline const char *ft_errno_name(int e)
{
	static char buf[24];
	size_t i;

	for (i = 0; i < FT_ARRAY_SIZE(ft_errnos); i++)
		if (ft_errnos[i].e == e)
			return ft_errnos[i].name;
	snprintf(buf, sizeof(buf), "ERRNO%d", e);
	return buf;
}

static inline int ft_errno_parse(const char *s)
{
	size_t i;

	for (i = 0; i < FT_ARRAY_SIZE(ft_errnos); i++)
		if (!strcasecmp(ft_errnos[i].name, s))
			return ft_errnos[i].e;
	if (isdigit((unsigned char)s[0]))
		return atoi(s);
	return -1;
}

/* Is errno @e in the comma separated list @list? */
static inline int ft_errno_in(int e, const char *list)
{
	char buf[256], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (ft_errno_parse(tok) == e)
			return 1;
	return 0;
}

static inline uint64_t ft_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#endif /* FTFMT_H */
