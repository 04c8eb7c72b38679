/* SPDX-License-Identifier: MIT */
/*
 * What a stack walk learns per code address, kept for the next walk of the
 * same process: whether the address is mapped and, if so, its unwind rule
 * (or that it has none: frame pointers there). A PyTorch launch's stack is
 * some 60 frames, nearly all of them seen in the previous launch; finding a
 * rule afresh is a search of the process's mappings and one of the file's
 * CFI table per frame.
 *
 * Bounded, two addresses per set (4,096 in all): a third address of a
 * set replaces the one of the two used less recently. Direct-mapped, two
 * addresses of one stack could share a slot and evict each other at every
 * walk.
 * Only what the lookup says for the mappings it read is kept: the owner
 * resets the memo when it reads the process's mappings again.
 */
#ifndef GP_UNWIND_MEMO_H
#define GP_UNWIND_MEMO_H

#include <linux/types.h>
#include <stdbool.h>

#include "user/unwind/cfi.h"

struct unwind_memo;

enum unwind_memo_kind {
	UNWIND_MEMO_FP = 1, /* mapped, no rule: frame pointers */
	UNWIND_MEMO_RULE,   /* mapped, with this rule */
};

/* NULL when out of memory (the walk then goes without). */
struct unwind_memo *unwind_memo__new(void);
void unwind_memo__destroy(struct unwind_memo *m);
/* Forgets everything: the process's mappings were read again. */
void unwind_memo__reset(struct unwind_memo *m);
/* The kind kept for pc (its rule in *ret_rule), or 0 when none is kept. */
int unwind_memo__get(struct unwind_memo *m, __u64 pc, struct cfi_rule *ret_rule);
void unwind_memo__put(struct unwind_memo *m, __u64 pc, enum unwind_memo_kind kind,
		      const struct cfi_rule *rule);
/* The set pc falls in (tests: which addresses compete for room). */
unsigned unwind_memo__set_of(__u64 pc);
/* Lookups answered and not answered, since the memo was made. */
void unwind_memo__stats(const struct unwind_memo *m, __u64 *ret_hits, __u64 *ret_misses);

#endif /* GP_UNWIND_MEMO_H */
