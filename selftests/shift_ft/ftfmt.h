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
#include "names.h"	/* shiftmon's names of every enum */

#define FT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum ft_vtype { FT_T_NONE, FT_T_U8, FT_T_U16, FT_T_U32, FT_T_U64, FT_T_S32,
		FT_T_STR, FT_T_GID };

enum ft_names { FT_N_NUM, FT_N_HEX, FT_N_PORT_STATE, FT_N_LINK, FT_N_PAIR,
		FT_N_PAIR_FLAGS, FT_N_PATH, FT_N_SRC, FT_N_EVENT, FT_N_INDEX,
		FT_N_REPORT_FLAGS };

/* How to read and print each attribute; its name is shiftmon's (names.c). */
struct ft_attr_desc {
	enum ft_vtype type;
	enum ft_names names;
};

static const struct ft_attr_desc ft_attrs[__SHIFT_FT_A_MAX] = {
	[SHIFT_FT_A_PAD]		= { FT_T_NONE, FT_N_HEX },
	[SHIFT_FT_A_GENERATION]		= { FT_T_U64, FT_N_NUM },
	[SHIFT_FT_A_PORT_INDEX]		= { FT_T_U32, FT_N_INDEX },
	[SHIFT_FT_A_DEV_NAME]		= { FT_T_STR, FT_N_NUM },
	[SHIFT_FT_A_DEV_INDEX]		= { FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_PORT_NUM]		= { FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_NODE_GUID]		= { FT_T_U64, FT_N_HEX },
	[SHIFT_FT_A_LINK_LAYER]		= { FT_T_U8, FT_N_LINK },
	[SHIFT_FT_A_NETDEV]		= { FT_T_STR, FT_N_NUM },
	[SHIFT_FT_A_IFINDEX]		= { FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_NUMA_NODE]		= { FT_T_S32, FT_N_NUM },
	[SHIFT_FT_A_STATE]		= { FT_T_U8, FT_N_PORT_STATE },
	[SHIFT_FT_A_PHYS_STATE]		= { FT_T_U8, FT_N_NUM },
	[SHIFT_FT_A_SPEED]		= { FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_WIDTH]		= { FT_T_U8, FT_N_NUM },
	[SHIFT_FT_A_MTU]		= { FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_LAST_CHANGE]	= { FT_T_U64, FT_N_NUM },
	[SHIFT_FT_A_DOWN_COUNT]		= { FT_T_U64, FT_N_NUM },
	[SHIFT_FT_A_LAST_EVENT]		= { FT_T_U32, FT_N_EVENT },
	[SHIFT_FT_A_EVENT_COUNT]	= { FT_T_U64, FT_N_NUM },
	[SHIFT_FT_A_BACKUP_INDEX]	= { FT_T_U32, FT_N_INDEX },
	[SHIFT_FT_A_BACKUP_DEV_NAME]	= { FT_T_STR, FT_N_NUM },
	[SHIFT_FT_A_BACKUP_PORT_NUM]	= { FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_BACKUP_STATE]	= { FT_T_U8, FT_N_PORT_STATE },
	[SHIFT_FT_A_PAIR_STATE]		= { FT_T_U8, FT_N_PAIR },
	[SHIFT_FT_A_PAIR_FLAGS]		= { FT_T_U32, FT_N_PAIR_FLAGS },
	[SHIFT_FT_A_PATH_INDEX]		= { FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_REMOTE_GID]		= { FT_T_GID, FT_N_NUM },
	[SHIFT_FT_A_PATH_STATE]		= { FT_T_U8, FT_N_PATH },
	[SHIFT_FT_A_REPORT_STATE]	= { FT_T_U8, FT_N_PATH },
	[SHIFT_FT_A_REPORT_SOURCE]	= { FT_T_U8, FT_N_SRC },
	[SHIFT_FT_A_REPORT_PID]		= { FT_T_U32, FT_N_NUM },
	[SHIFT_FT_A_REPORT_TIME]	= { FT_T_U64, FT_N_NUM },
	[SHIFT_FT_A_FLAGS]		= { FT_T_U32, FT_N_REPORT_FLAGS },
	[SHIFT_FT_A_EVENT]		= { FT_T_U32, FT_N_EVENT },
	[SHIFT_FT_A_EVENT_COUNTS]	= { FT_T_NONE, FT_N_HEX },	/* nested */
};

/* The name of attribute @attr, NULL for none. */
static inline const char *ft_attr_name(int attr)
{
	if (attr <= 0 || (unsigned int)attr >= sm_attr_names.n)
		return NULL;
	return sm_attr_names.names[attr];
}

/* The name of command @cmd, NULL for none. */
static inline const char *ft_cmd_name(int cmd)
{
	if (cmd < 0 || (unsigned int)cmd >= sm_cmd_names.n)
		return NULL;
	return sm_cmd_names.names[cmd];
}

/* The names of an enumerated kind of value, NULL for other kinds. */
static inline const struct sm_names *ft_table_of(enum ft_names kind)
{
	switch (kind) {
	case FT_N_PORT_STATE:	return &sm_port_state_names;
	case FT_N_LINK:		return &sm_link_names;
	case FT_N_PAIR:		return &sm_pair_state_names;
	case FT_N_PATH:		return &sm_path_state_names;
	case FT_N_SRC:		return &sm_source_names;
	case FT_N_EVENT:	return &sm_event_names;
	default:		return NULL;
	}
}

/* Name to value for an enumerated attribute; numbers are accepted too. */
static inline int ft_parse_enum(enum ft_names kind, const char *s, uint64_t *v)
{
	const struct sm_names *t = ft_table_of(kind);
	char *end;
	int i;

	if (t && (i = sm_value(t, s)) >= 0) {
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
	const struct sm_names *t = ft_table_of(kind);
	char nbuf[SM_NAME_BUF];

	if (t) {
		snprintf(buf, len, "%s", sm_name(t, v, nbuf));
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
	if (ft_attr_name(attr))
		snprintf(f->key, sizeof(f->key), "%s", ft_attr_name(attr));
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
		sm_gid_full(g, f->val, sizeof(f->val));
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
