/* SPDX-License-Identifier: MIT */
/*
 * PC sampling's samples in the profile (profile.h's profile__add_pc): summed
 * by (process, function, stall reason, cubin CRC, offset), bounded, and read
 * back with each function's place in its process's cubins resolved.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/profile/profile.h"
#include "user/profile/profile_internal.h"
#include "user/util/grow.h"

void profile__want_pc(struct profile *p)
{
	p->pc.wanted = true;
}

bool profile__has_pc(const struct profile *p)
{
	return p->pc.wanted || p->pc.n;
}

__u64 profile__pc_dropped(const struct profile *p)
{
	return p->pc.dropped;
}

static __u64 entry_hash(const struct pc_entry *e)
{
	__u64 h = u64map__hash((__u64)e->pid << 32 | e->fn);

	h = u64map__hash(h ^ e->stall);
	h = u64map__hash(h ^ e->crc);
	return u64map__hash(h ^ e->offset);
}

static bool entry_same(const struct pc_entry *a, const struct pc_entry *b)
{
	return a->pid == b->pid && a->fn == b->fn && a->stall == b->stall && a->crc == b->crc &&
	       a->offset == b->offset;
}

int profile__add_pc(struct profile *p, __u32 pid, __u64 crc, const char *kernel, __u64 offset,
		    const char *stall, __u64 samples)
{
	struct pc_table *t = &p->pc;
	struct pc_entry k = { .pid = pid, .crc = crc, .offset = offset }, *grown;
	__u64 h, head = 0;
	int err;

	if (!t->head.cap && (err = u64map__init(&t->head, MAX_PC_ENTRIES)))
		return err;
	k.fn = profile__intern(p, kernel ? kernel : "[unknown]");
	k.stall = profile__intern(p, stall ? stall : "[unknown]");
	if (!k.fn || !k.stall) {
		t->dropped += samples;
		return -E2BIG; /* the string table is full */
	}
	h = entry_hash(&k);
	u64map__get(&t->head, h, &head);
	for (__u64 i = head; i; i = t->e[i - 1].next) {
		if (entry_same(&t->e[i - 1], &k)) {
			t->e[i - 1].samples += samples;
			return 0;
		}
	}
	if (t->n == MAX_PC_ENTRIES ||
	    !(grown = grow__array(t->e, &t->cap, t->n + 1, sizeof(*t->e), 256))) {
		t->dropped += samples;
		return -E2BIG;
	}
	t->e = grown;
	k.samples = samples;
	k.next = (__u32)head;
	t->e[t->n++] = k;
	err = u64map__put(&t->head, h, t->n);
	if (err) {
		t->n--;
		t->dropped += samples;
	}
	return err;
}

void pc_table__reset(struct pc_table *t)
{
	t->n = 0;
	t->dropped = 0;
	if (t->head.cap)
		u64map__clear(&t->head);
}

void pc_table__fini(struct pc_table *t)
{
	free(t->e);
	if (t->head.cap)
		u64map__fini(&t->head);
	memset(t, 0, sizeof(*t));
}

/* Where the process's cubins put the function (as view.c does for a sample's kernel). */
static void pc_kernel(const struct profile *p, struct profile_pc *pc)
{
	__u64 idx, v;
	const struct proc_info *pi = u64map__get(&p->procs, pc->pid, &idx) ? &p->proc_infos[idx] : NULL;

	if (!pi || !pi->kernels.cap ||
	    !u64map__get(&pi->kernels, profile__kernel_hash(pc->kernel, strlen(pc->kernel)), &v) ||
	    v == KERNEL_AMBIGUOUS)
		return;
	pc->in_cubin = true;
	pc->cubin = (__u32)(v >> 32);
	pc->crc = p->cubin_crcs[v >> 32];
	pc->cubin_sym = (__u32)v;
}

int profile__each_pc(const struct profile *p, int (*fn)(void *ctx, const struct profile_pc *pc),
		     void *ctx)
{
	int err = 0;

	for (size_t i = 0; i < p->pc.n && !err; i++) {
		const struct pc_entry *e = &p->pc.e[i];
		struct profile_pc pc = { .pid = e->pid, .kernel_id = e->fn, .kernel = str_of(p, e->fn),
					 .stall = str_of(p, e->stall), .cubin_crc = e->crc,
					 .offset = e->offset, .samples = e->samples };

		pc_kernel(p, &pc);
		err = fn(ctx, &pc);
	}
	return err;
}
