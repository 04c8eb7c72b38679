/* SPDX-License-Identifier: MIT */
/* Holds of one share by key (key_holds.h). */
#include <stdlib.h>
#include <string.h>
#include "user/util/grow.h"
#include "user/util/key_holds.h"

struct key_hold {
	__u64 key;
	struct mem_hold hold;
};

void key_holds__init(struct key_holds *kh, struct mem_share *share)
{
	memset(kh, 0, sizeof(*kh));
	kh->share = share;
}

struct mem_hold *key_holds__get(struct key_holds *kh, __u64 key)
{
	struct key_hold *h, **grown;

	for (size_t i = 0; i < kh->n; i++)
		if (kh->e[i]->key == key)
			return &kh->e[i]->hold;
	if (kh->n == KEY_HOLDS_MAX || !(h = calloc(1, sizeof(*h))))
		goto rest;
	grown = grow__array(kh->e, &kh->cap, kh->n + 1, sizeof(*kh->e), 16);
	if (!grown) {
		free(h);
		goto rest;
	}
	kh->e = grown;
	h->key = key;
	mem_hold__join(&h->hold, kh->share);
	kh->e[kh->n++] = h;
	return &h->hold;
rest:
	mem_hold__join(&kh->rest, kh->share);
	return &kh->rest;
}

size_t key_holds__count(const struct key_holds *kh)
{
	return kh->n;
}

void key_holds__fini(struct key_holds *kh)
{
	for (size_t i = 0; i < kh->n; i++) {
		mem_hold__leave_keeping(&kh->e[i]->hold);
		free(kh->e[i]);
	}
	mem_hold__leave_keeping(&kh->rest);
	free(kh->e);
	kh->e = NULL;
	kh->n = kh->cap = 0;
}
