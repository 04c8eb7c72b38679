/* SPDX-License-Identifier: MIT */
/*
 * Test-only knobs read from the environment (GPUPROBE_TEST_*): a bound made
 * small so an end-to-end test can reach it. Never a user's setting.
 */
#ifndef GP_UTIL_TEST_ENV_H
#define GP_UTIL_TEST_ENV_H

#include <stddef.h>

/* The decimal byte count in variable name; 0 when unset, empty or not a number. */
size_t test_env__bytes(const char *name);

#endif
