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
	m->keys = calloc(cap, sizeof(*m->keys));
	m->vals = calloc(cap, sizeof(*m->vals));
	m->used = calloc(cap, sizeof(*m->used));
	if (!m->keys || !m->vals || !m->used) {
		free(m->keys);
		free(m->vals);
		free(m->used);
		return -ENOMEM;
	}
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
	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

static size_t slot_of(const struct u64map *m, __u64 key, bool *ret_found)
{
	size_t mask = m->cap - 1, i = u64map__hash(key ^ m->seed) & mask;

	while (m->used[i]) {
		if (m->keys[i] == key) {
			*ret_found = true;
			return i;
		}
		i = (i + 1) & mask;
	}
	*ret_found = false;
	return i;
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
	m->len = 0;
	for (size_t i = 0; i < old.cap; i++) {
		if (old.used[i]) {
			bool found;
			size_t s = slot_of(m, old.keys[i], &found);

			m->used[s] = 1;
			m->keys[s] = old.keys[i];
			m->vals[s] = old.vals[i];
			m->len++;
		}
	}
	free(old.keys);
	free(old.vals);
	free(old.used);
	return 0;
}

int u64map__put(struct u64map *m, __u64 key, __u64 val)
{
	bool found;
	size_t s = slot_of(m, key, &found);

	if (found) {
		m->vals[s] = val;
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
	m->used[s] = 1;
	m->keys[s] = key;
	m->vals[s] = val;
	m->len++;
	return 0;
}

bool u64map__get(const struct u64map *m, __u64 key, __u64 *ret_val)
{
	bool found;
	size_t s = slot_of(m, key, &found);

	if (found && ret_val)
		*ret_val = m->vals[s];
	return found;
}

bool u64map__del(struct u64map *m, __u64 key, __u64 *ret_val)
{
	size_t mask = m->cap - 1, i, j;
	bool found;

	i = slot_of(m, key, &found);
	if (!found)
		return false;
	if (ret_val)
		*ret_val = m->vals[i];
	/* Backward shift: pull later members of the probe run into the hole. */
	j = i;
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!m->used[j])
			break;
		home = u64map__hash(m->keys[j] ^ m->seed) & mask;
		if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->used[i] = 0;
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
		if (m->used[i]) {
			*ret_key = m->keys[i];
			*ret_val = m->vals[i];
			*iter = i + 1;
			return true;
		}
	}
	*iter = m->cap;
	return false;
}

void u64map__clear(struct u64map *m)
{
	if (m->used)
		memset(m->used, 0, m->cap * sizeof(*m->used));
	m->len = 0;
}

bool u64map__grows(const struct u64map *m)
{
	return (m->len + 1) * 4 > m->cap * 3;
}

size_t u64map__bytes(const struct u64map *m)
{
	return m->cap * (sizeof(*m->keys) + sizeof(*m->vals) + sizeof(*m->used));
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
