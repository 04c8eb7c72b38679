/* SPDX-License-Identifier: MIT */
/* The raw stack table with per-window use (stack_table.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/session/stack_table.h"
#include "user/util/blobtab.h"
#include "user/util/grow.h"

int stack_table__init(struct stack_table *st, size_t max_entries, size_t max_bytes)
{
	memset(st, 0, sizeof(*st));
	st->max_entries = max_entries;
	st->max_bytes = max_bytes;
	st->window = 1;
	return blobtab__new(max_entries, max_bytes, &st->raw);
}

void stack_table__fini(struct stack_table *st)
{
	blobtab__destroy(st->raw);
	free(st->last);
	memset(st, 0, sizeof(*st));
}

static int last__fit(struct stack_table *st, size_t id)
{
	__u32 *n = grow__array_zeroed(st->last, &st->cap_last, id + 1, sizeof(*n), 1024);

	if (!n)
		return -ENOMEM;
	st->last = n;
	return 0;
}

int stack_table__intern(struct stack_table *st, const void *raw, size_t len, __u32 *ret_id,
			bool *ret_new)
{
	size_t known = blobtab__count(st->raw);
	__u32 id;
	int err;

	/* Room for the mark first: an id handed out is always marked. */
	if ((err = last__fit(st, known + 1)) || (err = blobtab__intern(st->raw, raw, len, &id)))
		return err;
	st->last[id] = st->window;
	*ret_id = id;
	*ret_new = blobtab__count(st->raw) != known;
	return 0;
}

const void *stack_table__get(const struct stack_table *st, __u32 id, size_t *ret_len)
{
	return blobtab__get(st->raw, id, ret_len);
}

size_t stack_table__count(const struct stack_table *st)
{
	return blobtab__count(st->raw);
}

void stack_table__keep(struct stack_table *st, __u32 id)
{
	if (id && id < st->cap_last && id <= blobtab__count(st->raw))
		st->last[id] = st->window;
}

int stack_table__compact_begin(const struct stack_table *st, struct stack_compaction *ret_c)
{
	struct stack_compaction c = { .n = blobtab__count(st->raw) };
	int err;

	c.remap = calloc(c.n + 1, sizeof(*c.remap));
	if (!c.remap)
		return -ENOMEM;
	if ((err = blobtab__new(st->max_entries, st->max_bytes, &c.raw))) {
		free(c.remap);
		return err;
	}
	for (__u32 id = 1; id <= c.n; id++) {
		size_t len;
		const void *raw;

		if (st->last[id] != st->window)
			continue;
		raw = blobtab__get(st->raw, id, &len);
		if (raw && (err = blobtab__intern(c.raw, raw, len, &c.remap[id]))) {
			stack_compaction__free(&c);
			return err;
		}
	}
	*ret_c = c;
	return 0;
}

void stack_table__compact_commit(struct stack_table *st, struct stack_compaction *c)
{
	blobtab__destroy(st->raw);
	st->raw = c->raw;
	c->raw = NULL;
	st->window++;
	/* Kept stacks start the new window unused: forgotten at its end unless used. */
	memset(st->last, 0, st->cap_last * sizeof(*st->last));
}

void stack_compaction__free(struct stack_compaction *c)
{
	blobtab__destroy(c->raw);
	free(c->remap);
	memset(c, 0, sizeof(*c));
}
