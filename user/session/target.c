/* SPDX-License-Identifier: MIT */
/* The table of profiled processes (target.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/session/target.h"
#include "user/proc/proc.h"
#include "user/shm/shm_reader.h"
#include "user/symbolize/symbolize.h"
#include "user/unwind/memo.h"
#include "user/python/pycode.h"


int target_table__init(struct target_table *tt)
{
	memset(tt, 0, sizeof(*tt));
	return u64map__init(&tt->by_pid, 0);
}

static void target__free(struct target *t)
{
	if (!t)
		return;
	shm_reader__destroy(t->shm);
	if (t->shm_fd >= 0)
		close(t->shm_fd);
	u64map__fini(&t->names);
	target__drop_old_spaces(t);
	symbolizer__destroy(t->sym);
	unwind_memo__destroy(t->memo);
	pycode_cache__destroy(t->py);
	free(t);
}

void target_table__fini(struct target_table *tt)
{
	for (size_t i = 0; i < tt->n; i++)
		target__free(tt->t[i]);
	free(tt->t);
	u64map__fini(&tt->by_pid);
	memset(tt, 0, sizeof(*tt));
}

struct target *target_table__find(struct target_table *tt, pid_t pid)
{
	__u64 idx;

	return u64map__get(&tt->by_pid, (__u64)pid, &idx) ? tt->t[idx] : NULL;
}

int target_table__add(struct target_table *tt, pid_t pid, __u64 now, struct target **ret_t)
{
	struct target *t = target_table__find(tt, pid);
	int err;

	if (t) {
		*ret_t = t;
		return 0;
	}
	if (tt->n == tt->cap) {
		size_t cap = tt->cap ? tt->cap * 2 : 16;
		struct target **n = realloc(tt->t, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		tt->t = n;
		tt->cap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->pid = pid;
	t->shm_fd = -1;
	t->attach_ns = now;
	if (u64map__init(&t->names, 1 << 16)) {
		free(t);
		return -ENOMEM;
	}
	if (proc__comm(pid, t->comm, sizeof(t->comm)))
		snprintf(t->comm, sizeof(t->comm), "?");
	if (proc__cgroup_path(pid, t->cgroup, sizeof(t->cgroup)))
		t->cgroup[0] = 0;
	if (proc__ns_pid(pid, &t->ns_pid))
		t->ns_pid = pid;
	err = u64map__put(&tt->by_pid, (__u64)pid, tt->n);
	if (err) {
		target__free(t);
		return err;
	}
	tt->t[tt->n++] = t;
	*ret_t = t;
	return 0;
}

/* Adds t's walk figures to the sums. */
static void target__add_stats(const struct target *t, struct target_stats *sum)
{
	__u64 h, m;

	unwind_memo__stats(t->memo, &h, &m);
	sum->memo_hits += h;
	sum->memo_misses += m;
	sum->maps_reread += symbolizer__generation(t->sym) + t->rereads_gone;
	sum->maps_reread_limited += symbolizer__limited(t->sym);
	sum->lookups += t->lookups;
	sum->lookup_ns += t->lookup_ns;
}

void target_table__remove(struct target_table *tt, pid_t pid)
{
	__u64 idx;

	if (!u64map__del(&tt->by_pid, (__u64)pid, &idx))
		return;
	target__add_stats(tt->t[idx], &tt->gone);
	target__free(tt->t[idx]);
	tt->n--;
	if (idx != tt->n) {
		tt->t[idx] = tt->t[tt->n];
		u64map__put(&tt->by_pid, (__u64)tt->t[idx]->pid, idx);
	}
}

/*
 * Created on first use, not with the target: a -- COMMAND child is found
 * before its exec, when its maps are still the loader's.
 */
struct symbolizer *target__symbolizer(struct target *t)
{
	if (t->sym || t->sym_failed)
		return t->sym;
	if (symbolizer__new(t->pid, &t->sym))
		t->sym_failed = true;
	/* Its name too may have changed with the exec. */
	proc__comm(t->pid, t->comm, sizeof(t->comm));
	return t->sym;
}

struct symbolizer *target__symbolizer_at(struct target *t, __u32 epoch)
{
	for (unsigned i = 0; i < t->nold; i++)
		if (t->old[i].epoch == epoch)
			return t->old[i].sym;
	return target__symbolizer(t);
}

struct symbolizer *target__symbolizer_gen(struct target *t, __u32 maps_gen, __u32 *ret_epoch,
					  bool *ret_current)
{
	for (unsigned i = 0; maps_gen && maps_gen < t->maps_gen && i < t->nold; i++) {
		if (t->old[i].maps_gen == maps_gen) {
			*ret_epoch = t->old[i].epoch;
			*ret_current = false;
			return t->old[i].sym;
		}
	}
	*ret_epoch = t->stack_epoch;
	*ret_current = true;
	return target__symbolizer(t);
}

int target__new_space(struct target *t, __u32 maps_gen, bool keep_old)
{
	if (keep_old && t->sym && t->nold == TARGET_OLD_SPACES)
		return -EBUSY;
	t->rereads_gone += symbolizer__generation(t->sym);
	if (keep_old && t->sym) {
		t->old[t->nold++] = (struct target_space){ .maps_gen = t->maps_gen,
							   .epoch = t->stack_epoch, .sym = t->sym };
	} else {
		symbolizer__destroy(t->sym);
	}
	t->sym = NULL;
	t->sym_failed = false;
	t->maps_gen = maps_gen;
	t->stack_epoch++;
	if (t->memo)
		unwind_memo__reset(t->memo); /* the rules were the old mappings' */
	return 0;
}

void target__new_epoch(struct target *t)
{
	t->stack_epoch++;
}

void target__drop_old_spaces(struct target *t)
{
	for (unsigned i = 0; i < t->nold; i++)
		symbolizer__destroy(t->old[i].sym);
	t->nold = 0;
}

void target_table__stats(const struct target_table *tt, struct target_stats *ret)
{
	*ret = tt->gone;
	for (size_t i = 0; i < tt->n; i++)
		target__add_stats(tt->t[i], ret);
}

struct unwind_memo *target__unwind_memo(struct target *t)
{
	struct symbolizer *sym = target__symbolizer(t);
	unsigned long gen = symbolizer__moved(sym);

	if (!sym)
		return NULL;
	if (!t->memo) {
		t->memo = unwind_memo__new();
		t->memo_gen = gen;
	}
	if (t->memo && t->memo_gen != gen) {
		unwind_memo__reset(t->memo);
		t->memo_gen = gen;
	}
	return t->memo;
}
