/* SPDX-License-Identifier: MIT */
/* The u64 -> u64 map (user/util/u64map.c): keys a hostile process chooses. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/util/u64map.h"

/* The inverse of x ^= x >> s. */
static __u64 unshift(__u64 y, unsigned s)
{
	__u64 x = y;

	for (unsigned i = 0; i < 64 / s + 1; i++)
		x = y ^ (x >> s);
	return x;
}

/* The inverse of an odd multiplier mod 2^64 (Newton's iteration). */
static __u64 inverse(__u64 a)
{
	__u64 x = a;

	for (int i = 0; i < 6; i++)
		x *= 2 - a * x;
	return x;
}

/* The key whose unseeded hash is h: what an attacker computes. */
static __u64 preimage(__u64 h)
{
	h = unshift(h, 31);
	h *= inverse(0x94d049bb133111ebull);
	h = unshift(h, 27);
	h *= inverse(0xbf58476d1ce4e5b9ull);
	return unshift(h, 30);
}

static size_t longest_run(const struct u64map *m)
{
	size_t best = 0, run = 0;

	for (size_t i = 0; i < 2 * m->cap; i++) {
		run = m->slots[i & (m->cap - 1)].key != U64MAP_FREE ? run + 1 : 0;
		if (run > best)
			best = run;
	}
	return best;
}

/*
 * 4000 keys whose unseeded hashes all end in 20 zero bits (one home slot,
 * one probe run of 4000 without the seed): spread by the map's own seed,
 * every key found, no run long.
 */
static void test_keys_made_to_collide_do_not_share_a_probe_run(void **state)
{
	struct u64map m;
	__u64 v;

	assert_int_equal(u64map__hash(preimage(5ull << 20)), 5ull << 20);
	assert_int_equal(u64map__init(&m, 0), 0);
	for (__u64 i = 1; i <= 4000; i++)
		assert_int_equal(u64map__put(&m, preimage(i << 20), i), 0);
	for (__u64 i = 1; i <= 4000; i++) {
		assert_true(u64map__get(&m, preimage(i << 20), &v));
		assert_int_equal(v, i);
	}
	assert_true(longest_run(&m) < 200);
	u64map__fini(&m);
}

/* Cleared: nothing found, the length 0, the bound whole again; nothing allocated. */
static void test_a_cleared_map_is_empty_and_takes_entries_again(void **state)
{
	struct u64map m;
	__u64 v;

	(void)state;
	assert_int_equal(u64map__init(&m, 64), 0);
	for (__u64 k = 1; k <= 64; k++)
		assert_int_equal(u64map__put(&m, k, k * 10), 0);
	assert_int_equal(u64map__put(&m, 65, 1), -E2BIG);
	u64map__clear(&m);
	assert_int_equal(u64map__len(&m), 0);
	for (__u64 k = 1; k <= 64; k++)
		assert_false(u64map__get(&m, k, &v));
	for (__u64 k = 101; k <= 164; k++)
		assert_int_equal(u64map__put(&m, k, k), 0);
	assert_true(u64map__get(&m, 164, &v));
	assert_int_equal(v, 164);
	u64map__fini(&m);
}

/*
 * A burst's slots go back: 20,000 keys, all but 10 deleted, then trimmed:
 * the map is small again, the 10 still there, and it takes more.
 */
static void test_a_trimmed_map_gives_back_its_slots_and_keeps_its_entries(void **state)
{
	struct u64map m;
	__u64 v;

	(void)state;
	assert_int_equal(u64map__init(&m, 0), 0);
	for (__u64 k = 1; k <= 20000; k++)
		assert_int_equal(u64map__put(&m, k, k * 3), 0);
	for (__u64 k = 11; k <= 20000; k++)
		assert_true(u64map__del(&m, k, NULL));
	assert_true(u64map__bytes(&m) >= 32768 * 16);
	u64map__trim(&m);
	assert_true(m.cap <= 64);
	assert_int_equal(u64map__bytes(&m), m.cap * 16);
	assert_int_equal(u64map__len(&m), 10);
	for (__u64 k = 1; k <= 10; k++) {
		assert_true(u64map__get(&m, k, &v));
		assert_int_equal(v, k * 3);
	}
	assert_false(u64map__get(&m, 11, NULL));
	/* A map that uses its slots keeps them. */
	for (__u64 k = 100; k < 140; k++)
		assert_int_equal(u64map__put(&m, k, k), 0);
	v = m.cap;
	u64map__trim(&m);
	assert_int_equal(m.cap, v);
	u64map__fini(&m);
}

/*
 * The key that marks a free slot is a key like any other (a hostile ring's
 * correlation id can be it): put, found, replaced, counted against the
 * bound, iterated, deleted and cleared, beside keys in the slots.
 */
static void test_the_key_marking_a_free_slot_is_an_ordinary_key(void **state)
{
	struct u64map m;
	__u64 k, v, seen = 0;

	(void)state;
	assert_int_equal(u64map__init(&m, 3), 0);
	assert_false(u64map__get(&m, U64MAP_FREE, &v));
	assert_int_equal(u64map__put(&m, 7, 70), 0);
	assert_int_equal(u64map__put(&m, U64MAP_FREE, 1), 0);
	assert_int_equal(u64map__put(&m, U64MAP_FREE, 2), 0); /* replaced, not added */
	assert_int_equal(u64map__len(&m), 2);
	assert_true(u64map__get(&m, U64MAP_FREE, &v));
	assert_int_equal(v, 2);
	assert_true(u64map__get(&m, 7, &v));
	assert_int_equal(v, 70);
	assert_int_equal(u64map__put(&m, 8, 80), 0);
	assert_int_equal(u64map__put(&m, 9, 90), -E2BIG); /* the bound counts it */
	for (size_t it = 0; u64map__next(&m, &it, &k, &v);)
		seen += k == U64MAP_FREE ? 1000 * v : v;
	assert_int_equal(seen, 2000 + 70 + 80);
	assert_true(u64map__del(&m, U64MAP_FREE, &v));
	assert_int_equal(v, 2);
	assert_false(u64map__get(&m, U64MAP_FREE, NULL));
	assert_int_equal(u64map__len(&m), 2);
	assert_int_equal(u64map__put(&m, U64MAP_FREE, 3), 0);
	u64map__clear(&m);
	assert_false(u64map__get(&m, U64MAP_FREE, NULL));
	assert_false(u64map__get(&m, 7, NULL));
	assert_int_equal(u64map__len(&m), 0);
	u64map__fini(&m);
}

/* Many keys put, half deleted, put again: every one found with its value, none that went. */
static void test_keys_deleted_and_put_again_keep_their_values(void **state)
{
	struct u64map m;
	__u64 v;

	(void)state;
	assert_int_equal(u64map__init(&m, 0), 0);
	for (__u64 k = 0; k < 50000; k++)
		assert_int_equal(u64map__put(&m, k * 0x9e3779b97f4a7c15ull, k), 0);
	for (__u64 k = 0; k < 50000; k += 2)
		assert_true(u64map__del(&m, k * 0x9e3779b97f4a7c15ull, NULL));
	for (__u64 k = 0; k < 50000; k++) {
		bool found = u64map__get(&m, k * 0x9e3779b97f4a7c15ull, &v);

		assert_int_equal(found, k % 2 == 1);
		if (found)
			assert_int_equal(v, k);
	}
	for (__u64 k = 0; k < 50000; k += 2)
		assert_int_equal(u64map__put(&m, k * 0x9e3779b97f4a7c15ull, k + 1), 0);
	for (__u64 k = 0; k < 50000; k++) {
		assert_true(u64map__get(&m, k * 0x9e3779b97f4a7c15ull, &v));
		assert_int_equal(v, k % 2 ? k : k + 1);
	}
	assert_int_equal(u64map__len(&m), 50000);
	u64map__fini(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_cleared_map_is_empty_and_takes_entries_again),
		cmocka_unit_test(test_keys_made_to_collide_do_not_share_a_probe_run),
		cmocka_unit_test(test_a_trimmed_map_gives_back_its_slots_and_keeps_its_entries),
		cmocka_unit_test(test_the_key_marking_a_free_slot_is_an_ordinary_key),
		cmocka_unit_test(test_keys_deleted_and_put_again_keep_their_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
