/* SPDX-License-Identifier: MIT */
/*
 * Continuous mode keeps the profile's tables bounded: after a window's
 * samples are written and forgotten, the stacks, frames, strings, processes
 * and cubins nobody will use again are freed by copying what remains into a
 * fresh profile (profile.h: profile__compact).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/profile/profile.h"
#include "user/profile/profile_internal.h"

static int copy_stack(struct profile *q, const struct profile *p, const struct stack *st,
		      __u32 new_id)
{
	struct profile_frame *f = calloc(st->n ? st->n : 1, sizeof(*f));
	int err;

	if (!f)
		return -ENOMEM;
	for (__u32 i = 0; i < st->n; i++) {
		const struct frame_key *k = blobtab__get(p->frames, st->frames[i], NULL);

		if (!k) {
			free(f);
			return -EINVAL;
		}
		f[i] = (struct profile_frame){ .name = profile__str(p, k->name),
					       .file = profile__str(p, k->file),
					       .build_id = profile__str(p, k->build_id),
					       .line = k->line, .addr = k->addr };
	}
	err = profile__set_stack(q, new_id, f, st->n, st->truncated);
	free(f);
	return err;
}

static int copy_stacks(struct profile *q, const struct profile *p, const __u32 *remap, size_t n)
{
	__u64 id, idx;
	int err;

	for (size_t it = 0; u64map__next(&p->stack_idx, &it, &id, &idx);) {
		if (id > n || !remap[id])
			continue;
		if ((err = copy_stack(q, p, &p->stacks[idx], remap[id])))
			return err;
	}
	return 0;
}

/* The kernels of a kept process, their cubin indexes renumbered for q. */
static int copy_kernels(struct profile *q, const struct profile *p, const struct proc_info *from,
			struct proc_info *to)
{
	__u64 key, val, cubin;
	int err;

	if (!from->kernels.cap)
		return 0;
	if ((err = u64map__init(&to->kernels, from->kernels.limit)))
		return err;
	for (size_t it = 0; u64map__next(&from->kernels, &it, &key, &val);) {
		if (val != KERNEL_AMBIGUOUS) {
			if (val >> 32 >= p->nr_cubins)
				return -EINVAL;
			if ((err = profile__cubin_index(q, p->cubin_crcs[val >> 32], &cubin)))
				return err;
			val = cubin << 32 | (val & UINT32_MAX);
		}
		if ((err = u64map__put(&to->kernels, key, val)))
			return err;
		q->cs.kernels++;
	}
	return 0;
}

static int copy_procs(struct profile *q, const struct profile *p,
		      bool (*keep_pid)(void *ctx, __u32 pid), void *ctx)
{
	__u64 pid, idx;
	int err;

	for (size_t it = 0; u64map__next(&p->procs, &it, &pid, &idx);) {
		const struct proc_info *from = &p->proc_infos[idx];
		struct proc_info *to;

		if (!keep_pid(ctx, (__u32)pid))
			continue;
		if ((err = profile__proc(q, (__u32)pid, &to)))
			return err;
		to->comm = profile__intern(q, profile__str(p, from->comm));
		to->cgroup = profile__intern(q, profile__str(p, from->cgroup));
		if ((err = copy_kernels(q, p, from, to)))
			return err;
	}
	return 0;
}

int profile__compact(struct profile *p, const __u32 *remap, size_t n,
		     bool (*keep_pid)(void *ctx, __u32 pid), void *ctx)
{
	struct profile *q, tmp;
	__u64 kernels, cubins;
	int err;

	if (blobtab__count(p->keys))
		return -EBUSY; /* samples name stacks by their old ids */
	if ((err = profile__new(&q)))
		return err;
	err = copy_stacks(q, p, remap, n);
	if (!err)
		err = copy_procs(q, p, keep_pid, ctx);
	if (err) {
		profile__destroy(q);
		return err;
	}
	/* The loss counters run on; the two gauges count what is held now. */
	q->t = p->t;
	kernels = q->cs.kernels;
	cubins = q->cs.cubins;
	q->cs = p->cs;
	q->cs.kernels = kernels;
	q->cs.cubins = cubins;
	/* Keyed by CRC with names of their own: the lines move, those of cubins gone left behind. */
	q->lines = p->lines;
	p->lines = NULL;
	profile__lines_prune(q); /* -ENOMEM: kept as they were */
	q->pc.wanted = p->pc.wanted;
	tmp = *p;
	*p = *q;
	*q = tmp;
	profile__destroy(q);
	return 0;
}

void profile__sizes(const struct profile *p, struct profile_sizes *ret)
{
	*ret = (struct profile_sizes){ .stacks = p->nr_stacks, .frames = blobtab__count(p->frames),
				       .strings = blobtab__count(p->str), .procs = p->nr_procs,
				       .cubins = p->nr_cubins };
}
