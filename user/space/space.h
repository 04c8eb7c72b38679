/* SPDX-License-Identifier: MIT */
/*
 * A profiled process's address space as the loader knows it: its mappings
 * (its /proc/<pid>/maps, through the one maps parser), the files mapped
 * there (opened inside the root the process sees, through proc.h's in-root
 * open: never by a path outside it), their symbols and CFI (through caches
 * the session owns and passes in), what stack walks learnt per code address
 * (the rule memo), and when its maps are read again (at most every
 * SPACE_REREAD_NS on a miss, within a budget the process cannot exhaust
 * for others). One struct space per profiled process, owned by its target
 * (user/session/target.h); nothing here is shared but the caches.
 *
 * Generations: when the process's mappings change (a library unloaded,
 * another loaded at its address, an exec: bpf/launch.bpf.c's maps_gens),
 * the space begins a new generation, and keeps the earlier ones (at most
 * SPACE_OLD_GENS) while stacks of their time wait to be walked or named,
 * so that two libraries never name each other's frames. Each generation
 * has its stack epoch (the raw stacks carry it); an epoch also begins,
 * over the same mappings, when the process's Python code changes.
 *
 * Not thread-safe: the loader's one session thread calls all of it.
 */
#ifndef GP_SPACE_SPACE_H
#define GP_SPACE_SPACE_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "user/symbolize/symbolize.h"

struct bounded;
struct cfi_table;
struct unwind_memo;

/* The least time between two reads of a process's maps on a miss. */
#define SPACE_REREAD_NS (50 * 1000000ull)
/* Re-reads of one generation's maps, both kinds: at most this many at once, then one per... */
#define SPACE_REREAD_BURST 8u
#define SPACE_REREAD_EVERY_NS (100 * 1000000ull)
/* Earlier generations kept per process. */
#define SPACE_OLD_GENS 8
/*
 * What every process's mappings (each generation's table, proc_maps__bytes,
 * and what is learnt per mapping) hold together: past it, a generation over
 * its share reads no larger maps (user/util/mem_share.h): its process's
 * stacks go unnamed, counted maps_over_share, and the others keep theirs.
 */
#define SPACE_MAPS_SHARE_BYTES (256ull << 20)

/* ------------------------------------------------------------ the caches */

/*
 * The ELF symbol and CFI tables of every file any space of a session maps,
 * loaded once per file. The session makes it before its first space and
 * destroys it after its last; while no generation of any space is open it
 * holds no table (they are made again on the next use). A debug file
 * (elf_syms.h) is opened as a bounded call through b (user/util/bounded.h).
 */
struct space_caches;
struct mem_hold;

int space_caches__new(struct bounded *b, struct space_caches **ret);
/* Every space made with c must be destroyed first. NULL-safe. */
void space_caches__destroy(struct space_caches *c);
/* The bound every generation's maps share (SPACE_MAPS_SHARE_BYTES), for tests; before any opens. */
void space_caches__set_maps_bound(struct space_caches *c, size_t bytes);
/* Maps reads the shared bound refused (the maps_over_share counter). */
unsigned long space_caches__maps_refused(const struct space_caches *c);
/*
 * CFI tables refused for room, held tables filling it, or their process's
 * tenant past its share of the tables held (the cfi_over_bound counter).
 */
unsigned long space_caches__cfi_refused(const struct space_caches *c);
/* The bound of the CFI tables generations hold (SPACE_CFI_REFS), for tests; before any opens. */
void space_caches__set_cfi_refs_bound(struct space_caches *c, size_t refs);
/* Where a tenant's generations (proc__tenant) count the CFI tables they hold. */
struct mem_hold *space_caches__cfi_hold(struct space_caches *c, __u64 tenant);
/* Files whose load a tenant's load budget refused (the loads_refused counter). */
unsigned long space_caches__loads_refused(const struct space_caches *c);
/*
 * The load budget (SPACE_LOAD_BUDGET_NS) and how slowly it is paid back
 * (refill ns per ns of debt; 0: TENANT_REFILL), for tests; before any opens.
 */
void space_caches__set_load_budget(struct space_caches *c, __u64 ns, unsigned refill);
/* Bytes held by the symbol and CFI tables now, for the loader's line. */
void space_caches__stats(const struct space_caches *c, size_t *ret_sym_bytes,
			 size_t *ret_cfi_bytes);

/* ------------------------------------------------------------ one generation */

/* The mappings of one time, with their files' symbols and CFI. */
struct space_gen;

/*
 * Opens pid's address space now: its status (the pid it knows itself by,
 * its user), its root (root NULL: /proc/<pid>/root) and its maps. The files
 * it maps are opened later as bounded calls through b (kept).
 */
int space_gen__open(struct space_caches *c, struct bounded *b, pid_t pid, const char *root,
		    struct space_gen **ret_gen);
void space_gen__destroy(struct space_gen *g); /* NULL-safe */
/*
 * The unwinder's lookup (user/unwind/unwind.h's contract): -ENOENT outside
 * every executable mapping; else 0, the CFI table of the file mapped there
 * (NULL for anonymous code or a file without CFI) and the load bias. On a
 * miss the maps are read again (rate-limited) and asked once more.
 */
int space_gen__cfi(struct space_gen *g, __u64 addr, const struct cfi_table **ret_table,
		   __u64 *ret_bias);
/*
 * The frame at addr: -ENOENT for an address in no executable mapping and
 * no perf map entry (after reading the maps again, rate-limited).
 */
int space_gen__name(struct space_gen *g, __u64 addr, struct symbolized_frame *ret_frame);
/*
 * Reads the maps again, whatever the SPACE_REREAD_NS rule, when they were
 * last read before ts_ns (CLOCK_MONOTONIC): for an address that was mapped
 * at ts_ns (a launch's entry point or return address, at the launch's time)
 * that they lack. Once read after ts_ns they are not read again for it.
 * True when read. Like the re-reads on a miss it draws on the budget
 * (SPACE_REREAD_BURST, then one per SPACE_REREAD_EVERY_NS).
 */
bool space_gen__refresh_if_older(struct space_gen *g, __u64 ts_ns);
/* How many times the maps were read again. */
unsigned long space_gen__rereads(const struct space_gen *g);
/* Perf maps read: once, then again only when the file changed. */
unsigned long space_gen__perfmap_reads(const struct space_gen *g);
/* Re-reads the budget refused (the walk or name went without them). */
unsigned long space_gen__limited(const struct space_gen *g);
/*
 * True when its maps, read, held no mapping: the process was gone (a
 * zombie's maps are empty) before the loader read them, so no frame of it
 * can be named.
 */
bool space_gen__mapless(const struct space_gen *g);

/* ------------------------------------------------------------ the process */

struct space;

/*
 * pid's address space; nothing is read until its first use (a -- COMMAND
 * child is met before its exec, when its maps are still the loader's).
 * on_open(ctx), when given, is called each time the current generation is
 * opened (or fails to open): the process may have exec'd since. Its
 * generations open its files through b (space_gen__open).
 */
int space__new(struct space_caches *c, struct bounded *b, pid_t pid, void (*on_open)(void *ctx),
	       void *ctx, struct space **ret_space);
void space__destroy(struct space *s); /* NULL-safe */

/* The current generation, opened on first use; NULL when it cannot be. */
struct space_gen *space__now(struct space *s);
/* The generation raw stacks of epoch were met in (an earlier one while kept), else now's. */
struct space_gen *space__at_epoch(struct space *s, __u32 epoch);
/*
 * True when the process was gone before its maps were read for an epoch
 * whose generation (space__at_epoch's) is g: g could not be opened (NULL:
 * no such process), or its maps were empty (a zombie's). Its frames cannot
 * be named.
 */
bool space__gone_unread(const struct space *s, const struct space_gen *g);
/* The current stack epoch, and the mapping generation (0 until an event said one). */
__u32 space__epoch(const struct space *s);
__u32 space__maps_gen(const struct space *s);
/* The first event's generation: what the maps read so far are (no new generation). */
void space__set_maps_gen(struct space *s, __u32 maps_gen);
/*
 * The mappings changed (generation maps_gen): the current generation is
 * kept as an earlier one when keep_old (stacks of its time are waiting to
 * be named), the next epoch begins, and the maps are read afresh on next
 * use. -EBUSY when every earlier slot is in use: the caller names what
 * waits, drops them, and asks again.
 */
int space__new_gen(struct space *s, __u32 maps_gen, bool keep_old);
/* A new epoch over the same mappings (the process's Python code changed). */
void space__new_epoch(struct space *s);
/* Forgets the earlier generations: nothing of their time waits any more. */
void space__drop_old(struct space *s);
/*
 * The stack walks' rule memo (made on first use), emptied whenever the
 * current generation's maps were read again since and a mapping had gone
 * or changed; NULL when the space cannot be opened, or without memory.
 */
struct unwind_memo *space__memo(struct space *s);

/* ------------------------------------------------------------ one walk */

/* What one stack walk looks addresses up in: the generation of its event. */
struct space_walk {
	struct space *s;
	struct space_gen *gen; /* NULL: every lookup misses */
	__u32 epoch;           /* the stack epoch of that generation */
	bool current;          /* gen is the current generation: the memo applies */
};

/* The walk of an event of mapping generation maps_gen (opening the current one if it is). */
void space__walk(struct space *s, __u32 maps_gen, struct space_walk *ret);
/* The memo for w: the space's when w is of the current generation, else NULL. */
struct unwind_memo *space_walk__memo(struct space_walk *w);
/* unwind.h's lookup over a struct space_walk: counted and timed (the loader: line). */
int space_walk__lookup(void *ctx, __u64 ip, const struct cfi_table **ret_table,
		       __u64 *ret_bias);
/*
 * A walk of the current generation stopped at an address in no mapping:
 * the launch's callers were mapped when it came (at ts_ns), so maps read
 * before then may just lack a library loaded since. True when they were
 * read again for it (walk again). After a forced re-read that did not help
 * (a return address that is garbage), the next waits SPACE_REREAD_NS.
 */
bool space_walk__reread(struct space_walk *w, __u64 ts_ns);
/* The walk after space_walk__reread reached a mapped address: the re-read helped. */
void space_walk__reread_helped(struct space_walk *w);

/* ------------------------------------------------------------ what it cost */

struct space_stats {
	__u64 memo_hits, memo_misses; /* rule memo lookups answered and not */
	__u64 maps_reread;            /* times the maps were read again */
	__u64 maps_reread_limited;    /* re-reads refused by the budget */
	__u64 maps_over_share;        /* maps reads the shared bound refused (all processes) */
	__u64 cfi_over_bound;         /* CFI tables refused, held ones filling the bound (all) */
	__u64 loads_refused;          /* files a tenant's load budget refused (all) */
	__u64 lookups, lookup_ns;     /* the walks' mapping and CFI lookups (the misses), their time */
};
/* Adds s's figures to *sum. */
void space__add_stats(const struct space *s, struct space_stats *sum);

#endif /* GP_SPACE_SPACE_H */
