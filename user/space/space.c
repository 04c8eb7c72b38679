/* SPDX-License-Identifier: MIT */
/*
 * A process's address space (space.h): its generations and their epochs,
 * the stack walks' rule memo and what the walks' lookups cost.
 */
#include "user/space/space.h"
#include "user/space/space_internal.h"
#include "user/unwind/memo.h"
#include "user/util/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

/* ------------------------------------------------------------ the process */

/* An earlier generation, kept while stacks of its time wait. */
struct space_old {
	__u32 maps_gen;
	__u32 epoch;            /* the raw stacks' epoch of that time */
	struct space_gen *gen;
};

struct space {
	struct space_caches *c;
	struct bounded *b;
	pid_t pid;
	void (*on_open)(void *ctx);
	void *ctx;
	struct space_gen *now;     /* its mappings now (of maps_gen) */
	int now_err;               /* opening it failed (-errno): not tried again until a new generation */
	__u32 maps_gen;            /* the generation now reads; 0 until an event said one */
	__u32 epoch;               /* raw stacks carry it: bumped when mappings or code change */
	struct space_old old[SPACE_OLD_GENS]; /* earlier generations, oldest first */
	unsigned nold;
	unsigned long rereads_gone; /* maps re-reads of generations replaced since */
	struct unwind_memo *memo;  /* rules by code address, while space_gen__moved is memo_gen */
	unsigned long memo_gen;
	__u64 lookups, lookup_ns;  /* the walks' mapping and CFI lookups (memo misses), their time */
	__u64 forced_useless_ns;   /* a forced maps re-read found nothing new then */
};

int space__new(struct space_caches *c, struct bounded *b, pid_t pid, void (*on_open)(void *ctx),
	       void *ctx, struct space **ret_space)
{
	struct space *s;

	if (!c || !b || !ret_space)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	*s = (struct space){ .c = c, .b = b, .pid = pid, .on_open = on_open, .ctx = ctx };
	*ret_space = s;
	return 0;
}

void space__destroy(struct space *s)
{
	if (!s)
		return;
	space__drop_old(s);
	space_gen__destroy(s->now);
	unwind_memo__destroy(s->memo);
	free(s);
}

struct space_gen *space__now(struct space *s)
{
	if (s->now || s->now_err)
		return s->now;
	s->now_err = space_gen__open(s->c, s->b, s->pid, NULL, &s->now);
	if (s->on_open)
		s->on_open(s->ctx);
	return s->now;
}

struct space_gen *space__at_epoch(struct space *s, __u32 epoch)
{
	for (unsigned i = 0; i < s->nold; i++)
		if (s->old[i].epoch == epoch)
			return s->old[i].gen;
	return space__now(s);
}

bool space__gone_unread(const struct space *s, const struct space_gen *g)
{
	return g ? space_gen__mapless(g) : s->now_err == -ENOENT || s->now_err == -ESRCH;
}

__u32 space__epoch(const struct space *s)
{
	return s->epoch;
}

__u32 space__maps_gen(const struct space *s)
{
	return s->maps_gen;
}

void space__set_maps_gen(struct space *s, __u32 maps_gen)
{
	s->maps_gen = maps_gen;
}

int space__new_gen(struct space *s, __u32 maps_gen, bool keep_old)
{
	if (keep_old && s->now && s->nold == SPACE_OLD_GENS)
		return -EBUSY;
	s->rereads_gone += space_gen__rereads(s->now);
	if (keep_old && s->now)
		s->old[s->nold++] = (struct space_old){ .maps_gen = s->maps_gen, .epoch = s->epoch,
							.gen = s->now };
	else
		space_gen__destroy(s->now);
	s->now = NULL;
	s->now_err = 0;
	s->maps_gen = maps_gen;
	s->epoch++;
	if (s->memo)
		unwind_memo__reset(s->memo); /* the rules were the old mappings' */
	return 0;
}

void space__new_epoch(struct space *s)
{
	s->epoch++;
}

void space__drop_old(struct space *s)
{
	for (unsigned i = 0; i < s->nold; i++)
		space_gen__destroy(s->old[i].gen);
	s->nold = 0;
}

struct unwind_memo *space__memo(struct space *s)
{
	struct space_gen *g = space__now(s);
	unsigned long moved = space_gen__moved(g);

	if (!g)
		return NULL;
	if (!s->memo) {
		s->memo = unwind_memo__new();
		s->memo_gen = moved;
	}
	if (s->memo && s->memo_gen != moved) {
		unwind_memo__reset(s->memo);
		s->memo_gen = moved;
	}
	return s->memo;
}

/* ------------------------------------------------------------ one walk */

void space__walk(struct space *s, __u32 maps_gen, struct space_walk *ret)
{
	*ret = (struct space_walk){ .s = s, .epoch = s->epoch, .current = true };
	for (unsigned i = 0; maps_gen && maps_gen < s->maps_gen && i < s->nold; i++) {
		if (s->old[i].maps_gen == maps_gen) {
			ret->gen = s->old[i].gen;
			ret->epoch = s->old[i].epoch;
			ret->current = false;
			return;
		}
	}
	ret->gen = space__now(s);
}

struct unwind_memo *space_walk__memo(struct space_walk *w)
{
	return w->current ? space__memo(w->s) : NULL;
}

int space_walk__lookup(void *ctx, __u64 ip, const struct cfi_table **ret_table,
		       __u64 *ret_bias)
{
	struct space_walk *w = ctx;
	__u64 t0 = clock_ns(CLOCK_MONOTONIC), bias;
	int err;

	err = w->gen ? space_gen__cfi(w->gen, ip, ret_table, &bias) : -ENOENT;
	w->s->lookups++;
	w->s->lookup_ns += clock_ns(CLOCK_MONOTONIC) - t0;
	if (!err)
		*ret_bias = bias;
	return err;
}

bool space_walk__reread(struct space_walk *w, __u64 ts_ns)
{
	struct space *s = w->s;
	__u64 now_ns = clock_ns(CLOCK_MONOTONIC);

	if (!w->current)
		return false;
	if (s->forced_useless_ns && now_ns - s->forced_useless_ns < SPACE_REREAD_NS)
		return false;
	if (!space_gen__refresh_if_older(w->gen, ts_ns))
		return false;
	s->forced_useless_ns = now_ns; /* until the walk says otherwise */
	return true;
}

void space_walk__reread_helped(struct space_walk *w)
{
	w->s->forced_useless_ns = 0;
}

/* ------------------------------------------------------------ what it cost */

void space__add_stats(const struct space *s, struct space_stats *sum)
{
	__u64 h, m;

	unwind_memo__stats(s->memo, &h, &m);
	sum->memo_hits += h;
	sum->memo_misses += m;
	/* The current generation's re-reads and those of the ones it replaced. */
	sum->maps_reread += space_gen__rereads(s->now) + s->rereads_gone;
	sum->maps_reread_limited += space_gen__limited(s->now);
	sum->lookups += s->lookups;
	sum->lookup_ns += s->lookup_ns;
}
