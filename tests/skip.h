/* SPDX-License-Identifier: MIT */
/*
 * A cmocka case that cannot run here says why, then skips: the runner
 * (tools/run-tests.sh) counts it skipped, with this reason, never passed.
 * On a machine that can run every test (root, BPF: CI's) make check fails
 * on any skip, so a reason is only ever something such a machine lacks.
 */
#ifndef GP_TESTS_SKIP_H
#define GP_TESTS_SKIP_H

#define SKIP_BECAUSE(...)                                                  \
	do {                                                               \
		print_message("[  SKIP    ] %s: ", __func__);              \
		print_message(__VA_ARGS__);                                \
		print_message("\n");                                       \
		skip();                                                    \
	} while (0)

#endif
