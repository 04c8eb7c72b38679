/* SPDX-License-Identifier: MIT */
/*
 * Calls that share one correlation id, paired with its activities by kind
 * and order (struct jchain in join_internal.h says why and within what
 * bounds); and what a call may take by its kind, which the engine's
 * pending activities follow too.
 */
#include "user/join/join_internal.h"

/* Whether a call that takes so may take activities of kind k at all. */
bool jcorr__kind_fits(__u8 takes, __u32 k)
{
	switch (takes) {
	case TAKES_ONE_KERNEL:
		return k == JOIN_ACT_KERNEL;
	case TAKES_ONE_COPY:
	case TAKES_COPIES:
		return k == JOIN_ACT_COPY;
	case TAKES_GRAPH:
		return k == JOIN_ACT_GRAPH;
	default:
		return false;
	}
}

struct jchain *jchain__of(struct jproc *p, __u64 corr)
{
	for (size_t i = 0; i < JOIN_CHAINS; i++)
		if (p->chains[i].live && p->chains[i].corr == corr)
			return &p->chains[i];
	return NULL;
}

/*
 * Whether call c may take activity a: of its kind; in a chain, not begun
 * before the call was made, and a kernel of the launch's grid and block
 * where both are known; for a call that takes one, the first. A graph
 * launch whose first node comes again is done: that is the next launch's.
 */
bool jcorr__fits(struct jcorr *c, const struct join_activity *a, bool chained)
{
	if (c->done || (chained && c->ts > a->start + JOIN_CHAIN_SKEW_NS) ||
	    !jcorr__kind_fits(c->takes, a->kind))
		return false;
	if (c->takes == TAKES_ONE_KERNEL) /* in a chain, of its shape where both are known */
		return !chained || !c->shape || !a->shape || c->shape == a->shape;
	if (c->takes == TAKES_GRAPH && c->seen && a->aux[4] && a->aux[4] == c->first_node) {
		c->done = true;
		return false;
	}
	return true;
}

/* c takes a at now (the join's clock): it has one, and a call that takes one is done. */
void jcorr__give(struct jcorr *c, const struct join_activity *a, __u64 now)
{
	if (!c->seen)
		c->first_node = a->aux[4];
	c->seen = true;
	c->done = c->takes == TAKES_ONE_KERNEL || c->takes == TAKES_ONE_COPY;
	if (c->done && !c->done_ns)
		c->done_ns = now;
}

/* a goes to c. */
static void chain_give(struct join *j, struct jcorr *c, struct jchain_act *a)
{
	jcorr__give(c, &a->act, join_now(j, a->act.end));
	a->served = true;
	j->c.activities_on_reused++;
	jact__emit(j, &a->act, c->tid, c->site, c->probe, c->ts, c->reason);
}

/* The chain's fronts: served activities, and calls done or gone, leave. */
static void chain_tidy(struct join *j, struct jproc *p, struct jchain *ch)
{
	while (ch->acts.len && ((struct jchain_act *)fifo__at(&ch->acts, 0))->served)
		jproc__pop(j, p, &ch->acts);
	while (ch->calls.len) {
		__u64 pos = *(__u64 *)fifo__at(&ch->calls, 0);
		const struct jcorr *c =
			pos >= p->corr_base ? fifo__at(&p->corrs, pos - p->corr_base) : NULL;

		if (c && !c->done && c->takes > TAKES_NOTHING)
			break;
		jproc__pop(j, p, &ch->calls);
	}
}

/* A new activity (ch's last): the oldest call it fits takes it, else it waits. */
void jchain__on_act(struct join *j, struct jproc *p, struct jchain *ch)
{
	struct jchain_act *a = fifo__at(&ch->acts, ch->acts.len - 1);

	for (size_t k = 0; k < ch->calls.len && k < JOIN_CHAIN_SCAN && p->disorder_left; k++) {
		__u64 pos = *(__u64 *)fifo__at(&ch->calls, k);
		struct jcorr *c;

		p->disorder_left--;
		if (pos < p->corr_base)
			continue;
		c = fifo__at(&p->corrs, pos - p->corr_base);
		if (c->ts > a->act.start + JOIN_CHAIN_SKEW_NS && c->takes > TAKES_NOTHING)
			break; /* made after it began: neither it nor a later call is its */
		if (jcorr__fits(c, &a->act, true)) {
			chain_give(j, c, a);
			break;
		}
	}
	chain_tidy(j, p, ch);
}

/* A new call (ch's last): the waiting activities it fits, in the order they came. */
void jchain__on_call(struct join *j, struct jproc *p, struct jchain *ch)
{
	__u64 pos = *(__u64 *)fifo__at(&ch->calls, ch->calls.len - 1);
	struct jcorr *c = fifo__at(&p->corrs, pos - p->corr_base);

	for (size_t i = 0; i < ch->acts.len && !c->done && p->disorder_left; i++) {
		struct jchain_act *a = fifo__at(&ch->acts, i);

		p->disorder_left--;
		if (!a->served && jcorr__fits(c, &a->act, true))
			chain_give(j, c, a);
	}
	chain_tidy(j, p, ch);
}

/* act waits in ch (true), the oldest waiting leaving unattributed when it is full. */
bool jchain__put_act(struct join *j, struct jproc *p, struct jchain *ch,
			  const struct join_activity *act, __u64 added)
{
	struct jchain_act a = { .act = *act, .added = added };

	chain_tidy(j, p, ch);
	if (ch->acts.len == ch->acts.max) {
		struct jchain_act *old = fifo__at(&ch->acts, 0);

		jact__emit(j, &old->act, 0, 0, 0, 0, JOIN_NO_API_RECORD);
		jproc__pop(j, p, &ch->acts);
		chain_tidy(j, p, ch);
	}
	if (jproc__push(j, p, &ch->acts, &a)) {
		jact__emit(j, act, 0, 0, 0, 0, JOIN_TABLE_FULL);
		return false;
	}
	return true;
}

/*
 * A second call of corr while one is held: the id is shared from here on.
 * The held call (at pos) and the activities waiting on corr, oldest first,
 * go into a chain. NULL when no chain is free (the id is then joined as
 * before: each activity to the call holding it last).
 */
struct jchain *jchain__begin(struct join *j, struct jproc *p, __u64 corr, __u64 pos)
{
	struct jchain *ch = NULL;
	__u32 nodes[JOIN_CHAIN_ACTS];
	size_t n = 0;
	__u64 first;

	for (size_t i = 0; i < JOIN_CHAINS && !ch; i++)
		if (!p->chains[i].live)
			ch = &p->chains[i];
	if (!ch)
		return NULL;
	*ch = (struct jchain){ .corr = corr, .live = true,
			       .calls = { .item = sizeof(__u64), .max = j->o.max_corr },
			       .acts = { .item = sizeof(struct jchain_act), .max = JOIN_CHAIN_ACTS } };
	if (pos >= p->corr_base)
		jproc__push(j, p, &ch->calls, &pos);
	if (u64map__del(&p->pending_head, corr, &first)) {
		/* The waiting list is newest first: taken whole, then put in the order they came. */
		for (__u32 node = (__u32)first; node != NONE; node = p->pending[node].next) {
			if (n < JOIN_CHAIN_ACTS)
				nodes[n++] = node;
			else /* older than a chain holds: unattributed */
				jact__emit(j, &p->pending[node].act, 0, 0, 0, 0, JOIN_NO_API_RECORD);
		}
		while (n--)
			jchain__put_act(j, p, ch, &p->pending[nodes[n]].act, p->pending[nodes[n]].added);
		if (ch->calls.len)
			jchain__on_call(j, p, ch); /* the held call may take some */
		for (__u32 node = (__u32)first, next; node != NONE; node = next) {
			next = p->pending[node].next;
			jproc__release_pending(p, node);
		}
	}
	return ch;
}

/* Activities past the horizon leave unattributed; a chain with nothing left ends. */
void jchain__expire(struct join *j, struct jproc *p, bool all)
{
	for (size_t i = 0; i < JOIN_CHAINS; i++) {
		struct jchain *ch = &p->chains[i];

		if (!ch->live)
			continue;
		while (ch->acts.len) {
			struct jchain_act *a = fifo__at(&ch->acts, 0);

			if (a->served) {
				jproc__pop(j, p, &ch->acts);
				continue;
			}
			if (!all && a->added + j->o.horizon_ns > j->now)
				break;
			jact__emit(j, &a->act, 0, 0, 0, 0,
			     jwin__at_close(j, a->act.start) ? JOIN_OUTSIDE : JOIN_NO_API_RECORD);
			jproc__pop(j, p, &ch->acts);
		}
		chain_tidy(j, p, ch);
		if (all || (!ch->calls.len && !ch->acts.len)) {
			jproc__ledger(p, fifo__bytes(&ch->calls) + fifo__bytes(&ch->acts), 0);
			fifo__free(&ch->calls);
			fifo__free(&ch->acts);
			ch->live = false;
		}
	}
}
