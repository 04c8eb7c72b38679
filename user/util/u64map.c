/* SPDX-License-Identifier: MIT */
/* The u64 -> u64 map of u64map.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include "user/util/u64map.h"

__u64 u64map__hash(__u64 x)
{
	/* splitmix64's finaliser: cheap and mixes every input bit. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static int alloc_slots(struct u64map *m, size_t cap)
{
	struct u64slot *s = malloc(cap * sizeof(*s));

	if (!s)
		return -ENOMEM;
	memset(s, 0xff, cap * sizeof(*s)); /* every key U64MAP_FREE */
	m->slots = s;
	m->cap = cap;
	return 0;
}

/*
 * A secret of the map's own: the slot of a key is the hash of key ^ seed, so
 * a process that chooses keys (node ids, correlation ids) cannot choose ones
 * that share a probe run (the hash alone can be inverted).
 */
static __u64 seed_of(const struct u64map *m)
{
	struct timespec ts;
	__u64 seed;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed))
		return seed;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return u64map__hash((__u64)ts.tv_nsec ^ ((__u64)ts.tv_sec << 32) ^ (__u64)(uintptr_t)m);
}

int u64map__init(struct u64map *m, size_t limit)
{
	memset(m, 0, sizeof(*m));
	m->seed = seed_of(m);
	m->limit = limit ? limit : SIZE_MAX / 4;
	return alloc_slots(m, 16);
}

void u64map__fini(struct u64map *m)
{
	if (!m)
		return;
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* key's slot, or the free slot ending its probe run (key is not U64MAP_FREE). */
static size_t slot_of(const struct u64map *m, __u64 key, bool *ret_found)
{
	size_t mask = m->cap - 1, i = u64map__hash(key ^ m->seed) & mask;

	for (;;) {
		__u64 k = m->slots[i].key;

		if (k == key) {
			*ret_found = true;
			return i;
		}
		if (k == U64MAP_FREE) {
			*ret_found = false;
			return i;
		}
		i = (i + 1) & mask;
	}
}

/* The map rebuilt with cap slots (a power of two, over len * 4 / 3). */
static int rehash(struct u64map *m, size_t cap)
{
	struct u64map old = *m;
	int err = alloc_slots(m, cap);

	if (err) {
		*m = old;
		return err;
	}
	for (size_t i = 0; i < old.cap; i++) {
		if (old.slots[i].key != U64MAP_FREE) {
			bool found;

			m->slots[slot_of(m, old.slots[i].key, &found)] = old.slots[i];
		}
	}
	free(old.slots);
	return 0;
}

/* The key U64MAP_FREE, kept beside the slots. */
static int put_free_key(struct u64map *m, __u64 val)
{
	if (!m->has_free_key && m->len >= m->limit)
		return -E2BIG;
	m->len += !m->has_free_key;
	m->has_free_key = true;
	m->free_key_val = val;
	return 0;
}

int u64map__put(struct u64map *m, __u64 key, __u64 val)
{
	bool found;
	size_t s;

	if (key == U64MAP_FREE)
		return put_free_key(m, val);
	s = slot_of(m, key, &found);
	if (found) {
		m->slots[s].val = val;
		return 0;
	}
	if (m->len >= m->limit)
		return -E2BIG;
	if (u64map__grows(m)) {
		int err = rehash(m, m->cap * 2);

		if (err)
			return err;
		s = slot_of(m, key, &found);
	}
	m->slots[s] = (struct u64slot){ .key = key, .val = val };
	m->len++;
	return 0;
}

bool u64map__get(const struct u64map *m, __u64 key, __u64 *ret_val)
{
	bool found;
	size_t s;

	if (key == U64MAP_FREE) {
		if (m->has_free_key && ret_val)
			*ret_val = m->free_key_val;
		return m->has_free_key;
	}
	s = slot_of(m, key, &found);
	if (found && ret_val)
		*ret_val = m->slots[s].val;
	return found;
}

bool u64map__del(struct u64map *m, __u64 key, __u64 *ret_val)
{
	size_t mask = m->cap - 1, i, j;
	bool found;

	if (key == U64MAP_FREE) {
		if (!m->has_free_key)
			return false;
		if (ret_val)
			*ret_val = m->free_key_val;
		m->has_free_key = false;
		m->len--;
		return true;
	}
	i = slot_of(m, key, &found);
	if (!found)
		return false;
	if (ret_val)
		*ret_val = m->slots[i].val;
	/* Backward shift: pull later members of the probe run into the hole. */
	j = i;
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (m->slots[j].key == U64MAP_FREE)
			break;
		home = u64map__hash(m->slots[j].key ^ m->seed) & mask;
		if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].key = U64MAP_FREE;
	m->len--;
	return true;
}

size_t u64map__len(const struct u64map *m)
{
	return m->len;
}

bool u64map__next(const struct u64map *m, size_t *iter, __u64 *ret_key, __u64 *ret_val)
{
	for (size_t i = *iter; i < m->cap; i++) {
		if (m->slots[i].key != U64MAP_FREE) {
			*ret_key = m->slots[i].key;
			*ret_val = m->slots[i].val;
			*iter = i + 1;
			return true;
		}
	}
	if (*iter <= m->cap && m->has_free_key) { /* the key kept beside, last */
		*ret_key = U64MAP_FREE;
		*ret_val = m->free_key_val;
		*iter = m->cap + 1;
		return true;
	}
	*iter = m->cap + 1;
	return false;
}

void u64map__clear(struct u64map *m)
{
	if (m->slots)
		memset(m->slots, 0xff, m->cap * sizeof(*m->slots));
	m->has_free_key = false;
	m->len = 0;
}

bool u64map__grows(const struct u64map *m)
{
	return (m->len + 1) * 4 > m->cap * 3;
}

size_t u64map__bytes(const struct u64map *m)
{
	return m->cap * sizeof(*m->slots);
}

#define TRIM_ABOVE 64

void u64map__trim(struct u64map *m)
{
	size_t cap = m->cap;

	if (cap <= TRIM_ABOVE || m->len * 8 >= cap)
		return;
	while (cap > 16 && m->len * 2 < cap / 2)
		cap /= 2;
	rehash(m, cap);
}
