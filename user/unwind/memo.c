/* SPDX-License-Identifier: MIT */
/* The per-process rule memo of memo.h. */
#include <stdlib.h>
#include <string.h>
#include "user/unwind/memo.h"

#define MEMO_BITS 12
#define MEMO_SLOTS (1u << MEMO_BITS)

struct slot {
	__u64 pc;
	struct cfi_rule rule;
	__u8 kind; /* 0: empty */
};

struct unwind_memo {
	struct slot s[MEMO_SLOTS];
	__u64 hits, misses;
};

static __u32 slot_of(__u64 pc)
{
	return (__u32)((pc * 0x9e3779b97f4a7c15ull) >> (64 - MEMO_BITS));
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
	const struct slot *s;

	if (!m)
		return 0;
	s = &m->s[slot_of(pc)];
	if (!s->kind || s->pc != pc) {
		m->misses++;
		return 0;
	}
	m->hits++;
	if (s->kind == UNWIND_MEMO_RULE)
		*ret_rule = s->rule;
	return s->kind;
}

void unwind_memo__put(struct unwind_memo *m, __u64 pc, enum unwind_memo_kind kind,
		      const struct cfi_rule *rule)
{
	struct slot *s;

	if (!m)
		return;
	s = &m->s[slot_of(pc)];
	s->pc = pc;
	s->kind = (__u8)kind;
	if (kind == UNWIND_MEMO_RULE)
		s->rule = *rule;
}

void unwind_memo__stats(const struct unwind_memo *m, __u64 *ret_hits, __u64 *ret_misses)
{
	*ret_hits = m ? m->hits : 0;
	*ret_misses = m ? m->misses : 0;
}
