/* SPDX-License-Identifier: MIT */
/* The table of profiled processes (target.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/session/target.h"
#include "user/join/graph_nodes.h"
#include "user/join/autograd_callers.h"
#include "user/proc/proc.h"
#include "user/shm/shm_reader.h"
#include "user/python/pycode.h"
#include "user/util/grow.h"
#include "user/util/test_env.h"

int target_table__init(struct target_table *tt, struct bounded *b)
{
	size_t load_ns;
	int err;

	memset(tt, 0, sizeof(*tt));
	tt->bounded = b;
	tt->max = TARGET_TABLE_MAX;
	err = space_caches__new(b, &tt->caches);
	/* A load budget a test can spend, and keep spent. */
	if (!err && (load_ns = test_env__bytes("GPUPROBE_TEST_LOAD_BUDGET_NS")))
		space_caches__set_load_budget(tt->caches, load_ns,
					      (unsigned)test_env__bytes("GPUPROBE_TEST_LOAD_REFILL"));
	if (!err && (err = u64map__init(&tt->by_pid, 0))) {
		space_caches__destroy(tt->caches);
		tt->caches = NULL;
	}
	return err;
}

static void target__free(struct target *t)
{
	if (!t)
		return;
	shm_reader__destroy(t->shm);
	if (t->shm_fd >= 0)
		close(t->shm_fd);
	u64map__fini(&t->names);
	if (t->pc_stalls.cap)
		u64map__fini(&t->pc_stalls);
	space__destroy(t->space);
	pycode_cache__destroy(t->py);
	graph_nodes__destroy(t->graphs);
	autograd_callers__destroy(t->autograd);
	free(t);
}

void target_table__fini(struct target_table *tt)
{
	for (size_t i = 0; i < tt->n; i++)
		target__free(tt->t[i]);
	free(tt->t);
	u64map__fini(&tt->by_pid);
	space_caches__destroy(tt->caches);
	memset(tt, 0, sizeof(*tt));
}

struct target *target_table__find(struct target_table *tt, pid_t pid)
{
	__u64 idx;

	return u64map__get(&tt->by_pid, (__u64)pid, &idx) ? tt->t[idx] : NULL;
}

/* Its space opened its mappings (again): the process may have exec'd, and its name changed. */
static void target__reread_comm(void *ctx)
{
	struct target *t = ctx;

	proc__comm(t->pid, t->comm, sizeof(t->comm));
}

int target_table__add(struct target_table *tt, pid_t pid, __u64 now, struct target **ret_t)
{
	struct target *t = target_table__find(tt, pid), **grown;
	int err;

	if (t) {
		*ret_t = t;
		return 0;
	}
	if (tt->n >= tt->max)
		return -ENOSPC;
	grown = grow__array(tt->t, &tt->cap, tt->n + 1, sizeof(*grown), 16);
	if (!grown)
		return -ENOMEM;
	tt->t = grown;
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
	err = space__new(tt->caches, tt->bounded, pid, target__reread_comm, t, &t->space);
	if (err) {
		target__free(t);
		return err;
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

void target_table__remove(struct target_table *tt, pid_t pid)
{
	__u64 idx;

	if (!u64map__del(&tt->by_pid, (__u64)pid, &idx))
		return;
	space__add_stats(tt->t[idx]->space, &tt->gone);
	target__free(tt->t[idx]);
	tt->n--;
	if (idx != tt->n) {
		tt->t[idx] = tt->t[tt->n];
		u64map__put(&tt->by_pid, (__u64)tt->t[idx]->pid, idx);
	}
}

struct space_gen *target__symbolizer(struct target *t)
{
	return space__now(t->space);
}

void target__drop_old_spaces(struct target *t)
{
	space__drop_old(t->space);
}

void target_table__stats(const struct target_table *tt, struct space_stats *ret)
{
	*ret = tt->gone;
	for (size_t i = 0; i < tt->n; i++)
		space__add_stats(tt->t[i]->space, ret);
	ret->maps_over_share = space_caches__maps_refused(tt->caches);
	ret->cfi_over_bound = space_caches__cfi_refused(tt->caches);
	ret->loads_refused = space_caches__loads_refused(tt->caches);
}

void target_table__table_bytes(const struct target_table *tt, size_t *ret_sym_bytes,
			       size_t *ret_cfi_bytes)
{
	space_caches__stats(tt->caches, ret_sym_bytes, ret_cfi_bytes);
}
