// SPDX-License-Identifier: GPL-2.0
/*
 * report.c: `shiftmon report DEV PORT GID up|down [source app|agent]
 * [nocreate]` (CAP_NET_ADMIN): tell the kernel the state of the path from a
 * local port to a remote GID, as an application (default) or a host agent
 * would.  With nocreate, a path the table does not have is an error.
 */
#include <string.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include "shiftmon.h"

int cmd_report(int argc, char **argv)
{
	uint8_t gid[SHIFT_FT_GID_LEN];
	uint32_t port, flags = 0;
	int state, source = SHIFT_FT_SRC_APP, i;
	struct nl_msg *msg;
	struct sm_nl nl;

	if (argc < 4)
		return sm_usage("report");
	if (!*argv[0] || strlen(argv[0]) >= SHIFT_FT_DEV_NAME_LEN) {
		fprintf(stderr, "%s: invalid device name '%s'\n", sm_prog, argv[0]);
		return sm_usage("report");
	}
	if (sm_parse_u32(argv[1], 1, 255, &port)) {
		fprintf(stderr, "%s: invalid port number '%s' (1-255)\n", sm_prog, argv[1]);
		return sm_usage("report");
	}
	if (sm_gid_parse(argv[2], gid)) {
		fprintf(stderr, "%s: invalid GID '%s'\n", sm_prog, argv[2]);
		return sm_usage("report");
	}
	state = sm_value(&sm_path_state_names, argv[3]);
	if (state != SHIFT_FT_PATH_UP && state != SHIFT_FT_PATH_DOWN) {
		fprintf(stderr, "%s: invalid state '%s' (up, down)\n", sm_prog, argv[3]);
		return sm_usage("report");
	}
	for (i = 4; i < argc; i++) {
		if (!strcmp(argv[i], "source") && i + 1 < argc) {
			source = sm_value(&sm_source_names, argv[++i]);
			if (source != SHIFT_FT_SRC_APP && source != SHIFT_FT_SRC_AGENT) {
				fprintf(stderr, "%s: invalid source '%s' (app, agent)\n",
					sm_prog, argv[i]);
				return sm_usage("report");
			}
		} else if (!strcmp(argv[i], "nocreate")) {
			flags |= SHIFT_FT_REPORT_F_NOCREATE;
		} else {
			fprintf(stderr, "%s: unexpected argument '%s'\n", sm_prog, argv[i]);
			return sm_usage("report");
		}
	}

	if (sm_nl_open(&nl, "report", "path"))
		return SM_EXIT_FAIL;
	msg = sm_nl_msg(&nl, SHIFT_FT_CMD_PATH_REPORT, 0);
	if (!msg || nla_put_string(msg, SHIFT_FT_A_DEV_NAME, argv[0]) ||
	    nla_put_u32(msg, SHIFT_FT_A_PORT_NUM, port) ||
	    nla_put(msg, SHIFT_FT_A_REMOTE_GID, sizeof(gid), gid) ||
	    nla_put_u8(msg, SHIFT_FT_A_REPORT_STATE, state) ||
	    nla_put_u8(msg, SHIFT_FT_A_REPORT_SOURCE, source) ||
	    (flags && nla_put_u32(msg, SHIFT_FT_A_FLAGS, flags))) {
		fprintf(stderr, "Unable to build request: out of memory\n");
		nlmsg_free(msg);
		sm_nl_close(&nl);
		return SM_EXIT_FAIL;
	}
	if (sm_nl_request(&nl, msg, NULL, "report", "path")) {
		sm_nl_close(&nl);
		return SM_EXIT_FAIL;
	}
	sm_nl_close(&nl);
	return SM_EXIT_OK;
}
