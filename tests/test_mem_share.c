/* SPDX-License-Identifier: MIT */
/* One memory bound shared by many holders (user/util/mem_share.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/util/mem_share.h"

/* Within the bound, all together, any holder takes more, however much it holds. */
static void test_within_the_bound_any_holder_takes_more(void **state)
{
	struct mem_share s;

	(void)state;
	mem_share__init(&s, 1000);
	mem_share__join(&s);
	mem_share__join(&s);
	mem_share__add(&s, 900);
	assert_true(mem_share__allows(&s, 900, 100));
	assert_int_equal(mem_share__refused(&s), 0);
}

/*
 * Past the bound, the holder over its share (the bound over the holders) is
 * refused and one under it is not: the one that filled it gives way.
 */
static void test_past_the_bound_only_a_holder_within_its_share_takes_more(void **state)
{
	struct mem_share s;

	(void)state;
	mem_share__init(&s, 1000);
	for (int i = 0; i < 4; i++)
		mem_share__join(&s);
	mem_share__add(&s, 950); /* one holder took 950, three hold nothing */
	assert_false(mem_share__allows(&s, 950, 100));
	assert_true(mem_share__allows(&s, 0, 100));
	assert_true(mem_share__allows(&s, 150, 100)); /* 250: its share of 1000 over 4 */
	assert_false(mem_share__allows(&s, 151, 100));
	assert_int_equal(mem_share__refused(&s), 2);
}

/* Holders take and give back; one that leaves gives back what it still held. */
static void test_a_holder_that_leaves_gives_back_what_it_held(void **state)
{
	struct mem_share s;

	(void)state;
	mem_share__init(&s, 100);
	mem_share__join(&s);
	mem_share__join(&s);
	mem_share__add(&s, 80);
	mem_share__add(&s, 60);
	mem_share__add(&s, -20);
	assert_int_equal(mem_share__bytes(&s), 120);
	assert_false(mem_share__allows(&s, 60, 1)); /* over 100, and over its 50 */
	mem_share__leave(&s, 60);
	assert_int_equal(mem_share__bytes(&s), 60);
	assert_true(mem_share__allows(&s, 60, 40)); /* alone again, and within 100 */
	mem_share__leave(&s, 60);
	assert_int_equal(mem_share__bytes(&s), 0);
}

/*
 * A holder's side: before it joins it is allowed all and counts only for
 * itself; joining brings what it holds into the share; it then takes and
 * gives back through the share, and leaving returns all it counted.
 */
/*
 * A holder of what outlives it (strings interned for good) leaves with its
 * bytes still counted: holders that come and go do not make room that is
 * not there; the ones left get the share of fewer holders.
 */
static void test_a_holder_that_leaves_keeping_leaves_its_bytes_counted(void **state)
{
	struct mem_share s;
	struct mem_hold a = { 0 }, b = { 0 };

	(void)state;
	mem_share__init(&s, 1000);
	mem_hold__join(&a, &s);
	mem_hold__join(&b, &s);
	mem_hold__add(&a, 900);
	mem_hold__leave_keeping(&a);
	assert_int_equal(mem_share__bytes(&s), 900);
	assert_int_equal(s.holders, 1);
	assert_true(mem_hold__allows(&b, 100));  /* 1000 all together */
	mem_hold__add(&b, 100);
	assert_false(mem_hold__allows(&b, 1000)); /* past the bound, past its share of 1000 */
	assert_true(mem_hold__allows(&b, 900));   /* within its share, alone: 1000 */
	mem_hold__leave_keeping(&a);              /* once only */
	assert_int_equal(s.holders, 1);
}

static void test_a_holder_counts_in_its_share_from_its_join_to_its_leave(void **state)
{
	struct mem_share s;
	struct mem_hold a = { 0 }, b = { 0 };

	(void)state;
	mem_share__init(&s, 1000);
	mem_hold__add(&a, 2000);
	assert_true(mem_hold__allows(&a, 5000)); /* no share joined: no bound here */
	mem_hold__join(&a, &s);
	mem_hold__join(&a, &s); /* once */
	assert_int_equal(mem_share__bytes(&s), 2000);
	mem_hold__join(&b, &s);
	assert_false(mem_hold__allows(&a, 1));
	assert_true(mem_hold__allows(&b, 500));
	mem_hold__add(&b, 500);
	mem_hold__add(&a, -1500);
	assert_int_equal(mem_share__bytes(&s), 1000);
	mem_hold__leave(&a);
	assert_int_equal(mem_share__bytes(&s), 500);
	mem_hold__leave(&b);
	assert_int_equal(mem_share__bytes(&s), 0);
	assert_int_equal(s.holders, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_holder_counts_in_its_share_from_its_join_to_its_leave),
		cmocka_unit_test(test_within_the_bound_any_holder_takes_more),
		cmocka_unit_test(test_past_the_bound_only_a_holder_within_its_share_takes_more),
		cmocka_unit_test(test_a_holder_that_leaves_gives_back_what_it_held),
		cmocka_unit_test(test_a_holder_that_leaves_keeping_leaves_its_bytes_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
