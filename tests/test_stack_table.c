/* SPDX-License-Identifier: MIT */
/* The raw stack table's windows and compaction (user/session/stack_table.c). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "user/session/stack_table.h"

static __u32 intern(struct stack_table *st, const char *s, bool want_new)
{
	__u32 id = 0;
	bool is_new;

	assert_int_equal(stack_table__intern(st, s, strlen(s) + 1, &id, &is_new), 0);
	assert_int_equal(is_new, want_new);
	return id;
}

static void compact(struct stack_table *st, struct stack_compaction *c)
{
	assert_int_equal(stack_table__compact_begin(st, c), 0);
	stack_table__compact_commit(st, c);
}

/*
 * A window keeps what it used or was told to keep, renumbered in order; a
 * stack kept once is forgotten at the end of the next window that does not
 * use it; a forgotten stack met again is new.
 */
static void test_a_window_keeps_what_it_used_and_renumbers_it(void **state)
{
	struct stack_table st;
	struct stack_compaction c;
	size_t len;

	assert_int_equal(stack_table__init(&st, 100, 1 << 20), 0);
	assert_int_equal(intern(&st, "a", true), 1);
	assert_int_equal(intern(&st, "b", true), 2);
	assert_int_equal(intern(&st, "c", true), 3);
	assert_int_equal(intern(&st, "b", false), 2);
	compact(&st, &c); /* window 1 used all three */
	assert_int_equal(c.n, 3);
	assert_int_equal(c.remap[1], 1);
	assert_int_equal(c.remap[3], 3);
	stack_compaction__free(&c);

	assert_int_equal(intern(&st, "c", false), 3); /* window 2: c used, a kept, b not */
	stack_table__keep(&st, 1);
	stack_table__keep(&st, 0);   /* ignored */
	stack_table__keep(&st, 999); /* ignored */
	compact(&st, &c);
	assert_int_equal(c.remap[1], 1);
	assert_int_equal(c.remap[2], 0);
	assert_int_equal(c.remap[3], 2);
	stack_compaction__free(&c);
	assert_int_equal(stack_table__count(&st), 2);
	assert_string_equal(stack_table__get(&st, 2, &len), "c");
	assert_int_equal(len, 2);
	assert_null(stack_table__get(&st, 3, &len));

	compact(&st, &c); /* window 3 used nothing */
	assert_int_equal(c.remap[1], 0);
	assert_int_equal(c.remap[2], 0);
	stack_compaction__free(&c);
	assert_int_equal(stack_table__count(&st), 0);
	assert_int_equal(intern(&st, "b", true), 1);
	stack_table__fini(&st);
}

/* A prepared compaction not committed leaves the table as it was. */
static void test_an_abandoned_compaction_changes_nothing(void **state)
{
	struct stack_table st;
	struct stack_compaction c;

	assert_int_equal(stack_table__init(&st, 100, 1 << 20), 0);
	intern(&st, "a", true);
	intern(&st, "b", true);
	assert_int_equal(stack_table__compact_begin(&st, &c), 0);
	stack_compaction__free(&c);
	assert_int_equal(stack_table__count(&st), 2);
	assert_int_equal(intern(&st, "b", false), 2);
	stack_table__fini(&st);
}

/* The bound holds within a window and is free again after one. */
static void test_the_bound_is_per_what_is_held(void **state)
{
	struct stack_table st;
	struct stack_compaction c;
	__u32 id;
	bool is_new;

	assert_int_equal(stack_table__init(&st, 2, 1 << 20), 0);
	intern(&st, "a", true);
	intern(&st, "b", true);
	assert_int_equal(stack_table__intern(&st, "c", 2, &id, &is_new), -E2BIG);
	compact(&st, &c);
	stack_compaction__free(&c);
	compact(&st, &c);
	stack_compaction__free(&c);
	assert_int_equal(intern(&st, "c", true), 1);
	stack_table__fini(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_window_keeps_what_it_used_and_renumbers_it),
		cmocka_unit_test(test_an_abandoned_compaction_changes_nothing),
		cmocka_unit_test(test_the_bound_is_per_what_is_held),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
