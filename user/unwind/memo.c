/* SPDX-License-Identifier: MIT */
/* The per-process rule memo of memo.h. */
#include <stdlib.h>
#include <string.h>
#include "user/unwind/memo.h"

#define MEMO_SET_BITS 11
#define MEMO_SETS (1u << MEMO_SET_BITS)
#define MEMO_WAYS 2

struct slot {
	__u64 pc;
	struct cfi_rule rule;
	__u8 kind; /* 0: empty */
};

/* Two addresses per set: the one used last stays when a third comes. */
struct set {
	struct slot way[MEMO_WAYS];
	__u8 mru; /* the way used last */
};

struct unwind_memo {
	struct set s[MEMO_SETS];
	__u64 hits, misses;
};

unsigned unwind_memo__set_of(__u64 pc)
{
	return (unsigned)((pc * 0x9e3779b97f4a7c15ull) >> (64 - MEMO_SET_BITS));
}

struct unwind_memo *unwind_memo__new(void)
{
	return calloc(1, sizeof(struct unwind_memo));
}

void unwind_memo__destroy(struct unwind_memo *m)
{
	free(m);
}

void unwind_memo__reset(struct unwind_memo *m)
{
	if (m)
		memset(m->s, 0, sizeof(m->s));
}

int unwind_memo__get(struct unwind_memo *m, __u64 pc, struct cfi_rule *ret_rule)
{
	struct set *set;
	const struct slot *s;

	if (!m)
		return 0;
	set = &m->s[unwind_memo__set_of(pc)];
	for (unsigned w = 0; w < MEMO_WAYS; w++) {
		s = &set->way[w];
		if (!s->kind || s->pc != pc)
			continue;
		m->hits++;
		set->mru = (__u8)w;
		if (s->kind == UNWIND_MEMO_RULE)
			*ret_rule = s->rule;
		return s->kind;
	}
	m->misses++;
	return 0;
}

void unwind_memo__put(struct unwind_memo *m, __u64 pc, enum unwind_memo_kind kind,
		      const struct cfi_rule *rule)
{
	struct set *set;
	struct slot *s;
	unsigned w;

	if (!m)
		return;
	set = &m->s[unwind_memo__set_of(pc)];
	/* The slot it has, else an empty one, else the one not used last. */
	for (w = 0; w < MEMO_WAYS && set->way[w].kind && set->way[w].pc != pc; w++)
		;
	if (w == MEMO_WAYS)
		w = !set->mru;
	s = &set->way[w];
	s->pc = pc;
	s->kind = (__u8)kind;
	if (kind == UNWIND_MEMO_RULE)
		s->rule = *rule;
	set->mru = (__u8)w;
}

void unwind_memo__stats(const struct unwind_memo *m, __u64 *ret_hits, __u64 *ret_misses)
{
	*ret_hits = m ? m->hits : 0;
	*ret_misses = m ? m->misses : 0;
}
