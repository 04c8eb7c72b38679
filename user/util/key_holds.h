/* SPDX-License-Identifier: MIT */
/*
 * Holds of one share (mem_share.h) by key, kept for the run: a holder is a
 * tenant (the processes of one cgroup: proc__tenant), not a process, so that processes
 * started one after another in one container, each taking what it may,
 * count as one holder and fill one share, not one share each. At most
 * KEY_HOLDS_MAX keys have a hold of their own; keys past them share one.
 * Single-threaded.
 */
#ifndef GP_UTIL_KEY_HOLDS_H
#define GP_UTIL_KEY_HOLDS_H

#include <stddef.h>
#include <linux/types.h>
#include "user/util/mem_share.h"

#define KEY_HOLDS_MAX 4096

struct key_hold;

struct key_holds {
	struct mem_share *share;
	struct key_hold **e; /* each allocated alone: a hold's address stays */
	size_t n, cap;
	struct mem_hold rest; /* the keys past KEY_HOLDS_MAX, and those without memory */
};

void key_holds__init(struct key_holds *kh, struct mem_share *share);
/* key's hold, joined to the share: made on first use, the same one after. Never NULL. */
struct mem_hold *key_holds__get(struct key_holds *kh, __u64 key);
/* Keys with a hold of their own. */
size_t key_holds__count(const struct key_holds *kh);
/* Every hold leaves the share, what it holds staying counted (mem_hold__leave_keeping). */
void key_holds__fini(struct key_holds *kh);

#endif
