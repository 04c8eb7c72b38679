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

int blobtab__new(size_t max_entries, size_t max_bytes, struct blobtab **ret_t);
void blobtab__destroy(struct blobtab *t);
/* 0 and *ret_id on success; -E2BIG past a bound; -ENOMEM. */
int blobtab__intern(struct blobtab *t, const void *data, size_t len, __u32 *ret_id);
/* Whether data is interned, its id in *ret_id then: a lookup that adds nothing. */
bool blobtab__find(const struct blobtab *t, const void *data, size_t len, __u32 *ret_id);
/* NULL for an unknown id. */
const void *blobtab__get(const struct blobtab *t, __u32 id, size_t *ret_len);
size_t blobtab__count(const struct blobtab *t);

#endif
