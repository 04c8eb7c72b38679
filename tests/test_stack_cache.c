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

static struct stack_cache *new_cache(size_t cap, struct fake_map *m)
{
	struct stack_cache_ops ops = { .put = fake_put, .del = fake_del, .ctx = m };
	struct stack_cache *sc = NULL;

	memset(m, 0, sizeof(*m));
	assert_int_equal(stack_cache__new(cap, &ops, &sc), 0);
	return sc;
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
	assert_int_equal(stack_cache__learn(sc, &k, 42), STACK_CACHE_INSTALLED);
	id = map_id(&m, k, &flags);
	assert_true(id != 0);
	assert_int_equal(flags, 0);
	assert_int_equal(stack_cache__lookup(sc, id, &stack), 0);
	assert_int_equal(stack, 42);
	/* A second miss of the same key, queued before the install, with the same stack. */
	assert_int_equal(stack_cache__learn(sc, &k, 42), STACK_CACHE_SAME);
	assert_int_equal(m.puts, 1);
	assert_int_equal(stack_cache__lookup(sc, id + 1, &stack), -ENOENT);
	stack_cache__destroy(sc);
}

/*
 * Two stacks under one key (a constructed collision): the second miss or a
 * differing audit makes the key unusable in the map, once, and it stays so.
 */
static void test_a_key_seen_with_two_stacks_becomes_unusable(void **state)
{
	struct fake_map m;
	struct stack_cache *sc = new_cache(8, &m);
	struct gp_stack_key k1 = key(10, 0x7ff000, 1), k2 = key(10, 0x7fe000, 1);
	struct stack_cache_stats st;
	__u32 flags = 0, id2;

	(void)state;
	assert_int_equal(stack_cache__learn(sc, &k1, 1), STACK_CACHE_INSTALLED);
	assert_int_equal(stack_cache__learn(sc, &k1, 2), STACK_CACHE_MISMATCH);
	map_id(&m, k1, &flags);
	assert_int_equal(flags, GP_SC_UNUSABLE);
	assert_int_equal(stack_cache__learn(sc, &k1, 1), STACK_CACHE_UNUSABLE);

	assert_int_equal(stack_cache__learn(sc, &k2, 3), STACK_CACHE_INSTALLED);
	id2 = map_id(&m, k2, NULL);
	assert_true(stack_cache__audit(sc, id2, true, false));   /* the same stack */
	assert_true(stack_cache__audit(sc, id2, false, true));   /* short: nothing told */
	map_id(&m, k2, &flags);
	assert_int_equal(flags, 0);
	assert_true(stack_cache__audit(sc, id2, false, false));  /* another stack */
	map_id(&m, k2, &flags);
	assert_int_equal(flags, GP_SC_UNUSABLE);
	stack_cache__stats(sc, &st);
	assert_int_equal(st.mismatch, 2);
	assert_int_equal(st.unusable, 2);
	assert_int_equal(st.audits_short, 1);
	assert_int_equal(st.confirmed, 1);
	assert_false(stack_cache__audit(sc, 12345, false, false)); /* no such entry */
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
	assert_int_equal(stack_cache__learn(sc, &k1, 1), STACK_CACHE_INSTALLED);
	assert_int_equal(stack_cache__learn(sc, &k2, 2), STACK_CACHE_INSTALLED);
	assert_int_equal(stack_cache__lookup(sc, map_id(&m, k1, NULL), &s), 0);
	assert_int_equal(stack_cache__learn(sc, &k3, 3), STACK_CACHE_INSTALLED);
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
	assert_int_equal(stack_cache__learn(sc, &k1, 7), STACK_CACHE_INSTALLED);
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

		assert_int_equal(stack_cache__learn(sc, &k, round), STACK_CACHE_INSTALLED);
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
	stack_cache__learn(sc, &a1, 1);
	stack_cache__learn(sc, &a2, 2);
	stack_cache__learn(sc, &b, 3);
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
	assert_int_equal(stack_cache__learn(sc, &k, 1), STACK_CACHE_FAILED);
	m.refuse = false;
	assert_int_equal(stack_cache__learn(sc, &k, 1), STACK_CACHE_INSTALLED);
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
	stack_cache__learn(sc, &k, 5);
	stack_cache__visit_stacks(sc, plus_100, NULL);
	assert_int_equal(stack_cache__lookup(sc, map_id(&m, k, NULL), &s), 0);
	assert_int_equal(s, 105);
	assert_int_equal(stack_cache__learn(sc, &k, 105), STACK_CACHE_SAME);
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
