/* SPDX-License-Identifier: MIT */
/*
 * A u64 -> u64 hash map: open addressing, linear probing, backward-shift
 * deletion (no tombstones, so lookups stay short under churn). Keys are any
 * u64; the map grows by doubling up to a caller-given bound. A slot holds
 * its key and value together, U64MAP_FREE marking a free one, so a probe
 * reads one cache line (three arrays of keys, values and marks took three
 * misses a lookup in the join's large tables); the key U64MAP_FREE itself
 * is kept beside the slots.
 */
#ifndef GP_U64MAP_H
#define GP_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#define U64MAP_FREE UINT64_MAX

struct u64slot {
	__u64 key; /* U64MAP_FREE: a free slot */
	__u64 val;
};

struct u64map {
	struct u64slot *slots;
	size_t cap;   /* slots, a power of two */
	size_t len;   /* entries, the key U64MAP_FREE's included */
	size_t limit; /* most entries ever held; put() beyond it fails */
	__u64 seed;   /* random, per map: keys a process chooses cannot collide at will */
	bool has_free_key; /* the key U64MAP_FREE is held, with free_key_val */
	__u64 free_key_val;
};

int u64map__init(struct u64map *m, size_t limit);
void u64map__fini(struct u64map *m);
/* 0 on success, -E2BIG past the limit, -ENOMEM. Replaces an existing value. */
int u64map__put(struct u64map *m, __u64 key, __u64 val);
bool u64map__get(const struct u64map *m, __u64 key, __u64 *ret_val);
bool u64map__del(struct u64map *m, __u64 key, __u64 *ret_val);
size_t u64map__len(const struct u64map *m);
/* Forgets every entry, keeping the slots (allocates nothing: cannot fail). */
void u64map__clear(struct u64map *m);
/* Whether putting one more new key makes the map allocate (grow). */
bool u64map__grows(const struct u64map *m);
/* Bytes its slots take. */
size_t u64map__bytes(const struct u64map *m);
/*
 * Gives back slots a burst left: a map using under an eighth of its slots
 * (and more than 64) is rebuilt at a quarter of them or fewer. Left as it
 * is when memory cannot be had.
 */
void u64map__trim(struct u64map *m);

/* Iteration: for (size_t i = 0; u64map__next(m, &i, &k, &v);) */
bool u64map__next(const struct u64map *m, size_t *iter, __u64 *ret_key, __u64 *ret_val);

__u64 u64map__hash(__u64 x);

#endif
