/* SPDX-License-Identifier: MIT */
/*
 * A profile written as pprof (profile.h's profile__write_pprof): each
 * sample's kernel leaf (in its cubin's mapping when one cubin of the
 * process defines it), its launch API, its frames and a root per process,
 * with pid, comm, device, stream, graph and cgroup labels; the executable
 * under the most GPU time is the main binary. It reads the profile only
 * through profile__each_sample; pprof.c de-duplicates what it adds, and the
 * maps below only spare adding (and demangling) the same thing again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/profile/profile.h"
#include "user/output/pprof.h"
#include "user/symbolize/demangle.h"
#include "user/util/grow.h"
#include "user/util/u64map.h"

/*
 * Cubin mappings get synthetic address ranges above every CPU mapping (those
 * span [0, 2^63)), one CUBIN_SPAN each (the profile holds at most 2^16
 * cubins), so no two ranges overlap; a kernel's address is its mapping's
 * start plus its symbol index in the cubin; a sampled instruction's (PC
 * sampling), its start plus INSTR_BASE plus the symbol index << 24 plus
 * its offset in the function (the last 24 bits of it).
 */
#define CUBIN_BASE (1ull << 63)
#define CUBIN_SPAN (1ull << 46)
#define INSTR_BASE (1ull << 45)
#define INSTR_OFFSET_BITS 24

struct writer {
	const struct profile *p;
	struct pprof *pp;
	struct u64map fn_loc;      /* string id of a kernel or launch API -> location id */
	struct u64map unattr_loc;  /* string id of a reason -> its [unattributed: ...] location */
	struct u64map root_loc;    /* pid -> its root's location */
	uint64_t truncated_loc;    /* [truncated stack], 0 until used */
	struct u64map frame_loc;   /* frame id -> location id */
	struct u64map file_map;    /* file string id -> mapping id */
	struct u64map cubin_map;   /* cubin index -> mapping id */
	struct u64map cubin_start; /* cubin index -> its mapping's start */
	struct u64map kernel_loc;  /* cubin index << 32 | name string id -> location id */
	struct u64map exe_ns;      /* mapping id of an executable -> GPU ns under it */
	uint64_t main_map;         /* of those, the one with the most GPU time */
	__u64 main_ns;
	/* PC sampling: the profile's samples, each kernel's shared among its launches */
	bool pc;
	struct pc_item *pcs;       /* profile__each_pc's, in order */
	size_t npc, cap_pcs;
	struct u64map pc_head;     /* pid << 32 | kernel string id -> its first pc_item + 1 */
	struct u64map pc_total;    /* the same key -> the GPU ns of its samples */
	struct u64map pc_cum;      /* the same key -> of those, the ns written so far */
};

struct pc_item {
	struct profile_pc pc;
	size_t next;               /* the next of the same kernel + 1, 0: none */
};

/* The maps in the order they are made and freed. */
#define WRITER_MAPS(w) { &(w)->fn_loc, &(w)->unattr_loc, &(w)->root_loc, &(w)->frame_loc, \
			 &(w)->file_map, &(w)->cubin_map, &(w)->cubin_start, &(w)->kernel_loc, \
			 &(w)->exe_ns, &(w)->pc_head, &(w)->pc_total, &(w)->pc_cum }

/* pprof ids are uint64_t, map values __u64: the two differ in C's eyes only. */
static bool id_get(const struct u64map *m, __u64 key, uint64_t *ret)
{
	__u64 v;

	if (!u64map__get(m, key, &v))
		return false;
	*ret = v;
	return true;
}

/*
 * A location at addr in mapping map (0: none) of a function named name,
 * demangled; system_name: the name as the binary spells it (NULL: the same).
 */
static int named_loc(struct writer *w, const char *name, const char *system_name, uint64_t map,
		     __u64 addr, uint64_t *ret)
{
	uint64_t fn;
	char *pretty;
	int err;

	pretty = demangle__or_copy(name);
	if (!pretty)
		return -ENOMEM;
	err = pprof__add_function(w->pp, pretty, system_name ? system_name : pretty, "", 0, &fn);
	free(pretty);
	if (err)
		return err;
	return pprof__add_location(w->pp, map, addr, &(struct pprof_line){ .function_id = fn }, 1,
				   ret);
}

/* A location outside every mapping, named name (demangled). */
static int synthetic_loc(struct writer *w, const char *name, uint64_t *ret)
{
	return named_loc(w, name, NULL, 0, 0, ret);
}

/* The synthetic location of name, made once per key of m. */
static int synthetic_loc_by(struct writer *w, struct u64map *m, __u64 key, const char *name,
			    uint64_t *ret)
{
	int err;

	if (id_get(m, key, ret))
		return 0;
	err = synthetic_loc(w, name, ret);
	return err ? err : u64map__put(m, key, *ret);
}

static int frame_loc(struct writer *w, __u32 frame_id, uint64_t *ret)
{
	struct profile_frame f;
	uint64_t fn, loc, map = 0;
	__u32 file;
	int err;

	if (id_get(&w->frame_loc, frame_id, ret))
		return 0;
	profile__frame_of(w->p, frame_id, &f, &file);
	if (file && !id_get(&w->file_map, file, &map)) {
		struct pprof_mapping m = { .start = 0, .limit = UINT64_MAX >> 1, .filename = f.file,
					   .build_id = f.build_id, .has_functions = true };

		err = pprof__add_mapping(w->pp, &m, &map);
		if (err || (err = u64map__put(&w->file_map, file, map)))
			return err;
	}
	err = pprof__add_function(w->pp, f.name, f.name, f.file, 0, &fn);
	if (err)
		return err;
	err = pprof__add_location(w->pp, map, f.addr,
				  &(struct pprof_line){ .function_id = fn, .line = f.line }, 1, &loc);
	if (err)
		return err;
	*ret = loc;
	return u64map__put(&w->frame_loc, frame_id, loc);
}

/* The mapping of a cubin (its index and CRC), made on first use: ranges in order of first use. */
static int cubin_mapping(struct writer *w, __u32 cubin, __u64 crc, uint64_t *ret_id,
			 __u64 *ret_start)
{
	char file[40], build_id[17];
	uint64_t map;
	__u64 start;
	int err;

	if (id_get(&w->cubin_map, cubin, ret_id)) {
		u64map__get(&w->cubin_start, cubin, ret_start);
		return 0;
	}
	start = CUBIN_BASE + u64map__len(&w->cubin_map) * CUBIN_SPAN;
	snprintf(build_id, sizeof(build_id), "%016llx", (unsigned long long)crc);
	snprintf(file, sizeof(file), "[cubin %s]", build_id);
	err = pprof__add_mapping(w->pp, &(struct pprof_mapping){ .start = start,
							  .limit = start + CUBIN_SPAN,
							  .filename = file, .build_id = build_id,
							  .has_functions = true }, &map);
	if (err || (err = u64map__put(&w->cubin_map, cubin, map)) ||
	    (err = u64map__put(&w->cubin_start, cubin, start)))
		return err;
	*ret_id = map;
	*ret_start = start;
	return 0;
}

/*
 * The leaf: a kernel whose name a cubin of its process defines sits in that
 * cubin's mapping; anything else (copies, kernels of unknown or ambiguous
 * cubin) is a synthetic location outside every mapping.
 */
static int kernel_loc(struct writer *w, const struct profile_sample *s, uint64_t *ret)
{
	uint64_t loc, map;
	__u64 start, key = (__u64)s->cubin << 32 | s->kernel_id;
	int err;

	if (!s->in_cubin)
		return synthetic_loc_by(w, &w->fn_loc, s->kernel_id, s->kernel, ret);
	if (id_get(&w->kernel_loc, key, ret))
		return 0;
	err = cubin_mapping(w, s->cubin, s->cubin_crc, &map, &start);
	if (!err)
		err = named_loc(w, s->kernel, s->kernel, map, start + s->cubin_sym, &loc);
	if (err)
		return err;
	*ret = loc;
	return u64map__put(&w->kernel_loc, key, loc);
}

/*
 * A native frame (Python frames have no address: their "file" may be
 * "<frozen runpy>", "<string>" or a console script) of a file that is no
 * shared object ("libc.so.6", "_C.cpython-312-x86_64-linux-gnu.so").
 */
static bool in_program(const struct profile_frame *f)
{
	const char *base = strrchr(f->file, '/'), *so;

	base = base ? base + 1 : f->file;
	so = strstr(base, ".so");
	return f->addr && f->file[0] && f->file[0] != '[' && !(so && (so[3] == '\0' || so[3] == '.'));
}

/*
 * The native frame nearest a stack's root outside every shared object lies
 * in the program's executable (python3.12's _start, a thread's own function):
 * the executable under the most GPU time becomes the profile's main binary,
 * whose file and build id pprof shows first (without it, the first cubin a
 * sample named).
 */
static int count_exe(struct writer *w, const struct profile_sample *s)
{
	struct profile_frame f;
	__u32 i, file = 0;
	uint64_t map;
	__u64 total = 0;
	int err;

	for (i = s->nframes; i-- > 0; file = 0) {
		profile__frame_of(w->p, s->frames[i], &f, &file);
		if (in_program(&f))
			break;
	}
	if (!file || !id_get(&w->file_map, file, &map))
		return 0;
	u64map__get(&w->exe_ns, map, &total);
	total += s->ns;
	err = u64map__put(&w->exe_ns, map, total);
	if (!err && total > w->main_ns) {
		w->main_ns = total;
		w->main_map = map;
	}
	return err;
}

/*
 * An inner stack (a graph replay's kernel: the launch that captured its
 * node; an autograd thread's launch: that thread's): API, frames, leaf
 * first, up to the location `end`, then the marker the next stack (or the
 * sample's own API and frames) follows.
 */
static int under_locs(struct writer *w, const struct profile_sample_under *u, size_t end,
		      uint64_t *locs, size_t *n)
{
	int err = synthetic_loc_by(w, &w->fn_loc, u->api_id, u->api ? u->api : "?",
				   &locs[(*n)++]);
	__u32 i;

	for (i = 0; !err && u->frames && i < u->nframes && *n < end - 1; i++)
		err = frame_loc(w, u->frames[i], &locs[(*n)++]);
	/* A capture half cut here, or cut when it was walked, says so. */
	if (!err && u->frames && (i < u->nframes || u->truncated)) {
		if (!w->truncated_loc)
			err = synthetic_loc(w, "[truncated stack]", &w->truncated_loc);
		locs[(*n)++] = w->truncated_loc;
	}
	if (!err)
		err = synthetic_loc_by(w, &w->fn_loc, u->marker_id,
				       u->marker ? u->marker : "[under]", &locs[(*n)++]);
	return err;
}

/* The leaf, the launch API (or why none), the frames and the markers after them. */
static int sample_locs(struct writer *w, const struct profile_sample *s, uint64_t *locs,
		       size_t *ret_n)
{
	char unattr[160], root[96];
	size_t n = 0;
	int err;

	err = kernel_loc(w, s, &locs[n++]);
	/*
	 * The inner stacks end by half the locations, the second by three
	 * quarters; the sample's own frames and root take the rest: at most
	 * 1 + 160 + 80 + 79 = GP_PROFILE_MAX_LOCS, locs' size.
	 */
	for (unsigned l = 0; !err && s->stack_id && l < PROFILE_UNDERS && s->under[l].stack; l++)
		err = under_locs(w, &s->under[l],
				 l ? GP_PROFILE_MAX_LOCS * 3 / 4 : GP_PROFILE_MAX_LOCS / 2, locs, &n);
	if (!err && !s->stack_id) {
		snprintf(unattr, sizeof(unattr), "[unattributed: %s]", s->reason);
		err = synthetic_loc_by(w, &w->unattr_loc, s->reason_id, unattr, &locs[n++]);
	} else if (!err) {
		err = synthetic_loc_by(w, &w->fn_loc, s->api_id, s->api, &locs[n++]);
	}
	for (__u32 i = 0; !err && s->frames && i < s->nframes && n < GP_PROFILE_MAX_LOCS - 2; i++)
		err = frame_loc(w, s->frames[i], &locs[n++]);
	if (!err && s->frames)
		err = count_exe(w, s);
	if (!err && s->frames && s->truncated) {
		if (!w->truncated_loc)
			err = synthetic_loc(w, "[truncated stack]", &w->truncated_loc);
		locs[n++] = w->truncated_loc;
	}
	snprintf(root, sizeof(root), "%s (pid %u)", s->comm ? s->comm : "?", s->pid);
	if (!err)
		err = synthetic_loc_by(w, &w->root_loc, s->pid, root, &locs[n++]);
	*ret_n = n;
	return err;
}

/* ------------------------------------------------------------ PC sampling */

static __u64 pc_key(__u32 pid, __u32 kernel_id)
{
	return (__u64)pid << 32 | kernel_id;
}

/* Each of the profile's PC entries, listed by its process and kernel. */
static int pc_gather(void *ctx, const struct profile_pc *pc)
{
	struct writer *w = ctx;
	struct pc_item *grown = grow__array(w->pcs, &w->cap_pcs, w->npc + 1, sizeof(*w->pcs), 256);
	__u64 key = pc_key(pc->pid, pc->kernel_id), head = 0;

	if (!grown)
		return -ENOMEM;
	w->pcs = grown;
	u64map__get(&w->pc_head, key, &head);
	w->pcs[w->npc++] = (struct pc_item){ .pc = *pc, .next = head };
	return u64map__put(&w->pc_head, key, w->npc);
}

/* The GPU time of each (process, kernel) that has PC samples. */
static int pc_count(void *ctx, const struct profile_sample *s)
{
	struct writer *w = ctx;
	__u64 key = pc_key(s->pid, s->kernel_id), total = 0;

	if (!s->has_device || !u64map__get(&w->pc_head, key, &total))
		return 0;
	total = 0;
	u64map__get(&w->pc_total, key, &total);
	/* saturated: a process's GPU times are its own to choose */
	return u64map__put(&w->pc_total, key, total + s->ns < total ? UINT64_MAX : total + s->ns);
}

/*
 * A sampled instruction: "kernel+0xOFF" (demangled), in its cubin's mapping
 * when one cubin of the process defines the kernel and its CRC is the
 * samples' (else outside every mapping).
 */
static int instr_loc(struct writer *w, const struct profile_pc *pc, uint64_t *ret)
{
	char *pretty = demangle__or_copy(pc->kernel), *name = NULL;
	uint64_t fn, map = 0;
	__u64 start = 0, addr = 0;
	int err = 0;

	if (!pretty || asprintf(&name, "%s+0x%llx", pretty, (unsigned long long)pc->offset) < 0) {
		free(pretty);
		return -ENOMEM;
	}
	free(pretty);
	if (profile_pc__placed(pc)) {
		err = cubin_mapping(w, pc->cubin, pc->crc, &map, &start);
		addr = start + INSTR_BASE + ((__u64)pc->cubin_sym << INSTR_OFFSET_BITS) +
		       (pc->offset & ((1ull << INSTR_OFFSET_BITS) - 1));
	}
	/* Its source line where the cubin has them (-lineinfo): pprof -list and -lines read it. */
	if (!err)
		err = pprof__add_function(w->pp, name, name, pc->file ? pc->file : "", 0, &fn);
	if (!err)
		err = pprof__add_location(w->pp, map, addr,
					  &(struct pprof_line){ .function_id = fn,
								.line = pc->file ? pc->line : 0 },
					  1, ret);
	free(name);
	return err;
}

static struct pprof_label stall_label(const char *stall)
{
	return (struct pprof_label){ .key = "stall", .str = profile__stall_short(stall) };
}

/* x * num / den, the product in 128 bits: den > 0. */
static __u64 muldiv(__u64 x, __u64 num, __u64 den)
{
	return (__u64)((unsigned __int128)x * num / den);
}

/*
 * A GPU sample's share of its kernel's PC samples: each instruction's
 * samples times this sample's share of the kernel's GPU time in the
 * profile, as a difference of running totals rounded down, so the shares of
 * one instruction add up to its samples exactly. locs[0] is the room for
 * the instruction, the sample's own locations follow.
 */
static int pc_shares(struct writer *w, const struct profile_sample *s, uint64_t *locs, size_t n,
		     struct pprof_label *labels, size_t nl)
{
	__u64 key = pc_key(s->pid, s->kernel_id), head, total = 0, cum = 0, next;
	int err = 0;

	if (!w->pc || !s->has_device || !s->ns || !u64map__get(&w->pc_head, key, &head) ||
	    !u64map__get(&w->pc_total, key, &total) || !total)
		return 0;
	u64map__get(&w->pc_cum, key, &cum);
	/* Past a saturated total the running sum stops there: the shares never pass the samples. */
	next = cum + s->ns < cum || cum + s->ns > total ? total : cum + s->ns;
	for (__u64 i = head; i && !err; i = w->pcs[i - 1].next) {
		const struct profile_pc *pc = &w->pcs[i - 1].pc;
		__u64 share = muldiv(pc->samples, next, total) - muldiv(pc->samples, cum, total);
		int64_t values[3] = { 0, 0, share > INT64_MAX ? INT64_MAX : (int64_t)share };

		if (!share)
			continue;
		err = instr_loc(w, pc, &locs[0]);
		labels[nl] = stall_label(pc->stall);
		if (!err)
			err = pprof__add_sample(w->pp, locs, n + 1, values, labels, nl + 1);
	}
	return err ? err : u64map__put(&w->pc_cum, key, next);
}

/*
 * PC samples of a kernel with no GPU time in the profile (its launches
 * fell outside it, or its records were lost): under the kernel, a marker
 * and the process, not shared. One entry's sample.
 */
static int pc_unlaunched_one(struct writer *w, const struct profile_pc *pc)
{
	const char *comm = profile__proc_comm(w->p, pc->pid);
	struct profile_sample ks = { .pid = pc->pid, .kernel_id = pc->kernel_id, .kernel = pc->kernel,
				     .in_cubin = pc->in_cubin, .cubin = pc->cubin,
				     .cubin_crc = pc->crc, .cubin_sym = pc->cubin_sym };
	struct pprof_label labels[3] = { { .key = "pid", .num = pc->pid }, stall_label(pc->stall) };
	int64_t values[3] = { 0, 0, pc->samples > INT64_MAX ? INT64_MAX : (int64_t)pc->samples };
	uint64_t locs[4];
	size_t nl = 2;
	char root[96];
	int err;

	if (comm)
		labels[nl++] = (struct pprof_label){ .key = "comm", .str = comm };
	snprintf(root, sizeof(root), "%s (pid %u)", comm ? comm : "?", pc->pid);
	err = instr_loc(w, pc, &locs[0]);
	if (!err)
		err = kernel_loc(w, &ks, &locs[1]);
	if (!err)
		err = synthetic_loc(w, "[PC samples: no GPU time of this kernel in the profile]", &locs[2]);
	if (!err)
		err = synthetic_loc_by(w, &w->root_loc, pc->pid, root, &locs[3]);
	if (!err)
		err = pprof__add_sample(w->pp, locs, 4, values, labels, nl);
	return err;
}

static int pc_unlaunched(struct writer *w)
{
	int err = 0;

	for (size_t i = 0; i < w->npc && !err; i++) {
		const struct profile_pc *pc = &w->pcs[i].pc;
		__u64 total;

		/* The common case first: shared under its launches, nothing to build. */
		if (!u64map__get(&w->pc_total, pc_key(pc->pid, pc->kernel_id), &total) || !total)
			err = pc_unlaunched_one(w, pc);
	}
	return err;
}

static int write_sample(void *ctx, const struct profile_sample *s)
{
	struct writer *w = ctx;
	uint64_t all[GP_PROFILE_MAX_LOCS + 1], *locs = all + 1; /* all[0]: a sampled instruction */
	int64_t values[3] = { (int64_t)s->ns, (int64_t)s->count, 0 };
	struct pprof_label labels[7];
	size_t n, nl = 0;
	int err;

	err = sample_locs(w, s, locs, &n);
	if (err)
		return err;
	labels[nl++] = (struct pprof_label){ .key = "pid", .num = s->pid };
	if (s->comm)
		labels[nl++] = (struct pprof_label){ .key = "comm", .str = s->comm };
	if (s->has_device) {
		/*
		 * With a unit: pprof's readers drop a numeric label that has
		 * neither a value nor a unit, so device 0 and the null stream
		 * would not show.
		 */
		labels[nl++] = (struct pprof_label){ .key = "device", .num = s->device, .num_unit = "index" };
		labels[nl++] = (struct pprof_label){ .key = "stream", .num = s->stream, .num_unit = "id" };
	}
	if (s->graph_id)
		labels[nl++] = (struct pprof_label){ .key = "graph", .num = s->graph_id };
	if (s->cgroup)
		labels[nl++] = (struct pprof_label){ .key = "cgroup", .str = s->cgroup };
	err = pprof__add_sample(w->pp, locs, n, values, labels, nl);
	return err ? err : pc_shares(w, s, all, n, labels, nl);
}

static int writer__init(struct writer *w, const struct profile *p)
{
	struct u64map *maps[] = WRITER_MAPS(w);

	memset(w, 0, sizeof(*w));
	w->p = p;
	w->pp = pprof__new();
	if (!w->pp)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		if (u64map__init(maps[i], 0))
			return -ENOMEM;
	return 0;
}

static void writer__fini(struct writer *w)
{
	struct u64map *maps[] = WRITER_MAPS(w);

	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		u64map__fini(maps[i]);
	free(w->pcs);
	pprof__destroy(w->pp);
}

int profile__write_pprof(const struct profile *p, const char *path, __u64 time_ns,
			 __u64 duration_ns, const char *const *comments, size_t nr_comments)
{
	struct writer w;
	int err;

	err = writer__init(&w, p);
	w.pc = profile__has_pc(p);
	if (!err && !(err = pprof__add_sample_type(w.pp, "gpu_time", "nanoseconds")) &&
	    !(err = pprof__add_sample_type(w.pp, "launches", "count")) &&
	    !(err = w.pc ? pprof__add_sample_type(w.pp, "pc_samples", "count") : 0))
		err = pprof__set_default_sample_type(w.pp, "gpu_time");
	/* PC sampling: the samples by kernel, and each kernel's GPU time, before the samples go out */
	if (!err && w.pc && !(err = profile__each_pc(p, pc_gather, &w)))
		err = profile__each_sample(p, pc_count, &w);
	if (!err) {
		pprof__set_time(w.pp, (int64_t)time_ns, (int64_t)duration_ns);
		for (size_t i = 0; i < nr_comments && !err; i++)
			err = pprof__add_comment(w.pp, comments[i]);
	}
	if (!err)
		err = profile__each_sample(p, write_sample, &w);
	if (!err && w.pc)
		err = pc_unlaunched(&w);
	if (!err) {
		pprof__set_main_mapping(w.pp, w.main_map);
		err = pprof__write_file(w.pp, path);
	}
	writer__fini(&w);
	return err;
}
