/* SPDX-License-Identifier: MIT */
/*
 * Between the files of user/space/: the caches as a generation uses them,
 * and what the process asks of its generations. Not for other users:
 * space.h is the interface.
 */
#ifndef GP_SPACE_SPACE_INTERNAL_H
#define GP_SPACE_SPACE_INTERNAL_H

#include "user/space/space.h"

struct elf_syms;
struct cfi_ref;

/*
 * A generation begins using c: its tables are made if no generation
 * held them. 0 or -ENOMEM. Each get is matched by a put; the last put
 * frees the tables (NULL-safe).
 */
int space_caches__get(struct space_caches *c);
void space_caches__put(struct space_caches *c);
/* The symbols and the CFI table of the file open at fd, loaded on first use
 * (references), the time each took charged to tenant's load budget. */
int space_caches__elf(struct space_caches *c, __u64 tenant, int fd, struct elf_syms **ret_syms);
int space_caches__cfi(struct space_caches *c, __u64 tenant, int fd, struct cfi_ref **ret_ref);
/*
 * Whether tenant may load a file now: false while its loads owe the
 * budget (SPACE_LOAD_BUDGET_NS), counted in loads_refused when count.
 */
bool space_caches__may_load(struct space_caches *c, __u64 tenant, bool count);
/* What a load of tenant's that began at t0 (CLOCK_MONOTONIC) cost, now it is over. */
void space_caches__loaded(struct space_caches *c, __u64 tenant, __u64 t0);

/*
 * How many of a generation's re-reads found a mapping gone or changed:
 * what was learnt per code address before one may be stale (not after one
 * that only added mappings: a new library, CPython's trampolines, JIT code).
 */
unsigned long space_gen__moved(const struct space_gen *g);
/* The bound every generation's maps share (each generation a holder). */
struct mem_share *space_caches__maps_share(struct space_caches *c);

#endif /* GP_SPACE_SPACE_INTERNAL_H */
