/* SPDX-License-Identifier: MIT */
/*
 * Writing a profile as pprof: each sample's kernel leaf (in its cubin's
 * mapping when one cubin of the process defines it), its launch API, its
 * frames and a root per process, with pid, comm, device, stream, graph and
 * cgroup labels; the executable under the most GPU time is the main binary.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/profile/profile.h"
#include "user/profile/profile_internal.h"
#include "user/output/pprof.h"
#include "user/symbolize/demangle.h"
#include "user/util/blobtab.h"
#include "user/util/u64map.h"

struct writer {
	const struct profile *p;
	struct pprof *pp;
	struct u64map fn_loc;   /* string id of a synthetic frame -> location id */
	struct u64map frame_loc;/* frame id -> location id */
	struct u64map file_map; /* file string id -> mapping id */
	struct u64map cubin_map;/* cubin index -> mapping id */
	struct u64map cubin_start; /* cubin index -> its mapping's start */
	struct u64map kernel_loc;  /* cubin index << 32 | name string id -> location id */
	struct u64map exe_ns;      /* mapping id of an executable -> GPU ns under it */
	uint64_t main_map;         /* of those, the one with the most GPU time */
	__u64 main_ns;
};

/* pprof ids are uint64_t, map values __u64: the two differ in C's eyes only. */
static bool id_get(const struct u64map *m, __u64 key, uint64_t *ret)
{
	__u64 v;

	if (!u64map__get(m, key, &v))
		return false;
	*ret = v;
	return true;
}

static int synthetic_loc(struct writer *w, __u32 name_id, const char *system_name, uint64_t *ret)
{
	uint64_t fn, loc;
	char *pretty;
	int err;

	if (id_get(&w->fn_loc, name_id, ret))
		return 0;
	pretty = demangle__or_copy(str_of(w->p, name_id));
	if (!pretty)
		return -ENOMEM;
	err = pprof__add_function(w->pp, pretty, system_name ? system_name : pretty, "", 0, &fn);
	free(pretty);
	if (err)
		return err;
	err = pprof__add_location(w->pp, 0, 0, &(struct pprof_line){ .function_id = fn }, 1, &loc);
	if (err)
		return err;
	*ret = loc;
	return u64map__put(&w->fn_loc, name_id, loc);
}

static int frame_loc(struct writer *w, __u32 frame_id, uint64_t *ret)
{
	const struct frame_key *k = blobtab__get(w->p->frames, frame_id, NULL);
	uint64_t fn, loc, map = 0;
	int err;

	if (id_get(&w->frame_loc, frame_id, ret))
		return 0;
	if (k->file && !id_get(&w->file_map, k->file, &map)) {
		struct pprof_mapping m = { .start = 0, .limit = UINT64_MAX >> 1,
					   .filename = str_of(w->p, k->file),
					   .build_id = str_of(w->p, k->build_id), .has_functions = true };

		err = pprof__add_mapping(w->pp, &m, &map);
		if (err || (err = u64map__put(&w->file_map, k->file, map)))
			return err;
	}
	err = pprof__add_function(w->pp, str_of(w->p, k->name), str_of(w->p, k->name),
				  str_of(w->p, k->file), 0, &fn);
	if (err)
		return err;
	err = pprof__add_location(w->pp, map, k->addr,
				  &(struct pprof_line){ .function_id = fn, .line = k->line }, 1, &loc);
	if (err)
		return err;
	*ret = loc;
	return u64map__put(&w->frame_loc, frame_id, loc);
}

static const struct proc_info *proc_of(const struct profile *p, __u32 pid)
{
	__u64 idx;

	return u64map__get(&p->procs, pid, &idx) ? &p->proc_infos[idx] : NULL;
}

/* The mapping of a cubin, made on first use: ranges in order of first use. */
static int cubin_mapping(struct writer *w, __u64 cubin, uint64_t *ret_id, __u64 *ret_start)
{
	__u64 crc = w->p->cubin_crcs[cubin], start;
	char file[40], build_id[17];
	uint64_t map;
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
static int kernel_loc(struct writer *w, __u32 pid, __u32 name_id, uint64_t *ret)
{
	const struct proc_info *pi = proc_of(w->p, pid);
	const char *name = str_of(w->p, name_id);
	uint64_t fn, loc, map;
	__u64 v, start, key;
	char *pretty;
	int err;

	/* "[memcpy HtoD]" and friends are labels, never symbols. */
	if (!pi || !pi->kernels.cap || name[0] == '[' ||
	    !u64map__get(&pi->kernels, profile__kernel_hash(name, strlen(name)), &v) ||
	    v == KERNEL_AMBIGUOUS)
		return synthetic_loc(w, name_id, NULL, ret);
	key = (v >> 32) << 32 | name_id;
	if (id_get(&w->kernel_loc, key, ret))
		return 0;
	err = cubin_mapping(w, v >> 32, &map, &start);
	if (err)
		return err;
	pretty = demangle__or_copy(name);
	if (!pretty)
		return -ENOMEM;
	err = pprof__add_function(w->pp, pretty, name, "", 0, &fn);
	free(pretty);
	if (err)
		return err;
	err = pprof__add_location(w->pp, map, start + (__u32)v,
				  &(struct pprof_line){ .function_id = fn }, 1, &loc);
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
static bool in_program(const struct writer *w, const struct frame_key *k)
{
	const char *file = str_of(w->p, k->file), *base = strrchr(file, '/'), *so;

	base = base ? base + 1 : file;
	so = strstr(base, ".so");
	return k->addr && file[0] && file[0] != '[' && !(so && (so[3] == '\0' || so[3] == '.'));
}

/*
 * The native frame nearest a stack's root outside every shared object lies
 * in the program's executable (python3.12's _start, a thread's own function):
 * the executable under the most GPU time becomes the profile's main binary,
 * whose file and build id pprof shows first (without it, the first cubin a
 * sample named).
 */
static int count_exe(struct writer *w, const struct stack *st, __u64 ns)
{
	const struct frame_key *k = NULL;
	uint64_t map;
	__u64 total = 0;
	__u32 i;
	int err;

	for (i = st->n; i-- > 0; k = NULL) {
		k = blobtab__get(w->p->frames, st->frames[i], NULL);
		if (in_program(w, k))
			break;
	}
	if (!k || !id_get(&w->file_map, k->file, &map))
		return 0;
	u64map__get(&w->exe_ns, map, &total);
	total += ns;
	err = u64map__put(&w->exe_ns, map, total);
	if (!err && total > w->main_ns) {
		w->main_ns = total;
		w->main_map = map;
	}
	return err;
}

static int write_sample(struct writer *w, const struct agg_key *k, const struct agg_val *v)
{
	const struct profile *p = w->p;
	const struct proc_info *pi = proc_of(p, k->pid);
	const struct stack *st = NULL;
	uint64_t locs[GP_PROFILE_MAX_LOCS];
	__u64 idx;
	size_t n = 0;
	struct pprof_label labels[6];
	size_t nl = 0;
	int64_t values[2] = { (int64_t)v->ns, (int64_t)v->count };
	char root[96], unattr[160];
	int err;

	if (k->stack_id && u64map__get(&p->stack_idx, k->stack_id, &idx))
		st = &p->stacks[idx];
	err = kernel_loc(w, k->pid, k->name, &locs[n++]);
	if (err)
		return err;
	if (!k->stack_id) {
		snprintf(unattr, sizeof(unattr), "[unattributed: %s]", str_of(p, k->reason));
		err = synthetic_loc(w, profile__intern((struct profile *)p, unattr), NULL, &locs[n++]);
	} else {
		err = synthetic_loc(w, k->api, NULL, &locs[n++]);
	}
	if (err)
		return err;
	for (__u32 i = 0; st && i < st->n && n < GP_PROFILE_MAX_LOCS - 2; i++) {
		err = frame_loc(w, st->frames[i], &locs[n++]);
		if (err)
			return err;
	}
	if (st) {
		err = count_exe(w, st, v->ns);
		if (err)
			return err;
	}
	if (st && st->truncated) {
		err = synthetic_loc(w, profile__intern((struct profile *)p, "[truncated stack]"), NULL,
				    &locs[n++]);
		if (err)
			return err;
	}
	snprintf(root, sizeof(root), "%s (pid %u)", pi && pi->comm ? str_of(p, pi->comm) : "?", k->pid);
	err = synthetic_loc(w, profile__intern((struct profile *)p, root), NULL, &locs[n++]);
	if (err)
		return err;
	labels[nl++] = (struct pprof_label){ .key = "pid", .num = k->pid };
	if (pi && pi->comm)
		labels[nl++] = (struct pprof_label){ .key = "comm", .str = str_of(p, pi->comm) };
	if (k->device != NO_DEVICE) {
		labels[nl++] = (struct pprof_label){ .key = "device", .num = k->device };
		labels[nl++] = (struct pprof_label){ .key = "stream", .num = k->stream };
	}
	if (k->graph_id)
		labels[nl++] = (struct pprof_label){ .key = "graph", .num = k->graph_id };
	if (pi && pi->cgroup)
		labels[nl++] = (struct pprof_label){ .key = "cgroup", .str = str_of(p, pi->cgroup) };
	return pprof__add_sample(w->pp, locs, n, values, labels, nl);
}

int profile__write_pprof(const struct profile *p, const char *path, __u64 time_ns, __u64 duration_ns)
{
	struct writer w = { .p = p };
	size_t nkeys = blobtab__count(p->keys);
	int err = -ENOMEM;

	w.pp = pprof__new();
	if (!w.pp || u64map__init(&w.fn_loc, 0) || u64map__init(&w.frame_loc, 0) ||
	    u64map__init(&w.file_map, 0) || u64map__init(&w.cubin_map, 0) ||
	    u64map__init(&w.cubin_start, 0) || u64map__init(&w.kernel_loc, 0) ||
	    u64map__init(&w.exe_ns, 0))
		goto out;
	if ((err = pprof__add_sample_type(w.pp, "gpu_time", "nanoseconds")) ||
	    (err = pprof__add_sample_type(w.pp, "launches", "count")) ||
	    (err = pprof__set_default_sample_type(w.pp, "gpu_time")))
		goto out;
	pprof__set_time(w.pp, (int64_t)time_ns, (int64_t)duration_ns);
	for (__u32 id = 1; id <= nkeys; id++) {
		const struct agg_key *k = blobtab__get(p->keys, id, NULL);

		if (!p->vals[id - 1].count)
			continue;
		err = write_sample(&w, k, &p->vals[id - 1]);
		if (err)
			goto out;
	}
	pprof__set_main_mapping(w.pp, w.main_map);
	err = pprof__write_file(w.pp, path);
out:
	u64map__fini(&w.fn_loc);
	u64map__fini(&w.frame_loc);
	u64map__fini(&w.file_map);
	u64map__fini(&w.cubin_map);
	u64map__fini(&w.cubin_start);
	u64map__fini(&w.kernel_loc);
	u64map__fini(&w.exe_ns);
	pprof__destroy(w.pp);
	return err;
}
