/* SPDX-License-Identifier: MIT */
/*
 * Interning of byte strings: equal blobs get one id (1, 2, ...), kept until
 * the table is destroyed. Serves stacks, names and aggregation keys alike.
 * Bounded in entries and bytes; past a bound intern() fails and the caller
 * counts the loss.
 */
#ifndef GP_BLOBTAB_H
#define GP_BLOBTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct blobtab;
struct mem_hold;
struct mem_share;

/*
 * Blobs of one hash kept, at most: the hash is seeded with a secret of the
 * table's own, so only blobs made to collide share one; a process that
 * could make them (a name in its ring) costs each lookup this many
 * compares at most, not one per blob it sent.
 */
#define BLOBTAB_CHAIN_MAX 32

int blobtab__new(size_t max_entries, size_t max_bytes, struct blobtab **ret_t);
/* The same with a known hash seed (tests; blobtab__new draws a random one). */
int blobtab__new_seeded(size_t max_entries, size_t max_bytes, __u64 seed, struct blobtab **ret_t);
void blobtab__destroy(struct blobtab *t);
/*
 * 0 and *ret_id on success; -E2BIG past a bound (entries, bytes, or
 * BLOBTAB_CHAIN_MAX blobs of one hash already); -ENOMEM.
 */
int blobtab__intern(struct blobtab *t, const void *data, size_t len, __u32 *ret_id);
/*
 * The same, a new blob held to a share: hold joins share (once), and a new
 * blob is added only when hold may take cost more (its bytes and overhead,
 * or 1 where the share counts blobs), then counted there. A blob interned already is found at no cost to anyone. -EDQUOT
 * past the hold's share; hold NULL: intern().
 */
int blobtab__intern_held(struct blobtab *t, const void *data, size_t len, struct mem_hold *hold,
			 struct mem_share *share, size_t cost, __u32 *ret_id);
/* Whether data is interned, its id in *ret_id then: a lookup that adds nothing. */
bool blobtab__find(const struct blobtab *t, const void *data, size_t len, __u32 *ret_id);
/* NULL for an unknown id. */
const void *blobtab__get(const struct blobtab *t, __u32 id, size_t *ret_len);
size_t blobtab__count(const struct blobtab *t);

#endif
