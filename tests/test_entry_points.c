/* SPDX-License-Identifier: MIT */
/*
 * The driver's entry points as two sides see them: the probe ids the BPF
 * program pauses between duty windows (GP_PROBE_WINDOWED, bpf/launch.h)
 * are exactly the rows of user/probe/entry_points.c that launch, copy or
 * add a graph node; the rest are the module and library loads, which stay
 * on so that a kernel first launched in a window is named.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "user/probe/entry_points.h"

static void test_the_windowed_probes_are_the_rows_that_launch_copy_or_add_nodes(void **state)
{
	unsigned windowed = 0, loads = 0;

	(void)state;
	for (__u32 p = 0; p < GP_PROBE_MAX; p++) {
		const struct entry_point *e = &entry_points[p];
		bool works = e->launch || e->copy || e->node;

		assert_non_null(e->symbol);
		if (GP_PROBE_WINDOWED(p) != works)
			fail_msg("probe %u (%s): windowed %d, but its row %s", p, e->symbol,
				 GP_PROBE_WINDOWED(p), works ? "launches, copies or adds a node" : "does neither");
		windowed += works;
		loads += !works;
	}
	assert_false(GP_PROBE_WINDOWED(GP_PROBE_MAX));
	assert_false(GP_PROBE_WINDOWED(GP_PROBE_MAX + 1));
	/* cuModuleLoad* and cuLibraryLoad*: six loads, every other row windowed. */
	assert_int_equal(loads, GP_PROBE_LIBRARY_LOAD_FROM_FILE - GP_PROBE_MODULE_LOAD + 1);
	assert_int_equal(windowed + loads, GP_PROBE_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_windowed_probes_are_the_rows_that_launch_copy_or_add_nodes),
	};

	return cmocka_run_group_tests_name("entry_points", tests, NULL, NULL);
}
