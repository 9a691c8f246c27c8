// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * real.c: where the real libibverbs is (real.h, shiftu_real).
 *
 * libshiftu defines the control verbs it stands in for under libibverbs'
 * own names and versions, so the real ones are to be found past it.  How
 * far past depends on how the program reached libibverbs:
 *
 *  - linked against it, libshiftu preloaded or linked first: libibverbs is
 *    in the global scope after libshiftu, and dlvsym(RTLD_NEXT) finds it
 *    (and any other interposer in between, whose turn it is);
 *  - as a dependency of a module dlopen()ed with RTLD_LOCAL, as Python
 *    loads every extension: libibverbs is loaded but in no global scope,
 *    so RTLD_NEXT sees nothing;
 *  - through the shim directory (shiftu-run, libshiftu.7): the first
 *    object named libibverbs.so.1 is the shim, whose dependencies are
 *    libshiftu then the real library, so a lookup through the shim's
 *    handle finds libshiftu's own verbs first.
 *
 * So RTLD_NEXT is asked first; when it has nothing, or only libshiftu, the
 * loaded objects named libibverbs.so* are tried in turn, each through its
 * own handle, until one resolves ibv_open_device outside libshiftu.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "real.h"
#include "util.h"

struct shiftu_real shiftu_real;

static pthread_once_t real_once = PTHREAD_ONCE_INIT;
static bool real_ok;

static const struct real_sym {
	size_t off;
	const char *name, *ver;
	bool optional;			/* newer than some libibverbs still in use */
} real_syms[] = {
#define SYM(field, name, ver) { offsetof(struct shiftu_real, field), name, ver, false }
#define SYM_OPT(field, name, ver) { offsetof(struct shiftu_real, field), name, ver, true }
	SYM(open_device, "ibv_open_device", "IBVERBS_1.1"),
	SYM(close_device, "ibv_close_device", "IBVERBS_1.1"),
	SYM(create_qp, "ibv_create_qp", "IBVERBS_1.1"),
	SYM(modify_qp, "ibv_modify_qp", "IBVERBS_1.1"),
	SYM(destroy_qp, "ibv_destroy_qp", "IBVERBS_1.1"),
	SYM(alloc_pd, "ibv_alloc_pd", "IBVERBS_1.1"),
	SYM(dealloc_pd, "ibv_dealloc_pd", "IBVERBS_1.1"),
	SYM(reg_mr, "ibv_reg_mr", "IBVERBS_1.1"),
	SYM(reg_mr_iova, "ibv_reg_mr_iova", "IBVERBS_1.7"),
	SYM(reg_mr_iova2, "ibv_reg_mr_iova2", "IBVERBS_1.8"),
	SYM(dereg_mr, "ibv_dereg_mr", "IBVERBS_1.1"),
	SYM(rereg_mr, "ibv_rereg_mr", "IBVERBS_1.1"),
	SYM_OPT(reg_dmabuf_mr, "ibv_reg_dmabuf_mr", "IBVERBS_1.12"),
	SYM(create_cq, "ibv_create_cq", "IBVERBS_1.1"),
	SYM(destroy_cq, "ibv_destroy_cq", "IBVERBS_1.1"),
	SYM(resize_cq, "ibv_resize_cq", "IBVERBS_1.1"),
	SYM(create_srq, "ibv_create_srq", "IBVERBS_1.1"),
	SYM(destroy_srq, "ibv_destroy_srq", "IBVERBS_1.1"),
	SYM(modify_srq, "ibv_modify_srq", "IBVERBS_1.1"),
	SYM(get_device_list, "ibv_get_device_list", "IBVERBS_1.1"),
	SYM(free_device_list, "ibv_free_device_list", "IBVERBS_1.1"),
	SYM(query_gid, "ibv_query_gid", "IBVERBS_1.1"),
	SYM(get_device_name, "ibv_get_device_name", "IBVERBS_1.1"),
	SYM(get_device_guid, "ibv_get_device_guid", "IBVERBS_1.1"),
	SYM(qp_to_qp_ex, "ibv_qp_to_qp_ex", "IBVERBS_1.6"),
	SYM(create_comp_channel, "ibv_create_comp_channel", "IBVERBS_1.0"),
	SYM(destroy_comp_channel, "ibv_destroy_comp_channel", "IBVERBS_1.0"),
	SYM(query_device, "ibv_query_device", "IBVERBS_1.1"),
	SYM(get_cq_event, "ibv_get_cq_event", "IBVERBS_1.1"),
	SYM(ack_cq_events, "ibv_ack_cq_events", "IBVERBS_1.1"),
#ifdef SHIFTU_TEST_BUILD
	SYM(query_qp, "ibv_query_qp", "IBVERBS_1.1"),
#endif
#undef SYM_OPT
#undef SYM
};

/* Whether @p is an address inside libshiftu itself. */
static bool ours(void *p)
{
	Dl_info self, it;

	return dladdr((void *)ours, &self) && dladdr(p, &it) &&
	       it.dli_fbase == self.dli_fbase;
}

/* A handle whose ibv_open_device is the real one, or NULL. */
static void *try_handle(void *h)
{
	void *p = dlvsym(h, "ibv_open_device", "IBVERBS_1.1");

	return p && !ours(p) ? h : NULL;
}

#define MAX_CANDIDATES 8

struct candidates {
	char *name[MAX_CANDIDATES];
	unsigned int n;
};

/*
 * Context: dl_iterate_phdr(), which holds the loader's lock: only note the
 * names here, open them after.
 */
static int note_ibverbs(struct dl_phdr_info *info, size_t size, void *data)
{
	struct candidates *c = data;
	const char *base = strrchr(info->dlpi_name, '/');

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	if (strncmp(base, "libibverbs.so", 13) || c->n == MAX_CANDIDATES)
		return 0;
	c->name[c->n] = strdup(info->dlpi_name);
	if (c->name[c->n])
		c->n++;
	return 0;
}

/*
 * The loaded libibverbs.so* whose own handle reaches the real verbs.  The
 * handle is kept open: a library whose functions the process calls must
 * not go away under it.
 */
static void *find_loaded(void)
{
	struct candidates c = { .n = 0 };
	void *h, *found = NULL;
	unsigned int i;

	dl_iterate_phdr(note_ibverbs, &c);
	for (i = 0; i < c.n; i++) {
		if (!found) {
			h = dlopen(c.name[i], RTLD_LAZY | RTLD_NOLOAD);
			if (h && !(found = try_handle(h)))
				dlclose(h);
		}
		free(c.name[i]);
	}
	return found;
}

static void *find_real(void)
{
	void *h;

	if (try_handle(RTLD_NEXT))
		return RTLD_NEXT;
	h = find_loaded();
	if (h)
		return h;
	/*
	 * Nothing loaded yet (a program linked against libshiftu alone):
	 * load it, which through the shim also loads the real one, and look
	 * again.
	 */
	h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return NULL;
	if (try_handle(h))
		return h;
	dlclose(h);
	return find_loaded();
}

static void real_resolve(void)
{
	const struct real_sym *s;
	void *h, *p;
	bool ok = true;

	h = find_real();
	if (!h) {
		shiftu_err("cannot find libibverbs' own ibv_open_device@IBVERBS_1.1: every verb returns ENOSYS");
		return;
	}
	for (s = real_syms; s < real_syms + SHIFTU_ARRAY_SIZE(real_syms); s++) {
		p = dlvsym(h, s->name, s->ver);
		if (!p && s->optional)
			continue;
		if (!p || ours(p)) {
			shiftu_err("cannot find the real %s@%s: %s", s->name, s->ver,
				   p ? "only libshiftu's own" : dlerror());
			ok = false;
			continue;
		}
		memcpy((char *)&shiftu_real + s->off, &p, sizeof(p));
	}
	real_ok = ok;
}

bool shiftu_real_verbs(void)
{
	pthread_once(&real_once, real_resolve);
	if (!real_ok)
		errno = ENOSYS;
	return real_ok;
}
