/* SPDX-License-Identifier: MIT */
/* Per-thread stack copy sizes (user/probe/copy_hint.c), without the BPF map. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/probe/copy_hint.h"

#define KIB 1024u

/*
 * A thread starts at the initial size; 511 launches needing 10 KiB keep it,
 * the 512th shrinks it to twice their deepest (rounded to 4 KiB), 16 KiB at
 * least;
 * a copy that ended short (need = twice the copy) grows it at once, and a
 * walk close to the size grows it by a quarter. Threads are apart.
 */
static void test_sizes_shrink_after_a_run_and_grow_at_once(void **state)
{
	struct copy_hints h;

	assert_int_equal(copy_hints__init(&h, NULL, 256 * KIB), 0);
	for (int i = 0; i < 511; i++)
		assert_int_equal(copy_hints__observe(&h, 7, 10 * KIB), 256 * KIB);
	assert_int_equal(copy_hints__observe(&h, 7, 10 * KIB), 20 * KIB);
	assert_int_equal(h.shrunk, 1);
	assert_int_equal(copy_hints__observe(&h, 8, 10 * KIB), 256 * KIB); /* another thread */
	assert_int_equal(copy_hints__observe(&h, 7, 0), 20 * KIB);          /* no copy: nothing learnt */
	assert_int_equal(copy_hints__observe(&h, 7, 32 * KIB), 40 * KIB);   /* ended short */
	assert_int_equal(copy_hints__observe(&h, 7, 36 * KIB), 48 * KIB);   /* close to the end */
	assert_int_equal(h.grown, 2);
	for (int i = 0; i < 512; i++)
		copy_hints__observe(&h, 7, 30 * KIB); /* more than half of 48: no shrink */
	assert_int_equal(copy_hints__observe(&h, 7, 30 * KIB), 48 * KIB);
	assert_int_equal(copy_hints__observe(&h, 7, 1024 * KIB), 256 * KIB); /* the bound */
	/* Shallow launches shrink it no lower than the floor. */
	for (int i = 0; i < 512; i++)
		copy_hints__observe(&h, 9, 2 * KIB);
	assert_int_equal(copy_hints__observe(&h, 9, 2 * KIB), 16 * KIB);
	copy_hints__fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes_shrink_after_a_run_and_grow_at_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
