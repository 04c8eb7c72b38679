/* SPDX-License-Identifier: MIT */
/* Launch events in blocks of anonymous memory (event_queue.h). */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "user/session/event_queue.h"

#define EQ_BLOCK_BYTES ((size_t)4 << 20)

struct eq_entry {
	size_t len;
	uint64_t data[]; /* the event, 8-byte aligned */
};

struct eq_block {
	struct eq_block *next;
	size_t cap;  /* bytes mapped, this header included */
	size_t used; /* bytes written, this header included */
	uint64_t entries[];
};

static size_t page_up(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (n + page - 1) & ~(page - 1);
}

static size_t entry_size(size_t len)
{
	return sizeof(struct eq_entry) + ((len + 7) & ~(size_t)7);
}

void event_queue__init(struct event_queue *q, size_t max_bytes)
{
	memset(q, 0, sizeof(*q));
	q->max_bytes = max_bytes;
}

static struct eq_block *block_new(size_t need)
{
	size_t cap = need + sizeof(struct eq_block) > EQ_BLOCK_BYTES
			     ? page_up(need + sizeof(struct eq_block))
			     : EQ_BLOCK_BYTES;
	struct eq_block *b = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0);

	if (b == MAP_FAILED)
		return NULL;
	b->next = NULL;
	b->cap = cap;
	b->used = sizeof(*b);
	return b;
}

static void note_peak(struct event_queue *q, size_t now)
{
	size_t seen = __atomic_load_n(&q->resident_peak, __ATOMIC_RELAXED);

	while (now > seen && !__atomic_compare_exchange_n(&q->resident_peak, &seen, now, false,
							  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

int event_queue__push(struct event_queue *q, const void *data, size_t len)
{
	size_t need = entry_size(len), before;
	struct eq_block *b = q->tail;
	struct eq_entry *e;

	if (len > q->max_bytes || q->bytes > q->max_bytes - len)
		return -ENOSPC;
	if (!b || b->cap - b->used < need) {
		b = block_new(need);
		if (!b)
			return -ENOMEM;
		if (q->tail)
			q->tail->next = b;
		else
			q->head = b;
		q->tail = b;
		before = 0;
	} else {
		before = page_up(b->used);
	}
	e = (struct eq_entry *)((char *)b + b->used);
	e->len = len;
	memcpy(e->data, data, len);
	b->used += need;
	note_peak(q, __atomic_add_fetch(&q->resident, page_up(b->used) - before, __ATOMIC_RELAXED));
	q->bytes += len;
	if (q->bytes > q->peak_bytes)
		q->peak_bytes = q->bytes;
	return 0;
}

struct eq_block *event_queue__take(struct event_queue *q)
{
	struct eq_block *list = q->head;

	q->head = q->tail = NULL;
	q->bytes = 0;
	return list;
}

int event_queue__consume(struct event_queue *q, struct eq_block *list, event_queue_fn fn,
			 void *ctx)
{
	struct eq_block *b;
	int err = 0;

	while ((b = list)) {
		size_t at = sizeof(*b);

		list = b->next;
		while (fn && !err && at < b->used) {
			const struct eq_entry *e = (const struct eq_entry *)((char *)b + at);

			err = fn(ctx, e->data, e->len);
			at += entry_size(e->len);
		}
		__atomic_sub_fetch(&q->resident, page_up(b->used), __ATOMIC_RELAXED);
		munmap(b, b->cap);
	}
	return err;
}

size_t event_queue__resident(const struct event_queue *q)
{
	return __atomic_load_n(&q->resident, __ATOMIC_RELAXED);
}

size_t event_queue__resident_peak(struct event_queue *q)
{
	size_t peak = __atomic_exchange_n(&q->resident_peak, event_queue__resident(q),
					  __ATOMIC_RELAXED);
	size_t now = event_queue__resident(q);

	return peak > now ? peak : now;
}
