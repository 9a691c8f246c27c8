// SPDX-License-Identifier: GPL-2.0
/*
 * ibvsym.c: the verbs of a program built with ibvsym.h, resolved before
 * main() as NCCL resolves its own: dlopen("libibverbs.so", RTLD_NOW), else
 * "libibverbs.so.1", then dlvsym() on that handle, IBVERBS_1.1 unless the
 * verb came later.  A verb that cannot be found ends the program (exit 1)
 * with a message naming it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibvsym.h"

struct ibvsym ibvsym;

static const struct {
	size_t off;
	const char *name, *ver;
} syms[] = {
#define SYM(f, ver) { offsetof(struct ibvsym, f), "ibv_" #f, ver }
	SYM(get_device_list, "IBVERBS_1.1"),
	SYM(free_device_list, "IBVERBS_1.1"),
	SYM(get_device_name, "IBVERBS_1.1"),
	SYM(open_device, "IBVERBS_1.1"),
	SYM(close_device, "IBVERBS_1.1"),
	SYM(query_device, "IBVERBS_1.1"),
	SYM(query_port, "IBVERBS_1.1"),
	SYM(query_gid, "IBVERBS_1.1"),
	SYM(alloc_pd, "IBVERBS_1.1"),
	SYM(dealloc_pd, "IBVERBS_1.1"),
	SYM(reg_mr, "IBVERBS_1.1"),
	SYM(dereg_mr, "IBVERBS_1.1"),
	SYM(create_comp_channel, "IBVERBS_1.0"),
	SYM(destroy_comp_channel, "IBVERBS_1.0"),
	SYM(create_cq, "IBVERBS_1.1"),
	SYM(destroy_cq, "IBVERBS_1.1"),
	SYM(get_cq_event, "IBVERBS_1.1"),
	SYM(ack_cq_events, "IBVERBS_1.1"),
	SYM(create_qp, "IBVERBS_1.1"),
	SYM(modify_qp, "IBVERBS_1.1"),
	SYM(destroy_qp, "IBVERBS_1.1"),
	SYM(create_srq, "IBVERBS_1.1"),
	SYM(destroy_srq, "IBVERBS_1.1"),
	SYM(qp_to_qp_ex, "IBVERBS_1.6"),
	SYM(wc_status_str, "IBVERBS_1.1"),
	SYM(port_state_str, "IBVERBS_1.1"),
#undef SYM
};

static void __attribute__((constructor)) ibvsym_load(void)
{
	void *h, *p;
	size_t i;

	h = dlopen("libibverbs.so", RTLD_NOW);
	if (!h)
		h = dlopen("libibverbs.so.1", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "ibvsym: cannot open libibverbs.so[.1]: %s\n", dlerror());
		exit(1);
	}
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		p = dlvsym(h, syms[i].name, syms[i].ver);
		if (!p) {
			fprintf(stderr, "ibvsym: no %s@%s: %s\n", syms[i].name, syms[i].ver,
				dlerror());
			exit(1);
		}
		memcpy((char *)&ibvsym + syms[i].off, &p, sizeof(p));
	}
}
