/* SPDX-License-Identifier: MIT */
/*
 * The join's correlation index: a process's correlation id -> its call's
 * position in the table (join_internal.h). CUPTI numbers a process's calls
 * from one counter, so the ids a table holds are nearly consecutive: each
 * is looked up first in a direct array at id modulo its size, where
 * consecutive ids sit in consecutive slots (a new call's lookup, insert,
 * and later removal touch lines its neighbours touched). An id whose slot
 * another holds goes to a hashed map beside it (u64map, seeded), which a
 * ring choosing its ids to collide fills instead, at the map's cost and
 * bounds, as before. The direct array doubles while that map holds more
 * than an eighth of its size, up to CORR_INDEX_DIRECT_MAX slots.
 */
#ifndef GP_CORR_INDEX_H
#define GP_CORR_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "user/util/u64map.h"

#define CORR_INDEX_DIRECT_MIN 64
#define CORR_INDEX_DIRECT_MAX (1u << 17)

struct corr_index {
	struct u64slot *direct; /* key U64MAP_FREE: a free slot */
	size_t dcap;            /* slots, a power of two */
	size_t dlen;            /* entries in direct */
	struct u64map rest;     /* the others */
};

int corr_index__init(struct corr_index *x, size_t limit);
void corr_index__fini(struct corr_index *x);
bool corr_index__get(const struct corr_index *x, __u64 corr, __u64 *ret_pos);
/* Whether putting corr would allocate: a caller within a budget asks first. */
bool corr_index__allocates(const struct corr_index *x, __u64 corr);
/* 0, -E2BIG past the limit, -ENOMEM. Replaces the position of a held id. */
int corr_index__put(struct corr_index *x, __u64 corr, __u64 pos);
bool corr_index__del(struct corr_index *x, __u64 corr);
size_t corr_index__len(const struct corr_index *x);
size_t corr_index__bytes(const struct corr_index *x);
/* Gives back what a burst left, as u64map__trim; left as it is without memory. */
void corr_index__trim(struct corr_index *x);

#endif
