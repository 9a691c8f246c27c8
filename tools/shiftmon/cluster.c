// SPDX-License-Identifier: GPL-2.0
/*
 * cluster.c: `shiftmon show --cluster [-j] [--store URL]`: every host's
 * ports as the cluster store has them (what the agents published), not
 * this host's table.
 *
 * Table: HOST PORT STATE LINK NETDEV DOWNS CHANGED GIDS, sorted by host and
 * port.  JSON: {"version": 1, "store": URL, "hosts": [{"host": NAME,
 * "ports": [{"port": "rxe0/1", "dev": "rxe0", "port_num": 1, "state":
 * "ACTIVE", "link_layer": "ETHERNET", "netdev": "eth0" or null, "gids":
 * [...], "down_count": N, "last_change_ms": UNIX_MS, "instance": HEX,
 * "seq": N}, ...]}, ...]}.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <hiredis/hiredis.h>

#include "shiftmon.h"
#include "store.h"

#define CL_JSON_VERSION 1

#define C_RESET  "\033[0m"
#define C_RED    "\033[31m"
#define C_GREEN  "\033[32m"
#define C_YELLOW "\033[33m"

struct cl_port {
	const char *host;
	struct sm_rec rec;
};

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static int cmp_port(const void *x, const void *y)
{
	const struct cl_port *p = x, *q = y;
	int c = strcmp(p->host, q->host);

	return c ? c : strcmp(p->rec.port, q->rec.port);
}

static const char *state_color(const struct sm_rec *r)
{
	if (!sm_opts.color)
		return "";
	if (sm_rec_up(r))
		return C_GREEN;
	return r->state == SHIFT_FT_PORT_DOWN || r->state == SHIFT_FT_PORT_NOP ?
		C_RED : C_YELLOW;
}

static void age_ms(uint64_t then_ms, char *buf, size_t len)
{
	struct timespec ts;
	uint64_t now, s;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (!then_ms) {
		snprintf(buf, len, "-");
		return;
	}
	if (then_ms > now)	/* another host's clock ahead of ours */
		then_ms = now;
	s = (now - then_ms) / 1000;
	if (s < 60)
		snprintf(buf, len, "%.1fs ago", (now - then_ms) / 1000.0);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s ago", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m ago", s / 3600,
			 s / 60 % 60);
	else
		snprintf(buf, len, "%" PRIu64 "d%02" PRIu64 "h ago", s / 86400,
			 s / 3600 % 24);
}

static void gids_text(const struct sm_rec *r, char *buf, size_t len)
{
	size_t off = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < r->ngid; i++) {
		char a[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, r->gid[i], a, sizeof(a));
		off += snprintf(buf + off, off < len ? len - off : 0, "%s%s",
				i ? "," : "", a);
	}
	if (!r->ngid)
		snprintf(buf, len, "-");
}

static void print_table(const struct cl_port *p, size_t n)
{
	static const char *const head[] = { "HOST", "PORT", "STATE", "LINK",
					    "NETDEV", "DOWNS", "CHANGED", "GIDS" };
	enum { NCOL = 8 };
	char (*cell)[NCOL][SM_REC_LEN];
	size_t w[NCOL], i;
	int c;

	cell = calloc(n ? n : 1, sizeof(*cell));
	if (!cell) {
		fprintf(stderr, "Unable to show cluster: out of memory\n");
		return;
	}
	for (c = 0; c < NCOL; c++)
		w[c] = strlen(head[c]);
	for (i = 0; i < n; i++) {
		const struct sm_rec *r = &p[i].rec;

		snprintf(cell[i][0], SM_REC_LEN, "%s", p[i].host);
		snprintf(cell[i][1], SM_REC_LEN, "%s", r->port);
		snprintf(cell[i][2], SM_REC_LEN, "%s", sm_rec_state_name(r->state));
		snprintf(cell[i][3], SM_REC_LEN, "%s", sm_rec_link_name(r->link_layer));
		snprintf(cell[i][4], SM_REC_LEN, "%s", r->netdev[0] ? r->netdev : "-");
		snprintf(cell[i][5], SM_REC_LEN, "%" PRIu64, r->down_count);
		age_ms(r->last_change_ms, cell[i][6], SM_REC_LEN);
		gids_text(r, cell[i][7], SM_REC_LEN);
		for (c = 0; c < NCOL; c++)
			if (strlen(cell[i][c]) > w[c])
				w[c] = strlen(cell[i][c]);
	}
	for (c = 0; c < NCOL; c++)
		printf("%-*s", c + 1 < NCOL ? (int)w[c] + 2 : 0, head[c]);
	putchar('\n');
	for (i = 0; i < n; i++) {
		for (c = 0; c < NCOL; c++) {
			const char *col = c == 2 ? state_color(&p[i].rec) : "";

			printf("%s%s%s%*s", col, cell[i][c], *col ? C_RESET : "",
			       c + 1 < NCOL ? (int)(w[c] + 2 - strlen(cell[i][c])) : 0, "");
		}
		putchar('\n');
	}
	free(cell);
}

static void print_json(const struct sm_store *st, const struct cl_port *p,
		       size_t n)
{
	struct sm_json *j = sm_json_new(stdout, sm_opts.pretty);
	size_t i;

	if (!j)
		return;
	sm_json_obj_open(j, NULL);
	sm_json_u64(j, "version", CL_JSON_VERSION);
	sm_json_str(j, "store", st->url);
	sm_json_arr_open(j, "hosts");
	for (i = 0; i < n; i++) {
		const struct sm_rec *r = &p[i].rec;
		char buf[INET6_ADDRSTRLEN + 20], dev[SM_REC_PORT_LEN], *slash;
		unsigned int g;

		if (!i || strcmp(p[i].host, p[i - 1].host)) {
			if (i) {
				sm_json_arr_close(j);
				sm_json_obj_close(j);
			}
			sm_json_obj_open(j, NULL);
			sm_json_str(j, "host", p[i].host);
			sm_json_arr_open(j, "ports");
		}
		sm_json_obj_open(j, NULL);
		sm_json_str(j, "port", r->port);
		snprintf(dev, sizeof(dev), "%s", r->port);
		slash = strrchr(dev, '/');
		if (slash)
			*slash = '\0';
		sm_json_str(j, "dev", dev);
		sm_json_u64(j, "port_num", slash ? strtoul(slash + 1, NULL, 10) : 0);
		sm_json_str(j, "state", sm_rec_state_name(r->state));
		sm_json_str(j, "link_layer", sm_rec_link_name(r->link_layer));
		if (r->netdev[0])
			sm_json_str(j, "netdev", r->netdev);
		else
			sm_json_null(j, "netdev");
		sm_json_arr_open(j, "gids");
		for (g = 0; g < r->ngid; g++)
			sm_json_str(j, NULL, inet_ntop(AF_INET6, r->gid[g], buf,
						       sizeof(buf)));
		sm_json_arr_close(j);
		sm_json_u64(j, "down_count", r->down_count);
		sm_json_u64(j, "last_change_ms", r->last_change_ms);
		snprintf(buf, sizeof(buf), "%016" PRIx64, r->instance);
		sm_json_str(j, "instance", buf);
		sm_json_u64(j, "seq", r->seq);
		sm_json_obj_close(j);
	}
	if (n) {
		sm_json_arr_close(j);
		sm_json_obj_close(j);
	}
	sm_json_arr_close(j);
	sm_json_obj_close(j);
	sm_json_free(j);
}

int sm_show_cluster(int argc, char **argv)
{
	struct cl_port *ports = NULL;
	redisReply *hosts, *h;
	struct sm_store st;
	size_t n = 0, i, k;
	const char **names;
	int rc = SM_EXIT_FAIL;

	(void)argv;
	if (argc)
		return sm_usage("show");
	if (sm_store_init(&st, sm_opts.store)) {
		fprintf(stderr, "%s: invalid store URL %s\n", sm_prog, st.err);
		return sm_usage("show");
	}
	if (sm_store_auth_file(&st, sm_opts.store_auth)) {
		fprintf(stderr, "Unable to show cluster: store %s: %s\n", st.url, st.err);
		return SM_EXIT_FAIL;
	}
	if (sm_store_connect(&st, false)) {
		fprintf(stderr, "Unable to show cluster: store %s: %s\n", st.url, st.err);
		return SM_EXIT_FAIL;
	}
	hosts = sm_store_cmd(&st, "SMEMBERS %s", SM_STORE_HOSTS);
	if (!hosts || hosts->type != REDIS_REPLY_ARRAY) {
		fprintf(stderr, "Unable to show cluster: store %s: %s\n", st.url,
			hosts && hosts->type == REDIS_REPLY_ERROR ? hosts->str : st.err);
		goto out;
	}
	names = calloc(hosts->elements + 1, sizeof(*names));
	if (!names)
		goto oom;
	for (i = 0; i < hosts->elements; i++)
		names[i] = hosts->element[i]->type == REDIS_REPLY_STRING ?
			   hosts->element[i]->str : "";
	qsort(names, hosts->elements, sizeof(*names), cmp_str);
	for (i = 0; i < hosts->elements; i++) {
		if (!*names[i] || strlen(names[i]) >= SM_HOST_LEN)
			continue;
		h = sm_store_cmd(&st, "HGETALL " SM_STORE_HOST_FMT, names[i]);
		if (!h) {
			fprintf(stderr, "Unable to show cluster: store %s: %s\n",
				st.url, st.err);
			free(names);
			goto out;
		}
		for (k = 0; h->type == REDIS_REPLY_ARRAY && k + 1 < h->elements; k += 2) {
			struct cl_port *np;

			np = realloc(ports, (n + 1) * sizeof(*ports));
			if (!np) {
				freeReplyObject(h);
				free(names);
				goto oom;
			}
			ports = np;
			ports[n].host = names[i];
			if (h->element[k]->type != REDIS_REPLY_STRING ||
			    h->element[k + 1]->type != REDIS_REPLY_STRING ||
			    sm_rec_parse(h->element[k + 1]->str, h->element[k]->str,
					 &ports[n].rec)) {
				fprintf(stderr, "%s: ignoring a malformed record of %s\n",
					sm_prog, names[i]);
				continue;
			}
			n++;
		}
		freeReplyObject(h);
	}
	qsort(ports, n, sizeof(*ports), cmp_port);
	if (sm_opts.json)
		print_json(&st, ports, n);
	else
		print_table(ports, n);
	free(names);
	rc = fflush(stdout) || ferror(stdout) ? SM_EXIT_FAIL : SM_EXIT_OK;
	if (rc)
		perror("Unable to write output");
	goto out;
oom:
	fprintf(stderr, "Unable to show cluster: out of memory\n");
out:
	if (hosts)
		freeReplyObject(hosts);
	free(ports);
	sm_store_close(&st);
	return rc;
}
