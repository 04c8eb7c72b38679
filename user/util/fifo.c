/* SPDX-License-Identifier: MIT */
/* A bounded growable FIFO (fifo.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/util/fifo.h"

/* Moves f's items, in order, to a buffer of ncap (>= len) from its head. */
static int fifo__resize(struct fifo *f, size_t ncap)
{
	char *n = malloc(ncap * f->item);
	size_t first = f->len < f->cap - f->head ? f->len : f->cap - f->head; /* up to the end */

	if (!n)
		return -ENOMEM;
	if (f->len) { /* two runs at most: from the head to the end, then the wrapped rest */
		memcpy(n, f->buf + f->head * f->item, first * f->item);
		memcpy(n + first * f->item, f->buf, (f->len - first) * f->item);
	}
	free(f->buf);
	f->buf = n;
	f->cap = ncap;
	f->head = 0;
	return 0;
}

static void fifo__release(struct fifo *f)
{
	free(f->buf);
	f->buf = NULL;
	f->cap = f->head = 0;
}

int fifo__push(struct fifo *f, const void *item)
{
	if (f->len == f->max)
		return -E2BIG;
	if (f->len == f->cap && fifo__resize(f, f->cap ? f->cap * 2 : 16))
		return -ENOMEM;
	memcpy(f->buf + ((f->head + f->len) % f->cap) * f->item, item, f->item);
	f->len++;
	return 0;
}

void fifo__pop(struct fifo *f)
{
	if (!f->len)
		return;
	f->head = (f->head + 1) % f->cap;
	f->len--;
	if (!f->len && f->cap > FIFO_KEEP)
		fifo__release(f); /* a burst's room, given back */
}

void fifo__drop_last(struct fifo *f)
{
	if (f->len)
		f->len--;
}

void fifo__trim(struct fifo *f)
{
	size_t ncap = f->cap;

	if (f->cap <= FIFO_KEEP || f->len * 4 >= f->cap)
		return;
	if (!f->len) {
		fifo__release(f);
		return;
	}
	while (ncap / 2 >= 16 && ncap / 2 >= 2 * f->len)
		ncap /= 2;
	fifo__resize(f, ncap);
}

void fifo__free(struct fifo *f)
{
	free(f->buf);
	memset(f, 0, sizeof(*f));
}
