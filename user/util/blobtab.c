/* SPDX-License-Identifier: MIT */
/* The interning table of blobtab.h: a word-at-a-time hash, chained by id. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include "user/util/blobtab.h"
#include "user/util/grow.h"
#include "user/util/mem_share.h"
#include "user/util/u64map.h"

struct entry {
	char *data;
	size_t len;
	__u32 next;  /* next id with the same hash, 0 = none */
};

struct blobtab {
	struct u64map first;  /* hash -> first id */
	struct entry *e;      /* e[id - 1] */
	size_t n, cap, bytes, max_entries, max_bytes;
	__u64 seed;           /* the hash's secret */
};

/*
 * Eight bytes a step, each mixed in by a multiply and a shift. A byte at a
 * time (FNV-1a, before) cost about a microsecond per KiB, and a launch
 * stack with its Python frames is one to two KiB, interned at every launch.
 * Equal hashes are told apart by comparing the bytes. Unseeded, two blobs
 * of one hash are easy to make (each step is invertible): the seed, the
 * table's secret, is the state it starts from.
 */
static __u64 hash_bytes(const void *data, size_t len, __u64 seed)
{
	const unsigned char *p = data;
	__u64 h = seed ^ 0x9e3779b97f4a7c15ull ^ len, w;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, p + i, len - i);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 29);
}

static __u64 random_seed(const void *salt)
{
	struct timespec ts;
	__u64 seed;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed))
		return seed;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return u64map__hash((__u64)ts.tv_nsec ^ ((__u64)ts.tv_sec << 32) ^ (__u64)(uintptr_t)salt);
}

int blobtab__new(size_t max_entries, size_t max_bytes, struct blobtab **ret_t)
{
	return blobtab__new_seeded(max_entries, max_bytes, random_seed(ret_t), ret_t);
}

int blobtab__new_seeded(size_t max_entries, size_t max_bytes, __u64 seed, struct blobtab **ret_t)
{
	struct blobtab *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	if (u64map__init(&t->first, 0)) {
		free(t);
		return -ENOMEM;
	}
	t->max_entries = max_entries;
	t->max_bytes = max_bytes;
	t->seed = seed;
	*ret_t = t;
	return 0;
}

void blobtab__destroy(struct blobtab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->e[i].data);
	free(t->e);
	u64map__fini(&t->first);
	free(t);
}

/*
 * data's id under hash h (0: none); the first id of h's chain in *ret_first
 * (0: none) and its length in *ret_chain.
 */
static __u32 lookup(const struct blobtab *t, __u64 h, const void *data, size_t len, __u64 *ret_first,
		    unsigned *ret_chain)
{
	*ret_first = 0;
	*ret_chain = 0;
	if (!u64map__get(&t->first, h, ret_first))
		return 0;
	for (__u32 id = (__u32)*ret_first; id; id = t->e[id - 1].next) {
		const struct entry *e = &t->e[id - 1];

		++*ret_chain;
		if (e->len == len && !memcmp(e->data, data, len))
			return id;
	}
	return 0;
}

bool blobtab__find(const struct blobtab *t, const void *data, size_t len, __u32 *ret_id)
{
	__u64 first;
	unsigned chain;
	__u32 id = lookup(t, hash_bytes(data, len, t->seed), data, len, &first, &chain);

	if (id)
		*ret_id = id;
	return id != 0;
}

/*
 * Adds data, new under hash h with a chain of first (chain long): the
 * bounds, then the copy. 0 and *ret_id; -E2BIG, -ENOMEM.
 */
static int add(struct blobtab *t, __u64 h, __u64 first, unsigned chain, const void *data, size_t len,
	       __u32 *ret_id)
{
	struct entry *e, *grown;
	__u32 id;

	if (chain >= BLOBTAB_CHAIN_MAX || t->n >= t->max_entries || t->n >= UINT32_MAX - 1 ||
	    t->bytes + len > t->max_bytes)
		return -E2BIG;
	grown = grow__array(t->e, &t->cap, t->n + 1, sizeof(*grown), 64);
	if (!grown)
		return -ENOMEM;
	t->e = grown;
	e = &t->e[t->n];
	e->data = malloc(len ? len : 1);
	if (!e->data)
		return -ENOMEM;
	memcpy(e->data, data, len);
	e->len = len;
	e->next = (__u32)first;
	id = (__u32)++t->n;
	if (u64map__put(&t->first, h, id)) {
		free(e->data);
		t->n--;
		return -ENOMEM;
	}
	t->bytes += len;
	*ret_id = id;
	return 0;
}

int blobtab__intern(struct blobtab *t, const void *data, size_t len, __u32 *ret_id)
{
	return blobtab__intern_held(t, data, len, NULL, NULL, 0, ret_id);
}

int blobtab__intern_held(struct blobtab *t, const void *data, size_t len, struct mem_hold *hold,
			 struct mem_share *share, size_t cost, __u32 *ret_id)
{
	__u64 h = hash_bytes(data, len, t->seed), first = 0;
	unsigned chain;
	__u32 id = lookup(t, h, data, len, &first, &chain);
	int err;

	if (id) {
		*ret_id = id;
		return 0;
	}
	if (hold) {
		mem_hold__join(hold, share);
		if (!mem_hold__allows(hold, cost))
			return -EDQUOT;
	}
	err = add(t, h, first, chain, data, len, ret_id);
	if (!err && hold)
		mem_hold__add(hold, (long)cost);
	return err;
}

const void *blobtab__get(const struct blobtab *t, __u32 id, size_t *ret_len)
{
	if (!id || id > t->n)
		return NULL;
	if (ret_len)
		*ret_len = t->e[id - 1].len;
	return t->e[id - 1].data;
}

size_t blobtab__count(const struct blobtab *t)
{
	return t->n;
}
