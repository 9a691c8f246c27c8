// SPDX-License-Identifier: GPL-2.0
/*
 * pair.c: `shiftmon pair set DEV PORT BACKUP_DEV BACKUP_PORT` and
 * `shiftmon pair clear DEV PORT` (CAP_NET_ADMIN); `shiftmon pair [show]`
 * is `shiftmon show pairs`.
 *
 * Names need not exist yet: the kernel binds the override whenever the
 * ports appear.  Refusals print the kernel's extended ack.
 */
#include <string.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include "shiftmon.h"

/* DEV PORT from the command line; -1 (after a message) if invalid */
static int parse_port(const char *dev, const char *port, uint32_t *num)
{
	if (!*dev || strlen(dev) >= SHIFT_FT_DEV_NAME_LEN) {
		fprintf(stderr, "%s: invalid device name '%s'\n", sm_prog, dev);
		return -1;
	}
	if (sm_parse_u32(port, 1, 255, num)) {
		fprintf(stderr, "%s: invalid port number '%s' (1-255)\n", sm_prog, port);
		return -1;
	}
	return 0;
}

static int pair_change(int cmd, int argc, char **argv, const char *verb)
{
	int need = cmd == SHIFT_FT_CMD_PAIR_SET ? 4 : 2;
	uint32_t num, bnum = 0;
	struct nl_msg *msg;
	struct sm_nl nl;

	if (argc != need || parse_port(argv[0], argv[1], &num) ||
	    (need == 4 && parse_port(argv[2], argv[3], &bnum)))
		return sm_usage("pair");
	if (sm_nl_open(&nl, verb, "pair"))
		return SM_EXIT_FAIL;
	msg = sm_nl_msg(&nl, cmd, 0);
	if (!msg || nla_put_string(msg, SHIFT_FT_A_DEV_NAME, argv[0]) ||
	    nla_put_u32(msg, SHIFT_FT_A_PORT_NUM, num) ||
	    (need == 4 && (nla_put_string(msg, SHIFT_FT_A_BACKUP_DEV_NAME, argv[2]) ||
			   nla_put_u32(msg, SHIFT_FT_A_BACKUP_PORT_NUM, bnum)))) {
		fprintf(stderr, "Unable to build request: out of memory\n");
		nlmsg_free(msg);
		sm_nl_close(&nl);
		return SM_EXIT_FAIL;
	}
	if (sm_nl_request(&nl, msg, NULL, verb, "pair")) {
		sm_nl_close(&nl);
		return SM_EXIT_FAIL;
	}
	sm_nl_close(&nl);
	return SM_EXIT_OK;
}

int cmd_pair(int argc, char **argv)
{
	if (!argc || !strcmp(argv[0], "show") || !strcmp(argv[0], "list")) {
		char *args[16] = { "pairs" };
		int i, n = 1;

		for (i = argc ? 1 : 0; i < argc && n < 16; i++)
			args[n++] = argv[i];
		if (i < argc)
			return sm_usage("pair");
		return cmd_show(n, args);
	}
	if (!strcmp(argv[0], "set"))
		return pair_change(SHIFT_FT_CMD_PAIR_SET, argc - 1, argv + 1, "set");
	if (!strcmp(argv[0], "clear"))
		return pair_change(SHIFT_FT_CMD_PAIR_CLEAR, argc - 1, argv + 1, "clear");
	fprintf(stderr, "%s: unknown pair command '%s'\n", sm_prog, argv[0]);
	return sm_usage("pair");
}
