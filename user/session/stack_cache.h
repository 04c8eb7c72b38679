/* SPDX-License-Identifier: MIT */
/*
 * The loader's half of the stack cache (bpf/launch.h's gp_stack_key): which
 * key stands for which stack. The BPF side asks the map; this side owns what
 * is in it:
 *  - installs a key once a launch that missed has been unwound whole; a
 *    new key is young: its hits come whole (audits) until --stack-young
 *    of them (2 by default) found its stack;
 *  - checks: an audit (a hit sent whole, at random) or a second miss of a
 *    key whose stack differs from the installed one, the first time: the key
 *    is split on the first return address where the two stacks differ (the
 *    BPF side reads that word of the stack and looks again), or, where no
 *    word tells them apart (or GP_SC_SLOTS are used), made unusable (the BPF
 *    side then copies every launch of it);
 *  - forgets a process's keys when it exits, and the keys of an older
 *    mapping generation when its mappings change;
 *  - evicts the least recently used key when full.
 * An entry's id goes into the map and comes back in hits. An entry taken out
 * of the map still answers until every event that may carry its id has been
 * read (two complete drains of the ring later); ids carry a generation, so a
 * late event can never be given another key's stack.
 * The map is reached through ops, so tests can drive this without BPF.
 */
#ifndef GP_SESSION_STACK_CACHE_H
#define GP_SESSION_STACK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "bpf/launch.h"

struct stack_cache;

struct stack_cache_ops {
	int (*put)(void *ctx, const struct gp_stack_key *k, const struct gp_stack_val *v);
	int (*del)(void *ctx, const struct gp_stack_key *k);
	void *ctx;
};

/* A launch sent whole, as the cache needs it: its key, its stack and its copy. */
struct stack_cache_launch {
	struct gp_stack_key key; /* the launch's first key (w[] 0): stack_cache__key_of */
	__u32 stack;             /* the stack id it unwound to */
	bool whole;              /* its walk ended where its stack did (raw_stack__whole) */
	/* The word at sp + off in its copy; false outside it. */
	bool (*word)(void *ctx, __u32 off, __u64 *ret);
	/*
	 * The first return address where its stack and stack other differ: the
	 * offset from sp where its walk read it, and other's return address at
	 * that frame. False when none can be placed (no copy; or they differ
	 * past other's frames, or in their Python frames).
	 */
	bool (*differs)(void *ctx, __u32 other, __u32 *ret_off, __u64 *ret_other_word);
	void *ctx;
};

struct stack_cache_stats {
	__u64 installs;      /* keys put into the map */
	__u64 confirmed;     /* misses or audits that found the installed stack again */
	__u64 mismatch;      /* a hit's stack was or may have been wrong: an audit or a miss
				found another stack than that of an entry that had answered hits */
	__u64 splits;        /* keys split: a word of the stack now tells two stacks apart */
	__u64 audits_short;  /* audits whose stack copy ended short: nothing to compare */
	__u64 evicted;       /* keys taken out for room */
	__u64 forgotten;     /* keys taken out: their process exited or remapped */
	__u64 full;          /* misses not installed: no room (every entry in use) */
	__u64 map_errors;    /* map updates the kernel refused */
	__u64 unreadable;    /* misses of a split key whose words lay outside the copy */
	__u64 young_caught;  /* audits of a young key that found another stack (before any hit) */
	size_t live;         /* keys in the map now (unusable and split ones included) */
	size_t unusable;
	size_t split_keys;
	size_t capacity;
};

/* The key the launch program looked up for e (a miss's, or an audit's). */
void stack_cache__key_of(const struct gp_launch_event *e, struct gp_stack_key *ret_key);

/* capacity keys at most (1..GP_STACK_CACHE_MAX). */
int stack_cache__new(size_t capacity, unsigned young, const struct stack_cache_ops *ops,
		     struct stack_cache **ret_sc);
void stack_cache__destroy(struct stack_cache *sc);

/* The stack a hit's entry id answers, marked recently used; -ENOENT: none. */
int stack_cache__lookup(struct stack_cache *sc, __u32 id, __u32 *ret_stack);
/* Marks entry id recently used (a launch of an unusable key). */
void stack_cache__touch(struct stack_cache *sc, __u32 id);

enum stack_cache_learnt {
	STACK_CACHE_INSTALLED,  /* key -> stack is in the map now */
	STACK_CACHE_SAME,       /* the key was installed with this stack already */
	STACK_CACHE_SPLIT,      /* the key had another stack: split, both installed */
	STACK_CACHE_MISMATCH,   /* the key had another stack: now unusable */
	STACK_CACHE_UNUSABLE,   /* the key is unusable: nothing done */
	STACK_CACHE_NO_ROOM,    /* not installed: no free entry, or its words unknown (counted) */
	STACK_CACHE_FAILED,     /* not installed: the map refused it (counted) */
};

/* A launch that missed, unwound whole (l->whole). */
enum stack_cache_learnt stack_cache__learn(struct stack_cache *sc,
					   const struct stack_cache_launch *l);
/*
 * An audit of entry id: a hit sent whole, l. A launch whose walk was cut
 * short (not l->whole) tells nothing; one with another stack than the
 * entry's splits or spoils the key as stack_cache__learn does. False when
 * id names no entry.
 */
bool stack_cache__audit(struct stack_cache *sc, __u32 id, const struct stack_cache_launch *l);
/* Takes out every key of pid (it exited). */
void stack_cache__forget_pid(struct stack_cache *sc, __u32 pid);
/* Takes out the keys of pid whose stack fn says must go (its Python code changed). */
void stack_cache__forget_if(struct stack_cache *sc, __u32 pid, bool (*fn)(void *ctx, __u32 stack),
			    void *ctx);
/* Entry id answers with stack from now on (the same frames, named again). */
void stack_cache__rebind(struct stack_cache *sc, __u32 id, __u32 stack);
/* Takes out pid's keys made under a mapping generation before maps_gen. */
void stack_cache__forget_older(struct stack_cache *sc, __u32 pid, __u32 maps_gen);
/*
 * Every event reserved before some moment since the last call has been
 * handed over: entries taken out two calls ago are free again.
 */
void stack_cache__drained(struct stack_cache *sc);
/*
 * Each entry's stack id through fn (keep them, or renumber them after the
 * stack table was compacted); fn returning 0 leaves the entry as it was.
 */
void stack_cache__visit_stacks(struct stack_cache *sc, __u64 (*fn)(void *ctx, __u64 stack),
			       void *ctx);
void stack_cache__stats(const struct stack_cache *sc, struct stack_cache_stats *ret);

#endif
