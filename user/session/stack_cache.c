/* SPDX-License-Identifier: MIT */
/*
 * The loader's stack cache (stack_cache.h). Entries live in one array of
 * slots: the map's keys (live, unusable or split) on an LRU list, entries
 * taken out of the map on a FIFO until two drains have passed, those freed
 * since on a free list, and those never used after `fresh` (handed out in
 * order: their pages stay untouched until then). There are more slots than
 * the map has room for, so that entries
 * waiting out their drains never keep a new key from being installed.
 *
 * A new key is young: the launch program sends every hit of it whole (an
 * audit) until `young` of them (--stack-young) have found its stack, so
 * that a second stack under it is most often met before the key has
 * answered any hit.
 *
 * A split entry stands for a first key (w[] 0) whose launches had two
 * stacks: its map value names the words (return-address slots, as offsets
 * from sp) that told them apart, and its children are the keys with those
 * words filled in. Why one word is enough: two stacks that agree on every
 * return address up to frame i were walked through the same rules, so
 * frame i's return address lies at the same offset from sp in both.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/session/stack_cache.h"
#include "user/util/u64map.h"

#define SLOT_BITS 20
#define SLOT_MASK ((1u << SLOT_BITS) - 1)
#define GEN_MAX ((1u << (32 - SLOT_BITS)) - 1)
/* Drains an entry taken out of the map waits before its slot is used again. */
#define RETIRE_DRAINS 2

_Static_assert(GP_STACK_CACHE_MAX + GP_STACK_CACHE_MAX / 4 + 64 < (1u << SLOT_BITS),
	       "slots fit an id's slot bits");

enum entry_state { E_FREE = 0, E_LIVE, E_UNUSABLE, E_SPLIT, E_RETIRED };

struct entry {
	struct gp_stack_key key;
	__u32 stack;        /* live, unusable, retired: the stack id */
	__u32 gen;          /* of the slot's current (or last) entry, 1..GEN_MAX */
	__u32 prev, next;   /* LRU (in the map), or the next on the FIFO or free list */
	__u32 parent;       /* a split key's child: the split entry's slot */
	__u64 retired_at;   /* the drain count when it was taken out */
	__u64 answered;     /* hits it answered */
	__u32 confirmed;    /* audits that found its stack */
	bool young;         /* its hits still come whole */
	__u16 words[GP_SC_SLOTS]; /* split: the words' offsets from sp, in 8-byte units */
	__u8 nwords;
	__u8 state;
};

struct stack_cache {
	struct entry *e;    /* [1..nslots] */
	size_t cap, nslots;
	__u32 free_head;
	__u32 fresh;        /* slots from here to nslots were never used (untouched memory) */
	unsigned young;     /* audits that must find a new key's stack before its hits go bare */
	__u32 lru_head, lru_tail;      /* most and least recently used */
	__u32 fifo_head, fifo_tail;    /* taken out, oldest first */
	__u64 drains;
	struct u64map by_key;          /* key hash -> slot of an entry in the map */
	struct stack_cache_ops ops;
	struct stack_cache_stats st;
};

static __u64 key_hash(const struct gp_stack_key *k)
{
	__u64 a = u64map__hash(k->sp ^ (k->ret << 17 | k->ret >> 47));
	__u64 b = u64map__hash(k->func + 3 * k->py_hash);
	__u64 c = u64map__hash((__u64)k->pid << 32 | k->maps_gen);
	__u64 d = u64map__hash(k->w[0] ^ k->w[1] * 5 ^ k->w[2] * 7 ^ k->w[3] * 11);

	return a ^ (b << 1 | b >> 63) ^ (d << 2 | d >> 62) ^
	       u64map__hash(c + ((__u64)k->probe << 16 | k->py_flags));
}

void stack_cache__key_of(const struct gp_launch_event *e, struct gp_stack_key *ret_key)
{
	*ret_key = (struct gp_stack_key){ .sp = e->sp, .ret = e->ret, .func = e->func,
					  .py_hash = e->py_hash, .pid = e->pid,
					  .maps_gen = e->maps_gen, .probe = (__u16)e->probe,
					  .py_flags = e->flags & GP_EV_KEY_FLAGS };
}

static __u32 entry_id(const struct stack_cache *sc, __u32 slot)
{
	return slot | sc->e[slot].gen << SLOT_BITS;
}

static bool in_map(const struct entry *x)
{
	return x->state == E_LIVE || x->state == E_UNUSABLE || x->state == E_SPLIT;
}

int stack_cache__new(size_t capacity, unsigned young, const struct stack_cache_ops *ops,
		     struct stack_cache **ret_sc)
{
	struct stack_cache *sc;
	int err;

	if (!capacity || capacity > GP_STACK_CACHE_MAX || !ops || !ops->put || !ops->del)
		return -EINVAL;
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	sc->cap = capacity;
	sc->young = young;
	sc->nslots = capacity + capacity / 4 + 64;
	sc->e = calloc(sc->nslots + 1, sizeof(*sc->e));
	if (!sc->e) {
		free(sc);
		return -ENOMEM;
	}
	if ((err = u64map__init(&sc->by_key, capacity))) {
		free(sc->e);
		free(sc);
		return err;
	}
	/* Slots are handed out from fresh on: pages of the array no entry used stay untouched. */
	sc->fresh = 1;
	sc->ops = *ops;
	sc->st.capacity = capacity;
	*ret_sc = sc;
	return 0;
}

void stack_cache__destroy(struct stack_cache *sc)
{
	if (!sc)
		return;
	u64map__fini(&sc->by_key);
	free(sc->e);
	free(sc);
}

/* ------------------------------------------------------------ lists */

static void lru_unlink(struct stack_cache *sc, __u32 i)
{
	struct entry *x = &sc->e[i];

	if (x->prev)
		sc->e[x->prev].next = x->next;
	else
		sc->lru_head = x->next;
	if (x->next)
		sc->e[x->next].prev = x->prev;
	else
		sc->lru_tail = x->prev;
	x->prev = x->next = 0;
}

static void lru_push(struct stack_cache *sc, __u32 i)
{
	struct entry *x = &sc->e[i];

	x->prev = 0;
	x->next = sc->lru_head;
	if (sc->lru_head)
		sc->e[sc->lru_head].prev = i;
	sc->lru_head = i;
	if (!sc->lru_tail)
		sc->lru_tail = i;
}

static void touch(struct stack_cache *sc, __u32 i)
{
	if (sc->lru_head != i) {
		lru_unlink(sc, i);
		lru_push(sc, i);
	}
}

static void retire(struct stack_cache *sc, __u32 i);

/* A split entry's children go with it: without its words they are never looked up. */
static void retire_children(struct stack_cache *sc, __u32 parent)
{
	for (__u32 i = 1; i < sc->fresh; i++)
		if (sc->e[i].parent == parent && in_map(&sc->e[i]))
			retire(sc, i);
}

/* Out of the map; its id still answers until RETIRE_DRAINS drains have passed. */
static void retire(struct stack_cache *sc, __u32 i)
{
	struct entry *x = &sc->e[i];
	__u8 was = x->state;

	if (sc->ops.del(sc->ops.ctx, &x->key))
		sc->st.map_errors++;
	u64map__del(&sc->by_key, key_hash(&x->key), NULL);
	lru_unlink(sc, i);
	if (was == E_UNUSABLE)
		sc->st.unusable--;
	if (was == E_SPLIT)
		sc->st.split_keys--;
	sc->st.live--;
	x->state = E_RETIRED;
	x->retired_at = sc->drains;
	x->next = 0;
	if (sc->fifo_tail)
		sc->e[sc->fifo_tail].next = i;
	else
		sc->fifo_head = i;
	sc->fifo_tail = i;
	if (was == E_SPLIT)
		retire_children(sc, i);
}

static __u32 take_free(struct stack_cache *sc)
{
	__u32 i = sc->free_head;

	if (!i && sc->fresh <= sc->nslots) {
		i = sc->fresh++;
		sc->e[i].gen = 1; /* the rest zero, as calloc left it */
		return i;
	}
	if (i) {
		struct entry *x = &sc->e[i];
		__u32 gen = x->gen >= GEN_MAX ? 1 : x->gen + 1;

		sc->free_head = x->next;
		memset(x, 0, sizeof(*x));
		x->gen = gen;
	}
	return i;
}

static void give_free(struct stack_cache *sc, __u32 i)
{
	sc->e[i].state = E_FREE;
	sc->e[i].parent = 0;
	sc->e[i].next = sc->free_head;
	sc->free_head = i;
}

/* ------------------------------------------------------------ entries */

/* The slot an id names; 0 when it names none (stale generation, free slot). */
static __u32 slot_of(const struct stack_cache *sc, __u32 id)
{
	__u32 i = id & SLOT_MASK;

	if (!i || i > sc->nslots || sc->e[i].gen != id >> SLOT_BITS || sc->e[i].state == E_FREE ||
	    sc->e[i].state == E_SPLIT)
		return 0;
	return i;
}

int stack_cache__lookup(struct stack_cache *sc, __u32 id, __u32 *ret_stack)
{
	__u32 i = slot_of(sc, id);

	if (!i)
		return -ENOENT;
	if (sc->e[i].state != E_RETIRED) {
		touch(sc, i);
		if (sc->e[i].parent)
			touch(sc, sc->e[i].parent);
	}
	sc->e[i].answered++;
	*ret_stack = sc->e[i].stack;
	return 0;
}

void stack_cache__touch(struct stack_cache *sc, __u32 id)
{
	__u32 i = slot_of(sc, id);

	if (i && sc->e[i].state != E_RETIRED)
		touch(sc, i);
}

static void make_unusable(struct stack_cache *sc, __u32 i)
{
	struct gp_stack_val v = { .id = entry_id(sc, i), .flags = GP_SC_UNUSABLE };

	if (sc->ops.put(sc->ops.ctx, &sc->e[i].key, &v)) {
		/* Cannot say it: take it out, so that its launches miss and copy. */
		sc->st.map_errors++;
		retire(sc, i);
		return;
	}
	sc->e[i].state = E_UNUSABLE;
	sc->st.unusable++;
}

static __u32 find_key(const struct stack_cache *sc, const struct gp_stack_key *k, bool *ret_clash)
{
	__u64 slot;

	*ret_clash = false;
	if (!u64map__get(&sc->by_key, key_hash(k), &slot))
		return 0;
	if (memcmp(&sc->e[slot].key, k, sizeof(*k))) {
		*ret_clash = true; /* another key with the same hash holds the place */
		return 0;
	}
	return (__u32)slot;
}

/* A free slot, making room in the map first when it is full; 0: none. */
static __u32 make_room(struct stack_cache *sc, __u32 keep)
{
	if (sc->st.live >= sc->cap && sc->lru_tail && sc->lru_tail != keep) {
		retire(sc, sc->lru_tail);
		sc->st.evicted++;
	}
	return sc->st.live < sc->cap ? take_free(sc) : 0;
}

/* Puts k into the map: for stack (state E_LIVE), or a split entry (E_SPLIT, words). */
static __u32 install(struct stack_cache *sc, const struct gp_stack_key *k, __u8 state, __u32 stack,
		     __u32 parent, const __u16 *words, __u8 nwords)
{
	struct gp_stack_val v = { 0 };
	bool clash;
	__u32 i;

	if (find_key(sc, k, &clash) || clash || !(i = make_room(sc, parent))) {
		sc->st.full++;
		return 0;
	}
	sc->e[i].key = *k;
	sc->e[i].stack = stack;
	sc->e[i].parent = parent;
	v.id = entry_id(sc, i);
	if (state == E_SPLIT) {
		memcpy(sc->e[i].words, words, sizeof(sc->e[i].words));
		sc->e[i].nwords = nwords;
		memcpy(v.slot, words, sizeof(v.slot));
		v.flags = GP_SC_SPLIT | (__u32)nwords << GP_SC_NSLOTS_SHIFT;
	} else if (sc->young) {
		v.flags = GP_SC_YOUNG;
		sc->e[i].young = true;
	}
	if (u64map__put(&sc->by_key, key_hash(k), i)) {
		give_free(sc, i);
		sc->st.full++;
		return 0;
	}
	if (sc->ops.put(sc->ops.ctx, k, &v)) {
		u64map__del(&sc->by_key, key_hash(k), NULL);
		give_free(sc, i);
		sc->st.map_errors++;
		return 0;
	}
	sc->e[i].state = state;
	lru_push(sc, i);
	sc->st.live++;
	if (state == E_SPLIT)
		sc->st.split_keys++;
	else
		sc->st.installs++;
	return i;
}

/* The launch's key under split entry p: its words at p's offsets. False when outside its copy. */
static bool child_key(const struct stack_cache *sc, __u32 p, const struct stack_cache_launch *l,
		      struct gp_stack_key *ret)
{
	const struct entry *x = &sc->e[p];

	*ret = l->key;
	for (int i = 0; i < x->nwords; i++)
		if (!l->word(l->ctx, 8u * x->words[i], &ret->w[i]))
			return false;
	return true;
}

/*
 * Entry i (a first key, or a split key's child) had stack A; launch l has
 * another. Split on the first return address where they differ: a first
 * key becomes a split entry of one word, a child adds the word to its
 * parent's (whose children all go: their keys lack it). Both stacks are
 * installed under the new keys. Else the entry becomes unusable. A
 * mismatch is counted when the entry had answered hits (some may have had
 * l's stack); met before it answered any (two misses, or an audit of a
 * young key), nothing was wrong: the key is only split.
 */
static enum stack_cache_learnt split(struct stack_cache *sc, __u32 i,
				     const struct stack_cache_launch *l)
{
	struct entry *x = &sc->e[i];
	__u32 p = x->parent, a_stack = x->stack, off;
	struct gp_stack_key first = l->key, ka, kb;
	__u16 words[GP_SC_SLOTS] = { 0 };
	__u8 n = p ? sc->e[p].nwords : 0;
	__u64 wa;

	if (x->answered)
		sc->st.mismatch++;
	if (!l->differs(l->ctx, a_stack, &off, &wa) || off % 8 || off / 8 > 0xffff || n == GP_SC_SLOTS)
		goto unusable;
	if (p) {
		memcpy(words, sc->e[p].words, sizeof(words));
		for (int k = 0; k < n; k++)
			if (words[k] == off / 8)
				goto unusable; /* the word they differ in is one already read */
	}
	words[n] = (__u16)(off / 8);
	ka = x->key;
	ka.w[n] = wa;
	if (p) {
		retire(sc, p); /* and every child of it, i among them */
	} else {
		retire(sc, i);
	}
	p = install(sc, &first, E_SPLIT, 0, 0, words, n + 1);
	if (!p)
		return STACK_CACHE_NO_ROOM;
	install(sc, &ka, E_LIVE, a_stack, p, NULL, 0);
	if (child_key(sc, p, l, &kb))
		install(sc, &kb, E_LIVE, l->stack, p, NULL, 0);
	sc->st.splits++;
	return STACK_CACHE_SPLIT;
unusable:
	make_unusable(sc, i);
	return STACK_CACHE_MISMATCH;
}

/* What a launch with stack l->stack (an audit, or a miss) says of entry i (live or unusable). */
static enum stack_cache_learnt check(struct stack_cache *sc, __u32 i,
				     const struct stack_cache_launch *l)
{
	if (sc->e[i].state == E_UNUSABLE)
		return STACK_CACHE_UNUSABLE;
	touch(sc, i);
	if (sc->e[i].stack == l->stack) {
		sc->st.confirmed++;
		return STACK_CACHE_SAME;
	}
	return split(sc, i, l);
}

/* Installs k for stack (under parent), saying how it went. */
static enum stack_cache_learnt install_stack(struct stack_cache *sc, const struct gp_stack_key *k,
					     __u32 stack, __u32 parent)
{
	__u64 errors = sc->st.map_errors;

	if (install(sc, k, E_LIVE, stack, parent, NULL, 0))
		return STACK_CACHE_INSTALLED;
	return sc->st.map_errors != errors ? STACK_CACHE_FAILED : STACK_CACHE_NO_ROOM;
}

enum stack_cache_learnt stack_cache__learn(struct stack_cache *sc,
					   const struct stack_cache_launch *l)
{
	struct gp_stack_key k2;
	bool clash;
	__u32 i = find_key(sc, &l->key, &clash), c;

	if (!i)
		return install_stack(sc, &l->key, l->stack, 0);
	if (sc->e[i].state != E_SPLIT)
		return check(sc, i, l);
	touch(sc, i);
	if (!child_key(sc, i, l, &k2)) {
		sc->st.unreadable++;
		return STACK_CACHE_NO_ROOM;
	}
	c = find_key(sc, &k2, &clash);
	if (!c)
		return install_stack(sc, &k2, l->stack, i);
	return check(sc, c, l);
}

/* A young entry confirmed often enough: its hits go without copies from now on. */
static void grow_up(struct stack_cache *sc, __u32 i)
{
	struct gp_stack_val v = { .id = entry_id(sc, i) };

	if (!sc->e[i].young || ++sc->e[i].confirmed < sc->young)
		return;
	if (sc->ops.put(sc->ops.ctx, &sc->e[i].key, &v)) {
		sc->st.map_errors++;
		return;
	}
	sc->e[i].young = false;
}

bool stack_cache__audit(struct stack_cache *sc, __u32 id, const struct stack_cache_launch *l)
{
	__u32 i = slot_of(sc, id);
	bool young;

	if (!i)
		return false;
	if (sc->e[i].state != E_LIVE)
		return true;
	young = sc->e[i].young;
	if (!l->whole)
		sc->st.audits_short++;
	else if (check(sc, i, l) == STACK_CACHE_SAME)
		grow_up(sc, i);
	else if (young)
		sc->st.young_caught++;
	return true;
}

/* Entry i goes with its keys (a split entry stays while it has children left). */
static void forget_one(struct stack_cache *sc, __u32 i)
{
	retire(sc, i);
	sc->st.forgotten++;
}

static void forget_where(struct stack_cache *sc, __u32 pid, bool all, __u32 maps_gen)
{
	for (__u32 i = 1; i < sc->fresh; i++) {
		struct entry *x = &sc->e[i];

		if (in_map(x) && x->key.pid == pid && (all || x->key.maps_gen < maps_gen))
			forget_one(sc, i);
	}
}

void stack_cache__forget_if(struct stack_cache *sc, __u32 pid, bool (*fn)(void *ctx, __u32 stack),
			    void *ctx)
{
	for (__u32 i = 1; i < sc->fresh; i++) {
		struct entry *x = &sc->e[i];

		if (in_map(x) && x->state != E_SPLIT && x->key.pid == pid && fn(ctx, x->stack))
			forget_one(sc, i);
	}
}

void stack_cache__rebind(struct stack_cache *sc, __u32 id, __u32 stack)
{
	__u32 i = slot_of(sc, id);

	if (i)
		sc->e[i].stack = stack;
}

void stack_cache__forget_pid(struct stack_cache *sc, __u32 pid)
{
	forget_where(sc, pid, true, 0);
}

void stack_cache__forget_older(struct stack_cache *sc, __u32 pid, __u32 maps_gen)
{
	forget_where(sc, pid, false, maps_gen);
}

void stack_cache__drained(struct stack_cache *sc)
{
	sc->drains++;
	while (sc->fifo_head && sc->e[sc->fifo_head].retired_at + RETIRE_DRAINS <= sc->drains) {
		__u32 i = sc->fifo_head;

		sc->fifo_head = sc->e[i].next;
		if (!sc->fifo_head)
			sc->fifo_tail = 0;
		give_free(sc, i);
	}
}

void stack_cache__visit_stacks(struct stack_cache *sc, __u64 (*fn)(void *ctx, __u64 stack),
			       void *ctx)
{
	for (__u32 i = 1; i < sc->fresh; i++) {
		__u64 v;

		if (sc->e[i].state == E_FREE || sc->e[i].state == E_SPLIT)
			continue;
		v = fn(ctx, sc->e[i].stack);
		if (v)
			sc->e[i].stack = (__u32)v;
	}
}

void stack_cache__stats(const struct stack_cache *sc, struct stack_cache_stats *ret)
{
	if (!sc) {
		memset(ret, 0, sizeof(*ret));
		return;
	}
	*ret = sc->st;
}
