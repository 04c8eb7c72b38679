/* SPDX-License-Identifier: MIT */
/*
 * The join's memory ledger: what each process's queues and tables take,
 * and whether one may take more within the join's budget (join_internal.h).
 */
#include <errno.h>
#include <stdlib.h>
#include "user/join/join_internal.h"

/* A nodes' pool this small stays when idle. */
#define POOL_KEEP 64

void jproc__ledger(struct jproc *p, size_t before, size_t after)
{
	/* p's hold counts in its join's share */
	if (after != before)
		mem_hold__add(&p->hold, (long)after - (long)before);
}

/*
 * Whether p may take more memory: the join is within its budget, or p
 * within its share of it (the budget over the processes held: mem_share's
 * rule, the one the loader's other per-process tables follow). Past both,
 * what p sends is refused, counted and labelled as at any other bound; the
 * other processes keep growing to their shares (invariant 4: a process
 * that writes its ring to bloat the loader costs only its own data).
 */
bool jproc__may_grow(struct join *j, struct jproc *p)
{
	if (mem_hold__allows(&p->hold, 1)) /* room for one byte more: below the bound, as before */
		return true;
	j->c.budget_refused++;
	return false;
}

/* item onto f, one of p's: growing only within the budget. */
int jproc__push(struct join *j, struct jproc *p, struct fifo *f, const void *item)
{
	size_t before = fifo__bytes(f);
	int err;

	if (f->len == f->cap && f->len < f->max && !jproc__may_grow(j, p))
		return -E2BIG;
	err = fifo__push(f, item);
	jproc__ledger(p, before, fifo__bytes(f));
	return err;
}

/* op on f, one of p's, which may give memory back (pop, trim): the ledger follows. */
void jproc__shrink(struct join *j, struct jproc *p, struct fifo *f, void (*op)(struct fifo *f))
{
	size_t before = fifo__bytes(f);

	op(f);
	jproc__ledger(p, before, fifo__bytes(f));
}

void jproc__pop(struct join *j, struct jproc *p, struct fifo *f)
{
	jproc__shrink(j, p, f, fifo__pop);
}

/* Whether key may go into m, one of p's: a key it holds, or room without growing, or the budget's. */
bool jproc__map_room(struct join *j, struct jproc *p, const struct u64map *m, __u64 key)
{
	return !u64map__grows(m) || u64map__get(m, key, NULL) || jproc__may_grow(j, p);
}

/* key into m, one of p's: growing only within the budget, unless it must (check false). */
int jproc__put(struct join *j, struct jproc *p, struct u64map *m, __u64 key, __u64 val, bool check)
{
	size_t before = u64map__bytes(m);
	int err;

	if (check && !jproc__map_room(j, p, m, key))
		return -E2BIG;
	err = u64map__put(m, key, val);
	jproc__ledger(p, before, u64map__bytes(m));
	return err;
}

/* corr at pos in p's correlation index: growing only within the budget. */
int jproc__corr_put(struct join *j, struct jproc *p, __u64 corr, __u64 pos)
{
	size_t before = corr_index__bytes(&p->corr_idx);
	int err;

	if (corr_index__allocates(&p->corr_idx, corr) && !jproc__may_grow(j, p))
		return -E2BIG;
	err = corr_index__put(&p->corr_idx, corr, pos);
	jproc__ledger(p, before, corr_index__bytes(&p->corr_idx));
	return err;
}

static void trim_map(struct join *j, struct jproc *p, struct u64map *m)
{
	size_t before = u64map__bytes(m);

	u64map__trim(m);
	jproc__ledger(p, before, u64map__bytes(m));
}

/*
 * What a burst left in p's queues and tables goes back at each advance, so
 * that the budget bounds what the loader holds, not only what it holds at
 * once: processes that swell in turn keep nothing of their peaks.
 */
void jproc__trim(struct join *j, struct jproc *p)
{
	size_t before;

	for (size_t k = 0; k < p->nr_threads; k++) {
		jproc__shrink(j, p, &p->threads[k].launches, fifo__trim);
		jproc__shrink(j, p, &p->threads[k].apis, fifo__trim);
	}
	jproc__shrink(j, p, &p->corrs, fifo__trim);
	jproc__shrink(j, p, &p->pending_order, fifo__trim);
	before = corr_index__bytes(&p->corr_idx);
	corr_index__trim(&p->corr_idx);
	jproc__ledger(p, before, corr_index__bytes(&p->corr_idx));
	trim_map(j, p, &p->pending_head);
	trim_map(j, p, &p->thread_idx);
	/* The nodes' pool is indexed: it goes back whole, once nothing waits in it. */
	if (!p->live_pending && !p->pending_order.len && p->pending_cap > POOL_KEEP) {
		jproc__ledger(p, p->pending_cap * sizeof(*p->pending), 0);
		free(p->pending);
		p->pending = NULL;
		p->pending_cap = p->nr_pending_nodes = 0;
		p->free_head = NONE;
	}
}
