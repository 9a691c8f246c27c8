// SPDX-License-Identifier: GPL-2.0
/*
 * names.c: every enumeration of uapi/shift_ft.h to a stable name and back,
 * one table each.  The names are the enum constants without their prefix;
 * they appear in every output format and are part of its stability promise:
 * a name, once released, never changes.  Values this build does not know
 * print as numbers.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "names.h"

#define SM_TABLE(a) { (a), SM_ARRAY_SIZE(a) }

static const char *const cmd_names[] = {
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

/* attribute names: the field names of every output format */
static const char *const attr_names[] = {
	[SHIFT_FT_A_UNSPEC]		= "unspec",
	[SHIFT_FT_A_PAD]		= "pad",
	[SHIFT_FT_A_GENERATION]		= "generation",
	[SHIFT_FT_A_PORT_INDEX]		= "port_index",
	[SHIFT_FT_A_DEV_NAME]		= "dev_name",
	[SHIFT_FT_A_DEV_INDEX]		= "dev_index",
	[SHIFT_FT_A_PORT_NUM]		= "port_num",
	[SHIFT_FT_A_NODE_GUID]		= "node_guid",
	[SHIFT_FT_A_LINK_LAYER]		= "link_layer",
	[SHIFT_FT_A_NETDEV]		= "netdev",
	[SHIFT_FT_A_IFINDEX]		= "ifindex",
	[SHIFT_FT_A_NUMA_NODE]		= "numa_node",
	[SHIFT_FT_A_STATE]		= "state",
	[SHIFT_FT_A_PHYS_STATE]		= "phys_state",
	[SHIFT_FT_A_SPEED]		= "speed",
	[SHIFT_FT_A_WIDTH]		= "width",
	[SHIFT_FT_A_MTU]		= "mtu",
	[SHIFT_FT_A_LAST_CHANGE]	= "last_change",
	[SHIFT_FT_A_DOWN_COUNT]		= "down_count",
	[SHIFT_FT_A_LAST_EVENT]		= "last_event",
	[SHIFT_FT_A_EVENT_COUNT]	= "event_count",
	[SHIFT_FT_A_BACKUP_INDEX]	= "backup_index",
	[SHIFT_FT_A_BACKUP_DEV_NAME]	= "backup_dev_name",
	[SHIFT_FT_A_BACKUP_PORT_NUM]	= "backup_port_num",
	[SHIFT_FT_A_BACKUP_STATE]	= "backup_state",
	[SHIFT_FT_A_PAIR_STATE]		= "pair_state",
	[SHIFT_FT_A_PAIR_FLAGS]		= "pair_flags",
	[SHIFT_FT_A_PATH_INDEX]		= "path_index",
	[SHIFT_FT_A_REMOTE_GID]		= "remote_gid",
	[SHIFT_FT_A_PATH_STATE]		= "path_state",
	[SHIFT_FT_A_REPORT_STATE]	= "report_state",
	[SHIFT_FT_A_REPORT_SOURCE]	= "report_source",
	[SHIFT_FT_A_REPORT_PID]		= "report_pid",
	[SHIFT_FT_A_REPORT_TIME]	= "report_time",
	[SHIFT_FT_A_FLAGS]		= "flags",
	[SHIFT_FT_A_EVENT]		= "event",
	[SHIFT_FT_A_EVENT_COUNTS]	= "event_counts",
};

static const char *const port_state_names[] = {
	[SHIFT_FT_PORT_NOP]		= "NOP",
	[SHIFT_FT_PORT_DOWN]		= "DOWN",
	[SHIFT_FT_PORT_INIT]		= "INIT",
	[SHIFT_FT_PORT_ARMED]		= "ARMED",
	[SHIFT_FT_PORT_ACTIVE]		= "ACTIVE",
	[SHIFT_FT_PORT_ACTIVE_DEFER]	= "ACTIVE_DEFER",
};

/* IB physical port states (IBTA; not an enum of the header, a number there) */
static const char *const phys_state_names[] = {
	[1] = "SLEEP",
	[2] = "POLLING",
	[3] = "DISABLED",
	[4] = "TRAINING",
	[5] = "LINK_UP",
	[6] = "ERROR_RECOVERY",
	[7] = "PHY_TEST",
};

static const char *const link_names[] = {
	[SHIFT_FT_LINK_UNSPEC]		= "UNSPEC",
	[SHIFT_FT_LINK_INFINIBAND]	= "INFINIBAND",
	[SHIFT_FT_LINK_ETHERNET]	= "ETHERNET",
};

static const char *const pair_state_names[] = {
	[SHIFT_FT_PAIR_NONE]		= "NONE",
	[SHIFT_FT_PAIR_BOTH_UP]		= "BOTH_UP",
	[SHIFT_FT_PAIR_PRIMARY_DOWN]	= "PRIMARY_DOWN",
	[SHIFT_FT_PAIR_BACKUP_DOWN]	= "BACKUP_DOWN",
	[SHIFT_FT_PAIR_BOTH_DOWN]	= "BOTH_DOWN",
};

static const char *const path_state_names[] = {
	[SHIFT_FT_PATH_UNKNOWN]		= "UNKNOWN",
	[SHIFT_FT_PATH_UP]		= "UP",
	[SHIFT_FT_PATH_DOWN]		= "DOWN",
};

static const char *const source_names[] = {
	[SHIFT_FT_SRC_NONE]		= "NONE",
	[SHIFT_FT_SRC_LOCAL]		= "LOCAL",
	[SHIFT_FT_SRC_APP]		= "APP",
	[SHIFT_FT_SRC_AGENT]		= "AGENT",
};

static const char *const event_names[] = {
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
	[SHIFT_FT_EV_REPORTER_GONE]	= "REPORTER_GONE",
};

/* a new value in the header without a name here fails the build */
_Static_assert(SM_ARRAY_SIZE(cmd_names) == __SHIFT_FT_CMD_MAX, "cmd names");
_Static_assert(SM_ARRAY_SIZE(attr_names) == __SHIFT_FT_A_MAX, "attr names");
_Static_assert(SM_ARRAY_SIZE(event_names) == __SHIFT_FT_EV_MAX, "event names");
_Static_assert(__SHIFT_FT_A_MAX <= 64, "struct sm_row.have is 64 bits");

const struct sm_names sm_cmd_names = SM_TABLE(cmd_names);
const struct sm_names sm_attr_names = SM_TABLE(attr_names);
const struct sm_names sm_port_state_names = SM_TABLE(port_state_names);
const struct sm_names sm_phys_state_names = SM_TABLE(phys_state_names);
const struct sm_names sm_link_names = SM_TABLE(link_names);
const struct sm_names sm_pair_state_names = SM_TABLE(pair_state_names);
const struct sm_names sm_path_state_names = SM_TABLE(path_state_names);
const struct sm_names sm_source_names = SM_TABLE(source_names);
const struct sm_names sm_event_names = SM_TABLE(event_names);

const char *sm_name(const struct sm_names *t, uint64_t v, char *buf)
{
	if (v < t->n && t->names[v])
		return t->names[v];
	snprintf(buf, 21, "%" PRIu64, v);
	return buf;
}

int sm_value(const struct sm_names *t, const char *s)
{
	unsigned int i;

	for (i = 0; i < t->n; i++)
		if (t->names[i] && !strcasecmp(t->names[i], s))
			return (int)i;
	return -1;
}

const char *sm_pair_flags_str(uint32_t flags, char *buf, size_t len)
{
	uint32_t rest = flags & ~SHIFT_FT_PAIR_F_CONFIGURED;

	if (!flags)
		snprintf(buf, len, "0");
	else if (!rest)
		snprintf(buf, len, "CONFIGURED");
	else if (flags & SHIFT_FT_PAIR_F_CONFIGURED)
		snprintf(buf, len, "CONFIGURED|0x%" PRIx32, rest);
	else
		snprintf(buf, len, "0x%" PRIx32, rest);
	return buf;
}

void sm_gid_full(const uint8_t *g, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
		 g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]);
}

void sm_gid_short(const uint8_t *g, char *buf, size_t len)
{
	char tmp[INET6_ADDRSTRLEN];

	if (inet_ntop(AF_INET6, g, tmp, sizeof(tmp)))
		snprintf(buf, len, "%s", tmp);
	else
		sm_gid_full(g, buf, len);
}

/* A GID as an IPv6 address (any form inet_pton reads) or 32 hex digits. */
int sm_gid_parse(const char *s, uint8_t *g)
{
	unsigned int i, b;

	if (inet_pton(AF_INET6, s, g) == 1)
		return 0;
	if (strlen(s) != 2 * SHIFT_FT_GID_LEN)
		return -1;
	for (i = 0; i < SHIFT_FT_GID_LEN; i++) {
		if (!isxdigit((unsigned char)s[2 * i]) ||
		    !isxdigit((unsigned char)s[2 * i + 1]) ||
		    sscanf(s + 2 * i, "%2x", &b) != 1)
			return -1;
		g[i] = b;
	}
	return 0;
}
