/* SPDX-License-Identifier: MIT */
/* The backward passes' callers of a process (user/join/autograd_callers.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/join/autograd_callers.h"

static struct autograd_callers *fresh(void)
{
	struct autograd_callers *ac = NULL;

	assert_int_equal(autograd_callers__new(&ac), 0);
	return ac;
}

/* The caller (tid, site) of the pass on gt, or (0, 0). */
static __u64 caller_of(const struct autograd_callers *ac, __u64 gt)
{
	__u32 tid = 0, site = 0;

	if (!autograd_callers__get(ac, autograd_callers__of(ac, gt), &tid, &site))
		return 0;
	return (__u64)tid << 32 | site;
}

/* Two threads' passes at once: each names its own caller; a pass named again takes the latest. */
static void test_each_pass_names_the_thread_that_began_it(void **state)
{
	struct autograd_callers *ac = fresh();
	struct autograd_callers_stats st;

	assert_int_equal(caller_of(ac, 0x1000), 0);
	assert_int_not_equal(autograd_callers__begin(ac, 0x1000, 11, 5), 0);
	assert_int_not_equal(autograd_callers__begin(ac, 0x2000, 12, 6), 0);
	assert_int_equal(caller_of(ac, 0x1000), (11ull << 32) | 5);
	assert_int_equal(caller_of(ac, 0x2000), (12ull << 32) | 6);
	/* Named again (the loader never does: a pass is its begin's time): the latest wins. */
	autograd_callers__begin(ac, 0x1000, 12, 7);
	assert_int_equal(caller_of(ac, 0x1000), (12ull << 32) | 7);
	assert_int_equal(autograd_callers__of(ac, 0), 0); /* no task: none */
	autograd_callers__stats(ac, &st);
	assert_int_equal(st.passes, 3);
	assert_int_equal(st.callers, 3);
	assert_int_equal(st.refused, 0);
	autograd_callers__destroy(ac);
}

/* A loop's thousand backward() calls from one line: one caller, one handle. */
static void test_one_line_is_one_caller(void **state)
{
	struct autograd_callers *ac = fresh();
	struct autograd_callers_stats st;
	__u32 first = autograd_callers__begin(ac, 0x1000, 11, 5);

	for (__u64 i = 0; i < 1000; i++)
		assert_int_equal(autograd_callers__begin(ac, 0x1000 + 64 * (i % 3), 11, 5), first);
	autograd_callers__stats(ac, &st);
	assert_int_equal(st.callers, 1);
	assert_int_equal(st.passes, 1001);
	autograd_callers__destroy(ac);
}

/*
 * A process making up callers without end fills the table: a later pass
 * from a new caller is refused, counted, and names no caller; the callers
 * held still answer, and a pass of one of them is still given.
 */
static void test_a_full_table_refuses_new_callers(void **state)
{
	struct autograd_callers *ac = fresh();
	struct autograd_callers_stats st;

	for (__u32 i = 0; i < AUTOGRAD_CALLERS_MAX; i++)
		assert_int_not_equal(autograd_callers__begin(ac, 0x1000 + i, 1, i + 1), 0);
	assert_int_equal(autograd_callers__begin(ac, 0x9000, 2, 99999), 0);
	assert_int_equal(caller_of(ac, 0x9000), 0);
	assert_int_equal(caller_of(ac, 0x1001), (1ull << 32) | 2);
	assert_int_not_equal(autograd_callers__begin(ac, 0x9001, 1, 1), 0);
	assert_int_equal(caller_of(ac, 0x9001), (1ull << 32) | 1);
	/* No stack (the stack table was full): refused too. */
	assert_int_equal(autograd_callers__begin(ac, 0x9002, 1, 0), 0);
	assert_int_equal(caller_of(ac, 0x9002), 0);
	autograd_callers__stats(ac, &st);
	assert_int_equal(st.callers, AUTOGRAD_CALLERS_MAX);
	assert_int_equal(st.refused, 2);
	autograd_callers__destroy(ac);
}

/*
 * Passes without end (one a training step): a pass is known for at least
 * AUTOGRAD_PASSES_MAX begins after its own, in two generations; older
 * ones are forgotten, counted, and their launches would name no caller.
 */
static void test_passes_are_kept_two_generations(void **state)
{
	struct autograd_callers *ac = fresh();
	struct autograd_callers_stats st;
	__u64 first = 1000;

	for (__u64 i = 0; i <= AUTOGRAD_PASSES_MAX; i++)
		assert_int_not_equal(autograd_callers__begin(ac, first + i, 3, 4), 0);
	assert_int_equal(caller_of(ac, first), (3ull << 32) | 4);          /* the older generation */
	assert_int_equal(caller_of(ac, first + AUTOGRAD_PASSES_MAX), (3ull << 32) | 4);
	for (__u64 i = AUTOGRAD_PASSES_MAX + 1; i <= 2 * AUTOGRAD_PASSES_MAX; i++)
		autograd_callers__begin(ac, first + i, 3, 4);
	assert_int_equal(caller_of(ac, first), 0);                         /* forgotten */
	assert_int_equal(caller_of(ac, first + AUTOGRAD_PASSES_MAX), (3ull << 32) | 4);
	autograd_callers__stats(ac, &st);
	assert_int_equal(st.restarts, 2);
	assert_int_equal(st.callers, 1);
	autograd_callers__destroy(ac);
}

static __u64 plus_100(void *ctx, __u64 site)
{
	(void)ctx;
	return site + 100;
}

/* Stacks renumbered (--interval): callers follow, and the same caller again is the same handle. */
static void test_callers_follow_renumbered_stacks(void **state)
{
	struct autograd_callers *ac = fresh();
	__u32 h = autograd_callers__begin(ac, 0x1000, 11, 5);

	autograd_callers__visit_sites(ac, plus_100, NULL);
	assert_int_equal(caller_of(ac, 0x1000), (11ull << 32) | 105);
	assert_int_equal(autograd_callers__begin(ac, 0x2000, 11, 105), h);
	autograd_callers__destroy(ac);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_pass_names_the_thread_that_began_it),
		cmocka_unit_test(test_one_line_is_one_caller),
		cmocka_unit_test(test_a_full_table_refuses_new_callers),
		cmocka_unit_test(test_passes_are_kept_two_generations),
		cmocka_unit_test(test_callers_follow_renumbered_stacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
