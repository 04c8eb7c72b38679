/* SPDX-License-Identifier: MIT */
/* Rows of CFI rules and their builder (cfi_rows.h). */
#include "user/unwind/cfi_rows.h"
#include "user/util/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static __u64 rule__hash(const struct cfi_rule *r)
{
	const __u8 *p = (const __u8 *)r;
	__u64 h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < sizeof(*r); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static int cfi_builder__grow_hash(struct cfi_builder *b)
{
	size_t cap = b->hash_cap ? b->hash_cap * 2 : 1024, i, j;
	__u32 *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (i = 0; i < b->rows->n_rules; i++) {
		j = rule__hash(&b->rows->rules[i]) & (cap - 1);
		while (h[j])
			j = (j + 1) & (cap - 1);
		h[j] = (__u32)i + 1;
	}
	free(b->hash);
	b->hash = h;
	b->hash_cap = cap;
	return 0;
}

int cfi_builder__intern(struct cfi_builder *b, const struct cfi_rule *r, __u32 *ret_idx)
{
	struct cfi_rows *t = b->rows;
	struct cfi_rule *rules;
	size_t j;
	int err;

	if (t->n_rules * 2 >= b->hash_cap) {
		err = cfi_builder__grow_hash(b);
		if (err)
			return err;
	}
	j = rule__hash(r) & (b->hash_cap - 1);
	while (b->hash[j]) {
		if (!memcmp(&t->rules[b->hash[j] - 1], r, sizeof(*r))) {
			*ret_idx = b->hash[j] - 1;
			return 0;
		}
		j = (j + 1) & (b->hash_cap - 1);
	}
	if (t->n_rules >= CFI_MAX_RULES)
		return -E2BIG;
	rules = grow__array(t->rules, &b->cap_rules, t->n_rules + 1, sizeof(*rules), 256);
	if (!rules)
		return -ENOMEM;
	t->rules = rules;
	t->rules[t->n_rules] = *r;
	b->hash[j] = (__u32)t->n_rules + 1;
	*ret_idx = (__u32)t->n_rules++;
	return 0;
}

/* Rows are capped by the sections' size: each needs an instruction byte of its own. */
int cfi_builder__emit(struct cfi_builder *b, __u64 addr, __u32 idx)
{
	struct cfi_rows *t = b->rows;
	size_t cap, limit = b->max_rows + (idx == CFI_GAP ? 2 : 0);
	__u32 off, *a, *r;

	if (addr < b->start)
		addr = b->start;
	off = (__u32)(addr - t->base); /* callers keep FDEs within 4 GiB of base */
	if (t->n_rows && t->addrs[t->n_rows - 1] == off) {
		t->rule_idx[t->n_rows - 1] = idx;
		if (t->n_rows > 1 && t->rule_idx[t->n_rows - 2] == idx)
			t->n_rows--;
		return 0;
	}
	if (t->n_rows ? t->rule_idx[t->n_rows - 1] == idx : idx == CFI_GAP)
		return 0;
	if (t->n_rows >= limit)
		return -E2BIG;
	if (t->n_rows == b->cap_rows) {
		cap = b->cap_rows ? b->cap_rows * 2 : 1024;
		if (cap > b->max_rows + 2)
			cap = b->max_rows + 2;
		a = realloc(t->addrs, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		t->addrs = a;
		r = realloc(t->rule_idx, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		t->rule_idx = r;
		b->cap_rows = cap;
	}
	t->addrs[t->n_rows] = off;
	t->rule_idx[t->n_rows++] = idx;
	return 0;
}

void cfi_builder__fini(struct cfi_builder *b)
{
	free(b->hash);
	b->hash = NULL;
	b->hash_cap = 0;
}

void cfi_rows__shrink(struct cfi_rows *t)
{
	void *p;

	if (!t->n_rows)
		return;
	p = realloc(t->addrs, t->n_rows * sizeof(*t->addrs));
	if (p)
		t->addrs = p;
	p = realloc(t->rule_idx, t->n_rows * sizeof(*t->rule_idx));
	if (p)
		t->rule_idx = p;
	if (t->n_rules) {
		p = realloc(t->rules, t->n_rules * sizeof(*t->rules));
		if (p)
			t->rules = p;
	}
}

int cfi_rows__find(const struct cfi_rows *t, __u64 vaddr, struct cfi_rule *ret_rule)
{
	size_t lo = 0, hi, mid;
	__u32 off, idx;

	if (!t->n_rows || vaddr < t->base || vaddr - t->base > UINT32_MAX)
		return -ENOENT;
	off = (__u32)(vaddr - t->base);
	hi = t->n_rows;
	while (lo < hi) { /* first row above off */
		mid = lo + (hi - lo) / 2;
		if (t->addrs[mid] <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	idx = t->rule_idx[lo - 1];
	if (idx == CFI_GAP || idx >= t->n_rules)
		return -ENOENT;
	*ret_rule = t->rules[idx];
	return 0;
}

size_t cfi_rows__array_bytes(const struct cfi_rows *t)
{
	return t->n_rows * (sizeof(*t->addrs) + sizeof(*t->rule_idx)) +
	       t->n_rules * sizeof(*t->rules);
}

void cfi_rows__fini(struct cfi_rows *t)
{
	free(t->addrs);
	free(t->rule_idx);
	free(t->rules);
	memset(t, 0, sizeof(*t));
}

void cfi_rows__free(struct cfi_rows *t)
{
	if (!t)
		return;
	cfi_rows__fini(t);
	free(t);
}
