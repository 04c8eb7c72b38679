/* SPDX-License-Identifier: MIT */
/*
 * The loader's stack cache (user/session/stack_cache.c) over a fake map: what
 * goes into the map and out of it, and what each id answers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include "user/session/stack_cache.h"

#define MAP_MAX 64

/* The BPF map, as a list of (key, value) pairs. */
struct fake_map {
	struct gp_stack_key k[MAP_MAX];
	struct gp_stack_val v[MAP_MAX];
	int n;
	int puts, dels;
	bool refuse;
};

static int find(struct fake_map *m, const struct gp_stack_key *k)
{
	for (int i = 0; i < m->n; i++)
		if (!memcmp(&m->k[i], k, sizeof(*k)))
			return i;
	return -1;
}

static int fake_put(void *ctx, const struct gp_stack_key *k, const struct gp_stack_val *v)
{
	struct fake_map *m = ctx;
	int i = find(m, k);

	if (m->refuse)
		return -E2BIG;
	m->puts++;
	if (i < 0) {
		assert_true(m->n < MAP_MAX);
		i = m->n++;
		m->k[i] = *k;
	}
	m->v[i] = *v;
	return 0;
}

static int fake_del(void *ctx, const struct gp_stack_key *k)
{
	struct fake_map *m = ctx;
	int i = find(m, k);

	m->dels++;
	if (i < 0)
		return 0;
	m->n--;
	m->k[i] = m->k[m->n];
	m->v[i] = m->v[m->n];
	return 0;
}

static struct gp_stack_key key(__u32 pid, __u64 sp, __u32 gen)
{
	return (struct gp_stack_key){ .sp = sp, .ret = 0x401000 + sp, .func = 0x77, .py_hash = 5,
				      .pid = pid, .maps_gen = gen, .probe = 0 };
}

/*
 * A launch sent whole, made up: its stack, its copy's words (offset ->
 * word), and where it differs from each other stack (other's word there).
 */
struct fake_launch {
	__u32 stack;
	__u32 off[4];
	__u64 word[4];
	int nwords;
	__u32 differ_off;     /* UINT32_MAX: differs nowhere known */
	__u64 differ_word[16]; /* indexed by the other stack id */
};

static bool fake_word(void *ctx, __u32 off, __u64 *ret)
{
	struct fake_launch *f = ctx;

	for (int i = 0; i < f->nwords; i++) {
		if (f->off[i] == off) {
			*ret = f->word[i];
			return true;
		}
	}
	return false;
}

static bool fake_differs(void *ctx, __u32 other, __u32 *ret_off, __u64 *ret_word)
{
	struct fake_launch *f = ctx;

	if (f->differ_off == UINT32_MAX)
		return false;
	*ret_off = f->differ_off;
	*ret_word = f->differ_word[other & 15];
	return true;
}

static struct stack_cache_launch launch_of(struct gp_stack_key k, struct fake_launch *f)
{
	return (struct stack_cache_launch){ .key = k, .stack = f->stack, .whole = true,
					    .word = fake_word, .differs = fake_differs, .ctx = f };
}

/* A launch of stack with no split information: any other stack spoils the key. */
static enum stack_cache_learnt learn(struct stack_cache *sc, struct gp_stack_key k, __u32 stack)
{
	struct fake_launch f = { .stack = stack, .differ_off = UINT32_MAX };
	struct stack_cache_launch l = launch_of(k, &f);

	return stack_cache__learn(sc, &l);
}

static bool audit(struct stack_cache *sc, __u32 id, __u32 stack, bool whole)
{
	struct fake_launch f = { .stack = stack, .differ_off = UINT32_MAX };
	struct stack_cache_launch l = launch_of(key(0, 0, 0), &f);

	l.whole = whole;
	return stack_cache__audit(sc, id, &l);
}

/* A cache of cap keys whose new keys need young audits (--stack-young). */
static struct stack_cache *new_cache_young(size_t cap, unsigned young, struct fake_map *m)
{
	struct stack_cache_ops ops = { .put = fake_put, .del = fake_del, .ctx = m };
	struct stack_cache *sc = NULL;

	memset(m, 0, sizeof(*m));
	assert_int_equal(stack_cache__new(cap, young, &ops, &sc), 0);
	return sc;
}

static struct stack_cache *new_cache(size_t cap, struct fake_map *m)
{
	return new_cache_young(cap, 2, m);
}

/* The id the map holds for k (the BPF side's answer), 0 when none. */
static __u32 map_id(struct fake_map *m, struct gp_stack_key k, __u32 *ret_flags)
{
	int i = find(m, &k);

	if (i < 0)
		return 0;
	if (ret_flags)
		*ret_flags = m->v[i].flags;
	return m->v[i].id;
}

static void test_a_miss_installs_its_key_and_a_hit_finds_its_stack(void **state)
{
	struct fake_map m;
	struct stack_cache *sc = new_cache(8, &m);
	struct gp_stack_key k = key(10, 0x7ff000, 1);
	__u32 id, flags = 9, stack = 0;

	(void)state;
	assert_int_equal(learn(sc, k, 42), STACK_CACHE_INSTALLED);
	id = map_id(&m, k, &flags);
	assert_true(id != 0);
	assert_int_equal(flags, GP_SC_YOUNG);
	assert_int_equal(stack_cache__lookup(sc, id, &stack), 0);
	assert_int_equal(stack, 42);
	/* A second miss of the same key, queued before the install, with the same stack. */
	assert_int_equal(learn(sc, k, 42), STACK_CACHE_SAME);
	assert_int_equal(m.puts, 1);
	assert_int_equal(stack_cache__lookup(sc, id + 1, &stack), -ENOENT);
	stack_cache__destroy(sc);
}

/*
 * Two stacks under one key (a constructed collision) that no word of the
 * stack tells apart: the second miss or a differing audit makes the key
 * unusable in the map, once, and it stays so.
 */
static void test_a_key_seen_with_two_stacks_becomes_unusable(void **state)
{
	struct fake_map m;
	struct stack_cache *sc = new_cache(8, &m);
	struct gp_stack_key k1 = key(10, 0x7ff000, 1), k2 = key(10, 0x7fe000, 1);
	struct stack_cache_stats st;
	__u32 flags = 0, id2, s = 0;

	(void)state;
	assert_int_equal(learn(sc, k1, 1), STACK_CACHE_INSTALLED);
	assert_int_equal(learn(sc, k1, 2), STACK_CACHE_MISMATCH);
	map_id(&m, k1, &flags);
	assert_int_equal(flags, GP_SC_UNUSABLE);
	assert_int_equal(learn(sc, k1, 1), STACK_CACHE_UNUSABLE);

	assert_int_equal(learn(sc, k2, 3), STACK_CACHE_INSTALLED);
	id2 = map_id(&m, k2, NULL);
	assert_true(audit(sc, id2, 3, true));   /* the same stack */
	assert_true(audit(sc, id2, 9, false));   /* short: nothing told */
	map_id(&m, k2, &flags);
	assert_int_equal(flags, GP_SC_YOUNG);
	assert_int_equal(stack_cache__lookup(sc, id2, &s), 0); /* a hit answered */
	assert_true(audit(sc, id2, 9, true));  /* another stack */
	map_id(&m, k2, &flags);
	assert_int_equal(flags, GP_SC_UNUSABLE);
	stack_cache__stats(sc, &st);
	assert_int_equal(st.mismatch, 1); /* k2 had answered a hit; k1 had not */
	assert_int_equal(st.unusable, 2);
	assert_int_equal(st.audits_short, 1);
	assert_int_equal(st.confirmed, 1);
	assert_false(audit(sc, 12345, 9, true)); /* no such entry */
	stack_cache__destroy(sc);
}

/* Full, the least recently used key goes; the one hit since stays. */
static void test_a_full_cache_evicts_the_least_recently_used_key(void **state)
{
	struct fake_map m;
	struct stack_cache *sc = new_cache(2, &m);
	struct gp_stack_key k1 = key(1, 0x1000, 1), k2 = key(1, 0x2000, 1), k3 = key(1, 0x3000, 1);
	struct stack_cache_stats st;
	__u32 s;

	(void)state;
	assert_int_equal(learn(sc, k1, 1), STACK_CACHE_INSTALLED);
	assert_int_equal(learn(sc, k2, 2), STACK_CACHE_INSTALLED);
	assert_int_equal(stack_cache__lookup(sc, map_id(&m, k1, NULL), &s), 0);
	assert_int_equal(learn(sc, k3, 3), STACK_CACHE_INSTALLED);
	assert_int_equal(m.n, 2);
	assert_true(map_id(&m, k1, NULL) != 0);
	assert_int_equal(map_id(&m, k2, NULL), 0);
	assert_true(map_id(&m, k3, NULL) != 0);
	stack_cache__stats(sc, &st);
	assert_int_equal(st.evicted, 1);
	assert_int_equal(st.live, 2);
	stack_cache__destroy(sc);
}

/*
 * A key taken out still answers for events read later, until two drains;
 * then its id answers no more, and the slot's next entry has another id.
 */
static void test_an_id_taken_out_answers_until_two_drains_and_is_not_given_to_another_key(void **state)
{
	struct fake_map m;
	struct stack_cache *sc = new_cache(1, &m);
	struct gp_stack_key k1 = key(1, 0x1000, 1), k2 = key(1, 0x2000, 1);
	__u32 id1, s = 0;
	size_t seen = 0;
	__u32 ids[200];

	(void)state;
	assert_int_equal(learn(sc, k1, 7), STACK_CACHE_INSTALLED);
	id1 = map_id(&m, k1, NULL);
	stack_cache__forget_pid(sc, 1);
	assert_int_equal(m.n, 0);
	stack_cache__drained(sc);
	assert_int_equal(stack_cache__lookup(sc, id1, &s), 0);
	assert_int_equal(s, 7);
	stack_cache__drained(sc);
	assert_int_equal(stack_cache__lookup(sc, id1, &s), -ENOENT);
	/* Churn through every slot many times: no id ever comes back. */
	for (int round = 0; round < 200; round++) {
		struct gp_stack_key k = round & 1 ? k1 : k2;

		assert_int_equal(learn(sc, k, round), STACK_CACHE_INSTALLED);
		ids[seen++] = map_id(&m, k, NULL);
		stack_cache__forget_pid(sc, 1);
		stack_cache__drained(sc);
		stack_cache__drained(sc);
	}
	for (size_t i = 0; i < seen; i++) {
		assert_true(ids[i] != id1);
		for (size_t j = 0; j < i; j++)
			assert_true(ids[i] != ids[j]);
	}
	stack_cache__destroy(sc);
}

/* A process's keys go when it exits; on a mapping change, only the older generation's. */
static void test_a_process_forgets_its_keys_on_exit_and_its_old_ones_on_remapping(void **state)
{
	struct fake_map m;
	struct stack_cache *sc = new_cache(8, &m);
	struct gp_stack_key a1 = key(1, 0x1000, 1), a2 = key(1, 0x2000, 2), b = key(2, 0x1000, 1);

	(void)state;
	learn(sc, a1, 1);
	learn(sc, a2, 2);
	learn(sc, b, 3);
	stack_cache__forget_older(sc, 1, 2);
	assert_int_equal(map_id(&m, a1, NULL), 0);
	assert_true(map_id(&m, a2, NULL) != 0);
	assert_true(map_id(&m, b, NULL) != 0);
	stack_cache__forget_pid(sc, 1);
	assert_int_equal(map_id(&m, a2, NULL), 0);
	assert_true(map_id(&m, b, NULL) != 0);
	assert_int_equal(m.n, 1);
	stack_cache__destroy(sc);
}

/* A map that refuses: nothing installed, nothing answers, counted. */
static void test_a_refused_install_leaves_no_entry(void **state)
{
	struct fake_map m;
	struct stack_cache *sc = new_cache(4, &m);
	struct gp_stack_key k = key(1, 0x1000, 1);
	struct stack_cache_stats st;

	(void)state;
	m.refuse = true;
	assert_int_equal(learn(sc, k, 1), STACK_CACHE_FAILED);
	m.refuse = false;
	assert_int_equal(learn(sc, k, 1), STACK_CACHE_INSTALLED);
	stack_cache__stats(sc, &st);
	assert_int_equal(st.map_errors, 1);
	assert_int_equal(st.live, 1);
	stack_cache__destroy(sc);
}

static __u64 plus_100(void *ctx, __u64 stack)
{
	(void)ctx;
	return stack + 100;
}

/* Renumbered stacks (a window's compaction) are what the ids answer from then on. */
static void test_stacks_renumbered_are_what_ids_answer(void **state)
{
	struct fake_map m;
	struct stack_cache *sc = new_cache(4, &m);
	struct gp_stack_key k = key(1, 0x1000, 1);
	__u32 s = 0;

	(void)state;
	learn(sc, k, 5);
	stack_cache__visit_stacks(sc, plus_100, NULL);
	assert_int_equal(stack_cache__lookup(sc, map_id(&m, k, NULL), &s), 0);
	assert_int_equal(s, 105);
	assert_int_equal(learn(sc, k, 105), STACK_CACHE_SAME);
	stack_cache__destroy(sc);
}

/* The split entry of first key k, its words' offsets (bytes) and count; 0 when not split. */
static int split_words(struct fake_map *m, struct gp_stack_key k, __u32 *ret_off)
{
	__u32 flags = 0;
	int n, i = find(m, &k);

	if (i < 0 || !map_id(m, k, &flags) || !(flags & GP_SC_SPLIT))
		return 0;
	n = (int)(flags >> GP_SC_NSLOTS_SHIFT & 0xff);
	for (int j = 0; j < n; j++)
		ret_off[j] = 8u * m->v[i].slot[j];
	return n;
}

/*
 * Two stacks under one first key that differ in the return address read at
 * sp+0x40: the key is split on that word, and each stack is installed under
 * its own word; a third stack that agrees there but differs at sp+0x100
 * adds that word, and all three come out right afterwards.
 */
static void test_a_collision_splits_the_key_on_the_word_that_tells_the_stacks_apart(void **state)
{
	struct fake_map m;
	struct stack_cache *sc = new_cache(16, &m);
	struct gp_stack_key k = key(10, 0x7ff000, 1), ka = k, kb = k, kc = k;
	struct fake_launch a = { .stack = 1, .off = { 0x40, 0x100 }, .word = { 0xa40, 0xa100 },
				 .nwords = 2, .differ_off = UINT32_MAX };
	struct fake_launch b = { .stack = 2, .off = { 0x40, 0x100 }, .word = { 0xb40, 0xb100 },
				 .nwords = 2, .differ_off = 0x40 };
	struct fake_launch c = { .stack = 3, .off = { 0x40, 0x100 }, .word = { 0xa40, 0xc100 },
				 .nwords = 2, .differ_off = 0x100 };
	struct stack_cache_launch la = launch_of(k, &a), lb = launch_of(k, &b), lc = launch_of(k, &c);
	struct stack_cache_stats st;
	__u32 off[4] = { 0 }, s = 0;

	(void)state;
	b.differ_word[1] = 0xa40;
	c.differ_word[1] = 0xa100;
	assert_int_equal(stack_cache__learn(sc, &la), STACK_CACHE_INSTALLED);
	assert_int_equal(stack_cache__learn(sc, &lb), STACK_CACHE_SPLIT);
	assert_int_equal(split_words(&m, k, off), 1);
	assert_int_equal(off[0], 0x40);
	ka.w[0] = 0xa40;
	kb.w[0] = 0xb40;
	assert_int_equal(stack_cache__lookup(sc, map_id(&m, ka, NULL), &s), 0);
	assert_int_equal(s, 1);
	assert_int_equal(stack_cache__lookup(sc, map_id(&m, kb, NULL), &s), 0);
	assert_int_equal(s, 2);
	/* Again, each finds its own. */
	assert_int_equal(stack_cache__learn(sc, &la), STACK_CACHE_SAME);
	assert_int_equal(stack_cache__learn(sc, &lb), STACK_CACHE_SAME);
	/* A third, like a at sp+0x40, unlike it at sp+0x100. */
	assert_int_equal(stack_cache__learn(sc, &lc), STACK_CACHE_SPLIT);
	assert_int_equal(split_words(&m, k, off), 2);
	assert_int_equal(off[1], 0x100);
	ka.w[1] = 0xa100;
	kc.w[0] = 0xa40;
	kc.w[1] = 0xc100;
	assert_int_equal(stack_cache__lookup(sc, map_id(&m, ka, NULL), &s), 0);
	assert_int_equal(s, 1);
	assert_int_equal(stack_cache__lookup(sc, map_id(&m, kc, NULL), &s), 0);
	assert_int_equal(s, 3);
	/* b's old child went with the old split; b comes back under the two words. */
	assert_int_equal(map_id(&m, kb, NULL), 0);
	assert_int_equal(stack_cache__learn(sc, &lb), STACK_CACHE_INSTALLED);
	kb.w[1] = 0xb100;
	assert_int_equal(stack_cache__lookup(sc, map_id(&m, kb, NULL), &s), 0);
	assert_int_equal(s, 2);
	stack_cache__stats(sc, &st);
	/* b met a before a's key answered a hit: no hit was wrong; c met a's answering child */
	assert_int_equal(st.mismatch, 1);
	assert_int_equal(st.splits, 2);
	assert_int_equal(st.split_keys, 1);
	assert_int_equal(st.unusable, 0);
	/* A process's split key goes with its children. */
	stack_cache__forget_pid(sc, 10);
	assert_int_equal(m.n, 0);
	stack_cache__destroy(sc);
}

/* An audit that finds another stack splits the key too; one cut short tells nothing. */
static void test_an_audit_with_another_stack_splits_its_key(void **state)
{
	struct fake_map m;
	struct stack_cache *sc = new_cache(16, &m);
	struct gp_stack_key k = key(10, 0x7ff000, 1);
	struct fake_launch a = { .stack = 1, .off = { 0x40 }, .word = { 0xa40 }, .nwords = 1,
				 .differ_off = UINT32_MAX };
	struct fake_launch b = { .stack = 2, .off = { 0x40 }, .word = { 0xb40 }, .nwords = 1,
				 .differ_off = 0x40 };
	struct stack_cache_launch la = launch_of(k, &a), lb = launch_of(k, &b);
	__u32 off[4], id;

	(void)state;
	b.differ_word[1] = 0xa40;
	assert_int_equal(stack_cache__learn(sc, &la), STACK_CACHE_INSTALLED);
	id = map_id(&m, k, NULL);
	lb.whole = false;
	assert_true(stack_cache__audit(sc, id, &lb));
	assert_int_equal(split_words(&m, k, off), 0);
	lb.whole = true;
	assert_true(stack_cache__audit(sc, id, &lb));
	assert_int_equal(split_words(&m, k, off), 1);
	stack_cache__destroy(sc);
}

/*
 * A new key is young (every hit comes whole) until two audits found its
 * stack; audits cut short do not count; then its hits go without copies.
 */
static void test_a_young_key_grows_up_after_two_audits_find_its_stack(void **state)
{
	struct fake_map m;
	struct stack_cache *sc = new_cache(8, &m);
	struct gp_stack_key k = key(1, 0x1000, 1);
	__u32 id, flags = 0;

	(void)state;
	assert_int_equal(learn(sc, k, 5), STACK_CACHE_INSTALLED);
	id = map_id(&m, k, &flags);
	assert_int_equal(flags, GP_SC_YOUNG);
	assert_true(audit(sc, id, 5, true));
	assert_true(audit(sc, id, 6, false)); /* short: no confirmation */
	map_id(&m, k, &flags);
	assert_int_equal(flags, GP_SC_YOUNG);
	assert_true(audit(sc, id, 5, true));
	assert_int_equal(map_id(&m, k, &flags), id);
	assert_int_equal(flags, 0);
	stack_cache__destroy(sc);
}

/*
 * --stack-young N: a new key needs N audits (0: its hits go bare at once,
 * 1: after one); a young key's audit that finds another stack is counted
 * as caught, not as a mismatch (the key had answered no hit).
 */
static void test_the_young_count_is_the_audits_a_new_key_needs(void **state)
{
	struct fake_map m;
	struct stack_cache *sc = new_cache_young(8, 0, &m);
	struct gp_stack_key k = key(1, 0x1000, 1);
	struct stack_cache_stats st;
	__u32 id, flags = 9;

	(void)state;
	assert_int_equal(learn(sc, k, 5), STACK_CACHE_INSTALLED);
	assert_int_not_equal(map_id(&m, k, &flags), 0);
	assert_int_equal(flags, 0);
	stack_cache__destroy(sc);

	sc = new_cache_young(8, 1, &m);
	assert_int_equal(learn(sc, k, 5), STACK_CACHE_INSTALLED);
	id = map_id(&m, k, &flags);
	assert_int_equal(flags, GP_SC_YOUNG);
	assert_true(audit(sc, id, 5, true));
	assert_int_equal(map_id(&m, k, &flags), id);
	assert_int_equal(flags, 0);
	stack_cache__destroy(sc);

	sc = new_cache_young(8, 1, &m);
	assert_int_equal(learn(sc, k, 5), STACK_CACHE_INSTALLED);
	id = map_id(&m, k, NULL);
	assert_true(audit(sc, id, 6, true)); /* another stack, nowhere to split: unusable */
	stack_cache__stats(sc, &st);
	assert_int_equal(st.young_caught, 1);
	assert_int_equal(st.mismatch, 0);
	map_id(&m, k, &flags);
	assert_int_equal(flags, GP_SC_UNUSABLE);
	stack_cache__destroy(sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_miss_installs_its_key_and_a_hit_finds_its_stack),
		cmocka_unit_test(test_a_key_seen_with_two_stacks_becomes_unusable),
		cmocka_unit_test(test_a_full_cache_evicts_the_least_recently_used_key),
		cmocka_unit_test(test_an_id_taken_out_answers_until_two_drains_and_is_not_given_to_another_key),
		cmocka_unit_test(test_a_process_forgets_its_keys_on_exit_and_its_old_ones_on_remapping),
		cmocka_unit_test(test_a_refused_install_leaves_no_entry),
		cmocka_unit_test(test_stacks_renumbered_are_what_ids_answer),
		cmocka_unit_test(test_a_collision_splits_the_key_on_the_word_that_tells_the_stacks_apart),
		cmocka_unit_test(test_an_audit_with_another_stack_splits_its_key),
		cmocka_unit_test(test_a_young_key_grows_up_after_two_audits_find_its_stack),
		cmocka_unit_test(test_the_young_count_is_the_audits_a_new_key_needs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
