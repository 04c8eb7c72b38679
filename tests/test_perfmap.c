/* SPDX-License-Identifier: MIT */
/*
 * Tests for user/symbolize/perfmap: CPython's perf map format, and what a
 * hostile or broken writer can throw at us (a million lines, binary junk,
 * overlong lines, overlapping ranges) without crashing or growing unbounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "user/symbolize/perfmap.h"

static struct perfmap *parse(const char *text)
{
	struct perfmap *m = NULL;

	assert_int_equal(perfmap__parse(text, strlen(text), &m), 0);
	assert_non_null(m);
	return m;
}

static void assert_lookup(const struct perfmap *m, uint64_t addr, const char *name)
{
	struct perfmap_entry e;

	if (!name) {
		assert_int_equal(perfmap__lookup(m, addr, &e), -ENOENT);
		return;
	}
	assert_int_equal(perfmap__lookup(m, addr, &e), 0);
	assert_string_equal(e.name, name);
}

static void test_cpython_lines_are_parsed_with_or_without_0x(void **state)
{
	struct perfmap *m = parse("7f1200001000 2f py::main:/app/x.py\n"
				  "0x7f1200002000 0x10 py::Model.forward:/app/model.py\r\n"
				  "7F1200003000 8 [jit] name with  spaces   \n");
	char fn[64], file[64];

	assert_int_equal(perfmap__count(m), 3);
	assert_int_equal(perfmap__dropped(m), 0);
	assert_lookup(m, 0x7f1200001000, "py::main:/app/x.py");
	assert_lookup(m, 0x7f120000102e, "py::main:/app/x.py");
	assert_lookup(m, 0x7f120000102f, NULL); /* size is 0x2f: end is exclusive */
	assert_lookup(m, 0x7f1200002005, "py::Model.forward:/app/model.py");
	assert_lookup(m, 0x7f1200003007, "[jit] name with  spaces");
	assert_lookup(m, 0x7f1200000fff, NULL);
	assert_true(perfmap__python_name("py::Model.forward:/app/model.py", fn, sizeof(fn),
					 file, sizeof(file)));
	assert_string_equal(fn, "Model.forward");
	assert_string_equal(file, "/app/model.py");
	assert_true(perfmap__python_name("py::f:C:/win:path.py", fn, sizeof(fn), file, 4));
	assert_string_equal(file, "C:/");
	assert_false(perfmap__python_name("[jit] x", fn, sizeof(fn), file, sizeof(file)));
	assert_false(perfmap__python_name("py::nocolon", fn, sizeof(fn), file, sizeof(file)));
	perfmap__destroy(m);
	perfmap__destroy(NULL);
}

static void test_malformed_lines_are_counted_not_kept(void **state)
{
	struct perfmap *m = parse("zz 10 bad_start\n"
				  "1000 zz bad_size\n"
				  "1000 10\n"                    /* no name */
				  "2000 0 empty_range\n"
				  "ffffffffffffff00 1000 wraps\n"
				  "11112222333344445 1 too_many_digits\n"
				  "3000 10 good\n"
				  "\n\n");

	assert_int_equal(perfmap__count(m), 1);
	assert_int_equal(perfmap__dropped(m), 6);
	assert_lookup(m, 0x3000, "good");
	perfmap__destroy(m);
}

static void test_overlapping_ranges_resolve_to_the_latest_line(void **state)
{
	struct perfmap *m = parse("1000 1000 old_big\n"
				  "1800 100 newer_inside\n"
				  "1000 10 reused_start\n");

	assert_lookup(m, 0x1005, "reused_start"); /* same start: last line wins */
	assert_lookup(m, 0x1850, "newer_inside");
	assert_lookup(m, 0x1950, NULL);            /* old_big was replaced at 0x1000 */
	perfmap__destroy(m);
	m = parse("1000 1000 big\n1800 100 inside\n");
	assert_lookup(m, 0x1950, "big");           /* an earlier range still covers it */
	assert_lookup(m, 0x1850, "inside");
	perfmap__destroy(m);
}

static char *million_lines(size_t *ret_len)
{
	size_t cap = (size_t)64 << 20, len = 0;
	char *text = malloc(cap);
	int i;

	assert_non_null(text);
	/* Written out of order, as a JIT reusing memory would. */
	for (i = 999999; i >= 0; i--)
		len += (size_t)snprintf(text + len, cap - len, "%x 10 py::f%d:/m%d.py\n",
					0x100000 + i * 0x20, i, i % 97);
	*ret_len = len;
	return text;
}

static void test_a_million_lines_out_of_order_all_resolve(void **state)
{
	struct perfmap_entry e;
	char expect[64];
	size_t len;
	char *text = million_lines(&len);
	struct perfmap *m;
	int i;

	/* O(n log n), about 0.3 s: timed by tools, not here (a quadratic parse would not end). */
	assert_int_equal(perfmap__parse(text, len, &m), 0);
	assert_int_equal(perfmap__count(m), 1000000);
	assert_int_equal(perfmap__dropped(m), 0);
	for (i = 0; i < 1000000; i += 4999) {
		snprintf(expect, sizeof(expect), "py::f%d:/m%d.py", i, i % 97);
		assert_int_equal(perfmap__lookup(m, 0x100000 + (uint64_t)i * 0x20 + 0xf, &e), 0);
		assert_string_equal(e.name, expect);
		assert_int_equal(perfmap__lookup(m, 0x100000 + (uint64_t)i * 0x20 + 0x10, &e),
				 -ENOENT);
	}
	perfmap__destroy(m);
	free(text);
}

static void test_binary_junk_neither_crashes_nor_grows(void **state)
{
	size_t len = 4 << 20, i;
	uint8_t *junk = malloc(len);
	struct perfmap *m;

	srand(3);
	for (i = 0; i < len; i++)
		junk[i] = (uint8_t)rand();
	assert_int_equal(perfmap__parse((char *)junk, len, &m), 0);
	/* Random bytes almost never form "hex hex name"; none may break a lookup. */
	assert_true(perfmap__count(m) < 1000);
	for (i = 0; i < 1000; i++) {
		struct perfmap_entry e;

		if (perfmap__lookup(m, (uint64_t)rand() << 20, &e) == 0)
			assert_non_null(e.name);
	}
	perfmap__destroy(m);
	/* Embedded NULs inside an otherwise good line reject that line only. */
	memcpy(junk, "1000 10 a\0b\n2000 10 fine\n", 25);
	assert_int_equal(perfmap__parse((char *)junk, 25, &m), 0);
	assert_int_equal(perfmap__count(m), 1);
	assert_lookup(m, 0x2000, "fine");
	perfmap__destroy(m);
	free(junk);
}

static void test_overlong_line_is_skipped_and_its_neighbours_kept(void **state)
{
	size_t big = 1 << 20, len = 0;
	char *text = malloc(big + 512);
	struct perfmap *m;

	len += (size_t)sprintf(text, "1000 10 before\n2000 10 ");
	memset(text + len, 'A', big);
	len += big;
	len += (size_t)sprintf(text + len, "\n3000 10 after\n4000 10 ");
	memset(text + len, 'B', 100); /* unterminated but short: kept */
	len += 100;
	assert_int_equal(perfmap__parse(text, len, &m), 0);
	assert_int_equal(perfmap__count(m), 3);
	assert_int_equal(perfmap__dropped(m), 1);
	assert_lookup(m, 0x1000, "before");
	assert_lookup(m, 0x2000, NULL);
	assert_lookup(m, 0x3000, "after");
	perfmap__destroy(m);
	free(text);
}

/* The streaming reader must agree with the in-memory one across read boundaries. */
static void test_file_reader_matches_the_buffer_parser(void **state)
{
	char path[] = "/tmp/gp_perfmap.XXXXXX";
	struct perfmap *a, *b;
	struct perfmap_entry ea, eb;
	size_t len;
	char *text = million_lines(&len);
	int fd = mkstemp(path), i;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(perfmap__load_fd(fd, &a), 0);
	close(fd);
	unlink(path);
	assert_int_equal(perfmap__parse(text, len, &b), 0);
	assert_int_equal(perfmap__count(a), perfmap__count(b));
	for (i = 0; i < 1000000; i += 7919) {
		assert_int_equal(perfmap__lookup(a, 0x100000 + (uint64_t)i * 0x20, &ea), 0);
		assert_int_equal(perfmap__lookup(b, 0x100000 + (uint64_t)i * 0x20, &eb), 0);
		assert_string_equal(ea.name, eb.name);
	}
	perfmap__destroy(a);
	perfmap__destroy(b);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpython_lines_are_parsed_with_or_without_0x),
		cmocka_unit_test(test_malformed_lines_are_counted_not_kept),
		cmocka_unit_test(test_overlapping_ranges_resolve_to_the_latest_line),
		cmocka_unit_test(test_a_million_lines_out_of_order_all_resolve),
		cmocka_unit_test(test_binary_junk_neither_crashes_nor_grows),
		cmocka_unit_test(test_overlong_line_is_skipped_and_its_neighbours_kept),
		cmocka_unit_test(test_file_reader_matches_the_buffer_parser),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
