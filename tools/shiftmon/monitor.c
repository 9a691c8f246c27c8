// SPDX-License-Identifier: GPL-2.0
/*
 * monitor.c: `shiftmon monitor [-t] [-r] [-j]`: one line per message of the
 * "events" group, flushed at once so that it works in a pipe.
 *
 * Commands, events and attributes this build does not know are printed
 * ("unknown cmd 42", "event 99", "attr 40 len 4"), never fatal.  When the
 * module is unloaded the family goes away: a line says so, and the monitor
 * waits for the family to be registered again, subscribes, and says so.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "shiftmon.h"

struct mon {
	uint64_t last_ns;		/* CLOCK_MONOTONIC of the previous line */
	struct sm_json *j;
	bool failed;			/* stdout went away */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* RFC 3339 local time with microseconds: 2025-05-01T10:00:00.123456+02:00 */
static void wall_time(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char off[8];
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	strftime(off, sizeof(off), "%z", &tm);
	snprintf(buf + n, len - n, ".%06ld%.3s:%.2s", ts.tv_nsec / 1000, off,
		 off + 3);
}

/* The timestamps asked for; text prefix or JSON members. */
static void stamp(struct mon *m, char *prefix, size_t len)
{
	uint64_t now = sm_mono_ns();
	double rel = (double)(now - m->last_ns) / 1e9;
	char wall[64];
	size_t o = 0;

	m->last_ns = now;
	prefix[0] = '\0';
	if (sm_opts.timestamp) {
		wall_time(wall, sizeof(wall));
		if (m->j)
			sm_json_str(m->j, "timestamp", wall);
		else
			o += snprintf(prefix + o, len - o, "[%s] ", wall);
	}
	if (sm_opts.relative) {
		if (m->j)
			sm_json_double(m->j, "relative", rel, 6);
		else
			snprintf(prefix + o, len - o, "[+%.6f] ", rel);
	}
}

static void end_line(struct mon *m)
{
	if (m->j) {
		sm_json_obj_close(m->j);
		sm_json_free(m->j);	/* newline, flush */
		m->j = NULL;
	} else {
		putchar('\n');
	}
	if (fflush(stdout) || ferror(stdout))
		m->failed = true;
}

static void begin_json(struct mon *m, const char *type)
{
	m->j = sm_json_new(stdout, false);
	if (!m->j) {
		m->failed = true;
		return;
	}
	sm_json_obj_open(m->j, NULL);
	sm_json_str(m->j, "type", type);
}

static void unknown_attrs(struct mon *m, const struct sm_row *r)
{
	unsigned int i, n = r->n_unknown;

	if (n > SM_ARRAY_SIZE(r->unknown))
		n = SM_ARRAY_SIZE(r->unknown);
	if (m->j) {
		sm_json_arr_open(m->j, "unknown_attrs");
		for (i = 0; i < n; i++) {
			sm_json_obj_open(m->j, NULL);
			sm_json_u64(m->j, "type", r->unknown[i].type);
			sm_json_u64(m->j, "len", r->unknown[i].len);
			sm_json_obj_close(m->j);
		}
		sm_json_arr_close(m->j);
		return;
	}
	for (i = 0; i < n; i++)
		printf(" attr %u len %u", r->unknown[i].type, r->unknown[i].len);
	if (r->n_unknown > n)
		printf(" (%u more attrs)", r->n_unknown - n);
}

static void text_event(const struct sm_row *r)
{
	char nbuf[SM_NAME_BUF], nbuf2[SM_NAME_BUF], gid[64];
	bool del = r->cmd == SHIFT_FT_CMD_PORT_DEL || r->cmd == SHIFT_FT_CMD_PATH_DEL;

	switch (sm_kind_of_cmd(r->cmd)) {
	case SM_PORT:
		printf("port %s/%" PRIu32, r->dev_name, r->port_num);
		if (del)
			break;
		printf(" %s", sm_name(&sm_port_state_names, r->state, nbuf));
		printf(" phys %s", sm_name(&sm_phys_state_names, r->phys_state, nbuf));
		if (SM_HAS(r, SHIFT_FT_A_NETDEV))
			printf(" netdev %s", r->netdev);
		printf(" downs %" PRIu64 " pair %s", r->down_count,
		       sm_name(&sm_pair_state_names, r->pair_state, nbuf));
		break;
	case SM_PAIR:
		printf("pair %s/%" PRIu32 " %s primary %s", r->dev_name, r->port_num,
		       sm_name(&sm_pair_state_names, r->pair_state, nbuf),
		       sm_name(&sm_port_state_names, r->state, nbuf2));
		if (SM_HAS(r, SHIFT_FT_A_BACKUP_DEV_NAME))
			printf(" backup %s/%" PRIu32 " %s", r->backup_dev_name,
			       r->backup_port_num,
			       sm_name(&sm_port_state_names, r->backup_state, nbuf));
		else
			printf(" backup -");
		if (r->pair_flags & SHIFT_FT_PAIR_F_CONFIGURED)
			printf(" configured");
		break;
	case SM_PATH:
		sm_gid_short(r->remote_gid, gid, sizeof(gid));
		printf("path %s/%" PRIu32 " %s", r->dev_name, r->port_num, gid);
		if (del)
			break;
		printf(" %s report %s source %s pid %" PRIu32 " downs %" PRIu64,
		       sm_name(&sm_path_state_names, r->path_state, nbuf),
		       sm_name(&sm_path_state_names, r->report_state, nbuf2),
		       sm_name(&sm_source_names, r->report_source, nbuf),
		       r->report_pid, r->down_count);
		break;
	default:
		printf("unknown cmd %d", r->cmd);
		break;
	}
	if (del)
		printf(" deleted");
	if (SM_HAS(r, SHIFT_FT_A_EVENT))
		printf(" event %s", sm_name(&sm_event_names, r->event, nbuf));
}

static void json_event(struct mon *m, const struct sm_row *r)
{
	char nbuf[SM_NAME_BUF];
	int kind = sm_kind_of_cmd(r->cmd);

	sm_json_str(m->j, "cmd", sm_name(&sm_cmd_names, r->cmd, nbuf));
	if (SM_HAS(r, SHIFT_FT_A_EVENT))
		sm_json_str(m->j, "event", sm_name(&sm_event_names, r->event, nbuf));
	else
		sm_json_null(m->j, "event");
	if (kind < 0) {
		sm_json_null(m->j, "kind");
		return;
	}
	sm_json_str(m->j, "kind", sm_kind_names[kind]);
	sm_json_obj_open(m->j, sm_kind_names[kind]);
	sm_row_json(m->j, kind, r);
	sm_json_obj_close(m->j);
}

static void on_listen(enum sm_listen_what what, const struct sm_row *row,
		      void *arg)
{
	static const char *const types[] = {
		[SM_LISTEN_EVENT] = "event",
		[SM_LISTEN_FAMILY_GONE] = "family_removed",
		[SM_LISTEN_FAMILY_BACK] = "family_registered",
		[SM_LISTEN_OVERRUN] = "overrun",
		[SM_LISTEN_FOREIGN] = "foreign",
	};
	struct mon *m = arg;
	char prefix[128];

	if (sm_opts.json)
		begin_json(m, types[what]);
	if (m->failed)
		return;
	stamp(m, prefix, sizeof(prefix));
	if (!m->j)
		fputs(prefix, stdout);
	switch (what) {
	case SM_LISTEN_EVENT:
		if (m->j)
			json_event(m, row);
		else
			text_event(row);
		unknown_attrs(m, row);
		break;
	case SM_LISTEN_FAMILY_GONE:
		if (m->j)
			sm_json_str(m->j, "family", SHIFT_FT_GENL_NAME);
		else
			printf("family %s removed (module unloaded); waiting for it to return",
			       SHIFT_FT_GENL_NAME);
		break;
	case SM_LISTEN_FAMILY_BACK:
		if (m->j)
			sm_json_str(m->j, "family", SHIFT_FT_GENL_NAME);
		else
			printf("family %s registered; subscribed to %s again",
			       SHIFT_FT_GENL_NAME, SHIFT_FT_MCGRP_EVENTS);
		break;
	case SM_LISTEN_OVERRUN:
		if (!m->j)
			printf("overrun: events were lost (socket buffer full); run show to resynchronise");
		break;
	case SM_LISTEN_FOREIGN:
		if (m->j)
			sm_json_u64(m->j, "nlmsg_type", row->cmd);
		else
			printf("foreign message type %d", row->cmd);
		break;
	}
	end_line(m);
}

int cmd_monitor(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct sm_listener l;
	struct mon m = { 0 };
	int rc = SM_EXIT_OK;

	(void)argv;
	if (argc)
		return sm_usage("monitor");
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	m.last_ns = sm_mono_ns();
	if (sm_listen_open(&l, on_listen, &m))
		return SM_EXIT_FAIL;
	if (!l.present) {
		if (sm_opts.json) {
			begin_json(&m, "family_absent");
			sm_json_str(m.j, "family", SHIFT_FT_GENL_NAME);
		} else {
			printf("family %s not registered (module not loaded); waiting for it",
			       SHIFT_FT_GENL_NAME);
		}
		end_line(&m);
	}
	while (!stop && !m.failed) {
		struct pollfd p = { .fd = sm_listen_fd(&l), .events = POLLIN };
		int r = poll(&p, 1, -1);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			perror("Unable to wait for events");
			rc = SM_EXIT_FAIL;
			break;
		}
		if (sm_listen_process(&l)) {
			rc = SM_EXIT_FAIL;
			break;
		}
	}
	sm_listen_close(&l);
	return m.failed ? SM_EXIT_FAIL : rc;
}
