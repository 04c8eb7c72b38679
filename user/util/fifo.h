/* SPDX-License-Identifier: MIT */
/*
 * A growable first-in first-out queue of fixed-size items with a hard bound
 * (the join's queues and tables). Its room doubles as it fills, and a burst's
 * room goes back once drained (fifo__pop) or mostly drained (fifo__trim):
 * thousands of queues never hold their peaks at once.
 */
#ifndef GP_UTIL_FIFO_H
#define GP_UTIL_FIFO_H

#include <stddef.h>

struct fifo {
	char *buf;
	size_t item;  /* bytes an item: set before the first push */
	size_t max;   /* items at most: set before the first push */
	size_t cap, head, len;
};

/* Items an empty fifo keeps room for; a larger buffer goes once it is drained. */
#define FIFO_KEEP 256

/* 0, -E2BIG at its bound, -ENOMEM. */
int fifo__push(struct fifo *f, const void *item);
/* Drops the oldest item (nothing when empty). */
void fifo__pop(struct fifo *f);
/* Takes back the item pushed last. */
void fifo__drop_last(struct fifo *f);
/*
 * Room a burst left goes back: a buffer past FIFO_KEEP items holding under
 * a quarter of them is moved to one at least twice its items (none, empty).
 * Left as it is when memory cannot be had.
 */
void fifo__trim(struct fifo *f);
/* Frees its room and empties it, item size and bound included. */
void fifo__free(struct fifo *f);

/* The i-th item from the oldest, NULL past the last. */
static inline void *fifo__at(const struct fifo *f, size_t i)
{
	return i < f->len ? f->buf + ((f->head + i) % f->cap) * f->item : NULL;
}

/* What its room takes. */
static inline size_t fifo__bytes(const struct fifo *f)
{
	return f->cap * f->item;
}

#endif
