/* SPDX-License-Identifier: MIT */
/* Growing an appended array (user/util/grow.c). */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "user/util/grow.h"

/* Fresh heap memory is never zero by chance: glibc fills it with ~0x5a. */
static int dirty_heap(void **state)
{
	mallopt(M_PERTURB, 0x5a);
	return 0;
}

static uint64_t *grown(uint64_t *arr, size_t *cap, size_t need, size_t first)
{
	uint64_t *n = grow__array(arr, cap, need, sizeof(*n), first);

	assert_non_null(n);
	return n;
}

static void test_an_empty_array_gets_the_first_capacity_doubled_to_fit(void **state)
{
	size_t cap = 0, cap2 = 0, cap3 = 0;
	uint64_t *a = grown(NULL, &cap, 1, 64);
	uint64_t *b = grown(NULL, &cap2, 200, 64);
	uint64_t *c = grown(NULL, &cap3, 3, 0);

	assert_int_equal(cap, 64);
	assert_int_equal(cap2, 256);
	assert_int_equal(cap3, 4); /* no first capacity: 1, doubled */
	free(a);
	free(b);
	free(c);
}

static void test_a_full_array_doubles_and_keeps_its_items(void **state)
{
	size_t cap = 0;
	uint64_t *a = grown(NULL, &cap, 8, 8);

	for (uint64_t i = 0; i < 8; i++)
		a[i] = i * 3 + 1;
	a = grown(a, &cap, 9, 8);
	assert_int_equal(cap, 16);
	for (uint64_t i = 0; i < 8; i++)
		assert_int_equal(a[i], i * 3 + 1);
	free(a);
}

static void test_an_array_with_room_is_left_as_it_is(void **state)
{
	size_t cap = 0;
	uint64_t *a = grown(NULL, &cap, 5, 16);

	assert_ptr_equal(grown(a, &cap, 16, 16), a);
	assert_int_equal(cap, 16);
	assert_ptr_equal(grown(a, &cap, 0, 16), a);
	assert_int_equal(cap, 16);
	free(a);
}

static void test_a_need_past_the_double_doubles_until_it_fits(void **state)
{
	size_t cap = 0;
	uint64_t *a = grown(NULL, &cap, 8, 8);

	a = grown(a, &cap, 100, 8);
	assert_int_equal(cap, 128);
	a = grown(a, &cap, 129, 8);
	assert_int_equal(cap, 256);
	free(a);
}

static void test_the_zeroed_growth_zeroes_the_new_tail_and_keeps_the_items(void **state)
{
	size_t cap = 0;
	uint64_t *a = grow__array_zeroed(NULL, &cap, 1, sizeof(*a), 4), *blocker;

	assert_non_null(a);
	for (int round = 0; round < 12; round++) {
		size_t old = cap;

		for (size_t i = 0; i < old; i++)
			a[i] = ~(uint64_t)i;
		/* Nothing free right after a: realloc moves it into dirty memory. */
		blocker = malloc(64);
		assert_non_null(blocker);
		a = grow__array_zeroed(a, &cap, old + 1, sizeof(*a), 4);
		free(blocker);
		assert_non_null(a);
		assert_int_equal(cap, old * 2);
		for (size_t i = 0; i < old; i++)
			assert_int_equal(a[i], ~(uint64_t)i);
		for (size_t i = old; i < cap; i++)
			assert_int_equal(a[i], 0);
	}
	free(a);
}

static void test_a_bound_stops_the_doubling_and_refuses_a_need_past_it(void **state)
{
	size_t cap = 0;
	uint64_t *a = grow__array_max(NULL, &cap, 1, sizeof(*a), 64, 100), *n;

	assert_non_null(a);
	assert_int_equal(cap, 64);
	a = grow__array_max(a, &cap, 65, sizeof(*a), 64, 100);
	assert_non_null(a);
	assert_int_equal(cap, 100);
	a[99] = 7;
	errno = 0;
	n = grow__array_max(a, &cap, 101, sizeof(*a), 64, 100);
	assert_null(n);
	assert_int_equal(errno, E2BIG);
	assert_int_equal(cap, 100);
	assert_int_equal(a[99], 7);
	free(a);
}

/* Each way the size could wrap: NULL, EOVERFLOW, and the caller's array as it was. */
static void test_a_size_that_would_overflow_is_refused_and_the_array_kept(void **state)
{
	static const struct {
		size_t need, item;
	} cases[] = {
		{ SIZE_MAX / 8 + 1, 8 },  /* need * item */
		{ SIZE_MAX / 16 + 2, 8 }, /* need * item fits, the doubled capacity's does not */
		{ SIZE_MAX / 2 + 2, 1 },  /* need fits, the doubling up to it does not */
		{ SIZE_MAX, 1 },
	};

	alarm(10); /* a doubling that wraps to 0 would loop for ever */
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		size_t cap = 0;
		unsigned char *a = grow__array(NULL, &cap, 4, cases[k].item, 4), *n;

		assert_non_null(a);
		memset(a, 0xab, cap * cases[k].item);
		errno = 0;
		n = grow__array(a, &cap, cases[k].need, cases[k].item, 4);
		assert_null(n);
		assert_int_equal(errno, EOVERFLOW);
		assert_int_equal(cap, 4);
		for (size_t i = 0; i < 4 * cases[k].item; i++)
			assert_int_equal(a[i], 0xab);
		free(a);
	}
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_an_empty_array_gets_the_first_capacity_doubled_to_fit),
		cmocka_unit_test(test_a_full_array_doubles_and_keeps_its_items),
		cmocka_unit_test(test_an_array_with_room_is_left_as_it_is),
		cmocka_unit_test(test_a_need_past_the_double_doubles_until_it_fits),
		cmocka_unit_test(test_the_zeroed_growth_zeroes_the_new_tail_and_keeps_the_items),
		cmocka_unit_test(test_a_bound_stops_the_doubling_and_refuses_a_need_past_it),
		cmocka_unit_test(test_a_size_that_would_overflow_is_refused_and_the_array_kept),
	};

	return cmocka_run_group_tests(tests, dirty_heap, NULL);
}
