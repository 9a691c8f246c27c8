// SPDX-License-Identifier: GPL-2.0
/*
 * hostkey.c: `shiftmon host-key [FILE]`: this host's line of the hosts file
 * (recsign.h's host keys), "HOST PUBLIC-KEY", from its private key file
 * (FILE, else --host-key-file, else $SHIFT_HOST_KEY_FILE); HOST is --host,
 * else the host name, as the agent takes it.  Each host prints its line;
 * the hosts file every agent reads is their concatenation.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "shiftmon.h"
#include "store.h"
#include "recsign.h"

int cmd_host_key(int argc, char **argv)
{
	char hex[2 * SHIFT_SIGN_ED25519_LEN + 1], host[SHIFT_SIGN_SENDER_MAX], why[192];
	const char *file;
	int r;

	if (argc > 1)
		return sm_usage("host-key");
	file = argc ? argv[0] : sm_opts.host_key ? sm_opts.host_key : getenv(SM_HOST_KEY_ENV);
	if (!file || !*file) {
		fprintf(stderr, "%s: host-key: no key file: give FILE, --host-key-file or $%s\n",
			sm_prog, SM_HOST_KEY_ENV);
		return sm_usage("host-key");
	}
	if (sm_opts.host) {
		snprintf(host, sizeof(host), "%s", sm_opts.host);
	} else if (gethostname(host, sizeof(host))) {
		fprintf(stderr, "%s: host-key: hostname: %m\n", sm_prog);
		return SM_EXIT_FAIL;
	}
	host[sizeof(host) - 1] = '\0';
	if (!shift_sign_sender_ok(host)) {
		fprintf(stderr,
			"%s: host-key: host name '%s' cannot sign records: 1 to %d of A-Z a-z 0-9 . _ - (see --host)\n",
			sm_prog, host, SHIFT_SIGN_SENDER_MAX - 1);
		return SM_EXIT_FAIL;
	}
	r = shift_sign_host_public(file, hex, why, sizeof(why));
	if (r) {
		fprintf(stderr, "%s: host-key: %s: %s\n", sm_prog, file, why);
		return SM_EXIT_FAIL;
	}
	printf("%s %s\n", host, hex);
	return SM_EXIT_OK;
}
