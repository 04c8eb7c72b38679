/* SPDX-License-Identifier: MIT */
/* A memory bound shared by many holders (mem_share.h). */
#include "user/util/mem_share.h"

void mem_share__init(struct mem_share *s, size_t max)
{
	*s = (struct mem_share){ .max = max };
}

void mem_share__join(struct mem_share *s)
{
	__atomic_add_fetch(&s->holders, 1, __ATOMIC_RELAXED);
}

void mem_share__leave(struct mem_share *s, size_t held)
{
	__atomic_sub_fetch(&s->bytes, held, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&s->holders, 1, __ATOMIC_RELAXED);
}

bool mem_share__allows(struct mem_share *s, size_t held, size_t more)
{
	size_t total = __atomic_load_n(&s->bytes, __ATOMIC_RELAXED);
	unsigned n = __atomic_load_n(&s->holders, __ATOMIC_RELAXED);

	if (total + more <= s->max || held + more <= s->max / (n ? n : 1))
		return true;
	__atomic_add_fetch(&s->refused, 1, __ATOMIC_RELAXED);
	return false;
}

void mem_share__add(struct mem_share *s, long delta)
{
	__atomic_add_fetch(&s->bytes, (size_t)delta, __ATOMIC_RELAXED);
}

size_t mem_share__bytes(const struct mem_share *s)
{
	return __atomic_load_n(&s->bytes, __ATOMIC_RELAXED);
}

unsigned long mem_share__refused(const struct mem_share *s)
{
	return __atomic_load_n(&s->refused, __ATOMIC_RELAXED);
}

void mem_hold__join(struct mem_hold *h, struct mem_share *s)
{
	if (h->share || !s)
		return;
	h->share = s;
	mem_share__join(s);
	mem_share__add(s, (long)h->held);
}

void mem_hold__leave(struct mem_hold *h)
{
	if (h->share)
		mem_share__leave(h->share, h->held);
	h->share = NULL;
}

void mem_hold__leave_keeping(struct mem_hold *h)
{
	if (h->share)
		mem_share__leave(h->share, 0);
	h->share = NULL;
}

bool mem_hold__allows(struct mem_hold *h, size_t more)
{
	return !h->share || mem_share__allows(h->share, h->held, more);
}

void mem_hold__add(struct mem_hold *h, long delta)
{
	h->held += (size_t)delta;
	if (h->share)
		mem_share__add(h->share, delta);
}
