/* SPDX-License-Identifier: MIT */
/*
 * One memory bound shared by many holders, one per profiled process (its
 * code-object cache, graph nodes, maps, join queues, kernel names, cubins):
 * within the bound, all together, any holder may take more; past it, a
 * holder may take more only within its share, the bound over the holders.
 * So processes a user starts by the hundred make the loader hold at most
 * about twice the bound, not a hundred times each one's own bound, and the
 * one that fills it gives way, not the others.
 * The counts are atomic: holders may be on different threads.
 */
#ifndef GP_UTIL_MEM_SHARE_H
#define GP_UTIL_MEM_SHARE_H

#include <stdbool.h>
#include <stddef.h>

struct mem_share {
	size_t max;       /* the bound (fixed once holders join) */
	size_t bytes;     /* atomic: what all holders hold */
	unsigned holders; /* atomic */
	unsigned long refused; /* atomic: takes refused (each holder then gives back its own) */
};

void mem_share__init(struct mem_share *s, size_t max);
void mem_share__join(struct mem_share *s);
/* A holder leaves, giving back the held bytes it still counted. */
void mem_share__leave(struct mem_share *s, size_t held);
/*
 * Whether a holder holding held may take more: the total stays within the
 * bound, or the holder within its share. A refusal is counted.
 */
bool mem_share__allows(struct mem_share *s, size_t held, size_t more);
/* What a holder took (delta > 0) or gave back (delta < 0). */
void mem_share__add(struct mem_share *s, long delta);
size_t mem_share__bytes(const struct mem_share *s);
unsigned long mem_share__refused(const struct mem_share *s);

/*
 * One holder's side: the share it counts against (NULL: none, everything
 * allowed) and what it counts there. Single-threaded per holder.
 */
struct mem_hold {
	struct mem_share *share;
	size_t held;
};

/* Joins s, once (NULL, or a share joined already: nothing), counting what h holds already. */
void mem_hold__join(struct mem_hold *h, struct mem_share *s);
/* Leaves its share, giving back what it counts (nothing when it joined none). */
void mem_hold__leave(struct mem_hold *h);
/*
 * Leaves its share, what it counts staying counted there: for what outlives
 * its holder (strings interned for good), so that holders that come and go
 * cannot take it all.
 */
void mem_hold__leave_keeping(struct mem_hold *h);
/* Whether h may hold more bytes more: it joined no share, or its share allows it. */
bool mem_hold__allows(struct mem_hold *h, size_t more);
/* h holds delta bytes more (fewer when negative), counted in its share too. */
void mem_hold__add(struct mem_hold *h, long delta);

#endif
