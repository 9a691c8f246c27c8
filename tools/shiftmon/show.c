// SPDX-License-Identifier: GPL-2.0
/*
 * show.c: `shiftmon [show] [ports|pairs|paths] [dev NAME [port N]]`.
 *
 * Tables for people (states coloured when stdout is a terminal), or with -j
 * one JSON object: {"version": 1, "ports": [...], "pairs": [...],
 * "paths": [...]} whose members are named as the fields of `dump`.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "shiftmon.h"

#define SM_JSON_VERSION 1

#define C_RESET  "\033[0m"
#define C_BOLD   "\033[1m"
#define C_RED    "\033[31m"
#define C_GREEN  "\033[32m"
#define C_YELLOW "\033[33m"

/* ---- a table of text cells, aligned when printed ---- */

#define TBL_COLS 16

struct tbl {
	int ncol;
	const char *head[TBL_COLS];
	char **cell;			/* rows * ncol */
	const char **color;		/* per cell, NULL: none */
	size_t rows, cap;
};

static void tbl_init(struct tbl *t, int ncol, const char *const *head)
{
	memset(t, 0, sizeof(*t));
	t->ncol = ncol;
	memcpy(t->head, head, ncol * sizeof(*head));
}

static int tbl_row(struct tbl *t)
{
	if (t->rows == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		char **cell = realloc(t->cell, cap * t->ncol * sizeof(*cell));
		const char **color;

		if (!cell)
			return -1;
		t->cell = cell;
		color = realloc(t->color, cap * t->ncol * sizeof(*color));
		if (!color)
			return -1;
		t->color = color;
		t->cap = cap;
	}
	memset(&t->cell[t->rows * t->ncol], 0, t->ncol * sizeof(*t->cell));
	memset(&t->color[t->rows * t->ncol], 0, t->ncol * sizeof(*t->color));
	t->rows++;
	return 0;
}

static void tbl_set(struct tbl *t, int col, const char *color, const char *s)
{
	size_t i = (t->rows - 1) * t->ncol + col;

	t->cell[i] = strdup(s ? s : "-");
	t->color[i] = color;
}

static void tbl_print(struct tbl *t, FILE *f)
{
	size_t w[TBL_COLS] = { 0 }, r;
	int c;

	for (c = 0; c < t->ncol; c++)
		w[c] = strlen(t->head[c]);
	for (r = 0; r < t->rows; r++)
		for (c = 0; c < t->ncol; c++) {
			const char *s = t->cell[r * t->ncol + c];
			size_t n = s ? strlen(s) : 1;

			if (n > w[c])
				w[c] = n;
		}
	for (c = 0; c < t->ncol; c++)
		fprintf(f, "%s%-*s%s", sm_opts.color ? C_BOLD : "",
			c + 1 < t->ncol ? (int)w[c] + 2 : 0, t->head[c],
			sm_opts.color ? C_RESET : "");
	fputc('\n', f);
	for (r = 0; r < t->rows; r++) {
		for (c = 0; c < t->ncol; c++) {
			const char *s = t->cell[r * t->ncol + c];
			const char *col = sm_opts.color ? t->color[r * t->ncol + c] : NULL;
			int pad = c + 1 < t->ncol ? (int)(w[c] + 2 - strlen(s ? s : "-")) : 0;

			fprintf(f, "%s%s%s%*s", col ? col : "", s ? s : "-",
				col ? C_RESET : "", pad, "");
		}
		fputc('\n', f);
	}
	for (r = 0; r < t->rows * t->ncol; r++)
		free(t->cell[r]);
	free(t->cell);
	free(t->color);
}

/* ---- colours of states ---- */

static const char *port_color(uint8_t s)
{
	if (s == SHIFT_FT_PORT_ACTIVE)
		return C_GREEN;
	return s == SHIFT_FT_PORT_DOWN || s == SHIFT_FT_PORT_NOP ? C_RED : C_YELLOW;
}

static const char *pair_color(uint8_t s)
{
	switch (s) {
	case SHIFT_FT_PAIR_BOTH_UP:	return C_GREEN;
	case SHIFT_FT_PAIR_PRIMARY_DOWN:
	case SHIFT_FT_PAIR_BOTH_DOWN:	return C_RED;
	default:			return C_YELLOW;
	}
}

static const char *path_color(uint8_t s)
{
	if (s == SHIFT_FT_PATH_UP)
		return C_GREEN;
	return s == SHIFT_FT_PATH_DOWN ? C_RED : C_YELLOW;
}

/* ---- formatting ---- */

static const char *speed_str(uint32_t mbps, char *buf, size_t len)
{
	if (!mbps)
		snprintf(buf, len, "-");
	else if (mbps % 1000 == 0)
		snprintf(buf, len, "%" PRIu32 "Gb/s", mbps / 1000);
	else if (mbps > 1000)
		snprintf(buf, len, "%.1fGb/s", mbps / 1000.0);
	else
		snprintf(buf, len, "%" PRIu32 "Mb/s", mbps);
	return buf;
}

static const struct sm_row *port_by_index(const struct sm_rows *ports, uint32_t idx)
{
	size_t i;

	for (i = 0; i < ports->n; i++)
		if (ports->v[i].port_index == idx)
			return &ports->v[i];
	return NULL;
}

static void show_ports(const struct sm_rows *ports, const struct sm_filter *f)
{
	static const char *const head[] = {
		"DEV", "PORT", "NETDEV", "STATE", "PHYS", "SPEED", "MTU",
		"DOWNS", "CHANGED", "LAST_EVENT", "BACKUP", "PAIR",
	};
	char buf[96], nbuf[SM_NAME_BUF];
	struct tbl t;
	size_t i;

	tbl_init(&t, SM_ARRAY_SIZE(head), head);
	for (i = 0; i < ports->n; i++) {
		const struct sm_row *r = &ports->v[i], *b;

		if (!sm_filter_match(f, r) || tbl_row(&t))
			continue;
		tbl_set(&t, 0, NULL, r->dev_name);
		snprintf(buf, sizeof(buf), "%" PRIu32, r->port_num);
		tbl_set(&t, 1, NULL, buf);
		tbl_set(&t, 2, NULL, SM_HAS(r, SHIFT_FT_A_NETDEV) ? r->netdev : "-");
		tbl_set(&t, 3, port_color(r->state),
			sm_name(&sm_port_state_names, r->state, nbuf));
		tbl_set(&t, 4, NULL, sm_name(&sm_phys_state_names, r->phys_state, nbuf));
		tbl_set(&t, 5, NULL, speed_str(r->speed, buf, sizeof(buf)));
		snprintf(buf, sizeof(buf), "%" PRIu32, r->mtu);
		tbl_set(&t, 6, NULL, buf);
		snprintf(buf, sizeof(buf), "%" PRIu64, r->down_count);
		tbl_set(&t, 7, NULL, buf);
		sm_age(r->last_change, buf, sizeof(buf));
		tbl_set(&t, 8, NULL, buf);
		tbl_set(&t, 9, NULL, sm_name(&sm_event_names, r->last_event, nbuf));
		b = SM_HAS(r, SHIFT_FT_A_BACKUP_INDEX) ?
		    port_by_index(ports, r->backup_index) : NULL;
		if (b)
			snprintf(buf, sizeof(buf), "%s/%" PRIu32 "%s", b->dev_name,
				 b->port_num, r->pair_flags & SHIFT_FT_PAIR_F_CONFIGURED ?
				 "*" : "");
		else if (SM_HAS(r, SHIFT_FT_A_BACKUP_INDEX))
			snprintf(buf, sizeof(buf), "#%" PRIu32, r->backup_index);
		else
			snprintf(buf, sizeof(buf), "-");
		tbl_set(&t, 10, NULL, buf);
		tbl_set(&t, 11, pair_color(r->pair_state),
			sm_name(&sm_pair_state_names, r->pair_state, nbuf));
	}
	tbl_print(&t, stdout);
}

static void show_pairs(const struct sm_rows *pairs, const struct sm_filter *f)
{
	static const char *const head[] = {
		"DEV", "PORT", "STATE", "BACKUP", "BACKUP_STATE", "PAIR", "CHOSEN",
	};
	char buf[96], nbuf[SM_NAME_BUF];
	struct tbl t;
	size_t i;

	tbl_init(&t, SM_ARRAY_SIZE(head), head);
	for (i = 0; i < pairs->n; i++) {
		const struct sm_row *r = &pairs->v[i];
		bool has_b = SM_HAS(r, SHIFT_FT_A_BACKUP_DEV_NAME);

		if (!sm_filter_match(f, r) || tbl_row(&t))
			continue;
		tbl_set(&t, 0, NULL, r->dev_name);
		snprintf(buf, sizeof(buf), "%" PRIu32, r->port_num);
		tbl_set(&t, 1, NULL, buf);
		tbl_set(&t, 2, port_color(r->state),
			sm_name(&sm_port_state_names, r->state, nbuf));
		if (has_b)
			snprintf(buf, sizeof(buf), "%s/%" PRIu32, r->backup_dev_name,
				 r->backup_port_num);
		tbl_set(&t, 3, NULL, has_b ? buf : "-");
		tbl_set(&t, 4, has_b ? port_color(r->backup_state) : NULL,
			has_b ? sm_name(&sm_port_state_names, r->backup_state, nbuf) : "-");
		tbl_set(&t, 5, pair_color(r->pair_state),
			sm_name(&sm_pair_state_names, r->pair_state, nbuf));
		tbl_set(&t, 6, NULL, r->pair_flags & SHIFT_FT_PAIR_F_CONFIGURED ?
			"configured" : "automatic");
	}
	tbl_print(&t, stdout);
}

static void show_paths(const struct sm_rows *paths, const struct sm_filter *f)
{
	static const char *const head[] = {
		"DEV", "PORT", "REMOTE_GID", "STATE", "REPORTED", "SOURCE", "PID",
		"REPORT_AGE", "CHANGED", "DOWNS",
	};
	char buf[96], nbuf[SM_NAME_BUF];
	struct tbl t;
	size_t i;

	tbl_init(&t, SM_ARRAY_SIZE(head), head);
	for (i = 0; i < paths->n; i++) {
		const struct sm_row *r = &paths->v[i];

		if (!sm_filter_match(f, r) || tbl_row(&t))
			continue;
		tbl_set(&t, 0, NULL, r->dev_name);
		snprintf(buf, sizeof(buf), "%" PRIu32, r->port_num);
		tbl_set(&t, 1, NULL, buf);
		sm_gid_short(r->remote_gid, buf, sizeof(buf));
		tbl_set(&t, 2, NULL, buf);
		tbl_set(&t, 3, path_color(r->path_state),
			sm_name(&sm_path_state_names, r->path_state, nbuf));
		tbl_set(&t, 4, NULL, sm_name(&sm_path_state_names, r->report_state, nbuf));
		tbl_set(&t, 5, NULL, sm_name(&sm_source_names, r->report_source, nbuf));
		snprintf(buf, sizeof(buf), "%" PRIu32, r->report_pid);
		tbl_set(&t, 6, NULL, buf);
		sm_age(r->report_time, buf, sizeof(buf));
		tbl_set(&t, 7, NULL, buf);
		sm_age(r->last_change, buf, sizeof(buf));
		tbl_set(&t, 8, NULL, buf);
		snprintf(buf, sizeof(buf), "%" PRIu64, r->down_count);
		tbl_set(&t, 9, NULL, buf);
	}
	tbl_print(&t, stdout);
}

static void json_rows(struct sm_json *j, enum sm_kind kind, const char *key,
		      const struct sm_rows *rows, const struct sm_filter *f)
{
	size_t i;

	sm_json_arr_open(j, key);
	for (i = 0; i < rows->n; i++) {
		if (!sm_filter_match(f, &rows->v[i]))
			continue;
		sm_json_obj_open(j, NULL);
		sm_row_json(j, kind, &rows->v[i]);
		sm_json_obj_close(j);
	}
	sm_json_arr_close(j);
}

/* "ports", "port", ... -> the kinds to show (bit per kind); 0: not a kind */
int sm_parse_kind(const char *s)
{
	if (!strcmp(s, "ports") || !strcmp(s, "port"))
		return 1 << SM_PORT;
	if (!strcmp(s, "pairs") || !strcmp(s, "pair"))
		return 1 << SM_PAIR;
	if (!strcmp(s, "paths") || !strcmp(s, "path"))
		return 1 << SM_PATH;
	return 0;
}

static const int dump_cmd[] = {
	[SM_PORT] = SHIFT_FT_CMD_PORT_GET,
	[SM_PAIR] = SHIFT_FT_CMD_PAIR_GET,
	[SM_PATH] = SHIFT_FT_CMD_PATH_GET,
};

static const char *const kind_plural[] = {
	[SM_PORT] = "ports", [SM_PAIR] = "pairs", [SM_PATH] = "paths",
};

int sm_fetch(int kinds, struct sm_rows rows[3], const char *verb)
{
	struct sm_nl nl;
	int k;

	if (sm_nl_open(&nl, verb, kinds == (1 << SM_PORT) ? "ports" :
		       kinds == (1 << SM_PAIR) ? "pairs" :
		       kinds == (1 << SM_PATH) ? "paths" : "table"))
		return -1;
	for (k = SM_PORT; k <= SM_PATH; k++) {
		if (!(kinds & (1 << k)))
			continue;
		if (sm_nl_dump(&nl, dump_cmd[k], &rows[k], verb, kind_plural[k])) {
			sm_nl_close(&nl);
			return -1;
		}
	}
	sm_nl_close(&nl);
	return 0;
}

int cmd_show(int argc, char **argv)
{
	struct sm_rows rows[3] = { { 0 } };
	struct sm_filter f;
	int kinds = 0, k;

	if (sm_opts.cluster)
		return sm_show_cluster(argc, argv);
	if (argc && (kinds = sm_parse_kind(argv[0]))) {
		argc--;
		argv++;
	}
	if (sm_parse_filter(argc, argv, &f))
		return sm_usage("show");
	if (!kinds)
		kinds = sm_opts.json ? 7 : (1 << SM_PORT | 1 << SM_PATH);
	if (sm_fetch(kinds, rows, "show"))
		return SM_EXIT_FAIL;

	if (sm_opts.json) {
		struct sm_json *j = sm_json_new(stdout, sm_opts.pretty);

		if (!j)
			return SM_EXIT_FAIL;
		sm_json_obj_open(j, NULL);
		sm_json_u64(j, "version", SM_JSON_VERSION);
		for (k = SM_PORT; k <= SM_PATH; k++)
			if (kinds & (1 << k))
				json_rows(j, k, kind_plural[k], &rows[k], &f);
		sm_json_obj_close(j);
		sm_json_free(j);
	} else {
		bool sep = false;

		if (kinds & (1 << SM_PORT)) {
			show_ports(&rows[SM_PORT], &f);
			sep = true;
		}
		if (kinds & (1 << SM_PAIR)) {
			if (sep)
				putchar('\n');
			show_pairs(&rows[SM_PAIR], &f);
			sep = true;
		}
		/* the overview shows paths only when there are some */
		if ((kinds & (1 << SM_PATH)) &&
		    (kinds == (1 << SM_PATH) || rows[SM_PATH].n)) {
			if (sep)
				putchar('\n');
			show_paths(&rows[SM_PATH], &f);
		}
	}
	for (k = SM_PORT; k <= SM_PATH; k++)
		sm_rows_free(&rows[k]);
	if (fflush(stdout) || ferror(stdout)) {
		perror("Unable to write output");
		return SM_EXIT_FAIL;
	}
	return SM_EXIT_OK;
}
