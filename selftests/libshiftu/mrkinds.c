// SPDX-License-Identifier: GPL-2.0
/*
 * mrkinds: register one memory region on a device by one of the ways verbs
 * offer, say what it got, hold it a while, and let it go; for the tests to
 * watch what libshiftu makes of each kind (its twin's key in the store).
 *
 *   mrkinds [-d DEV] [-H MS] plain|iova|iova2|dmabuf|rereg
 *
 * Prints "mr KIND rkey=N lkey=N" once registered (for rereg, then
 * "rereg ret=N rkey=N lkey=N" after ibv_rereg_mr changed its access), then
 * holds the MR for MS milliseconds (default 2000), or until SIGUSR1, before
 * it deregisters it and prints "done".  dmabuf takes its memory from
 * /dev/udmabuf (a memfd sealed against shrinking).  Exit 0; 4 when this kernel or device cannot
 * do the kind (the reason on standard output); 1 on any other error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>

#define LEN	(64 * 1024)
#define ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static int die(const char *what)
{
	printf("mrkinds: %s: %s\n", what, strerror(errno));
	return 1;
}

/* A dma-buf of LEN bytes of plain memory, or -1 with the reason printed. */
static int udmabuf(void)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = LEN };
	int dev, mfd, fd;

	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		printf("mrkinds: no dma-buf to register: /dev/udmabuf: %s (CONFIG_UDMABUF)\n",
		       strerror(errno));
		return -1;
	}
	mfd = memfd_create("mrkinds", MFD_ALLOW_SEALING);
	if (mfd < 0 || ftruncate(mfd, LEN) || fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		printf("mrkinds: memfd: %s\n", strerror(errno));
		close(dev);
		return -1;
	}
	c.memfd = mfd;
	fd = ioctl(dev, UDMABUF_CREATE, &c);
	if (fd < 0)
		printf("mrkinds: UDMABUF_CREATE: %s\n", strerror(errno));
	close(mfd);
	close(dev);
	return fd;
}

static void on_usr1(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	const char *dev = "rxe0", *kind;
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_mr *mr = NULL;
	struct ibv_pd *pd;
	struct timespec ts;
	int opt, n, i, hold = 2000, fd = -1, ret;
	void *buf;

	/* SIGUSR1 ends the hold: nanosleep() returns early (no SA_RESTART) */
	sigaction(SIGUSR1, &(struct sigaction){ .sa_handler = on_usr1 }, NULL);
	while ((opt = getopt(argc, argv, "d:H:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'H': hold = atoi(optarg); break;
		default: return 1;
		}
	}
	if (optind != argc - 1)
		return 1;
	kind = argv[optind];
	list = ibv_get_device_list(&n);
	if (!list)
		return die("ibv_get_device_list");
	for (i = 0; i < n && strcmp(ibv_get_device_name(list[i]), dev); i++)
		;
	if (i == n) {
		printf("mrkinds: no device %s\n", dev);
		return 1;
	}
	ctx = ibv_open_device(list[i]);
	if (!ctx)
		return die("ibv_open_device");
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		return die("ibv_alloc_pd");
	buf = aligned_alloc(4096, LEN);
	if (!strcmp(kind, "plain") || !strcmp(kind, "rereg")) {
		mr = ibv_reg_mr(pd, buf, LEN, ACCESS);
	} else if (!strcmp(kind, "iova")) {
		mr = ibv_reg_mr_iova(pd, buf, LEN, 0x100000, ACCESS);
	} else if (!strcmp(kind, "iova2")) {
		mr = ibv_reg_mr_iova2(pd, buf, LEN, 0x200000, ACCESS);
	} else if (!strcmp(kind, "dmabuf")) {
		fd = udmabuf();
		if (fd < 0)
			return 4;
		mr = ibv_reg_dmabuf_mr(pd, 0, LEN, 0x300000, fd, ACCESS);
		if (!mr && (errno == EOPNOTSUPP || errno == EPROTONOSUPPORT)) {
			printf("mrkinds: %s cannot register a dma-buf: %s\n", dev, strerror(errno));
			return 4;
		}
		close(fd);	/* as NCCL does: the MR holds the dma-buf */
	} else {
		printf("mrkinds: unknown kind %s\n", kind);
		return 1;
	}
	if (!mr)
		return die(kind);
	printf("mr %s rkey=%u lkey=%u\n", kind, mr->rkey, mr->lkey);
	if (!strcmp(kind, "rereg")) {
		ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		printf("rereg ret=%d rkey=%u lkey=%u\n", ret, mr->rkey, mr->lkey);
	}
	fflush(stdout);
	ts.tv_sec = hold / 1000;
	ts.tv_nsec = (long)(hold % 1000) * 1000000;
	nanosleep(&ts, NULL);
	if (ibv_dereg_mr(mr))
		return die("ibv_dereg_mr");
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("done\n");
	return 0;
}
