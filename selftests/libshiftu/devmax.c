// SPDX-License-Identifier: GPL-2.0
/*
 * devmax: create a CQ and an RC QP at exactly the device's limits
 * (max_cqe, max_qp_wr on both queues), and one past them, and say what
 * each create returned, for device_max.sh to compare with and without
 * libshiftu.
 *
 *   devmax [-d DEV]
 *
 * Prints one line per create, "cq max_cqe (N): ok, cqe >= asked: yes" or
 * "cq max_cqe+1 (N): failed: Invalid argument" and so on (what was granted
 * beyond the request is not printed: a provider rounds up, the library
 * adds its own room); an RC QP on the CQ of max_cqe entries too (which has
 * no room left for the library's own completions).  Exit 0 whatever the
 * creates returned; 1 when the device cannot be opened or queried.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static int die(const char *what)
{
	printf("devmax: %s: %s\n", what, strerror(errno));
	return 1;
}

static struct ibv_cq *cq_try(struct ibv_context *ctx, const char *what, int cqe)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);

	/* a provider (or the library) may grant more than asked: verbs allow it */
	if (cq)
		printf("cq %s (%d): ok, cqe >= asked: %s\n", what, cqe,
		       cq->cqe >= cqe ? "yes" : "no");
	else
		printf("cq %s (%d): failed: %s\n", what, cqe, strerror(errno));
	return cq;
}

static struct ibv_qp *qp_try(struct ibv_pd *pd, struct ibv_cq *cq, const char *what,
			     uint32_t wr)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = wr, .max_recv_wr = wr, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &a);

	if (qp)
		printf("qp %s (%u): ok, max_send_wr and max_recv_wr >= asked: %s\n", what, wr,
		       a.cap.max_send_wr >= wr && a.cap.max_recv_wr >= wr ? "yes" : "no");
	else
		printf("qp %s (%u): failed: %s\n", what, wr, strerror(errno));
	return qp;
}

int main(int argc, char **argv)
{
	const char *dev = "rxe0";
	struct ibv_device **list;
	struct ibv_device_attr attr;
	struct ibv_context *ctx = NULL;
	struct ibv_cq *small, *max, *over;
	struct ibv_qp *qp;
	struct ibv_pd *pd;
	int opt, n, i;

	while ((opt = getopt(argc, argv, "d:")) != -1) {
		if (opt != 'd') {
			fprintf(stderr, "usage: devmax [-d DEV]\n");
			return 2;
		}
		dev = optarg;
	}
	list = ibv_get_device_list(&n);
	if (!list)
		return die("ibv_get_device_list");
	for (i = 0; i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		return die(dev);
	if (ibv_query_device(ctx, &attr))
		return die("ibv_query_device");
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		return die("ibv_alloc_pd");
	printf("device %s: max_cqe=%d max_qp_wr=%d\n", dev, attr.max_cqe, attr.max_qp_wr);

	small = cq_try(ctx, "small", 64);
	max = cq_try(ctx, "max_cqe", attr.max_cqe);
	over = cq_try(ctx, "max_cqe+1", attr.max_cqe + 1);
	if (small) {
		qp = qp_try(pd, small, "max_qp_wr", attr.max_qp_wr);
		if (qp)
			ibv_destroy_qp(qp);
		qp = qp_try(pd, small, "max_qp_wr-1", attr.max_qp_wr - 1);
		if (qp)
			ibv_destroy_qp(qp);
		qp = qp_try(pd, small, "max_qp_wr+1", attr.max_qp_wr + 1);
		if (qp)
			ibv_destroy_qp(qp);
	}
	if (max) {
		qp = qp_try(pd, max, "on the cq of max_cqe", 16);
		if (qp)
			ibv_destroy_qp(qp);
	}
	if (over)
		ibv_destroy_cq(over);
	if (max)
		ibv_destroy_cq(max);
	if (small)
		ibv_destroy_cq(small);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("done\n");
	return 0;
}
