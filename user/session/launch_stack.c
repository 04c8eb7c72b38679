/* SPDX-License-Identifier: MIT */
/*
 * A launch event's stack id (session_internal.h's launch_stack__*): unwound
 * from its copy and interned, or a stack-cache hit's entry; what each
 * launch sent whole tells the stack cache (installs, audits, splits); and
 * what a target's launches say of it before that: its mappings changed, or
 * a Python code object was replaced at its address.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/session/session_internal.h"
#include "user/python/pycode.h"
#include "user/space/space.h"
#include "user/util/log.h"

/*
 * The process's mappings changed (a library went, or was replaced at its
 * address; an exec): its events from now on are walked and named in a new
 * space, while stacks met before keep the mappings of their time until
 * named; its stack-cache keys of before go.
 */
static void follow_maps_gen(struct session *s, struct target *t, const struct gp_launch_event *e)
{
	if (!e->maps_gen || e->maps_gen <= space__maps_gen(t->space))
		return; /* the same, or an event from before the change, still in flight */
	if (!space__maps_gen(t->space)) {
		/* the first event: its maps are the ones read */
		space__set_maps_gen(t->space, e->maps_gen);
		return;
	}
	if (space__new_gen(t->space, e->maps_gen, true) == -EBUSY) {
		/* drops the earlier spaces; inside a drain, timed as STAGE_EVENTS */
		TIMED_WITHIN(s, STAGE_EVENTS, STAGE_NAME, session__resolve_pending(s, t->pid));
		target__drop_old_spaces(t);
		space__new_gen(t->space, e->maps_gen, true);
	}
	s->maps_changed++;
	if (s->cache)
		stack_cache__forget_older(s->cache, t->pid, e->maps_gen);
}

static int code_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Whether stack's Python frames hold one of the replaced code objects (s->py_codes). */
static bool stack_has_replaced_code(void *ctx, __u32 stack)
{
	struct session *s = ctx;
	size_t len;
	const struct raw_stack *r = stack_table__get(&s->stacks, stack, &len);
	const struct gp_py_frame *py;

	if (!r || len < offsetof(struct raw_stack, w) || raw_stack__len(r) != len)
		return true;
	py = (const struct gp_py_frame *)(r->w + r->n);
	for (__u32 i = 0; i < r->npy; i++) {
		uint64_t code = py[i].code & ~GP_PY_FRAME_FLAGS;

		if (bsearch(&code, s->py_codes, s->npy_codes, sizeof(*s->py_codes), code_cmp))
			return true;
	}
	return false;
}

/*
 * A launch with Python frames after the last check of t's code objects:
 * check them (a code object freed and another made at its address must
 * not keep the old one's name), once for all such launches read now, and
 * at most every PY_CHECK_NS (each check is two gathered reads in the
 * bounded worker, about 0.2 ms: at every batch of launches read it cost
 * 0.7% of a core on the stub's training-loop pace). So launches made
 * within PY_CHECK_NS of a check may keep a replaced object's name. The
 * stack-cache keys whose stacks hold a replaced one go.
 */
static void check_python_code(struct session *s, struct target *t, const struct gp_launch_event *e)
{
	__u64 before = t->py_checked_ns; /* that check found them as they were read */
	size_t replaced = 0;

	/*
	 * The launch's own time (the BPF program's, on the same clock, at most
	 * a drain old) says whether PY_CHECK_NS passed: the clock is read only
	 * for a check, not for every launch.
	 */
	if (!t->py || !(e->flags & GP_EV_F_PY) || e->ts_ns <= t->py_checked_ns || !s->py_codes ||
	    e->ts_ns - t->py_checked_ns < PY_CHECK_NS)
		return;
	t->py_checked_ns = now_ns();
	s->py_checks++;
	if (pycode_cache__check(t->py, space__epoch(t->space) + 1, PY_CHECK_MAX, s->py_codes,
				&replaced) || !replaced)
		return;
	space__new_epoch(t->space);
	t->py_old_until_ns = before;
	s->py_replaced += replaced;
	s->npy_codes = replaced;
	qsort(s->py_codes, replaced, sizeof(*s->py_codes), code_cmp);
	if (s->cache)
		stack_cache__forget_if(s->cache, t->pid, stack_has_replaced_code, s);
}

/* The stack id for raw, interned (and named later when new); 0 when the table is full. */
static __u32 intern_stack(struct session *s, struct target *t, const struct raw_stack *raw)
{
	__u32 stack_id = 0;
	bool is_new;

	if (stack_table__intern(&s->stacks, raw, raw_stack__len(raw), &stack_id, &is_new)) {
		s->stacks_dropped++;
		return 0;
	}
	if (is_new)
		session__defer_stack(s, t, stack_id, raw);
	return stack_id;
}

/* A stack for a hit whose entry was gone: said so, never another stack. */
static __u32 lost_stack(struct session *s, struct target *t, const struct gp_launch_event *e)
{
	struct raw_stack *raw = &s->raw;

	memset(raw, 0, offsetof(struct raw_stack, w));
	raw->pid = e->pid;
	raw->why = STACK_WHY_LOST;
	s->cache_lost++;
	return intern_stack(s, t, raw);
}

/*
 * A stack-cache hit: the entry's stack. One met in an earlier epoch of a
 * process whose Python code has changed since is named afresh, unless the
 * launch came before the change could have (before the last check that
 * found nothing, or under the mappings of before).
 */
static __u32 cached_stack(struct session *s, struct target *t, const struct gp_launch_event *e)
{
	const struct raw_stack *cached;
	__u32 stack_id;
	size_t len;

	if (!s->cache || stack_cache__lookup(s->cache, e->cache_id, &stack_id))
		return lost_stack(s, t, e);
	cached = stack_table__get(&s->stacks, stack_id, &len);
	stack_table__keep(&s->stacks, stack_id); /* used in this window */
	if (!t || !cached || len < offsetof(struct raw_stack, w) ||
	    cached->epoch == space__epoch(t->space) || e->maps_gen < space__maps_gen(t->space) ||
	    e->ts_ns <= t->py_old_until_ns)
		return stack_id;
	memcpy(&s->raw, cached, len);
	s->raw.epoch = space__epoch(t->space);
	stack_id = intern_stack(s, t, &s->raw);
	if (stack_id)
		stack_cache__rebind(s->cache, e->cache_id, stack_id); /* named anew once */
	return stack_id;
}

/* A launch sent whole, for the stack cache's callbacks. */
struct cache_launch_ctx {
	struct session *s;
	struct target *t;
	const struct gp_launch_event *e;
	size_t size;
	const struct raw_stack *raw;
	const struct stack_walk_info *info;
};

static bool launch_word(void *ctx, __u32 off, __u64 *ret)
{
	struct cache_launch_ctx *c = ctx;

	return raw_stack__copy_word(c->e, c->size, off, ret);
}

/* Says, with -v, where two stacks under one key part (the key is split there, or spoilt). */
static void say_parting(struct cache_launch_ctx *c, __u32 i, __u64 a, __u64 b)
{
	struct symbolized_frame fa, fb;
	struct space_gen *sym = c->t ? space__now(c->t->space) : NULL;

	if (!c->s->o->verbose)
		return;
	if (!sym || space_gen__name(sym, a - 1, &fa))
		snprintf(fa.name, sizeof(fa.name), "?");
	if (!sym || space_gen__name(sym, b - 1, &fb))
		snprintf(fb.name, sizeof(fb.name), "?");
	log_debug(true, "pid %u: two stacks under one stack-cache key (sp 0x%llx, kernel 0x%llx): "
		  "native frame %u, read at sp+%u, is %s (0x%llx) in one and %s (0x%llx) in the other",
		  c->e->pid, (unsigned long long)c->e->sp, (unsigned long long)c->e->func, i,
		  c->info->ra_off[i], fa.name, (unsigned long long)a, fb.name, (unsigned long long)b);
}

/*
 * Where this launch's stack and stack other first differ in a return
 * address: its slot's offset from sp, and other's address there (0 when
 * other ends before). False when their Python frames differ, when this
 * one ends first, or when its walk did not say where it read.
 */
static bool launch_differs(void *ctx, __u32 other, __u32 *ret_off, __u64 *ret_other_word)
{
	struct cache_launch_ctx *c = ctx;
	const struct raw_stack *a, *b = c->raw;
	size_t len;
	__u32 i;

	a = stack_table__get(&c->s->stacks, other, &len);
	if (!a || len < offsetof(struct raw_stack, w) || raw_stack__len(a) != len ||
	    a->npy != b->npy || memcmp(a->w + a->n, b->w + b->n, 16ull * b->npy))
		return false;
	for (i = 0; i < a->n && i < b->n && a->w[i] == b->w[i]; i++)
		;
	if (i >= b->n || c->info->ra_off[i] == UINT32_MAX)
		return false;
	*ret_off = c->info->ra_off[i];
	*ret_other_word = i < a->n ? a->w[i] : 0;
	say_parting(c, i, *ret_other_word, b->w[i]);
	return true;
}

/*
 * What an unwound launch tells the stack cache: an audit, whether the
 * entry's stack is its own; a miss, its key's stack (installed, or found
 * to differ); an unusable key's launch, that the key is still in use.
 */
static void teach_cache(struct session *s, struct target *t, const struct gp_launch_event *e,
			size_t size, __u32 stack_id)
{
	struct cache_launch_ctx c = { .s = s, .t = t, .e = e, .size = size, .raw = &s->raw,
				      .info = &s->walk_info };
	struct stack_cache_launch l = { .stack = stack_id, .whole = raw_stack__whole(&s->raw, e->flags),
					.word = launch_word, .differs = launch_differs, .ctx = &c };

	if (!s->cache || !stack_id)
		return;
	stack_cache__key_of(e, &l.key);
	if (e->flags & GP_EV_F_AUDIT) {
		session__note_key_state(t, e);
		stack_cache__audit(s->cache, e->cache_id, &l);
	} else if ((e->flags & GP_EV_F_KEYED) && l.whole) {
		if (!session__may_learn_key(s, t, e)) {
			s->cache_other_state++; /* its stack is its own; its key would mislead */
			return;
		}
		session__note_key_state(t, e);
		stack_cache__learn(s->cache, &l);
	} else if (e->cache_id)
		stack_cache__touch(s->cache, e->cache_id);
}

/* A launch sent whole: unwound, interned, and what it tells the cache. */
static __u32 unwound_stack(struct session *s, struct target *t, const struct gp_launch_event *e,
			   size_t size)
{
	struct raw_stack *raw = &s->raw;
	__u32 stack_id;
	bool bad = false;
	__u64 t0 = now_ns();

	if (raw_stack__from_event(t, e, size, raw, &s->walk_info)) {
		s->events_bad++;
		memset(raw, 0, sizeof(*raw) - sizeof(raw->w));
		raw->pid = e->pid;
		s->walk_info.need = 0;
		bad = true;
	}
	s->unwind_ns += now_ns() - t0;
	if (e->stack_len) {
		s->copied_bytes += e->stack_len;
		s->copied_events++;
	}
	if (s->walk_info.need && s->hints.lp)
		copy_hints__observe(&s->hints, e->tid, s->walk_info.need);
	stack_id = intern_stack(s, t, raw);
	if (!bad)
		teach_cache(s, t, e, size, stack_id);
	return stack_id;
}

void launch_stack__follow_target(struct session *s, struct target *t, const struct gp_launch_event *e)
{
	follow_maps_gen(s, t, e);
	check_python_code(s, t, e);
}

__u32 launch_stack__of(struct session *s, struct target *t, const struct gp_launch_event *e,
		       size_t size)
{
	return e->flags & GP_EV_F_CACHED ? cached_stack(s, t, e) : unwound_stack(s, t, e, size);
}
