// SPDX-License-Identifier: GPL-2.0
/*
 * fields.c: the fields of each kind of row, in one order for every format.
 *
 * `dump` prints them in this order, `-j` names them so, `monitor -j` nests
 * them.  The order is the attribute order of the netlink reply; a field
 * added to the protocol is appended here, never inserted: scripts that cut
 * the tab-separated dump by column keep working (see shiftmon(8)).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shiftmon.h"

const char *const sm_kind_names[] = {
	[SM_PORT] = "port",
	[SM_PAIR] = "pair",
	[SM_PATH] = "path",
};

static const struct sm_field port_fields[] = {
	{ SHIFT_FT_A_GENERATION,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_PORT_INDEX,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_DEV_NAME,		SM_F_STRING, NULL },
	{ SHIFT_FT_A_DEV_INDEX,		SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_PORT_NUM,		SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_NODE_GUID,		SM_F_HEX64, NULL },
	{ SHIFT_FT_A_LINK_LAYER,	SM_F_ENUM, &sm_link_names },
	{ SHIFT_FT_A_NETDEV,		SM_F_STRING, NULL },
	{ SHIFT_FT_A_IFINDEX,		SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_NUMA_NODE,		SM_F_SIGNED, NULL },
	{ SHIFT_FT_A_STATE,		SM_F_ENUM, &sm_port_state_names },
	{ SHIFT_FT_A_PHYS_STATE,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_SPEED,		SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_WIDTH,		SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_MTU,		SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_LAST_CHANGE,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_DOWN_COUNT,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_LAST_EVENT,	SM_F_ENUM, &sm_event_names },
	{ SHIFT_FT_A_EVENT_COUNT,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_BACKUP_INDEX,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_PAIR_STATE,	SM_F_ENUM, &sm_pair_state_names },
	{ SHIFT_FT_A_PAIR_FLAGS,	SM_F_FLAGS, NULL },
	{ SHIFT_FT_A_EVENT_COUNTS,	SM_F_COUNTS, &sm_event_names },
};

static const struct sm_field pair_fields[] = {
	{ SHIFT_FT_A_GENERATION,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_PORT_INDEX,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_DEV_NAME,		SM_F_STRING, NULL },
	{ SHIFT_FT_A_PORT_NUM,		SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_STATE,		SM_F_ENUM, &sm_port_state_names },
	{ SHIFT_FT_A_BACKUP_INDEX,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_BACKUP_DEV_NAME,	SM_F_STRING, NULL },
	{ SHIFT_FT_A_BACKUP_PORT_NUM,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_BACKUP_STATE,	SM_F_ENUM, &sm_port_state_names },
	{ SHIFT_FT_A_PAIR_STATE,	SM_F_ENUM, &sm_pair_state_names },
	{ SHIFT_FT_A_PAIR_FLAGS,	SM_F_FLAGS, NULL },
};

static const struct sm_field path_fields[] = {
	{ SHIFT_FT_A_GENERATION,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_PATH_INDEX,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_PORT_INDEX,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_DEV_NAME,		SM_F_STRING, NULL },
	{ SHIFT_FT_A_PORT_NUM,		SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_REMOTE_GID,	SM_F_GID, NULL },
	{ SHIFT_FT_A_PATH_STATE,	SM_F_ENUM, &sm_path_state_names },
	{ SHIFT_FT_A_REPORT_STATE,	SM_F_ENUM, &sm_path_state_names },
	{ SHIFT_FT_A_REPORT_SOURCE,	SM_F_ENUM, &sm_source_names },
	{ SHIFT_FT_A_REPORT_PID,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_REPORT_TIME,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_LAST_CHANGE,	SM_F_UNSIGNED, NULL },
	{ SHIFT_FT_A_DOWN_COUNT,	SM_F_UNSIGNED, NULL },
};

const struct sm_field *sm_fields(enum sm_kind kind, size_t *n)
{
	switch (kind) {
	case SM_PORT:
		*n = SM_ARRAY_SIZE(port_fields);
		return port_fields;
	case SM_PAIR:
		*n = SM_ARRAY_SIZE(pair_fields);
		return pair_fields;
	default:
		*n = SM_ARRAY_SIZE(path_fields);
		return path_fields;
	}
}

int sm_kind_of_cmd(int cmd)
{
	switch (cmd) {
	case SHIFT_FT_CMD_PORT_NEW:
	case SHIFT_FT_CMD_PORT_DEL:
		return SM_PORT;
	case SHIFT_FT_CMD_PAIR_NEW:
		return SM_PAIR;
	case SHIFT_FT_CMD_PATH_NEW:
	case SHIFT_FT_CMD_PATH_DEL:
		return SM_PATH;
	default:
		return -1;
	}
}

/* The numeric value of attribute @a of @r. */
uint64_t sm_row_num(const struct sm_row *r, int a)
{
	switch (a) {
	case SHIFT_FT_A_GENERATION:	return r->generation;
	case SHIFT_FT_A_PORT_INDEX:	return r->port_index;
	case SHIFT_FT_A_DEV_INDEX:	return r->dev_index;
	case SHIFT_FT_A_PORT_NUM:	return r->port_num;
	case SHIFT_FT_A_NODE_GUID:	return r->node_guid;
	case SHIFT_FT_A_LINK_LAYER:	return r->link_layer;
	case SHIFT_FT_A_IFINDEX:	return r->ifindex;
	case SHIFT_FT_A_NUMA_NODE:	return (uint64_t)(int64_t)r->numa_node;
	case SHIFT_FT_A_STATE:		return r->state;
	case SHIFT_FT_A_PHYS_STATE:	return r->phys_state;
	case SHIFT_FT_A_SPEED:		return r->speed;
	case SHIFT_FT_A_WIDTH:		return r->width;
	case SHIFT_FT_A_MTU:		return r->mtu;
	case SHIFT_FT_A_LAST_CHANGE:	return r->last_change;
	case SHIFT_FT_A_DOWN_COUNT:	return r->down_count;
	case SHIFT_FT_A_LAST_EVENT:	return r->last_event;
	case SHIFT_FT_A_EVENT_COUNT:	return r->event_count;
	case SHIFT_FT_A_BACKUP_INDEX:	return r->backup_index;
	case SHIFT_FT_A_BACKUP_PORT_NUM: return r->backup_port_num;
	case SHIFT_FT_A_BACKUP_STATE:	return r->backup_state;
	case SHIFT_FT_A_PAIR_STATE:	return r->pair_state;
	case SHIFT_FT_A_PAIR_FLAGS:	return r->pair_flags;
	case SHIFT_FT_A_PATH_INDEX:	return r->path_index;
	case SHIFT_FT_A_PATH_STATE:	return r->path_state;
	case SHIFT_FT_A_REPORT_STATE:	return r->report_state;
	case SHIFT_FT_A_REPORT_SOURCE:	return r->report_source;
	case SHIFT_FT_A_REPORT_PID:	return r->report_pid;
	case SHIFT_FT_A_REPORT_TIME:	return r->report_time;
	case SHIFT_FT_A_FLAGS:		return r->flags;
	case SHIFT_FT_A_EVENT:		return r->event;
	default:			return 0;
	}
}

static const char *row_str(const struct sm_row *r, int a)
{
	switch (a) {
	case SHIFT_FT_A_DEV_NAME:	return r->dev_name;
	case SHIFT_FT_A_NETDEV:		return r->netdev;
	case SHIFT_FT_A_BACKUP_DEV_NAME: return r->backup_dev_name;
	default:			return "";
	}
}

/* Dump text of events by cause: the causes that occurred, in enum order. */
static void counts_text(const struct sm_row *r, const struct sm_names *names,
			char *buf, size_t len)
{
	char nbuf[SM_NAME_BUF];
	size_t o = 0, ev;

	buf[0] = '\0';
	for (ev = 1; ev < SM_ARRAY_SIZE(r->ev_counts) && o < len; ev++)
		if (r->ev_counts[ev])
			o += snprintf(buf + o, len - o, "%s%s=%" PRIu64,
				      o ? "," : "", sm_name(names, ev, nbuf),
				      r->ev_counts[ev]);
	if (!o)
		snprintf(buf, len, "0");
}

/* Dump text: tab, newline, backslash and unprintable bytes escaped. */
static void escape_tsv(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	for (; *s && o + 5 < len; s++) {
		unsigned char c = *s;

		if (c == '\\')
			o += snprintf(buf + o, len - o, "\\\\");
		else if (c == '\t')
			o += snprintf(buf + o, len - o, "\\t");
		else if (c == '\n')
			o += snprintf(buf + o, len - o, "\\n");
		else if (c < 0x20 || c == 0x7f)
			o += snprintf(buf + o, len - o, "\\x%02x", c);
		else
			buf[o++] = c;
	}
	buf[o] = '\0';
}

const char *sm_field_text(const struct sm_row *r, const struct sm_field *f,
			  char *buf, size_t len)
{
	uint64_t v = sm_row_num(r, f->attr);
	char nbuf[SM_NAME_BUF];

	if (!SM_HAS(r, f->attr))
		return "-";
	switch (f->fmt) {
	case SM_F_SIGNED:
		snprintf(buf, len, "%" PRId64, (int64_t)v);
		break;
	case SM_F_STRING:
		escape_tsv(row_str(r, f->attr), buf, len);
		break;
	case SM_F_HEX64:
		snprintf(buf, len, "0x%016" PRIx64, v);
		break;
	case SM_F_ENUM:
		snprintf(buf, len, "%s", sm_name(f->names, v, nbuf));
		break;
	case SM_F_FLAGS:
		sm_pair_flags_str((uint32_t)v, buf, len);
		break;
	case SM_F_GID:
		sm_gid_full(r->remote_gid, buf, len);
		break;
	case SM_F_COUNTS:
		counts_text(r, f->names, buf, len);
		break;
	default:
		snprintf(buf, len, "%" PRIu64, v);
		break;
	}
	return buf;
}

void sm_row_json(struct sm_json *j, enum sm_kind kind, const struct sm_row *r)
{
	char nbuf[SM_NAME_BUF], buf[64];
	const struct sm_field *fields = NULL, *f;
	size_t n, i;
	const char *key;
	uint64_t v;

	fields = sm_fields(kind, &n);
	for (i = 0; i < n; i++) {
		f = &fields[i];
		key = sm_attr_names.names[f->attr];
		v = sm_row_num(r, f->attr);
		if (!SM_HAS(r, f->attr)) {
			if (f->fmt == SM_F_FLAGS) {
				sm_json_arr_open(j, key);
				sm_json_arr_close(j);
			} else {
				sm_json_null(j, key);
			}
			continue;
		}
		switch (f->fmt) {
		case SM_F_SIGNED:
			sm_json_s64(j, key, (int64_t)v);
			break;
		case SM_F_STRING:
			sm_json_str(j, key, row_str(r, f->attr));
			break;
		case SM_F_HEX64:
			snprintf(buf, sizeof(buf), "0x%016" PRIx64, v);
			sm_json_str(j, key, buf);
			break;
		case SM_F_ENUM:
			sm_json_str(j, key, sm_name(f->names, v, nbuf));
			break;
		case SM_F_FLAGS:
			sm_json_arr_open(j, key);
			if (v & SHIFT_FT_PAIR_F_CONFIGURED)
				sm_json_str(j, NULL, "CONFIGURED");
			v &= ~(uint64_t)SHIFT_FT_PAIR_F_CONFIGURED;
			for (int b = 0; b < 32; b++)
				if (v & (1ULL << b)) {
					snprintf(buf, sizeof(buf), "0x%x", 1U << b);
					sm_json_str(j, NULL, buf);
				}
			sm_json_arr_close(j);
			break;
		case SM_F_GID:
			sm_gid_full(r->remote_gid, buf, sizeof(buf));
			sm_json_str(j, key, buf);
			break;
		case SM_F_COUNTS:
			sm_json_obj_open(j, key);
			for (size_t ev = 1; ev < SM_ARRAY_SIZE(r->ev_counts); ev++)
				if (r->ev_counts[ev])
					sm_json_u64(j, sm_name(f->names, ev, nbuf),
						    r->ev_counts[ev]);
			sm_json_obj_close(j);
			break;
		default:
			sm_json_u64(j, key, v);
			break;
		}
	}
}

/* ---- filters ---- */

int sm_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *v)
{
	unsigned long long x;
	char *end;

	if (!*s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end || x < min || x > max)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

int sm_parse_filter(int argc, char **argv, struct sm_filter *f)
{
	int i;
	uint32_t v;

	f->dev = NULL;
	f->port = -1;
	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "dev") && i + 1 < argc && !f->dev) {
			f->dev = argv[++i];
		} else if (!strcmp(argv[i], "port") && i + 1 < argc && f->port < 0) {
			if (sm_parse_u32(argv[++i], 1, 255, &v)) {
				fprintf(stderr, "%s: invalid port number '%s'\n",
					sm_prog, argv[i]);
				return -1;
			}
			f->port = v;
		} else {
			fprintf(stderr, "%s: unexpected argument '%s'\n",
				sm_prog, argv[i]);
			return -1;
		}
	}
	return 0;
}

bool sm_filter_match(const struct sm_filter *f, const struct sm_row *r)
{
	if (f->dev && strcmp(f->dev, r->dev_name))
		return false;
	if (f->port >= 0 && (long)r->port_num != f->port)
		return false;
	return true;
}

/* ---- time ---- */

uint64_t sm_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void sm_age(uint64_t then_ns, char *buf, size_t len)
{
	uint64_t now = sm_mono_ns(), s;

	if (!then_ns || then_ns > now) {
		snprintf(buf, len, "-");
		return;
	}
	s = (now - then_ns) / 1000000000ULL;
	if (s < 60)
		snprintf(buf, len, "%.1fs", (double)(now - then_ns) / 1e9);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
	else
		snprintf(buf, len, "%" PRIu64 "d%02" PRIu64 "h", s / 86400, s / 3600 % 24);
}
