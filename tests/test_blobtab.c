/* SPDX-License-Identifier: MIT */
/* Interning (user/util/blobtab.c) and the u64 map under it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "user/util/blobtab.h"
#include "user/util/mem_share.h"
#include "user/util/u64map.h"

static void test_equal_blobs_get_one_id_and_different_ones_another(void **state)
{
	struct blobtab *t;
	__u32 a, b, c;
	size_t len;

	assert_int_equal(blobtab__new(100, 1 << 20, &t), 0);
	assert_int_equal(blobtab__intern(t, "gemm", 5, &a), 0);
	assert_int_equal(blobtab__intern(t, "softmax", 8, &b), 0);
	assert_int_equal(blobtab__intern(t, "gemm", 5, &c), 0);
	assert_int_equal(a, c);
	assert_int_not_equal(a, b);
	assert_string_equal(blobtab__get(t, b, &len), "softmax");
	assert_int_equal(len, 8);
	assert_null(blobtab__get(t, 0, NULL));
	assert_null(blobtab__get(t, 99, NULL));
	blobtab__destroy(t);
}

static void test_the_bounds_refuse_new_blobs_but_keep_old_ones(void **state)
{
	struct blobtab *t;
	__u32 id;
	char k[16];

	assert_int_equal(blobtab__new(10, 1 << 20, &t), 0);
	for (int i = 0; i < 10; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		assert_int_equal(blobtab__intern(t, k, strlen(k), &id), 0);
	}
	assert_int_equal(blobtab__intern(t, "new", 3, &id), -E2BIG);
	assert_int_equal(blobtab__intern(t, "k3", 2, &id), 0);
	blobtab__destroy(t);
}

/* A lookup finds what was interned, by its bytes, and adds nothing. */
static void test_find_looks_up_without_adding(void **state)
{
	struct blobtab *t;
	__u32 id = 0, found = 0;

	(void)state;
	assert_int_equal(blobtab__new(16, 1024, &t), 0);
	assert_false(blobtab__find(t, "kernel_a", 9, &found));
	assert_int_equal(blobtab__count(t), 0);
	assert_int_equal(blobtab__intern(t, "kernel_a", 9, &id), 0);
	assert_true(blobtab__find(t, "kernel_a", 9, &found));
	assert_int_equal(found, id);
	assert_false(blobtab__find(t, "kernel_a", 8, &found)); /* other bytes: another blob */
	assert_false(blobtab__find(t, "kernel_b", 9, &found));
	assert_int_equal(blobtab__count(t), 1);
	blobtab__destroy(t);
}

/* blobtab.c's first step over an 8-byte word, for a table of a known seed (the test's own copy). */
static __u64 step(__u64 h, __u64 w)
{
	h = (h ^ w) * 0xff51afd7ed558ccdull;
	return h ^ (h >> 32);
}

/*
 * Blobs made to share one hash (a table whose seed is known: its hash
 * steps can be inverted) are kept BLOBTAB_CHAIN_MAX at most: the rest are
 * refused, so a lookup compares that many at most; others still go in.
 */
static void test_blobs_made_to_share_a_hash_are_kept_a_bounded_few(void **state)
{
	const __u64 seed = 42, h0 = seed ^ 0x9e3779b97f4a7c15ull ^ 16;
	struct blobtab *t;
	__u64 blob[2];
	__u32 id;
	int kept = 0;

	(void)state;
	assert_int_equal(blobtab__new_seeded(1 << 16, 1 << 20, seed, &t), 0);
	for (__u64 i = 0; i < 1000; i++) {
		blob[0] = i;
		blob[1] = 0x1234 ^ step(h0, i); /* the second step's input: the same for every i */
		kept += blobtab__intern(t, blob, sizeof(blob), &id) == 0;
	}
	assert_int_equal(kept, BLOBTAB_CHAIN_MAX);
	blob[0] = 5000;
	blob[1] = 7; /* another hash */
	assert_int_equal(blobtab__intern(t, blob, sizeof(blob), &id), 0);
	blobtab__destroy(t);
	/* The same blobs in a table of its own secret seed: no hash shared, all kept. */
	assert_int_equal(blobtab__new(1 << 16, 1 << 20, &t), 0);
	kept = 0;
	for (__u64 i = 0; i < 1000; i++) {
		blob[0] = i;
		blob[1] = 0x1234 ^ step(h0, i);
		kept += blobtab__intern(t, blob, sizeof(blob), &id) == 0;
	}
	assert_int_equal(kept, 1000);
	blobtab__destroy(t);
}

static void test_the_map_survives_heavy_churn(void **state)
{
	struct u64map m;
	__u64 v;

	assert_int_equal(u64map__init(&m, 0), 0);
	for (__u64 round = 0; round < 20; round++) {
		for (__u64 k = 0; k < 5000; k++)
			assert_int_equal(u64map__put(&m, k * 7 + round, k), 0);
		for (__u64 k = 0; k < 5000; k += 2)
			assert_true(u64map__del(&m, k * 7 + round, NULL));
		for (__u64 k = 1; k < 5000; k += 2) {
			assert_true(u64map__get(&m, k * 7 + round, &v));
			assert_int_equal(v, k);
			assert_true(u64map__del(&m, k * 7 + round, NULL));
		}
		assert_int_equal(u64map__len(&m), 0);
	}
	u64map__fini(&m);
}

/*
 * A new blob held to a share counts its cost there and is refused past the
 * hold's share (the table untouched); one interned already, by anyone,
 * costs nothing.
 */
static void test_a_held_intern_counts_new_blobs_against_the_share_only(void **state)
{
	struct mem_share share;
	struct mem_hold a = { 0 }, b = { 0 };
	struct blobtab *t;
	__u32 id, again;

	(void)state;
	mem_share__init(&share, 10);
	assert_int_equal(blobtab__new(100, 1 << 20, &t), 0);
	assert_int_equal(blobtab__intern_held(t, "x", 2, &a, &share, 4, &id), 0);
	assert_int_equal(a.held, 4);
	assert_int_equal(blobtab__intern_held(t, "x", 2, &a, &share, 4, &again), 0);
	assert_int_equal(again, id);
	assert_int_equal(a.held, 4);
	assert_int_equal(blobtab__intern_held(t, "y", 2, &a, &share, 4, &id), 0);
	assert_int_equal(blobtab__intern_held(t, "z", 2, &b, &share, 4, &id), 0);
	/* 12 of 10: a holds 8 of its share of 5 and may not take more; b holds 4. */
	assert_int_equal(blobtab__intern_held(t, "w", 2, &a, &share, 4, &id), -EDQUOT);
	assert_false(blobtab__find(t, "w", 2, &id));
	assert_int_equal(a.held, 8);
	assert_int_equal(blobtab__intern_held(t, "z", 2, &a, &share, 4, &id), 0); /* b's, found */
	assert_int_equal(a.held, 8);
	assert_int_equal(blobtab__count(t), 3);
	assert_int_equal(mem_share__bytes(&share), 12);
	mem_hold__leave(&a);
	mem_hold__leave(&b);
	blobtab__destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equal_blobs_get_one_id_and_different_ones_another),
		cmocka_unit_test(test_the_bounds_refuse_new_blobs_but_keep_old_ones),
		cmocka_unit_test(test_find_looks_up_without_adding),
		cmocka_unit_test(test_blobs_made_to_share_a_hash_are_kept_a_bounded_few),
		cmocka_unit_test(test_the_map_survives_heavy_churn),
		cmocka_unit_test(test_a_held_intern_counts_new_blobs_against_the_share_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
