// SPDX-License-Identifier: GPL-2.0
/*
 * shiftmon: the operator's view of the shift_ft NIC health table.
 *
 *	shiftmon [OPTIONS] [COMMAND [ARGS]]
 *
 * Options may be given anywhere on the line.  The commands come from one
 * table; `show` is the default.  Exit status: 0 success, 1 failure, 2 usage.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shiftmon.h"
#include "storeauth.h"

#ifndef SHIFT_VERSION
#define SHIFT_VERSION "unknown"
#endif

struct sm_opts sm_opts;
const char *sm_prog = "shiftmon";

static int cmd_help(int argc, char **argv);

struct sm_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *args;
	const char *help;
};

/* One line per command; a new command is one file and one line here. */
static const struct sm_cmd cmds[] = {
	{ "show", cmd_show, "[ports|pairs|paths] [dev NAME [port N]]",
	  "the table for people (-j: JSON)" },
	{ "dump", cmd_dump, "[ports|pairs|paths] [dev NAME [port N]]",
	  "the table for scripts, tab-separated (-H: header)" },
	{ "monitor", cmd_monitor, "[-t|--timestamp] [-r|--relative] [-j|--json]",
	  "every change, one line each (-t, -r, -j)" },
	{ "pair", cmd_pair, "set DEV PORT BACKUP_DEV BACKUP_PORT | clear DEV PORT",
	  "override or reset the backup of a port" },
	{ "report", cmd_report, "DEV PORT GID up|down [source app|agent] [nocreate]",
	  "report the state of a path" },
	{ "metrics", cmd_metrics, "",
	  "the table as metrics, for node_exporter's textfile collector" },
	{ "agent", cmd_agent,
	  "[--store URL] [--store-auth-file FILE] [--store-key-file FILE | --host-key-file FILE --hosts-file FILE] [--host NAME] [--host-rows N] [--remote-ports N] [-v]",
	  "publish this host's ports to the cluster store, apply the others'" },
	{ "host-key", cmd_host_key, "[--host NAME] [FILE]",
	  "this host's line of the hosts file, from its private key" },
	{ "help", cmd_help, "[COMMAND]", "this text" },
};

static void print_usage(FILE *f, const char *only)
{
	size_t i;

	fprintf(f, "Usage: %s [OPTIONS] [COMMAND [ARGS]]\n\nCommands:\n", sm_prog);
	for (i = 0; i < SM_ARRAY_SIZE(cmds); i++) {
		if (only && strcmp(only, cmds[i].name))
			continue;
		fprintf(f, "  %s%s%s\n\t%s\n", cmds[i].name,
			*cmds[i].args ? " " : "", cmds[i].args, cmds[i].help);
	}
	if (only)
		return;
	fprintf(f,
		"\nWithout a command: show.\n"
		"\nOptions:\n"
		"  -j, --json           JSON output (show, monitor)\n"
		"  -p, --pretty         indented JSON\n"
		"  -c, --color WHEN     colour: auto (default), always, never\n"
		"  -t, --timestamp      monitor: wall-clock time of each event\n"
		"  -r, --relative       monitor: seconds since the previous event\n"
		"  -H, --header         dump: a header line per kind\n"
		"      --cluster        show: every host's ports, from the store\n"
		"      --store URL      agent, show --cluster: redis://HOST:PORT or\n"
		"                       unix:PATH (default $SHIFT_STORE, else\n"
		"                       redis://127.0.0.1:6379); with an ACL user:\n"
		"                       redis://USER:PASSWORD@HOST:PORT,\n"
		"                       unix://USER:PASSWORD@/PATH\n"
		"      --store-auth-file FILE\n"
		"                       the same: USER:PASSWORD from FILE, which only\n"
		"                       its owner may read (default $SHIFT_STORE_AUTH_FILE)\n"
		"      --store-key-file FILE\n"
		"                       agent: sign this host's records and apply only\n"
		"                       signed ones, with the cluster key in FILE (hex,\n"
		"                       its owner's alone; default $SHIFT_STORE_KEY_FILE)\n"
		"      --host-key-file FILE\n"
		"                       agent: sign this host's records with its own key\n"
		"                       (hex, its owner's alone; default\n"
		"                       $SHIFT_HOST_KEY_FILE); host-key: its public line\n"
		"      --hosts-file FILE\n"
		"                       agent: the cluster's public keys, one \"HOST KEY\"\n"
		"                       line each; records are applied only signed by\n"
		"                       their own host (default $SHIFT_HOSTS_FILE)\n"
		"      --host NAME      agent: this host's name (default: hostname)\n"
		"      --host-rows N    agent: path rows towards one remote host, at\n"
		"                       most (default 128)\n"
		"      --remote-ports N agent: remote ports remembered, at most\n"
		"                       (default 16384)\n"
		"  -v, --verbose        agent: one line per action\n"
		"  -V, --version        print the version\n"
		"  -h, --help           this text\n"
		"\nExit status: 0 success, 1 failure, 2 usage error.  See shiftmon(8).\n");
}

int sm_usage(const char *cmd)
{
	print_usage(stderr, cmd);
	return SM_EXIT_USAGE;
}

static int cmd_help(int argc, char **argv)
{
	size_t i;

	if (argc > 1)
		return sm_usage("help");
	if (argc == 1) {
		for (i = 0; i < SM_ARRAY_SIZE(cmds); i++)
			if (!strcmp(argv[0], cmds[i].name))
				break;
		if (i == SM_ARRAY_SIZE(cmds)) {
			fprintf(stderr, "%s: unknown command '%s'\n", sm_prog, argv[0]);
			return sm_usage(NULL);
		}
	}
	print_usage(stdout, argc ? argv[0] : NULL);
	return SM_EXIT_OK;
}

static int set_color(const char *when)
{
	const char *nc = getenv("NO_COLOR");

	if (!strcmp(when, "always")) {
		sm_opts.color = true;
	} else if (!strcmp(when, "never")) {
		sm_opts.color = false;
	} else if (!strcmp(when, "auto")) {
		/* https://no-color.org: set and not empty disables colour */
		sm_opts.color = isatty(STDOUT_FILENO) && !(nc && *nc);
	} else {
		fprintf(stderr, "%s: invalid colour mode '%s' (auto, always, never)\n",
			sm_prog, when);
		return -1;
	}
	return 0;
}

/*
 * A copy of the --store URL, and the password in argv overwritten: every
 * local user can read a process' command line (ps, /proc/PID/cmdline).
 * Until this runs they can too: shiftmon(8) says to prefer the file.
 */
static const char *hide_password(char *arg)
{
	const char *ui, *at;
	char *copy, *colon;
	size_t uilen;

	if (!shift_auth_in_url(arg, &ui, &uilen, &at))
		return arg;
	copy = strdup(arg);
	if (!copy)
		return arg;
	colon = memchr(ui, ':', uilen);
	if (colon)
		memset(colon + 1, 'x', at - 1 - (colon + 1));
	return copy;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json",	no_argument,		NULL, 'j' },
		{ "pretty",	no_argument,		NULL, 'p' },
		{ "color",	required_argument,	NULL, 'c' },
		{ "colour",	required_argument,	NULL, 'c' },
		{ "timestamp",	no_argument,		NULL, 't' },
		{ "relative",	no_argument,		NULL, 'r' },
		{ "header",	no_argument,		NULL, 'H' },
		{ "store",	required_argument,	NULL, 'S' },
		{ "store-auth-file", required_argument,	NULL, 'A' },
		{ "store-key-file", required_argument,	NULL, 'K' },
		{ "host-key-file", required_argument,	NULL, 'Y' },
		{ "hosts-file",	required_argument,	NULL, 'F' },
		{ "host",	required_argument,	NULL, 'N' },
		{ "host-rows",	required_argument,	NULL, 'R' },
		{ "remote-ports", required_argument,	NULL, 'P' },
		{ "verbose",	no_argument,		NULL, 'v' },
		{ "cluster",	no_argument,		NULL, 'C' },
		{ "version",	no_argument,		NULL, 'V' },
		{ "help",	no_argument,		NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *color = "auto";
	size_t i;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jpc:trHVhv", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': sm_opts.json = true; break;
		case 'p': sm_opts.pretty = sm_opts.json = true; break;
		case 'c': color = optarg; break;
		case 't': sm_opts.timestamp = true; break;
		case 'r': sm_opts.relative = true; break;
		case 'H': sm_opts.header = true; break;
		case 'S': sm_opts.store = hide_password(optarg); break;
		case 'A': sm_opts.store_auth = optarg; break;
		case 'K': sm_opts.store_key = optarg; break;
		case 'Y': sm_opts.host_key = optarg; break;
		case 'F': sm_opts.hosts_file = optarg; break;
		case 'N': sm_opts.host = optarg; break;
		case 'R': sm_opts.host_rows = optarg; break;
		case 'P': sm_opts.remote_ports = optarg; break;
		case 'v': sm_opts.verbose = true; break;
		case 'C': sm_opts.cluster = true; break;
		case 'V':
			printf("shiftmon %s\n", SHIFT_VERSION);
			return SM_EXIT_OK;
		case 'h':
			print_usage(stdout, NULL);
			return SM_EXIT_OK;
		default:
			if (c == ':')
				fprintf(stderr, "%s: option '%s' needs an argument\n",
					sm_prog, argv[optind - 1]);
			else if (optopt)
				fprintf(stderr, "%s: invalid option '-%c'\n", sm_prog,
					optopt);
			else
				fprintf(stderr, "%s: invalid option '%s'\n", sm_prog,
					argv[optind - 1]);
			return sm_usage(NULL);
		}
	}
	if (set_color(color))
		return sm_usage(NULL);
	argc -= optind;
	argv += optind;

	if (!argc)
		return cmd_show(0, argv);
	for (i = 0; i < SM_ARRAY_SIZE(cmds); i++)
		if (!strcmp(argv[0], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	/* `shiftmon ports`, `shiftmon dev rxe0`: show's arguments */
	if (!strcmp(argv[0], "ports") || !strcmp(argv[0], "pairs") ||
	    !strcmp(argv[0], "paths") || !strcmp(argv[0], "dev"))
		return cmd_show(argc, argv);
	fprintf(stderr, "%s: unknown command '%s'\n", sm_prog, argv[0]);
	return sm_usage(NULL);
}
