/* SPDX-License-Identifier: MIT */
/*
 * The launch-event queue's storage: events packed in order into blocks of
 * anonymous memory (4 MiB, or one event's size when larger). The first four
 * standard blocks are carved from one reserved mapping and kept for reuse
 * once their events have been handed on (fresh pages cost a page fault
 * each; one mapping keeps the process's mapping count fixed); every other
 * block is a mapping of its own, unmapped once handed on,
 * so a backlog's memory leaves the process when the backlog does (a malloc
 * per event left it in the heap at glibc's discretion). Bounded: past
 * max_bytes of events a push is refused. push and take are serialised by
 * the caller's lock; consume runs without it; the spare blocks have a leaf
 * lock of their own; the resident count is atomic.
 */
#ifndef GP_INGEST_EVENT_QUEUE_H
#define GP_INGEST_EVENT_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct eq_block;

struct event_queue {
	struct eq_block *head, *tail;
	size_t bytes, max_bytes, peak_bytes; /* event bytes queued */
	size_t page; /* the system's page size: blocks and residency are counted in pages */
	size_t resident; /* atomic: bytes of block pages written and not yet unmapped */
	size_t resident_peak; /* atomic: the most resident since the last peak read */
	pthread_mutex_t spare_lock; /* leaf: guards the two below */
	struct eq_block *spare; /* the region's blocks free for reuse */
	unsigned n_carved; /* the region's blocks ever used */
	char *region; /* the kept blocks' reserved mapping (set at init), or NULL */
};

typedef int (*event_queue_fn)(void *ctx, const void *data, size_t len);

void event_queue__init(struct event_queue *q, size_t max_bytes);
/* Copies one event in. -ENOSPC past max_bytes (nothing taken), -ENOMEM. */
int event_queue__push(struct event_queue *q, const void *data, size_t len);
static inline bool event_queue__empty(const struct event_queue *q)
{
	return !q->head;
}
/* Detaches everything queued (bytes back to 0), for consume. */
struct eq_block *event_queue__take(struct event_queue *q);
/*
 * Hands each event of the taken blocks to fn in order (fn NULL: none),
 * releasing each block (kept as a spare, or unmapped) once its events are
 * done. Returns fn's first error;
 * the events after it are dropped, their blocks unmapped all the same.
 */
int event_queue__consume(struct event_queue *q, struct eq_block *list, event_queue_fn fn,
			 void *ctx);
/* Frees the taken list (may be NULL), the spare blocks, and the lock. */
void event_queue__destroy(struct event_queue *q, struct eq_block *list);
/* Bytes of queue memory resident now: queued, taken and spare blocks. */
size_t event_queue__resident(const struct event_queue *q);
/* The most resident since the previous call (or init); starts the next span. */
size_t event_queue__resident_peak(struct event_queue *q);

#endif /* GP_INGEST_EVENT_QUEUE_H */
