// SPDX-License-Identifier: GPL-2.0
/*
 * metrics.c: `shiftmon metrics`: the table in the Prometheus text
 * exposition format (version 0.0.4), for node_exporter's textfile collector
 * or any scraper that runs a command:
 *
 *	shiftmon metrics > /var/lib/node_exporter/shift.prom.$$ &&
 *		mv /var/lib/node_exporter/shift.prom.$$ /var/lib/node_exporter/shift.prom
 *
 * The whole text is built first and written only when the table was read,
 * so a failure writes nothing.  Events are counted per port and cause, as
 * the module keeps them (SHIFT_FT_A_EVENT_COUNTS); the cause of the latest
 * is a label of shift_port_info.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shiftmon.h"
#include "store.h"

struct metric {
	const char *name;
	const char *type;
	const char *help;
};

static const struct metric M_PORT_UP = { "shift_port_up", "gauge",
	"1 if the RDMA port is ACTIVE, else 0." };
static const struct metric M_PORT_STATE = { "shift_port_state", "gauge",
	"IB port state: 1 for the current state, 0 for the others." };
static const struct metric M_PORT_DOWN = { "shift_port_down_total", "counter",
	"Transitions of the port from ACTIVE to any other state." };
static const struct metric M_PORT_EVENTS = { "shift_port_events_total", "counter",
	"Events seen on the port, by cause (the latest is shift_port_info's last_event)." };
static const struct metric M_PORT_CHANGE = { "shift_port_last_change_seconds", "gauge",
	"Unix time of the port's last state change." };
static const struct metric M_PORT_INFO = { "shift_port_info", "gauge",
	"Constant 1; labels describe the port, its backup and its last event." };
static const struct metric M_PAIR_STATE = { "shift_pair_state", "gauge",
	"Pair state of a port and its backup: 1 for the current state, 0 for the others." };
static const struct metric M_PAIR_CONF = { "shift_pair_configured", "gauge",
	"1 if the backup was chosen by an administrator (pair set), 0 if automatic." };
static const struct metric M_PATH_STATE = { "shift_path_state", "gauge",
	"Effective path state: 1 for the current state, 0 for the others." };
static const struct metric M_PATH_DOWN = { "shift_path_down_total", "counter",
	"Transitions of the path's effective state to DOWN." };
static const struct metric M_PATH_CHANGE = { "shift_path_last_change_seconds", "gauge",
	"Unix time of the path's last effective state change." };
static const struct metric M_AG_SIGNING = { "shift_agent_signing", "gauge",
	"1 if this host's agent signs its records and applies only signed ones (--store-key-file)." };
static const struct metric M_AG_DROPPED = { "shift_agent_records_dropped_total", "counter",
	"Records of other hosts the agent dropped since it started, by reason." };
static const struct metric M_GEN = { "shift_table_generation", "gauge",
	"Generation of the shift_ft table; increments on every change." };

static void head(FILE *f, const struct metric *m)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, m->type);
}

/* A label value, escaped as the exposition format wants. */
static void lv(FILE *f, const char *name, const char *v, bool first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	for (; *v; v++) {
		if (*v == '\\')
			fputs("\\\\", f);
		else if (*v == '"')
			fputs("\\\"", f);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

static void port_labels(FILE *f, const struct sm_row *r)
{
	char num[16];

	snprintf(num, sizeof(num), "%" PRIu32, r->port_num);
	lv(f, "dev", r->dev_name, true);
	lv(f, "port", num, false);
	lv(f, "netdev", SM_HAS(r, SHIFT_FT_A_NETDEV) ? r->netdev : "", false);
}

static void path_labels(FILE *f, const struct sm_row *r)
{
	char num[16], gid[64];

	snprintf(num, sizeof(num), "%" PRIu32, r->port_num);
	sm_gid_short(r->remote_gid, gid, sizeof(gid));
	lv(f, "dev", r->dev_name, true);
	lv(f, "port", num, false);
	lv(f, "remote_gid", gid, false);
}

/* CLOCK_MONOTONIC ns to Unix seconds */
static double unix_time(uint64_t mono_ns)
{
	struct timespec rt;
	double now;

	clock_gettime(CLOCK_REALTIME, &rt);
	now = rt.tv_sec + rt.tv_nsec / 1e9;
	return now - ((double)sm_mono_ns() - (double)mono_ns) / 1e9;
}

static const struct sm_row *by_index(const struct sm_rows *ports, uint32_t idx)
{
	size_t i;

	for (i = 0; i < ports->n; i++)
		if (ports->v[i].port_index == idx)
			return &ports->v[i];
	return NULL;
}

/*
 * One series per cause a port records (its own IB events and the device's
 * add and rename), every one present from the start so that rate() sees
 * the first event; any other cause only once it occurred.  A module too old
 * to count by cause gives one series with event="any": its total.
 */
static void port_events(FILE *f, const struct sm_row *r)
{
	char nbuf[SM_NAME_BUF];
	unsigned int ev;

	if (!SM_HAS(r, SHIFT_FT_A_EVENT_COUNTS)) {
		fprintf(f, "%s{", M_PORT_EVENTS.name);
		port_labels(f, r);
		lv(f, "event", "any", false);
		fprintf(f, "} %" PRIu64 "\n", r->event_count);
		return;
	}
	for (ev = 1; ev < SM_ARRAY_SIZE(r->ev_counts); ev++) {
		bool port_cause = ev <= SHIFT_FT_EV_DEVICE_RENAME &&
				  ev != SHIFT_FT_EV_DEVICE_REMOVE;

		if (!port_cause && !r->ev_counts[ev])
			continue;
		fprintf(f, "%s{", M_PORT_EVENTS.name);
		port_labels(f, r);
		lv(f, "event", sm_name(&sm_event_names, ev, nbuf), false);
		fprintf(f, "} %" PRIu64 "\n", r->ev_counts[ev]);
	}
}

static void ports(FILE *f, const struct sm_rows *p)
{
	char nbuf[SM_NAME_BUF], buf[64];
	size_t i;
	unsigned int s;

	head(f, &M_PORT_UP);
	for (i = 0; i < p->n; i++) {
		fputs(M_PORT_UP.name, f);
		fputc('{', f);
		port_labels(f, &p->v[i]);
		fprintf(f, "} %d\n", p->v[i].state == SHIFT_FT_PORT_ACTIVE);
	}
	head(f, &M_PORT_STATE);
	for (i = 0; i < p->n; i++)
		for (s = 0; s < sm_port_state_names.n; s++) {
			fprintf(f, "%s{", M_PORT_STATE.name);
			port_labels(f, &p->v[i]);
			lv(f, "state", sm_port_state_names.names[s], false);
			fprintf(f, "} %d\n", p->v[i].state == s);
		}
	head(f, &M_PORT_DOWN);
	for (i = 0; i < p->n; i++) {
		fprintf(f, "%s{", M_PORT_DOWN.name);
		port_labels(f, &p->v[i]);
		fprintf(f, "} %" PRIu64 "\n", p->v[i].down_count);
	}
	head(f, &M_PORT_EVENTS);
	for (i = 0; i < p->n; i++)
		port_events(f, &p->v[i]);
	head(f, &M_PORT_CHANGE);
	for (i = 0; i < p->n; i++) {
		fprintf(f, "%s{", M_PORT_CHANGE.name);
		port_labels(f, &p->v[i]);
		fprintf(f, "} %.3f\n", unix_time(p->v[i].last_change));
	}
	head(f, &M_PORT_INFO);
	for (i = 0; i < p->n; i++) {
		const struct sm_row *r = &p->v[i], *b = NULL;

		if (SM_HAS(r, SHIFT_FT_A_BACKUP_INDEX))
			b = by_index(p, r->backup_index);
		fprintf(f, "%s{", M_PORT_INFO.name);
		port_labels(f, r);
		snprintf(buf, sizeof(buf), "%" PRIu32, r->port_index);
		lv(f, "port_index", buf, false);
		snprintf(buf, sizeof(buf), "0x%016" PRIx64, r->node_guid);
		lv(f, "node_guid", buf, false);
		lv(f, "link_layer", sm_name(&sm_link_names, r->link_layer, nbuf), false);
		lv(f, "last_event", sm_name(&sm_event_names, r->last_event, nbuf), false);
		lv(f, "backup_dev", b ? b->dev_name : "", false);
		snprintf(buf, sizeof(buf), "%" PRIu32, b ? b->port_num : 0);
		lv(f, "backup_port", b ? buf : "", false);
		fputs("} 1\n", f);
	}
}

static void pairs(FILE *f, const struct sm_rows *p)
{
	char num[16];
	size_t i;
	unsigned int s;

	head(f, &M_PAIR_STATE);
	for (i = 0; i < p->n; i++) {
		const struct sm_row *r = &p->v[i];

		snprintf(num, sizeof(num), "%" PRIu32, r->backup_port_num);
		for (s = 0; s < sm_pair_state_names.n; s++) {
			fprintf(f, "%s{", M_PAIR_STATE.name);
			port_labels(f, r);
			lv(f, "backup_dev", r->backup_dev_name, false);
			lv(f, "backup_port", SM_HAS(r, SHIFT_FT_A_BACKUP_PORT_NUM) ?
			   num : "", false);
			lv(f, "state", sm_pair_state_names.names[s], false);
			fprintf(f, "} %d\n", r->pair_state == s);
		}
	}
	head(f, &M_PAIR_CONF);
	for (i = 0; i < p->n; i++) {
		fprintf(f, "%s{", M_PAIR_CONF.name);
		port_labels(f, &p->v[i]);
		fprintf(f, "} %d\n", !!(p->v[i].pair_flags & SHIFT_FT_PAIR_F_CONFIGURED));
	}
}

static void paths(FILE *f, const struct sm_rows *p)
{
	size_t i;
	unsigned int s;

	head(f, &M_PATH_STATE);
	for (i = 0; i < p->n; i++)
		for (s = 0; s < sm_path_state_names.n; s++) {
			fprintf(f, "%s{", M_PATH_STATE.name);
			path_labels(f, &p->v[i]);
			lv(f, "state", sm_path_state_names.names[s], false);
			fprintf(f, "} %d\n", p->v[i].path_state == s);
		}
	head(f, &M_PATH_DOWN);
	for (i = 0; i < p->n; i++) {
		fprintf(f, "%s{", M_PATH_DOWN.name);
		path_labels(f, &p->v[i]);
		fprintf(f, "} %" PRIu64 "\n", p->v[i].down_count);
	}
	head(f, &M_PATH_CHANGE);
	for (i = 0; i < p->n; i++) {
		fprintf(f, "%s{", M_PATH_CHANGE.name);
		path_labels(f, &p->v[i]);
		fprintf(f, "} %.3f\n", unix_time(p->v[i].last_change));
	}
}

/*
 * The agent's counters, from the file it keeps (store.h): nothing when no
 * agent runs, or ran, on this host.
 */
static void agent(FILE *f)
{
	const char *path = getenv(SM_AGENT_STATS_ENV);
	char line[256], name[128];
	bool dropped_head = false;
	uint64_t v;
	FILE *in;

	in = fopen(path && *path ? path : SM_AGENT_STATS, "re");
	if (!in)
		return;
	while (fgets(line, sizeof(line), in)) {
		if (sscanf(line, "%127s %" SCNu64, name, &v) != 2)
			continue;
		if (!strcmp(name, "signing")) {
			head(f, &M_AG_SIGNING);
			fprintf(f, "%s %" PRIu64 "\n", M_AG_SIGNING.name, v);
		} else if (!strncmp(name, "records_dropped_", 16)) {
			if (!dropped_head)
				head(f, &M_AG_DROPPED);
			dropped_head = true;
			fprintf(f, "%s{", M_AG_DROPPED.name);
			lv(f, "reason", name + 16, true);
			fprintf(f, "} %" PRIu64 "\n", v);
		}
	}
	fclose(in);
}

int cmd_metrics(int argc, char **argv)
{
	struct sm_rows rows[3] = { { 0 } };
	uint64_t gen = 0;
	char *text = NULL;
	size_t len = 0, k;
	FILE *f;
	int rc = SM_EXIT_OK;

	(void)argv;
	if (argc)
		return sm_usage("metrics");
	if (sm_fetch(1 << SM_PORT | 1 << SM_PAIR | 1 << SM_PATH, rows, "read"))
		return SM_EXIT_FAIL;
	f = open_memstream(&text, &len);
	if (!f) {
		perror("Unable to format metrics");
		rc = SM_EXIT_FAIL;
		goto out;
	}
	for (k = 0; k < 3; k++)
		if (rows[k].n && rows[k].v[0].generation > gen)
			gen = rows[k].v[0].generation;
	head(f, &M_GEN);
	fprintf(f, "%s %" PRIu64 "\n", M_GEN.name, gen);
	ports(f, &rows[SM_PORT]);
	pairs(f, &rows[SM_PAIR]);
	paths(f, &rows[SM_PATH]);
	agent(f);
	if (fclose(f)) {
		perror("Unable to format metrics");
		rc = SM_EXIT_FAIL;
		goto out;
	}
	if (fwrite(text, 1, len, stdout) != len || fflush(stdout)) {
		perror("Unable to write metrics");
		rc = SM_EXIT_FAIL;
	}
out:
	free(text);
	for (k = 0; k < 3; k++)
		sm_rows_free(&rows[k]);
	return rc;
}
