/* SPDX-License-Identifier: MIT */
/* The join's correlation index (corr_index.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/join/corr_index.h"

static struct u64slot *slots_new(size_t cap)
{
	struct u64slot *s = malloc(cap * sizeof(*s));

	if (s)
		memset(s, 0xff, cap * sizeof(*s)); /* every key U64MAP_FREE */
	return s;
}

int corr_index__init(struct corr_index *x, size_t limit)
{
	memset(x, 0, sizeof(*x));
	x->direct = slots_new(CORR_INDEX_DIRECT_MIN);
	if (!x->direct)
		return -ENOMEM;
	x->dcap = CORR_INDEX_DIRECT_MIN;
	if (u64map__init(&x->rest, limit)) {
		free(x->direct);
		x->direct = NULL;
		return -ENOMEM;
	}
	return 0;
}

void corr_index__fini(struct corr_index *x)
{
	if (!x)
		return;
	free(x->direct);
	u64map__fini(&x->rest);
	memset(x, 0, sizeof(*x));
}

static struct u64slot *slot(const struct corr_index *x, __u64 corr)
{
	return &x->direct[corr & (x->dcap - 1)];
}

bool corr_index__get(const struct corr_index *x, __u64 corr, __u64 *ret_pos)
{
	const struct u64slot *s = slot(x, corr);

	if (s->key == corr && corr != U64MAP_FREE) {
		if (ret_pos)
			*ret_pos = s->val;
		return true;
	}
	return x->rest.len && u64map__get(&x->rest, corr, ret_pos);
}

/* Whether the direct array should double before corr goes into the map. */
static bool direct_grows(const struct corr_index *x)
{
	return x->dcap < CORR_INDEX_DIRECT_MAX && (x->rest.len + 1) * 8 > x->dcap;
}

/* Where corr goes: its direct slot (held by it, or free), or NULL: the map. */
static struct u64slot *direct_for(const struct corr_index *x, __u64 corr)
{
	struct u64slot *s = slot(x, corr);

	if (corr == U64MAP_FREE)
		return NULL;
	if (s->key == corr)
		return s;
	if (s->key == U64MAP_FREE && !(x->rest.len && u64map__get(&x->rest, corr, NULL)))
		return s;
	return NULL;
}

bool corr_index__allocates(const struct corr_index *x, __u64 corr)
{
	if (direct_for(x, corr) || (x->rest.len && u64map__get(&x->rest, corr, NULL)))
		return false;
	return direct_grows(x) || u64map__grows(&x->rest);
}

/* corr into the direct array or the map, never growing the direct array. */
static int place(struct corr_index *x, __u64 corr, __u64 pos)
{
	struct u64slot *s = direct_for(x, corr);

	if (!s)
		return u64map__put(&x->rest, corr, pos);
	x->dlen += s->key != corr;
	*s = (struct u64slot){ .key = corr, .val = pos };
	return 0;
}

/*
 * Every entry into a direct array of cap slots and a new map: what collides
 * there goes to the map. The old arrays stay when memory cannot be had.
 */
static int rebuild(struct corr_index *x, size_t cap)
{
	struct corr_index n = { .dcap = cap };
	__u64 k, v;
	int err = 0;

	n.direct = slots_new(cap);
	if (!n.direct || u64map__init(&n.rest, x->rest.limit)) {
		free(n.direct);
		return -ENOMEM;
	}
	for (size_t i = 0; i < x->dcap && !err; i++)
		if (x->direct[i].key != U64MAP_FREE)
			err = place(&n, x->direct[i].key, x->direct[i].val);
	for (size_t i = 0; !err && u64map__next(&x->rest, &i, &k, &v);)
		err = place(&n, k, v);
	if (err) {
		corr_index__fini(&n);
		return err;
	}
	corr_index__fini(x);
	*x = n;
	return 0;
}

int corr_index__put(struct corr_index *x, __u64 corr, __u64 pos)
{
	if (!direct_for(x, corr) && !(x->rest.len && u64map__get(&x->rest, corr, NULL)) &&
	    direct_grows(x))
		rebuild(x, x->dcap * 2); /* without memory, the map takes it */
	return place(x, corr, pos);
}

bool corr_index__del(struct corr_index *x, __u64 corr)
{
	struct u64slot *s = slot(x, corr);

	if (s->key == corr && corr != U64MAP_FREE) {
		s->key = U64MAP_FREE;
		x->dlen--;
		return true;
	}
	return x->rest.len && u64map__del(&x->rest, corr, NULL);
}

size_t corr_index__len(const struct corr_index *x)
{
	return x->dlen + u64map__len(&x->rest);
}

size_t corr_index__bytes(const struct corr_index *x)
{
	return x->dcap * sizeof(*x->direct) + u64map__bytes(&x->rest);
}

void corr_index__trim(struct corr_index *x)
{
	size_t cap = x->dcap, len = corr_index__len(x);

	if (cap > CORR_INDEX_DIRECT_MIN && len * 8 < cap) {
		while (cap > CORR_INDEX_DIRECT_MIN && len * 4 < cap)
			cap /= 2;
		rebuild(x, cap);
	}
	u64map__trim(&x->rest);
}
