/* SPDX-License-Identifier: MIT */
/* The backward passes of one process (autograd_callers.h). */
#include "user/join/autograd_callers.h"

#include <errno.h>
#include <stdlib.h>
#include "user/util/u64map.h"

struct caller {
	__u32 tid;
	__u32 site;
};

struct autograd_callers {
	struct u64map by_caller; /* tid << 32 | site -> handle */
	/* pass -> its caller's handle: the passes begun lately, and those before them */
	struct u64map by_pass[2];
	unsigned cur;            /* by_pass[cur] takes new passes */
	struct caller c[AUTOGRAD_CALLERS_MAX]; /* handle h is c[h - 1] */
	__u32 n;
	struct autograd_callers_stats st;
};

int autograd_callers__new(struct autograd_callers **ret)
{
	struct autograd_callers *ac = calloc(1, sizeof(*ac));

	if (!ac)
		return -ENOMEM;
	if (u64map__init(&ac->by_caller, AUTOGRAD_CALLERS_MAX) ||
	    u64map__init(&ac->by_pass[0], AUTOGRAD_PASSES_MAX) ||
	    u64map__init(&ac->by_pass[1], AUTOGRAD_PASSES_MAX)) {
		autograd_callers__destroy(ac);
		return -ENOMEM;
	}
	*ret = ac;
	return 0;
}

void autograd_callers__destroy(struct autograd_callers *ac)
{
	if (!ac)
		return;
	u64map__fini(&ac->by_caller);
	u64map__fini(&ac->by_pass[0]);
	u64map__fini(&ac->by_pass[1]);
	free(ac);
}

static __u64 caller_key(__u32 tid, __u32 site)
{
	return (__u64)tid << 32 | site;
}

/* The handle of (tid, site), held now if new; 0 when the table is full. */
static __u32 caller__hold(struct autograd_callers *ac, __u32 tid, __u32 site)
{
	__u64 h;

	if (u64map__get(&ac->by_caller, caller_key(tid, site), &h))
		return (__u32)h;
	if (ac->n == AUTOGRAD_CALLERS_MAX ||
	    u64map__put(&ac->by_caller, caller_key(tid, site), ac->n + 1))
		return 0;
	ac->c[ac->n++] = (struct caller){ .tid = tid, .site = site };
	ac->st.callers = ac->n;
	return ac->n;
}

/*
 * pass's launches go under h. A full generation becomes the older one, the
 * older one forgotten: a pass is known for at least AUTOGRAD_PASSES_MAX
 * begins after its own.
 */
static void pass__set(struct autograd_callers *ac, __u64 pass, __u32 h)
{
	if (u64map__put(&ac->by_pass[ac->cur], pass, h) != -E2BIG)
		return;
	ac->cur ^= 1;
	u64map__clear(&ac->by_pass[ac->cur]);
	ac->st.restarts++;
	u64map__put(&ac->by_pass[ac->cur], pass, h);
}

__u32 autograd_callers__begin(struct autograd_callers *ac, __u64 pass, __u32 tid, __u32 site)
{
	__u32 h;

	ac->st.passes++;
	h = site ? caller__hold(ac, tid, site) : 0;
	if (!h) {
		ac->st.refused++;
		return 0;
	}
	pass__set(ac, pass, h);
	return h;
}

void autograd_callers__nest(struct autograd_callers *ac, __u64 pass, __u32 handle)
{
	ac->st.passes++;
	ac->st.nested++;
	pass__set(ac, pass, handle);
}

__u32 autograd_callers__of(const struct autograd_callers *ac, __u64 pass)
{
	__u64 h;

	if (pass && (u64map__get(&ac->by_pass[ac->cur], pass, &h) ||
		     u64map__get(&ac->by_pass[ac->cur ^ 1], pass, &h)))
		return (__u32)h;
	return 0;
}

bool autograd_callers__get(const struct autograd_callers *ac, __u32 handle, __u32 *ret_tid,
			   __u32 *ret_site)
{
	if (!handle || handle > ac->n)
		return false;
	*ret_tid = ac->c[handle - 1].tid;
	*ret_site = ac->c[handle - 1].site;
	return true;
}

void autograd_callers__visit_sites(struct autograd_callers *ac, __u64 (*fn)(void *ctx, __u64 site),
				   void *ctx)
{
	/* The index is keyed by site: made again. Handles do not change. */
	for (__u32 i = 0; i < ac->n; i++) {
		u64map__del(&ac->by_caller, caller_key(ac->c[i].tid, ac->c[i].site), NULL);
		ac->c[i].site = (__u32)fn(ctx, ac->c[i].site);
	}
	for (__u32 i = 0; i < ac->n; i++)
		if (ac->c[i].site)
			u64map__put(&ac->by_caller, caller_key(ac->c[i].tid, ac->c[i].site), i + 1);
}

void autograd_callers__stats(const struct autograd_callers *ac, struct autograd_callers_stats *ret)
{
	*ret = ac->st;
}

void autograd_callers__add_stats(const struct autograd_callers *ac,
				 struct autograd_callers_stats *sum)
{
	if (!ac)
		return;
	sum->passes += ac->st.passes;
	sum->nested += ac->st.nested;
	sum->callers += ac->st.callers;
	sum->refused += ac->st.refused;
	sum->restarts += ac->st.restarts;
}
