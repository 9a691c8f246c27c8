/* SPDX-License-Identifier: GPL-2.0 */
/*
 * shiftmon: the operator's view of the shift_ft NIC health table.
 *
 * One file per concern: main.c (options, the subcommand table), nl.c (the
 * generic netlink family: requests, dumps, events), names.c (enum names),
 * json.c (the JSON writer), and one file per subcommand.  A new subcommand
 * is one more file and one more line in main.c's table.
 */
#ifndef SHIFTMON_H
#define SHIFTMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <shift_ft.h>

#include "names.h"

/* exit codes, documented in shiftmon(8) */
#define SM_EXIT_OK	0
#define SM_EXIT_FAIL	1
#define SM_EXIT_USAGE	2

/* ---- global options (main.c) ---- */

struct sm_opts {
	bool json;		/* -j */
	bool pretty;		/* -p: indented JSON */
	bool color;		/* resolved from -c and the terminal */
	bool timestamp;		/* -t: monitor, wall-clock time */
	bool relative;		/* -r: monitor, seconds since the last event */
	bool header;		/* -H: dump, a header line */
	bool verbose;		/* -v: agent, one line per action */
	bool cluster;		/* --cluster: show every host from the store */
	const char *store;	/* --store URL: agent, show --cluster */
	const char *store_auth;	/* --store-auth-file FILE: the same */
	const char *store_key;	/* --store-key-file FILE: agent */
	const char *host_key;	/* --host-key-file FILE: agent, host-key */
	const char *hosts_file;	/* --hosts-file FILE: agent */
	const char *host;	/* --host NAME: agent */
	const char *host_rows;	/* --host-rows N: agent */
	const char *remote_ports; /* --remote-ports N: agent */
};

extern struct sm_opts sm_opts;
extern const char *sm_prog;

/* Print the usage of @cmd (NULL: all of it) on stderr; returns 2. */
int sm_usage(const char *cmd);

/* ---- nl.c: the shift_ft generic netlink family ---- */

/*
 * One row, as any message of the family carries it.  All attributes live
 * in one space, so a port, pair or path message parses into the same
 * struct; @have says which attributes were present (bit = attribute).
 */
struct sm_row {
	int cmd;			/* genl command of the message */
	uint64_t have;			/* 1ULL << SHIFT_FT_A_* */
	uint64_t generation;
	uint32_t port_index;
	char dev_name[SHIFT_FT_DEV_NAME_LEN];
	uint32_t dev_index;
	uint32_t port_num;
	uint64_t node_guid;
	uint8_t link_layer;
	char netdev[SHIFT_FT_NETDEV_NAME_LEN];
	uint32_t ifindex;
	int32_t numa_node;
	uint8_t state;
	uint8_t phys_state;
	uint32_t speed;
	uint8_t width;
	uint32_t mtu;
	uint64_t last_change;
	uint64_t down_count;
	uint32_t last_event;
	uint64_t event_count;
	uint64_t ev_counts[__SHIFT_FT_EV_MAX];	/* by enum shift_ft_event */
	uint32_t backup_index;
	char backup_dev_name[SHIFT_FT_DEV_NAME_LEN];
	uint32_t backup_port_num;
	uint8_t backup_state;
	uint8_t pair_state;
	uint32_t pair_flags;
	uint32_t path_index;
	uint8_t remote_gid[SHIFT_FT_GID_LEN];
	uint8_t path_state;
	uint8_t report_state;
	uint8_t report_source;
	uint32_t report_pid;
	uint64_t report_time;
	uint32_t flags;
	uint32_t event;
	/* attributes this tool does not know, or with a length it does not expect */
	unsigned int n_unknown;
	struct { uint16_t type, len; } unknown[8];
};

#define SM_HAS(r, a)	(!!((r)->have & (1ULL << (a))))

struct sm_rows {
	struct sm_row *v;
	size_t n, cap;
};

void sm_rows_free(struct sm_rows *rows);

struct nl_sock;
struct nl_msg;

struct sm_nl {
	struct nl_sock *sk;
	int family;			/* genl family id */
	int events_grp;			/* "events" multicast group, -1: none */
};

/*
 * Open a socket and resolve the family and its group by name.  On failure
 * prints "Unable to <verb> <object>: ..." and returns -1.
 */
int sm_nl_open(struct sm_nl *nl, const char *verb, const char *object);
void sm_nl_close(struct sm_nl *nl);

/* A request for @cmd; NULL (after printing) only when memory runs out. */
struct nl_msg *sm_nl_msg(struct sm_nl *nl, int cmd, int flags);

/*
 * Send @msg (consumed) and wait for the kernel's answer; replies go to
 * @rows if not NULL.  On a refusal prints
 *	Unable to <verb> <object>: <strerror> (<extended ack>)
 * and returns -errno; 0 on success.
 */
int sm_nl_request(struct sm_nl *nl, struct nl_msg *msg, struct sm_rows *rows,
		  const char *verb, const char *object);

/* Dump all rows of @cmd (PORT_GET, PAIR_GET, PATH_GET), restarting while
 * the kernel flags the dump as interrupted by a change.  Errors as above. */
int sm_nl_dump(struct sm_nl *nl, int cmd, struct sm_rows *rows,
	       const char *verb, const char *object);

/* Parse one message of the family; returns 0, or -1 if it is malformed. */
int sm_parse_row(const void *nlh, struct sm_row *row);

/*
 * Listening to the "events" group, for monitor (and the host agent): the
 * listener follows the family through module unloads and reloads.
 */
enum sm_listen_what {
	SM_LISTEN_EVENT,		/* a message of the family: @row */
	SM_LISTEN_FAMILY_GONE,		/* the family was unregistered */
	SM_LISTEN_FAMILY_BACK,		/* registered again, resubscribed */
	SM_LISTEN_OVERRUN,		/* the socket overflowed: events lost */
	SM_LISTEN_FOREIGN,		/* a message of another family: @row->cmd */
};

typedef void (*sm_listen_fn)(enum sm_listen_what what,
			     const struct sm_row *row, void *arg);

struct nl_cb;

struct sm_listener {
	struct sm_nl nl;		/* requests: lookups (and an agent's) */
	struct nl_sock *lsk;		/* multicast only */
	struct nl_cb *cb;
	int ctrl_grp;			/* nlctrl "notify" */
	bool present;			/* the family is registered */
	sm_listen_fn fn;
	void *arg;
};

/* Subscribe.  When the family is absent, waits for it (present = false). */
int sm_listen_open(struct sm_listener *l, sm_listen_fn fn, void *arg);
/* The descriptor to poll for POLLIN. */
int sm_listen_fd(const struct sm_listener *l);
/* Read what is queued and call fn for each message; -1 on a fatal error. */
int sm_listen_process(struct sm_listener *l);
void sm_listen_close(struct sm_listener *l);

/* ---- json.c ---- */

struct sm_json;

struct sm_json *sm_json_new(FILE *f, bool pretty);
void sm_json_free(struct sm_json *j);	/* ends a line after the top value */
/* @key is NULL inside arrays and at the top level. */
void sm_json_obj_open(struct sm_json *j, const char *key);
void sm_json_obj_close(struct sm_json *j);
void sm_json_arr_open(struct sm_json *j, const char *key);
void sm_json_arr_close(struct sm_json *j);
void sm_json_str(struct sm_json *j, const char *key, const char *s);
void sm_json_u64(struct sm_json *j, const char *key, uint64_t v);
void sm_json_s64(struct sm_json *j, const char *key, int64_t v);
void sm_json_double(struct sm_json *j, const char *key, double v, int prec);
void sm_json_bool(struct sm_json *j, const char *key, bool v);
void sm_json_null(struct sm_json *j, const char *key);
/* Write a string with JSON escaping (used by the writer and by tests). */
void sm_json_escape(FILE *f, const char *s);

/* ---- fields.c: the fields of each row kind, for every format ---- */

enum sm_kind { SM_PORT, SM_PAIR, SM_PATH };

enum sm_field_fmt {
	SM_F_UNSIGNED,		/* decimal */
	SM_F_SIGNED,		/* decimal, may be negative */
	SM_F_STRING,
	SM_F_HEX64,		/* 0x%016x */
	SM_F_ENUM,		/* a name from @names */
	SM_F_FLAGS,		/* pair flags */
	SM_F_GID,		/* 8 groups of 4 hex digits */
	SM_F_COUNTS,		/* events by cause: NAME=N,... / JSON object */
};

struct sm_field {
	int attr;			/* SHIFT_FT_A_*: also its name */
	enum sm_field_fmt fmt;
	const struct sm_names *names;
};

/* The fields of @kind in their stable order. */
const struct sm_field *sm_fields(enum sm_kind kind, size_t *n);
uint64_t sm_row_num(const struct sm_row *r, int attr);
/* Dump text of a field ("-" when the row lacks it). */
const char *sm_field_text(const struct sm_row *r, const struct sm_field *f,
			  char *buf, size_t len);

/* Write @row's fields of @kind as members of the open JSON object. */
void sm_row_json(struct sm_json *j, enum sm_kind kind, const struct sm_row *r);
/* The kind a message command carries (PORT_NEW -> port...), -1: none. */
int sm_kind_of_cmd(int cmd);
extern const char *const sm_kind_names[];

/* ---- time ---- */

uint64_t sm_mono_ns(void);
/* "3.2s", "5m12s", "2h03m", "4d07h": the age of a CLOCK_MONOTONIC stamp. */
void sm_age(uint64_t then_ns, char *buf, size_t len);

/* ---- subcommands: one file each ---- */

int cmd_show(int argc, char **argv);		/* show.c */
int cmd_dump(int argc, char **argv);		/* dump.c */
int cmd_monitor(int argc, char **argv);		/* monitor.c */
int cmd_pair(int argc, char **argv);		/* pair.c */
int cmd_report(int argc, char **argv);		/* report.c */
int cmd_metrics(int argc, char **argv);		/* metrics.c */
int cmd_agent(int argc, char **argv);		/* agent.c */
int cmd_host_key(int argc, char **argv);	/* hostkey.c */
int sm_show_cluster(int argc, char **argv);	/* cluster.c */

/* show.c: "ports"/"port"... to a bit per kind (1 << SM_PORT...), 0: none */
int sm_parse_kind(const char *s);
/* Dump the kinds in @kinds into rows[kind]; errors printed, -1. */
int sm_fetch(int kinds, struct sm_rows rows[3], const char *verb);

/* fields.c: row selection for subcommands */
struct sm_filter {
	const char *dev;		/* dev NAME */
	long port;			/* port N, -1: any */
};

/* Parse "[dev NAME [port N]]" from argv; returns -1 on a usage error. */
int sm_parse_filter(int argc, char **argv, struct sm_filter *f);
bool sm_filter_match(const struct sm_filter *f, const struct sm_row *r);
/* Parse a u32 with bounds; -1 on error. */
int sm_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *v);

#endif /* SHIFTMON_H */
