/* SPDX-License-Identifier: MIT */
/* The bounded growable FIFO behind the join's queues (user/util/fifo.c). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/util/fifo.h"

static unsigned at(const struct fifo *f, size_t i)
{
	return *(unsigned *)fifo__at(f, i);
}

/* Items come out in the order they went in, across the ring's wrap and each growth. */
static void test_items_keep_their_order_across_wrap_and_growth(void **state)
{
	struct fifo f = { .item = sizeof(unsigned), .max = 1000 };
	unsigned next_in = 0, next_out = 0;

	(void)state;
	for (int round = 0; round < 50; round++) {
		for (int k = 0; k < 7; k++, next_in++)
			assert_int_equal(fifo__push(&f, &next_in), 0);
		for (int k = 0; k < 5; k++, next_out++) {
			assert_int_equal(at(&f, 0), next_out);
			fifo__pop(&f);
		}
		for (size_t i = 0; i < f.len; i++)
			assert_int_equal(at(&f, i), next_out + i);
	}
	assert_int_equal(f.len, next_in - next_out);
	assert_null(fifo__at(&f, f.len));
	fifo__free(&f);
}

/* At its bound a push is refused and nothing already held changes. */
static void test_a_push_past_the_bound_is_refused(void **state)
{
	struct fifo f = { .item = sizeof(unsigned), .max = 3 };
	unsigned v;

	(void)state;
	for (v = 0; v < 3; v++)
		assert_int_equal(fifo__push(&f, &v), 0);
	assert_int_equal(fifo__push(&f, &v), -E2BIG);
	assert_int_equal(f.len, 3);
	assert_int_equal(at(&f, 2), 2);
	fifo__drop_last(&f);
	assert_int_equal(f.len, 2);
	assert_int_equal(fifo__push(&f, &v), 0);
	assert_int_equal(at(&f, 2), 3);
	fifo__free(&f);
}

/* A burst's room goes back: drained, past FIFO_KEEP items, and mostly drained, on a trim. */
static void test_a_bursts_room_goes_back(void **state)
{
	struct fifo f = { .item = sizeof(unsigned), .max = 1 << 20 };
	unsigned v;

	(void)state;
	for (v = 0; v < 4 * FIFO_KEEP; v++)
		assert_int_equal(fifo__push(&f, &v), 0);
	while (f.len > 10)
		fifo__pop(&f);
	assert_true(f.cap >= 4 * FIFO_KEEP);
	fifo__trim(&f);
	assert_true(f.cap >= 2 * f.len && f.cap <= FIFO_KEEP);
	for (size_t i = 0; i < f.len; i++)
		assert_int_equal(at(&f, i), 4 * FIFO_KEEP - 10 + i);
	for (v = 0; v < 4 * FIFO_KEEP; v++)
		assert_int_equal(fifo__push(&f, &v), 0);
	while (f.len)
		fifo__pop(&f);
	assert_int_equal(fifo__bytes(&f), 0);
	assert_null(f.buf);
	fifo__free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_items_keep_their_order_across_wrap_and_growth),
		cmocka_unit_test(test_a_push_past_the_bound_is_refused),
		cmocka_unit_test(test_a_bursts_room_goes_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
