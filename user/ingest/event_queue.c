/* SPDX-License-Identifier: MIT */
/* Launch events in blocks of anonymous memory (event_queue.h). */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "user/ingest/event_queue.h"

#define EQ_BLOCK_BYTES ((size_t)4 << 20)
#define EQ_SPARE_BLOCKS 4 /* kept for reuse: fresh pages cost a fault each */
#define EQ_SPARE_BYTES (EQ_SPARE_BLOCKS * EQ_BLOCK_BYTES)

struct eq_entry {
	size_t len;
	uint64_t data[]; /* the event, 8-byte aligned */
};

struct eq_block {
	struct eq_block *next;
	size_t cap;     /* bytes mapped, this header included */
	size_t used;    /* bytes written, this header included */
	size_t touched; /* bytes of pages ever written (resident), page-rounded */
	uint64_t entries[];
};

static size_t page_up(const struct event_queue *q, size_t n)
{
	return (n + q->page - 1) & ~(q->page - 1);
}

static size_t entry_size(size_t len)
{
	return sizeof(struct eq_entry) + ((len + 7) & ~(size_t)7);
}

/*
 * The kept blocks are carved from one mapping reserved here (pages become
 * resident when first written), so however they are used they are one VMA:
 * separate mappings merged with their neighbours or not, and a process's
 * mapping count drifted with the history of its backlogs. Without the
 * reservation every block is a mapping of its own, none kept.
 */
void event_queue__init(struct event_queue *q, size_t max_bytes)
{
	void *region;

	memset(q, 0, sizeof(*q));
	q->max_bytes = max_bytes;
	q->page = (size_t)sysconf(_SC_PAGESIZE);
	pthread_mutex_init(&q->spare_lock, NULL);
	region = mmap(NULL, EQ_SPARE_BYTES, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (region != MAP_FAILED)
		q->region = region;
}

static bool in_region(const struct event_queue *q, const struct eq_block *b)
{
	return q->region && (const char *)b >= q->region &&
	       (const char *)b < q->region + EQ_SPARE_BYTES;
}

static void note_peak(struct event_queue *q, size_t now)
{
	size_t seen = __atomic_load_n(&q->resident_peak, __ATOMIC_RELAXED);

	while (now > seen && !__atomic_compare_exchange_n(&q->resident_peak, &seen, now, false,
							  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* Grows the block's resident count to cover what has been written. */
static void touch(struct event_queue *q, struct eq_block *b)
{
	size_t now = page_up(q, b->used);

	if (now > b->touched) {
		note_peak(q, __atomic_add_fetch(&q->resident, now - b->touched, __ATOMIC_RELAXED));
		b->touched = now;
	}
}

static void block_unmap(struct event_queue *q, struct eq_block *b)
{
	__atomic_sub_fetch(&q->resident, b->touched, __ATOMIC_RELAXED);
	munmap(b, b->cap);
}

/* A kept block (freed, or not yet carved) when need fits the standard size, else a new mapping. */
static struct eq_block *block_get(struct event_queue *q, size_t need)
{
	size_t cap = need + sizeof(struct eq_block) > EQ_BLOCK_BYTES
			     ? page_up(q, need + sizeof(struct eq_block))
			     : EQ_BLOCK_BYTES;
	struct eq_block *b = NULL;

	if (cap == EQ_BLOCK_BYTES && q->region) {
		pthread_mutex_lock(&q->spare_lock);
		b = q->spare;
		if (b) {
			q->spare = b->next;
		} else if (q->n_carved < EQ_SPARE_BLOCKS) {
			b = (struct eq_block *)(q->region + q->n_carved++ * EQ_BLOCK_BYTES);
			b->cap = cap;
			b->touched = 0;
		}
		pthread_mutex_unlock(&q->spare_lock);
	}
	if (!b) {
		b = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b == MAP_FAILED)
			return NULL;
		b->cap = cap;
		b->touched = 0;
	}
	b->next = NULL;
	b->used = sizeof(*b);
	touch(q, b);
	return b;
}

/* Keeps the reserved region's blocks for reuse (their pages stay resident, counted); unmaps the rest. */
static void block_put(struct event_queue *q, struct eq_block *b)
{
	if (!in_region(q, b)) {
		block_unmap(q, b);
		return;
	}
	pthread_mutex_lock(&q->spare_lock);
	b->next = q->spare;
	q->spare = b;
	pthread_mutex_unlock(&q->spare_lock);
}

int event_queue__push(struct event_queue *q, const void *data, size_t len)
{
	size_t need = entry_size(len);
	struct eq_block *b = q->tail;
	struct eq_entry *e;

	if (len > q->max_bytes || q->bytes > q->max_bytes - len)
		return -ENOSPC;
	if (!b || b->cap - b->used < need) {
		b = block_get(q, need);
		if (!b)
			return -ENOMEM;
		if (q->tail)
			q->tail->next = b;
		else
			q->head = b;
		q->tail = b;
	}
	e = (struct eq_entry *)((char *)b + b->used);
	e->len = len;
	memcpy(e->data, data, len);
	b->used += need;
	touch(q, b);
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
		block_put(q, b);
	}
	return err;
}

void event_queue__destroy(struct event_queue *q, struct eq_block *list)
{
	struct eq_block *b;

	event_queue__consume(q, list, NULL, NULL);
	while ((b = q->spare)) {
		q->spare = b->next;
		__atomic_sub_fetch(&q->resident, b->touched, __ATOMIC_RELAXED);
	}
	if (q->region)
		munmap(q->region, EQ_SPARE_BYTES);
	q->region = NULL;
	q->n_carved = 0;
	pthread_mutex_destroy(&q->spare_lock);
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
