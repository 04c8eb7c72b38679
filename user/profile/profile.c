/* SPDX-License-Identifier: MIT */
/*
 * Aggregation of joined samples, their cubins' kernels, and the report made
 * from them (see profile.h; the pprof writer is write_pprof.c). Every
 * string is interned once; samples are keyed by a plain struct interned in
 * a blob table, so equal samples merge by construction.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "user/profile/profile.h"
#include "user/profile/profile_internal.h"
#include "user/cubin/cubin_syms.h"
#include "user/symbolize/demangle.h"
#include "user/util/blobtab.h"
#include "user/util/grow.h"
#include "user/util/u64map.h"

int profile__new(struct profile **ret_p)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	if (blobtab__new(MAX_STRINGS, MAX_STRING_BYTES, &p->str) ||
	    blobtab__new(MAX_FRAMES, SIZE_MAX, &p->frames) ||
	    blobtab__new(MAX_KEYS, SIZE_MAX, &p->keys) || u64map__init(&p->stack_idx, 0) ||
	    u64map__init(&p->procs, 0) || u64map__init(&p->cubin_idx, MAX_CUBINS) ||
	    u64map__init(&p->name_ids, MAX_NAME_IDS)) {
		profile__destroy(p);
		return -ENOMEM;
	}
	mem_share__init(&p->cubin_share, CUBINS_SHARED);
	mem_share__init(&p->kernel_share, KERNELS_SHARED);
	mem_share__init(&p->pc_name_share, PC_NAMES_SHARED);
	*ret_p = p;
	return 0;
}

void profile__destroy(struct profile *p)
{
	if (!p)
		return;
	blobtab__destroy(p->str);
	blobtab__destroy(p->frames);
	blobtab__destroy(p->keys);
	free(p->vals);
	for (size_t i = 0; i < p->nr_stacks; i++)
		free(p->stacks[i].frames);
	free(p->stacks);
	u64map__fini(&p->stack_idx);
	u64map__fini(&p->procs);
	for (size_t i = 0; i < p->nr_procs; i++)
		u64map__fini(&p->proc_infos[i].kernels);
	free(p->proc_infos);
	u64map__fini(&p->cubin_idx);
	u64map__fini(&p->name_ids);
	free(p->cubin_crcs);
	profile__lines_free(p->lines);
	pc_table__fini(&p->pc);
	free(p);
}

__u32 profile__intern(struct profile *p, const char *s)
{
	__u32 id = 0;

	if (!s)
		return 0;
	if (blobtab__intern(p->str, s, strlen(s) + 1, &id))
		return 0;
	return id;
}

const char *profile__str(const struct profile *p, __u32 id)
{
	return id ? blobtab__get(p->str, id, NULL) : NULL;
}

int profile__proc(struct profile *p, __u32 pid, struct proc_info **ret_pi)
{
	__u64 idx;

	if (!u64map__get(&p->procs, pid, &idx)) {
		struct proc_info *n = grow__array_zeroed(p->proc_infos, &p->cap_procs,
							 p->nr_procs + 1, sizeof(*n), 64);

		if (!n)
			return -ENOMEM;
		p->proc_infos = n;
		idx = p->nr_procs;
		if (u64map__put(&p->procs, pid, idx))
			return -ENOMEM;
		p->nr_procs++;
	}
	*ret_pi = &p->proc_infos[idx];
	return 0;
}

int profile__set_proc(struct profile *p, const struct profile_proc *proc)
{
	struct proc_info *pi;
	int err = profile__proc(p, proc->pid, &pi);

	if (err)
		return err;
	if (proc->comm)
		pi->comm = profile__intern(p, proc->comm);
	if (proc->cgroup)
		pi->cgroup = profile__intern(p, proc->cgroup);
	return 0;
}

bool profile__has_stack(const struct profile *p, __u32 stack_id)
{
	return u64map__get(&p->stack_idx, stack_id, NULL);
}

int profile__set_stack(struct profile *p, __u32 stack_id, const struct profile_frame *frames,
		       __u32 n, bool truncated)
{
	struct stack *s, *ns;
	__u32 *ids;

	if (!stack_id)
		return -EINVAL;
	if (profile__has_stack(p, stack_id))
		return -EEXIST;
	ids = calloc(n ? n : 1, sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (__u32 i = 0; i < n; i++) {
		struct frame_key k = { .name = profile__intern(p, frames[i].name),
				       .file = profile__intern(p, frames[i].file),
				       .build_id = profile__intern(p, frames[i].build_id),
				       .line = frames[i].line, .addr = frames[i].addr };

		if (blobtab__intern(p->frames, &k, sizeof(k), &ids[i])) {
			n = i; /* keep what fits: the stack is marked truncated */
			truncated = true;
			break;
		}
	}
	ns = grow__array_zeroed(p->stacks, &p->cap_stacks, p->nr_stacks + 1, sizeof(*ns), 64);
	if (!ns || u64map__put(&p->stack_idx, stack_id, p->nr_stacks)) {
		free(ids);
		return -ENOMEM;
	}
	p->stacks = ns;
	s = &p->stacks[p->nr_stacks++];
	s->frames = ids;
	s->n = n;
	s->truncated = truncated;
	return 0;
}

/* Adds ns and one count to the sample of key k. */
static int add_to(struct profile *p, const struct agg_key *k, __u64 ns)
{
	struct agg_val *v;
	__u32 id;

	if (blobtab__intern(p->keys, k, sizeof(*k), &id)) {
		p->t.dropped++;
		return -E2BIG;
	}
	v = grow__array_zeroed(p->vals, &p->cap_vals, id, sizeof(*v), 64);
	if (!v) {
		p->t.dropped++;
		return -ENOMEM;
	}
	p->vals = v;
	p->vals[id - 1].ns += ns;
	p->vals[id - 1].count++;
	return 0;
}

/* Inner stack l of a key (profile_activity's under[l]): its stack, API and marker. */
static void key_under(struct profile *p, struct agg_key *k, unsigned l, const struct profile_under *u)
{
	k->under[l] = u->stack;
	k->under_api[l] = profile__intern(p, u->api);
	k->under_marker[l] = profile__intern(p, u->marker);
}

/* act's name's string id: by its name_id once met (past MAX_NAME_IDS ids, by its bytes). */
static __u32 name_of(struct profile *p, const struct profile_activity *act)
{
	__u64 id;

	if (!act->name_id)
		return profile__intern(p, act->name);
	if (u64map__get(&p->name_ids, act->name_id, &id))
		return (__u32)id;
	id = profile__intern(p, act->name);
	if (id)
		u64map__put(&p->name_ids, act->name_id, id); /* full: interned each time */
	return (__u32)id;
}

int profile__add(struct profile *p, __u32 pid, __u32 stack_id, const char *api,
		 const char *reason, const struct profile_activity *act)
{
	struct agg_key k = { .pid = pid, .stack_id = stack_id, .api = profile__intern(p, api),
			     .reason = profile__intern(p, reason), .name = name_of(p, act),
			     .device = act->device, .stream = act->stream, .graph_id = act->graph_id };

	for (unsigned l = 0; l < PROFILE_UNDERS && act->under[l].stack; l++)
		key_under(p, &k, l, &act->under[l]);

	p->t.activities++;
	if (!stack_id) {
		p->t.unattributed++;
		p->t.unattributed_ns += act->ns;
	}
	p->t.gpu_ns += act->ns;
	return add_to(p, &k, act->ns);
}

int profile__add_launch(struct profile *p, __u32 pid, __u32 stack_id, const char *api,
			const struct profile_under *under, const char *leaf)
{
	struct agg_key k = { .pid = pid, .stack_id = stack_id, .api = profile__intern(p, api),
			     .reason = profile__intern(p, stack_id ? NULL : "stack table full"),
			     .name = profile__intern(p, leaf ? leaf : GP_PROFILE_NO_RECORD),
			     .device = NO_DEVICE, .stream = NO_DEVICE };

	if (stack_id && under && under->stack)
		key_under(p, &k, 0, under);
	p->t.launches_unrecorded++;
	return add_to(p, &k, 0);
}

/* ------------------------------------------------------------ cubins */

__u64 profile__kernel_hash(const char *name, size_t len)
{
	__u64 h = 0xcbf29ce484222325ull; /* FNV-1a, then mixed */

	for (size_t i = 0; i < len; i++) {
		h ^= (__u8)name[i];
		h *= 0x100000001b3ull;
	}
	return u64map__hash(h);
}

/* A cubin's kernels, read whole before any is kept: a cubin that does not parse adds nothing. */
struct cubin_read {
	struct { __u64 key; __u32 index; } *k;
	size_t n, cap;
};

static int cubin_read__kernel(void *ctx, const char *name, size_t len, __u32 index)
{
	struct cubin_read *r = ctx;
	__typeof__(r->k) grown = grow__array(r->k, &r->cap, r->n + 1, sizeof(*r->k), 64);

	if (!grown)
		return -ENOMEM;
	r->k = grown;
	r->k[r->n].key = profile__kernel_hash(name, len);
	r->k[r->n++].index = index;
	return 0;
}

struct cubin_add {
	struct profile *p;
	struct proc_info *pi;
	__u64 cubin;           /* index in cubin_crcs */
	bool dropped;
};

static void cubin_add__kernel(struct cubin_add *a, __u64 key, __u32 index)
{
	struct profile *p = a->p;
	__u64 old;

	if (u64map__get(&a->pi->kernels, key, &old)) {
		/*
		 * One name in two different cubins of one process (two libraries
		 * built from the same template, say). CUPTI's record gives only the
		 * name, so which one ran is unknown here; picking the first loaded
		 * would be a guess that is sometimes wrong, and a wrong build id is
		 * worse than none (as a wrong stack is worse than a short one). The
		 * kernel keeps no cubin and the ambiguity is counted. The same cubin
		 * again, or a name defined twice in one cubin, changes nothing.
		 */
		if (old != KERNEL_AMBIGUOUS && old >> 32 != a->cubin) {
			u64map__put(&a->pi->kernels, key, KERNEL_AMBIGUOUS); /* replaces: cannot fail */
			p->cs.kernels_ambiguous++;
		}
		return;
	}
	mem_hold__join(&a->pi->kernels_held, &p->kernel_share);
	if (p->cs.kernels >= MAX_KERNELS || !mem_hold__allows(&a->pi->kernels_held, 1) ||
	    u64map__put(&a->pi->kernels, key, a->cubin << 32 | index)) {
		p->cs.kernels_dropped++;
		a->dropped = true;
		return;
	}
	mem_hold__add(&a->pi->kernels_held, 1);
	p->cs.kernels++;
}

/* crc's index, a new one counted against pi's share of the table (-E2BIG past it). */
static int cubin_add__index(struct profile *p, struct proc_info *pi, __u64 crc, __u64 *ret_idx)
{
	size_t before = p->nr_cubins;
	int err;

	if (!u64map__get(&p->cubin_idx, crc, NULL)) {
		mem_hold__join(&pi->cubins_held, &p->cubin_share);
		if (!mem_hold__allows(&pi->cubins_held, 1)) {
			p->cs.cubins_dropped++;
			p->cs.cubins_over_share++;
			return -E2BIG;
		}
	}
	err = profile__cubin_index(p, crc, ret_idx);
	if (!err && p->nr_cubins > before)
		mem_hold__add(&pi->cubins_held, 1);
	return err;
}

int profile__cubin_index(struct profile *p, __u64 crc, __u64 *ret_idx)
{
	__u64 idx, *n;
	int err;

	if (u64map__get(&p->cubin_idx, crc, &idx)) {
		*ret_idx = idx;
		return 0;
	}
	n = grow__array_zeroed(p->cubin_crcs, &p->cap_cubins, p->nr_cubins + 1, sizeof(*n), 64);
	if (!n)
		return -ENOMEM;
	p->cubin_crcs = n;
	err = u64map__put(&p->cubin_idx, crc, p->nr_cubins);
	if (err) {
		if (err == -E2BIG)
			p->cs.cubins_dropped++;
		return err;
	}
	p->cubin_crcs[p->nr_cubins] = crc;
	*ret_idx = p->nr_cubins++;
	p->cs.cubins++;
	return 0;
}

int profile__add_cubin(struct profile *p, __u32 pid, __u64 crc, const void *elf, size_t size)
{
	struct cubin_add a = { .p = p };
	struct cubin_read r = { 0 };
	int err;

	if (!crc || !elf)
		return -EINVAL;
	err = cubin_syms__parse(elf, size, cubin_read__kernel, &r);
	if (err) {
		free(r.k);
		if (err != -ENOMEM)
			p->cs.cubins_bad++; /* indexed never: garbage takes no room */
		return err;
	}
	err = profile__proc(p, pid, &a.pi);
	if (!err && !a.pi->kernels.cap)
		err = u64map__init(&a.pi->kernels, MAX_KERNELS_PER_PROC);
	if (!err)
		err = cubin_add__index(p, a.pi, crc, &a.cubin);
	for (size_t i = 0; !err && i < r.n; i++)
		cubin_add__kernel(&a, r.k[i].key, r.k[i].index);
	free(r.k);
	if (err)
		return err;
	if ((err = profile__add_cubin_lines(p, pid, crc, elf, size)))
		return err;
	return a.dropped ? -E2BIG : 0;
}

void profile__cubin_stats(const struct profile *p, struct profile_cubin_stats *ret)
{
	*ret = p->cs;
}

void profile__totals(const struct profile *p, struct profile_totals *ret)
{
	*ret = p->t;
	ret->samples = blobtab__count(p->keys);
}

void profile__reset_samples(struct profile *p)
{
	struct blobtab *fresh;

	if (blobtab__new(MAX_KEYS, SIZE_MAX, &fresh))
		return;
	blobtab__destroy(p->keys);
	p->keys = fresh;
	if (p->vals) /* none before the first sample */
		memset(p->vals, 0, p->cap_vals * sizeof(*p->vals));
	memset(&p->t, 0, sizeof(p->t));
	pc_table__reset(&p->pc);
}

/* ------------------------------------------------------------ report */

#define PC_REPORT_KERNELS 5 /* kernels whose stall reasons the report lists */

struct kernel_row {
	__u32 name;
	__u64 ns, count;
	__u32 best_key;   /* key with the most GPU time for this kernel */
	__u64 best_ns;
};

static int cmp_rows(const void *a, const void *b)
{
	const struct kernel_row *x = a, *y = b;

	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : (x->name > y->name) - (x->name < y->name);
}

/* A CUDA library frame says little about who launched: skip past those. */
static bool vendor_file(const char *file)
{
	const char *base = strrchr(file, '/');

	base = base ? base + 1 : file;
	return !strncmp(base, "libcu", 5) || !strncmp(base, "libnv", 5) ||
	       !strncmp(base, "libcudnn", 8) || !strncmp(base, "libtorch_cuda", 13);
}

static void site_of(const struct profile *p, const struct agg_key *k, char *buf, size_t len)
{
	const struct frame_key *fk, *first = NULL;
	__u64 idx;

	if (!k->stack_id) {
		snprintf(buf, len, "[unattributed: %s]", str_of(p, k->reason));
		return;
	}
	if (!u64map__get(&p->stack_idx, k->stack_id, &idx) || !p->stacks[idx].n) {
		snprintf(buf, len, "%s", str_of(p, k->api));
		return;
	}
	for (__u32 i = 0; i < p->stacks[idx].n; i++) {
		fk = blobtab__get(p->frames, p->stacks[idx].frames[i], NULL);
		if (!first)
			first = fk;
		if (!vendor_file(str_of(p, fk->file))) {
			first = fk;
			break;
		}
	}
	if (first->line)
		snprintf(buf, len, "%s (%s:%u)", str_of(p, first->name), str_of(p, first->file), first->line);
	else
		snprintf(buf, len, "%s", str_of(p, first->name));
}

void profile__report(const struct profile *p, FILE *f, unsigned top)
{
	size_t nkeys = blobtab__count(p->keys), nrows = 0;
	struct kernel_row *rows = calloc(nkeys ? nkeys : 1, sizeof(*rows));
	struct u64map row_of;
	__u64 total = 0;

	if (!rows || u64map__init(&row_of, 0)) {
		free(rows);
		fprintf(f, "report: out of memory\n");
		return;
	}
	for (__u32 id = 1; id <= nkeys; id++) {
		const struct agg_key *k = blobtab__get(p->keys, id, NULL);
		const struct agg_val *v = &p->vals[id - 1];
		__u64 r;

		if (!v->count)
			continue;
		if (!u64map__get(&row_of, k->name, &r)) {
			r = nrows++;
			rows[r].name = k->name;
			u64map__put(&row_of, k->name, r);
		}
		rows[r].ns += v->ns;
		rows[r].count += v->count;
		total += v->ns;
		if (v->ns >= rows[r].best_ns) {
			rows[r].best_ns = v->ns;
			rows[r].best_key = id;
		}
	}
	qsort(rows, nrows, sizeof(*rows), cmp_rows);
	fprintf(f, "%-6s %12s %10s %12s  %-40s %s\n", "share", "gpu_time_ms", "count", "mean_us",
		"kernel", "heaviest launch site");
	for (size_t i = 0; i < nrows && i < top; i++) {
		char *name = demangle__or_copy(str_of(p, rows[i].name));
		char site[512];

		site_of(p, blobtab__get(p->keys, rows[i].best_key, NULL), site, sizeof(site));
		fprintf(f, "%5.1f%% %12.3f %10llu %12.3f  %-40.40s %s\n",
			total ? 100.0 * rows[i].ns / total : 0.0, rows[i].ns / 1e6, rows[i].count,
			rows[i].count ? rows[i].ns / 1e3 / rows[i].count : 0.0, name ? name : "?", site);
		free(name);
	}
	if (nrows > top)
		fprintf(f, "  ... %zu more kernels\n", nrows - top);
	/* PC sampling: where the heaviest kernels' warps stall */
	if (nrows) {
		__u32 names[PC_REPORT_KERNELS];
		size_t n = nrows < PC_REPORT_KERNELS ? nrows : PC_REPORT_KERNELS;

		for (size_t i = 0; i < n; i++)
			names[i] = rows[i].name;
		pc_table__report(p, f, names, n);
	}
	/* Losses of the kernel -> cubin link (DESIGN.md invariant 4). */
	if (p->cs.cubins || p->cs.cubins_dropped)
		fprintf(f, "cubins: cubins=%llu cubins_dropped=%llu cubins_over_share=%llu cubins_bad=%llu "
			"cubin_kernels=%llu kernels_ambiguous=%llu kernels_dropped=%llu\n", p->cs.cubins,
			p->cs.cubins_dropped, p->cs.cubins_over_share, p->cs.cubins_bad, p->cs.kernels,
			p->cs.kernels_ambiguous, p->cs.kernels_dropped);
	/* Source lines, read for PC samples: rows held, and cubins not read whole. */
	if (p->lines)
		fprintf(f, "cubin lines: rows=%zu cubins_cut=%llu\n", profile__lines_held(p),
			(unsigned long long)profile__lines_cut(p));
	u64map__fini(&row_of);
	free(rows);
}
