/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The launch program's side of the stack cache: a launch's key looked up
 * in the map the loader fills, the random audits, and a hit sent as a
 * header alone. A part of bpf/launch.bpf.c, included where finish() needs
 * it: it uses that file's maps, scratch and counters. BPF-only.
 */
#ifndef GP_STACK_CACHE_BPF_H
#define GP_STACK_CACHE_BPF_H

/* Whether this hit goes whole, for the loader to check: at random, a bounded number a second. */
static __always_inline bool audit_now(struct scratch *sc)
{
	__u64 sec;

	if (!audit_every || bpf_get_prandom_u32() % audit_every)
		return false;
	sec = sc->e.ts_ns >> 30; /* about a second */
	if (sc->audit_sec != sec) {
		sc->audit_sec = sec;
		sc->audits = 0;
	}
	if (sc->audits >= audit_max)
		return false;
	sc->audits++;
	return true;
}

/*
 * A Python walk that faulted or found a broken chain depends on more than
 * its key: such a launch is never cached.
 */
static __always_inline bool key_cacheable(const struct gp_launch_event *e)
{
	__u32 st = (e->flags >> GP_EV_PY_STATUS_SHIFT) & 7;

	return !(e->flags & GP_EV_F_PY) || (st != GP_PY_WALK_FAULT && st != GP_PY_WALK_BAD_FRAME);
}

/* The cache's answer for this launch's key (built in sc->key); NULL: not held. */
static __always_inline struct gp_stack_val *cache_lookup(struct scratch *sc)
{
	struct gp_launch_event *e = &sc->e;
	struct gp_stack_key *k = &sc->key;

	k->sp = e->sp;
	k->ret = e->ret;
	k->func = e->func;
	k->py_hash = e->py_hash;
	k->pid = e->pid;
	k->maps_gen = e->maps_gen;
	k->probe = (__u16)e->probe;
	k->py_flags = e->flags & GP_EV_KEY_FLAGS;
	k->pad = 0;
	k->w[0] = k->w[1] = k->w[2] = k->w[3] = 0;
	return bpf_map_lookup_elem(&stack_cache, k);
}

/*
 * A split key: the words at its slots (offsets from sp) go into the key,
 * which is looked up again; NULL when that key is not held (or is split
 * again, which the loader never does).
 */
static __always_inline struct gp_stack_val *cache_lookup_split(struct scratch *sc,
							       const struct gp_stack_val *split)
{
	struct gp_stack_key *k = &sc->key;
	__u32 n = (split->flags >> GP_SC_NSLOTS_SHIFT) & 0xff;
	__u16 slot[GP_SC_SLOTS];
	struct gp_stack_val *v;

	__builtin_memcpy(slot, split->slot, sizeof(slot));
	for (int i = 0; i < GP_SC_SLOTS; i++)
		if (i < n)
			bpf_probe_read_user(&k->w[i], 8, (void *)(sc->e.sp + 8ull * slot[i]));
	v = bpf_map_lookup_elem(&stack_cache, k);
	return v && !(v->flags & GP_SC_SPLIT) ? v : NULL;
}

/*
 * A hit: the header alone, with the entry's id, never waking the reader:
 * a hit is small, and the reader looks at least every 25 ms (the ring's
 * fill is not even asked: a helper call less per hit).
 */
static __always_inline int submit_hit(struct gp_launch_event *e)
{
	e->flags |= GP_EV_F_CACHED;
	e->stack_len = 0;
	e->nr_py = 0;
	if (bpf_ringbuf_output(&events, e, GP_LAUNCH_EVENT_HDR, BPF_RB_NO_WAKEUP)) {
		count(GP_BPF_RINGBUF_FULL);
		return 0;
	}
	count(GP_BPF_CACHE_HITS);
	count(GP_BPF_EVENTS);
	return 0;
}

/*
 * The stack cache: a hit (not audited) is sent as a hit; otherwise the event
 * says whether the loader may install its key. True when sent.
 */
static __always_inline bool try_cache(struct scratch *sc)
{
	struct gp_launch_event *e = &sc->e;
	struct gp_stack_val *v;

	/* Module and library loads are few, and the loader reads their stacks for nothing. */
	if (!stack_cache_on || !key_cacheable(e) ||
	    (e->probe >= GP_PROBE_MODULE_LOAD && e->probe < GP_PROBE_COPY_FIRST))
		return false;
	v = cache_lookup(sc);
	if (v && (v->flags & GP_SC_SPLIT))
		v = cache_lookup_split(sc, v);
	if (!v) {
		e->flags |= GP_EV_F_KEYED;
		count(GP_BPF_CACHE_MISSES);
		return false;
	}
	e->cache_id = v->id; /* an unusable key's launch too: the loader keeps it in use */
	if (v->flags & GP_SC_UNUSABLE) {
		count(GP_BPF_CACHE_UNUSABLE);
		return false;
	}
	if ((v->flags & GP_SC_YOUNG) || audit_now(sc)) {
		e->flags |= GP_EV_F_AUDIT;
		count(GP_BPF_CACHE_AUDITS);
		return false;
	}
	submit_hit(e);
	return true;
}

#endif /* GP_STACK_CACHE_BPF_H */
