/* SPDX-License-Identifier: MIT */
/*
 * The loader's raw stacks (stacks.h) by id, 1, 2, ..., each with the last
 * window it was used in, so that continuous mode can forget, at the end of
 * a window, the stacks no launch of that window had: a process that comes
 * and goes leaves nothing behind. Compacting renumbers the ids; it is done
 * in two steps so that the tables holding ids can be renumbered together
 * or not at all.
 */
#ifndef GP_SESSION_STACK_TABLE_H
#define GP_SESSION_STACK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct blobtab;

struct stack_table {
	struct blobtab *raw;   /* raw stack bytes -> id */
	__u32 *last;           /* last[id]: the window of its last use */
	size_t cap_last;
	__u32 window;          /* the current window, from 1 */
	size_t max_entries, max_bytes;
};

int stack_table__init(struct stack_table *st, size_t max_entries, size_t max_bytes);
void stack_table__fini(struct stack_table *st);
/*
 * The id of raw (len bytes), marked used in this window; *ret_new when it
 * was not known. -E2BIG past a bound, -ENOMEM.
 */
int stack_table__intern(struct stack_table *st, const void *raw, size_t len, __u32 *ret_id,
			bool *ret_new);
/* NULL for an unknown id. */
const void *stack_table__get(const struct stack_table *st, __u32 id, size_t *ret_len);
size_t stack_table__count(const struct stack_table *st);
/* Marks id used in this window: something still holds it. */
void stack_table__keep(struct stack_table *st, __u32 id);

/* A compaction prepared and not yet applied. */
struct stack_compaction {
	struct blobtab *raw;   /* the kept stacks, renumbered */
	__u32 *remap;          /* remap[old id] = new id, 0 = forgotten; old ids 1..n */
	size_t n;
};
/* Prepares forgetting every stack not used in this window; st is unchanged. */
int stack_table__compact_begin(const struct stack_table *st, struct stack_compaction *ret_c);
/* Applies c (cannot fail) and starts the next window; c->remap stays the caller's to free. */
void stack_table__compact_commit(struct stack_table *st, struct stack_compaction *c);
void stack_compaction__free(struct stack_compaction *c);

#endif
