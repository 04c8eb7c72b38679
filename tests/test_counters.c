/* SPDX-License-Identifier: MIT */
/*
 * The counter registry (user/util/counters.c): the report's counters: line
 * is printed from it, and tests and tools parse that line by name, so its
 * format is held here to the character.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/util/counters.h"

/* What counters__print wrote, as a string (the caller frees it). */
static char *printed(const struct counters *c, const char *label)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	counters__print(c, label, f);
	fclose(f);
	return buf;
}

static void test_counters_print_in_the_order_added_with_parts_in_parentheses(void **state)
{
	struct counters c;
	char *line;

	counters__init(&c);
	counters__add(&c, "joined", 7);
	counters__add(&c, "unattributed", 3);
	counters__add_part(&c, "no_launch_event", 1);
	counters__add_part(&c, "table_full", 2);
	counters__add(&c, "queue_full", 0);
	line = printed(&c, "counters");
	assert_string_equal(line, "counters: joined=7 unattributed=3 (no_launch_event=1 table_full=2) "
			    "queue_full=0\n");
	free(line);
}

/* What counters__print_moved wrote, as a string (the caller frees it). */
static char *printed_moved(const struct counters *c, const char *label)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	counters__print_moved(c, label, f);
	fclose(f);
	return buf;
}

/* For a person: a counter only when it or a part moved, a part only when it did. */
static void test_only_what_moved_is_printed_for_a_person(void **state)
{
	struct counters c;
	char *line;

	counters__init(&c);
	counters__add(&c, "joined", 7);
	counters__add(&c, "ring_dropped", 0);
	counters__add(&c, "unattributed", 3);
	counters__add_part(&c, "no_launch_event", 0);
	counters__add_part(&c, "table_full", 3);
	counters__add(&c, "graph_nodes", 0);
	counters__add_part(&c, "refused", 2);
	counters__add(&c, "queue_full", 0);
	counters__add_part(&c, "x", 0);
	line = printed_moved(&c, "counters");
	assert_string_equal(line, "counters: joined=7 unattributed=3 (table_full=3) graph_nodes=0 (refused=2)\n");
	free(line);
	counters__init(&c);
	counters__add(&c, "joined", 0);
	line = printed_moved(&c, "counters");
	assert_string_equal(line, "counters: none moved\n");
	free(line);
}

static void test_parts_that_end_the_line_close_their_parenthesis(void **state)
{
	struct counters c;
	char *line;

	counters__init(&c);
	counters__add(&c, "a", UINT64_MAX);
	counters__add_part(&c, "b", 1);
	line = printed(&c, "x");
	assert_string_equal(line, "x: a=18446744073709551615 (b=1)\n");
	free(line);
}

static void test_a_counter_or_a_part_is_found_by_its_name(void **state)
{
	struct counters c;
	__u64 v = 99;

	counters__init(&c);
	counters__add(&c, "unattributed", 3);
	counters__add_part(&c, "at_attach", 1);
	assert_int_equal(counters__get(&c, "unattributed", &v), 0);
	assert_int_equal(v, 3);
	assert_int_equal(counters__get(&c, "at_attach", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(counters__get(&c, "at", &v), -ENOENT);
	assert_int_equal(v, 1); /* written only on success */
}

static void test_adds_past_the_bound_are_refused_and_said_on_the_line(void **state)
{
	char name[COUNTER_NAME_MAX + 2];
	struct counters c;
	char *line;

	counters__init(&c);
	for (int i = 0; i < COUNTERS_MAX + 2; i++)
		counters__add(&c, "n", (__u64)i);
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	counters__add(&c, name, 1); /* one character too long */
	assert_int_equal(c.n, COUNTERS_MAX);
	assert_int_equal(c.refused, 3);
	line = printed(&c, "counters");
	snprintf(name, sizeof(name), " n=%d counters_refused=3\n", COUNTERS_MAX - 1);
	assert_non_null(strstr(line, name));
	free(line);
}

static void test_the_longest_line_is_printed_whole(void **state)
{
	char names[COUNTERS_MAX][COUNTER_NAME_MAX + 1];
	struct counters c;
	char *line;
	size_t want;

	counters__init(&c);
	for (int i = 0; i < COUNTERS_MAX; i++) {
		memset(names[i], 'a' + i % 26, COUNTER_NAME_MAX);
		names[i][COUNTER_NAME_MAX] = 0;
		if (i % 2)
			counters__add_part(&c, names[i], UINT64_MAX);
		else
			counters__add(&c, names[i], UINT64_MAX);
	}
	c.refused = UINT32_MAX;
	line = printed(&c, "a-label-of-exactly-thirty-two-ch");
	/* "label:", each " name=<20 digits>", the parts' parentheses, the refusals, "\n". */
	want = 33 + COUNTERS_MAX * (1 + COUNTER_NAME_MAX + 1 + 20) + COUNTERS_MAX +
	       strlen(" counters_refused=4294967295") + 1;
	assert_int_equal(strlen(line), want);
	assert_int_equal(line[want - 1], '\n');
	free(line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counters_print_in_the_order_added_with_parts_in_parentheses),
		cmocka_unit_test(test_parts_that_end_the_line_close_their_parenthesis),
		cmocka_unit_test(test_only_what_moved_is_printed_for_a_person),
		cmocka_unit_test(test_a_counter_or_a_part_is_found_by_its_name),
		cmocka_unit_test(test_adds_past_the_bound_are_refused_and_said_on_the_line),
		cmocka_unit_test(test_the_longest_line_is_printed_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
