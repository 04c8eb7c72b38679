/* SPDX-License-Identifier: MIT */
/*
 * PC sampling's samples in the profile (profile.h's profile__add_pc): summed
 * by (process, function, stall reason, cubin CRC, offset), bounded, and read
 * back with each function's place in its process's cubins resolved.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/profile/profile.h"
#include "user/profile/profile_internal.h"
#include "user/symbolize/demangle.h"
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

/* Keyed by the map's own secret: a process that guesses string ids cannot make chains at will. */
static __u64 entry_hash(const struct pc_table *t, const struct pc_entry *e)
{
	__u64 h = u64map__hash(((__u64)e->pid << 32 | e->fn) ^ t->head.seed);

	h = u64map__hash(h ^ e->stall);
	h = u64map__hash(h ^ e->crc);
	return u64map__hash(h ^ e->offset);
}

static bool entry_same(const struct pc_entry *a, const struct pc_entry *b)
{
	return a->pid == b->pid && a->fn == b->fn && a->stall == b->stall && a->crc == b->crc &&
	       a->offset == b->offset;
}

/*
 * A PC sample's function name, a new one counted against pid's share of
 * the profile's strings (PC_NAMES_SHARED): a process that makes up names
 * fills its share, not the table every name of every process is in. 0: not
 * kept.
 */
static __u32 pc_name(struct profile *p, __u32 pid, const char *name)
{
	struct proc_info *pi;
	__u32 id;

	if (blobtab__find(p->str, name, strlen(name) + 1, &id))
		return id; /* named already: no process record needed */
	if (profile__proc(p, pid, &pi) ||
	    blobtab__intern_held(p->str, name, strlen(name) + 1, &pi->pc_names_held, &p->pc_name_share, 1,
				 &id))
		return 0;
	return id;
}

int profile__add_pc(struct profile *p, __u32 pid, __u64 crc, const char *kernel, __u64 offset,
		    const char *stall, __u64 samples)
{
	struct pc_table *t = &p->pc;
	struct pc_entry k = { .pid = pid, .crc = crc, .offset = offset }, *grown;
	__u64 h, head = 0, mine = 0;
	int err;

	if (!t->head.cap && ((err = u64map__init(&t->head, MAX_PC_ENTRIES)) ||
			     (err = u64map__init(&t->per_pid, 0))))
		return err;
	/* A process at its bound takes no more strings either (the table is every process's). */
	u64map__get(&t->per_pid, pid, &mine);
	if (mine >= MAX_PC_ENTRIES_PER_PROC) {
		t->dropped += samples;
		return -E2BIG;
	}
	k.fn = pc_name(p, pid, kernel ? kernel : "[unknown]");
	k.stall = k.fn ? profile__intern(p, stall ? stall : "[unknown]") : 0;
	if (!k.fn || !k.stall) {
		t->dropped += samples;
		return -E2BIG; /* the string table is full, or the process past its share of it */
	}
	h = entry_hash(t, &k);
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
	err = u64map__put(&t->per_pid, pid, mine + 1);
	if (!err && (err = u64map__put(&t->head, h, t->n + 1)))
		u64map__put(&t->per_pid, pid, mine); /* a replacement: cannot fail */
	if (err) {
		t->dropped += samples;
		return err;
	}
	t->e[t->n++] = k;
	return 0;
}

void pc_table__reset(struct pc_table *t)
{
	t->n = 0;
	t->dropped = 0;
	if (t->head.cap) {
		u64map__clear(&t->head);
		u64map__clear(&t->per_pid);
	}
}

void pc_table__fini(struct pc_table *t)
{
	free(t->e);
	if (t->head.cap) {
		u64map__fini(&t->head);
		u64map__fini(&t->per_pid);
	}
	memset(t, 0, sizeof(*t));
}

/* Where the process's cubins put the function, as for a sample's kernel. */
/* Where pc's kernel is: in one cubin of its process, or not (in_cubin false). */
static void pc_place(const struct profile *p, struct profile_pc *pc)
{
	struct kernel_place kp;

	if (!profile__kernel_place(p, pc->pid, pc->kernel, &kp))
		return;
	pc->in_cubin = true;
	pc->cubin = kp.cubin;
	pc->crc = kp.crc;
	pc->cubin_sym = kp.sym;
}

/* pc placed, and its source line where its cubin (the record's CRC) has them. */
static void pc_kernel(const struct profile *p, struct profile_pc *pc)
{
	pc_place(p, pc);
	if (profile_pc__placed(pc) &&
	    !profile__line_of(p, pc->crc, pc->cubin_sym, pc->offset, &pc->file, &pc->line))
		pc->file = NULL;
}

__u64 profile__pc_unplaced(const struct profile *p)
{
	__u64 n = 0;

	for (size_t i = 0; i < p->pc.n; i++) {
		const struct pc_entry *e = &p->pc.e[i];
		struct profile_pc pc = { .pid = e->pid, .kernel = str_of(p, e->fn), .cubin_crc = e->crc };

		pc_place(p, &pc);
		if (!profile_pc__placed(&pc))
			n += e->samples;
	}
	return n;
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

/* ------------------------------------------------------------ report */

#define PC_REPORT_STALLS 64 /* distinct stall reasons a kernel's line weighs */
#define PC_REPORT_SHOWN 3

struct stall_sum {
	__u32 stall;
	__u64 samples;
};

static int cmp_stall_sums(const void *a, const void *b)
{
	const struct stall_sum *x = a, *y = b;

	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : (x->stall > y->stall) - (x->stall < y->stall);
}

/* One kernel's stall reasons, every process's samples together: the heaviest few, with shares. */
/*
 * " (file:line)" of the kernel's instruction at off, from the entry there
 * with the most samples: its process's cubin, its record's CRC (one kernel
 * name may come from two builds).
 */
static void report_line(const struct profile *p, FILE *f, __u32 kernel, __u64 off)
{
	const struct pc_entry *best = NULL;
	struct profile_pc at;

	for (size_t i = 0; i < p->pc.n; i++) {
		const struct pc_entry *e = &p->pc.e[i];

		if (e->fn == kernel && e->offset == off && (!best || e->samples > best->samples))
			best = e;
	}
	if (!best)
		return;
	at = (struct profile_pc){ .pid = best->pid, .kernel = str_of(p, kernel),
				  .cubin_crc = best->crc, .offset = off };
	pc_kernel(p, &at);
	if (at.file && *at.file)
		fprintf(f, " (%s:%u)", strrchr(at.file, '/') ? strrchr(at.file, '/') + 1 : at.file,
			at.line);
}

static void report_kernel(const struct profile *p, FILE *f, __u32 kernel)
{
	struct stall_sum sums[PC_REPORT_STALLS];
	size_t n = 0, it = 0;
	__u64 total = 0, other = 0, off, v, hot_off = 0, hot = 0;
	struct u64map by_off; /* offset -> its samples, every stall reason */
	bool offs = !u64map__init(&by_off, 1u << 16);
	char *name;

	for (size_t i = 0; i < p->pc.n; i++) {
		const struct pc_entry *e = &p->pc.e[i];
		size_t k;

		if (e->fn != kernel)
			continue;
		total += e->samples;
		if (offs) {
			v = 0;
			u64map__get(&by_off, e->offset, &v);
			u64map__put(&by_off, e->offset, v + e->samples); /* full: that one not weighed */
		}
		for (k = 0; k < n && sums[k].stall != e->stall; k++)
			;
		if (k == n && n == PC_REPORT_STALLS) {
			other += e->samples;
			continue;
		}
		if (k == n)
			sums[n++] = (struct stall_sum){ .stall = e->stall };
		sums[k].samples += e->samples;
	}
	while (offs && u64map__next(&by_off, &it, &off, &v))
		if (v > hot || (v == hot && off < hot_off)) {
			hot = v;
			hot_off = off;
		}
	if (offs)
		u64map__fini(&by_off);
	if (!total)
		return;
	qsort(sums, n, sizeof(*sums), cmp_stall_sums);
	name = demangle__or_copy(str_of(p, kernel));
	fprintf(f, "  %-40.40s %10llu  ", name ? name : "?", (unsigned long long)total);
	free(name);
	for (size_t k = 0; k < n && k < PC_REPORT_SHOWN; k++) {
		const char *st = str_of(p, sums[k].stall);

		fprintf(f, "%s%s %.1f%%", k ? ", " : "", profile__stall_short(st),
			100.0 * sums[k].samples / total);
	}
	fprintf(f, "%s", n > PC_REPORT_SHOWN || other ? ", ..." : "");
	if (hot) {
		fprintf(f, "; hottest +0x%llx %.1f%%", (unsigned long long)hot_off, 100.0 * hot / total);
		report_line(p, f, kernel, hot_off);
	}
	fputc('\n', f);
}

const char *profile__stall_short(const char *stall)
{
	static const char prefix[] = "smsp__pcsamp_warps_issue_stalled_";

	return strncmp(stall, prefix, sizeof(prefix) - 1) ? stall : stall + sizeof(prefix) - 1;
}

void pc_table__report(const struct profile *p, FILE *f, const __u32 *kernels, size_t n)
{
	/* Asked for and none came: said, not left to a missing section (an H200 at =5 or =8). */
	if (!p->pc.n && p->pc.wanted)
		fprintf(f, "PC samples: none in this profile (CUPTI's count is pc_cupti_total; on the "
			   "H200 a period under --pc-sampling=11 gave no sample at all)\n");
	if (!p->pc.n)
		return;
	fprintf(f, "PC samples by stall reason (the top kernels):\n  %-40s %10s  %s\n", "kernel",
		"samples", "stall reasons");
	for (size_t i = 0; i < n; i++)
		report_kernel(p, f, kernels[i]);
}
