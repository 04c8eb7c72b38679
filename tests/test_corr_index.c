/* SPDX-License-Identifier: MIT */
/* The join's correlation index (user/join/corr_index.c): near-consecutive ids, and ids a ring chooses. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/join/corr_index.h"

static void expect(const struct corr_index *x, __u64 corr, __u64 pos)
{
	__u64 got = 0;

	if (!corr_index__get(x, corr, &got))
		fail_msg("id %llu not found", (unsigned long long)corr);
	assert_int_equal(got, pos);
}

/* Ids as CUPTI hands them out: each in its own slot of the direct array, none in the map. */
static void test_consecutive_ids_sit_in_the_direct_array(void **state)
{
	struct corr_index x;

	(void)state;
	assert_int_equal(corr_index__init(&x, 1000), 0);
	for (__u64 c = 1; c <= 40; c++)
		assert_int_equal(corr_index__put(&x, c, c * 10), 0);
	for (__u64 c = 1; c <= 40; c++)
		expect(&x, c, c * 10);
	assert_int_equal(x.dlen, 40);
	assert_int_equal(u64map__len(&x.rest), 0);
	assert_false(corr_index__get(&x, 41, NULL));
	assert_int_equal(corr_index__put(&x, 7, 99), 0); /* a held id: replaced */
	expect(&x, 7, 99);
	assert_int_equal(corr_index__len(&x), 40);
	for (__u64 c = 1; c <= 40; c++)
		assert_true(corr_index__del(&x, c));
	assert_false(corr_index__get(&x, 7, NULL));
	assert_false(corr_index__del(&x, 7));
	assert_int_equal(corr_index__len(&x), 0);
	corr_index__fini(&x);
}

/*
 * Ids that share a slot: the first holds it, the others go to the map; a
 * key is never in both, so one put again after the slot was freed replaces
 * the map's value, and one deletion removes it.
 */
static void test_ids_that_share_a_slot_go_to_the_map(void **state)
{
	__u64 a = 5, b = 5 + CORR_INDEX_DIRECT_MIN, c = 5 + 2 * CORR_INDEX_DIRECT_MIN;
	struct corr_index x;

	(void)state;
	assert_int_equal(corr_index__init(&x, 1000), 0);
	assert_int_equal(corr_index__put(&x, a, 1), 0);
	assert_int_equal(corr_index__put(&x, b, 2), 0);
	assert_int_equal(corr_index__put(&x, c, 3), 0);
	assert_int_equal(x.dlen, 1);
	assert_int_equal(u64map__len(&x.rest), 2);
	expect(&x, a, 1);
	expect(&x, b, 2);
	expect(&x, c, 3);
	assert_true(corr_index__del(&x, a));
	assert_false(corr_index__get(&x, a, NULL));
	assert_int_equal(corr_index__put(&x, b, 20), 0); /* in the map still: replaced there */
	expect(&x, b, 20);
	assert_int_equal(corr_index__len(&x), 2);
	assert_true(corr_index__del(&x, b));
	assert_false(corr_index__get(&x, b, NULL));
	assert_false(corr_index__del(&x, b));
	assert_int_equal(corr_index__put(&x, a, 4), 0); /* the free slot again */
	expect(&x, a, 4);
	expect(&x, c, 3);
	assert_int_equal(corr_index__len(&x), 2);
	corr_index__fini(&x);
}

/* UINT64_MAX marks a free slot: as an id, an ordinary one, kept in the map. */
static void test_the_free_slot_key_is_an_ordinary_id(void **state)
{
	struct corr_index x;

	(void)state;
	assert_int_equal(corr_index__init(&x, 1000), 0);
	assert_false(corr_index__get(&x, U64MAP_FREE, NULL));
	assert_int_equal(corr_index__put(&x, U64MAP_FREE, 8), 0);
	assert_int_equal(corr_index__put(&x, U64MAP_FREE & (CORR_INDEX_DIRECT_MIN - 1), 9), 0);
	expect(&x, U64MAP_FREE, 8);
	expect(&x, U64MAP_FREE & (CORR_INDEX_DIRECT_MIN - 1), 9);
	assert_int_equal(corr_index__len(&x), 2);
	assert_true(corr_index__del(&x, U64MAP_FREE));
	assert_false(corr_index__get(&x, U64MAP_FREE, NULL));
	expect(&x, U64MAP_FREE & (CORR_INDEX_DIRECT_MIN - 1), 9);
	corr_index__fini(&x);
}

/*
 * A ring that chooses every id to share one slot: the direct array grows
 * to its bound and no further, the map holds the rest, every id is found.
 */
static void test_ids_chosen_to_collide_grow_the_array_only_to_its_bound(void **state)
{
	const __u64 n = 40000;
	struct corr_index x;

	(void)state;
	assert_int_equal(corr_index__init(&x, 1 << 20), 0);
	for (__u64 k = 0; k < n; k++)
		assert_int_equal(corr_index__put(&x, k << 24, k), 0);
	assert_int_equal(x.dcap, CORR_INDEX_DIRECT_MAX);
	assert_int_equal(x.dlen, 1);
	for (__u64 k = 0; k < n; k++)
		expect(&x, k << 24, k);
	assert_true(corr_index__bytes(&x) <= CORR_INDEX_DIRECT_MAX * sizeof(struct u64slot) +
						 u64map__bytes(&x.rest));
	corr_index__fini(&x);
}

/* A put allocates only when corr_index__allocates said it would: the join's budget asks it first. */
static void test_allocates_tells_a_put_that_allocates(void **state)
{
	struct corr_index x;
	unsigned grew = 0;

	(void)state;
	srand(7);
	assert_int_equal(corr_index__init(&x, 1 << 20), 0);
	for (__u64 i = 0; i < 30000; i++) {
		/* mostly consecutive ids, with a chosen collision every so often */
		__u64 c = i % 5 ? i * 2 : (__u64)rand() << 20;
		size_t before = corr_index__bytes(&x);
		bool says = corr_index__allocates(&x, c);

		assert_int_equal(corr_index__put(&x, c, i), 0);
		if (!says)
			assert_int_equal(corr_index__bytes(&x), before);
		grew += corr_index__bytes(&x) != before;
	}
	assert_true(grew > 4);
	corr_index__fini(&x);
}

/* Mixed puts and deletions against a plain map: the same answers, then after a trim. */
static void test_churn_answers_as_a_plain_map(void **state)
{
	struct corr_index x;
	struct u64map ref;
	__u64 next = 1000, k, v;

	(void)state;
	srand(11);
	assert_int_equal(corr_index__init(&x, 1 << 20), 0);
	assert_int_equal(u64map__init(&ref, 1 << 20), 0);
	for (unsigned i = 0; i < 200000; i++) {
		unsigned op = (unsigned)rand() % 10;
		__u64 c;

		if (op < 5)
			c = next += 1 + (unsigned)rand() % 3; /* new ids, gaps between */
		else if (op < 6)
			c = ((__u64)rand() << 16) ^ (__u64)rand(); /* anywhere */
		else
			c = next - (unsigned)rand() % 20000; /* an older one, held or not */
		if (op < 8) {
			assert_int_equal(corr_index__put(&x, c, i), 0);
			assert_int_equal(u64map__put(&ref, c, i), 0);
		} else {
			assert_int_equal(corr_index__del(&x, c), u64map__del(&ref, c, NULL));
		}
		/* the table keeps about the last 20,000 ids: older ones leave */
		if (op < 5 && next > 30000)
			assert_int_equal(corr_index__del(&x, next - 30000),
					 u64map__del(&ref, next - 30000, NULL));
	}
	assert_int_equal(corr_index__len(&x), u64map__len(&ref));
	for (size_t i = 0; u64map__next(&ref, &i, &k, &v);)
		expect(&x, k, v);
	for (__u64 c = next - 40000; c <= next; c++)
		assert_int_equal(corr_index__get(&x, c, NULL), u64map__get(&ref, c, NULL));
	/* all but a few gone: the trim gives the arrays back and keeps those few */
	for (size_t i = 0; u64map__next(&ref, &i, &k, &v);)
		if (k % 1000)
			assert_true(corr_index__del(&x, k));
	corr_index__trim(&x);
	assert_true(x.dcap < 4096);
	for (size_t i = 0; u64map__next(&ref, &i, &k, &v);)
		assert_int_equal(corr_index__get(&x, k, NULL), k % 1000 == 0);
	u64map__fini(&ref);
	corr_index__fini(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_consecutive_ids_sit_in_the_direct_array),
		cmocka_unit_test(test_ids_that_share_a_slot_go_to_the_map),
		cmocka_unit_test(test_the_free_slot_key_is_an_ordinary_id),
		cmocka_unit_test(test_ids_chosen_to_collide_grow_the_array_only_to_its_bound),
		cmocka_unit_test(test_allocates_tells_a_put_that_allocates),
		cmocka_unit_test(test_churn_answers_as_a_plain_map),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
