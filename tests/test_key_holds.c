/* SPDX-License-Identifier: MIT */
/*
 * Holds by key (user/util/key_holds.c): one hold per key for the run, the
 * same one each time it is asked for, joined to the share once; keys past
 * KEY_HOLDS_MAX share one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/util/key_holds.h"

static void test_a_key_keeps_one_hold_and_the_share_counts_each_once(void **state)
{
	struct mem_share share;
	struct key_holds kh;
	struct mem_hold *a, *b;

	(void)state;
	mem_share__init(&share, 100);
	key_holds__init(&kh, &share);
	a = key_holds__get(&kh, 1);
	b = key_holds__get(&kh, 2);
	assert_ptr_not_equal(a, b);
	assert_ptr_equal(key_holds__get(&kh, 1), a);
	assert_int_equal(share.holders, 2);
	mem_hold__add(a, 60);
	mem_hold__add(b, 30);
	/* Over the bound, a is past its share (50) and b not. */
	assert_false(mem_hold__allows(key_holds__get(&kh, 1), 20));
	assert_true(mem_hold__allows(key_holds__get(&kh, 2), 20));
	assert_int_equal(key_holds__count(&kh), 2);
	key_holds__fini(&kh);
	/* Left, what they held still counted: names stay in the table. */
	assert_int_equal(share.holders, 0);
	assert_int_equal(mem_share__bytes(&share), 90);
}

static void test_keys_past_the_bound_share_one_hold(void **state)
{
	struct mem_share share;
	struct key_holds kh;
	struct mem_hold *first_rest;

	(void)state;
	mem_share__init(&share, 100);
	key_holds__init(&kh, &share);
	for (__u64 k = 0; k < KEY_HOLDS_MAX; k++)
		key_holds__get(&kh, k);
	first_rest = key_holds__get(&kh, KEY_HOLDS_MAX);
	assert_ptr_equal(key_holds__get(&kh, KEY_HOLDS_MAX + 7), first_rest);
	assert_int_equal(key_holds__count(&kh), KEY_HOLDS_MAX);
	assert_int_equal(share.holders, KEY_HOLDS_MAX + 1);
	key_holds__fini(&kh);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_key_keeps_one_hold_and_the_share_counts_each_once),
		cmocka_unit_test(test_keys_past_the_bound_share_one_hold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
