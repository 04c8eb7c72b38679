/* SPDX-License-Identifier: MIT */
/*
 * The profile as its writers read it (profile.h's profile__each_sample):
 * each aggregated sample with its process, kernel (and the cubin that
 * defines it), stack and labels resolved, so that no writer reads the
 * profile's tables.
 */
#include <string.h>
#include "user/profile/profile.h"
#include "user/profile/profile_internal.h"

static const struct proc_info *proc_of(const struct profile *p, __u32 pid)
{
	__u64 idx;

	return u64map__get(&p->procs, pid, &idx) ? &p->proc_infos[idx] : NULL;
}

/*
 * A kernel whose name one cubin of its process defines lies in that cubin;
 * "[memcpy HtoD]" and friends are labels, never symbols.
 */
bool profile__kernel_place(const struct profile *p, __u32 pid, const char *name,
			   struct kernel_place *ret)
{
	const struct proc_info *pi = proc_of(p, pid);
	__u64 v;

	if (!pi || !pi->kernels.cap || name[0] == '[' ||
	    !u64map__get(&pi->kernels, profile__kernel_hash(name, strlen(name)), &v) ||
	    v == KERNEL_AMBIGUOUS)
		return false;
	*ret = (struct kernel_place){ .cubin = (__u32)(v >> 32), .crc = p->cubin_crcs[v >> 32],
				      .sym = (__u32)v };
	return true;
}

static void sample__kernel(const struct profile *p, struct profile_sample *s)
{
	struct kernel_place kp;

	if (!profile__kernel_place(p, s->pid, s->kernel, &kp))
		return;
	s->in_cubin = true;
	s->cubin = kp.cubin;
	s->cubin_crc = kp.crc;
	s->cubin_sym = kp.sym;
}

static void sample__of(const struct profile *p, const struct agg_key *k, const struct agg_val *v,
		       struct profile_sample *s)
{
	const struct proc_info *pi = proc_of(p, k->pid);
	__u64 idx;

	*s = (struct profile_sample){
		.pid = k->pid, .kernel_id = k->name, .kernel = str_of(p, k->name),
		.api_id = k->api, .api = str_of(p, k->api), .reason_id = k->reason,
		.reason = str_of(p, k->reason), .stack_id = k->stack_id,
		.has_device = k->device != NO_DEVICE, .device = k->device, .stream = k->stream,
		.graph_id = k->graph_id, .ns = v->ns, .count = v->count,
	};
	if (pi && pi->comm)
		s->comm = str_of(p, pi->comm);
	if (pi && pi->cgroup)
		s->cgroup = str_of(p, pi->cgroup);
	sample__kernel(p, s);
	if (k->stack_id && u64map__get(&p->stack_idx, k->stack_id, &idx)) {
		s->frames = p->stacks[idx].frames;
		s->nframes = p->stacks[idx].n;
		s->truncated = p->stacks[idx].truncated;
	}
	for (unsigned l = 0; l < PROFILE_UNDERS && k->under[l]; l++) {
		struct profile_sample_under *u = &s->under[l];

		u->stack = k->under[l];
		u->api_id = k->under_api[l];
		u->api = str_of(p, k->under_api[l]);
		u->marker_id = k->under_marker[l];
		u->marker = str_of(p, k->under_marker[l]);
		if (u64map__get(&p->stack_idx, k->under[l], &idx)) {
			u->frames = p->stacks[idx].frames;
			u->nframes = p->stacks[idx].n;
			u->truncated = p->stacks[idx].truncated;
		}
	}
}

int profile__each_sample(const struct profile *p,
			 int (*fn)(void *ctx, const struct profile_sample *s), void *ctx)
{
	size_t nkeys = blobtab__count(p->keys);
	struct profile_sample s;
	int err;

	for (__u32 id = 1; id <= nkeys; id++) {
		if (!p->vals[id - 1].count)
			continue;
		sample__of(p, blobtab__get(p->keys, id, NULL), &p->vals[id - 1], &s);
		err = fn(ctx, &s);
		if (err)
			return err;
	}
	return 0;
}

void profile__frame_of(const struct profile *p, __u32 frame_id, struct profile_frame *ret,
		       __u32 *ret_file_id)
{
	const struct frame_key *k = blobtab__get(p->frames, frame_id, NULL);

	*ret = (struct profile_frame){ .name = str_of(p, k->name), .file = str_of(p, k->file),
				       .build_id = str_of(p, k->build_id), .addr = k->addr,
				       .line = k->line };
	*ret_file_id = k->file;
}

__u32 profile__stack_names(const struct profile *p, __u32 stack_id, const char **names, __u32 max)
{
	const struct stack *st;
	__u64 idx;
	__u32 n = 0;

	if (!u64map__get(&p->stack_idx, stack_id, &idx))
		return 0;
	st = &p->stacks[idx];
	for (; n < st->n && n < max; n++) {
		const struct frame_key *k = blobtab__get(p->frames, st->frames[n], NULL);

		names[n] = k ? str_of(p, k->name) : "";
	}
	return n;
}

const char *profile__proc_comm(const struct profile *p, __u32 pid)
{
	const struct proc_info *pi = proc_of(p, pid);

	return pi && pi->comm ? str_of(p, pi->comm) : NULL;
}
