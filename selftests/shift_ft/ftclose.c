// SPDX-License-Identifier: GPL-2.0
/*
 * ftclose: open, bind and close generic netlink sockets in a loop, as any
 * unprivileged process may, and say how many it closed per second.  Every
 * such close runs the NETLINK_URELEASE notifiers, shift_ft's included.
 *
 *   ftclose [-j JOBS] [-T SECONDS] [-u UID]
 *
 * JOBS processes (default 2) loop for SECONDS (default 2); with -u they
 * first drop to UID (gid UID, no supplementary groups).  Prints
 *	closes=N seconds=S per_s=R
 * Exit 0, 1 on error, 2 on usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/netlink.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr, "usage: ftclose [-j JOBS] [-T SECONDS] [-u UID]\n");
	exit(2);
}

/* One job: loop until @end, write the count to @out. */
static int job(int out, double end, long uid)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	uint64_t n = 0;

	if (uid >= 0 && (setgroups(0, NULL) || setgid(uid) || setuid(uid))) {
		perror("ftclose: drop privileges");
		return 1;
	}
	do {
		int k;

		for (k = 0; k < 64; k++) {
			int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
					NETLINK_GENERIC);

			if (fd < 0) {
				perror("ftclose: socket");
				return 1;
			}
			/* autobind: only a bound socket's release is announced */
			if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
				perror("ftclose: bind");
				return 1;
			}
			close(fd);
			n++;
		}
	} while (now_s() < end);
	if (write(out, &n, sizeof(n)) != sizeof(n))
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	double secs = 2, t0, t1;
	long jobs = 2, uid = -1, i;
	uint64_t total = 0, n;
	int c, p[2], rc = 0, st;

	while ((c = getopt(argc, argv, "j:T:u:")) != -1) {
		switch (c) {
		case 'j':
			jobs = strtol(optarg, NULL, 0);
			break;
		case 'T':
			secs = strtod(optarg, NULL);
			break;
		case 'u':
			uid = strtol(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || jobs < 1 || jobs > 64 || secs <= 0)
		usage();
	if (pipe(p)) {
		perror("ftclose: pipe");
		return 1;
	}
	t0 = now_s();
	for (i = 0; i < jobs; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("ftclose: fork");
			return 1;
		}
		if (pid == 0) {
			close(p[0]);
			_exit(job(p[1], t0 + secs, uid));
		}
	}
	close(p[1]);
	while (read(p[0], &n, sizeof(n)) == sizeof(n))
		total += n;
	while (wait(&st) > 0)
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			rc = 1;
	t1 = now_s();
	if (rc)
		return rc;
	printf("closes=%llu\tseconds=%.3f\tper_s=%.0f\n",
	       (unsigned long long)total, t1 - t0, total / (t1 - t0));
	return 0;
}
