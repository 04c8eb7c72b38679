/* SPDX-License-Identifier: MIT */
/*
 * The cubin CRC engine (user/cubin/crc.c) over the real gpuprobe-crc
 * helper and the stub CUPTI (CRC-32C): a cubin that kills the helper (the
 * stub's "open a file" cubin, which its seccomp filter punishes) is lost
 * alone; the next cubin gets CUPTI's CRC from a new helper, not the
 * fallback, until the restarts run out.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user/cubin/crc.h"
#include "tests/crc32c_ref.h"

static char cupti[4096];

static int setup(void **state)
{
	const char *b = getenv("GP_BUILD");

	(void)state;
	snprintf(cupti, sizeof(cupti), "%s/stub/libcupti.so", b ? b : "build");
	signal(SIGPIPE, SIG_IGN); /* as the loader */
	return 0;
}

static void test_a_cubin_that_kills_the_helper_is_lost_alone(void **state)
{
	unsigned char bad[64] = "GPUPROBE-T-OPEN", good[256];
	struct crc_engine *e;
	int lost_alone = 0;
	__u64 crc;

	(void)state;
	crc_engine__new(cupti, &e);
	assert_non_null(e);
	if (!crc_engine__is_cupti(e))
		fail_msg("no CRC helper (build/gpuprobe-crc and %s): %d", cupti, crc_engine__why_not(e));
	memset(good, 0x3c, sizeof(good));
	for (int round = 0; round < 3; round++) {
		assert_int_not_equal(crc_engine__fn(e, bad, sizeof(bad), &crc), 0);
		assert_int_equal(crc_engine__fn(e, good, sizeof(good), &crc), 0);
		/* CUPTI's CRC from a new helper, not the fallback's */
		assert_int_equal(crc & GP_CRC_FALLBACK_BIT, 0);
		assert_int_equal(crc, crc32c_ref(good, sizeof(good)));
		lost_alone++;
	}
	assert_int_equal(crc_engine__helper_lost(e), 3);
	assert_int_equal(lost_alone, 3);
	crc_engine__destroy(e);
}

/* A process sending such cubins without end gets the helper restarted a bounded number of times. */
static void test_restarts_are_bounded_then_the_fallback(void **state)
{
	unsigned char bad[64] = "GPUPROBE-T-OPEN", good[256];
	struct crc_engine *e;
	__u64 crc;
	int i;

	(void)state;
	crc_engine__new(cupti, &e);
	assert_non_null(e);
	memset(good, 0x5a, sizeof(good));
	for (i = 0; i < 100 && crc_engine__fn(e, bad, sizeof(bad), &crc) != 0; i++)
		;
	assert_true(i <= 9); /* the first helper and 8 restarts */
	assert_int_equal(crc_engine__fn(e, good, sizeof(good), &crc), 0);
	assert_int_not_equal(crc & GP_CRC_FALLBACK_BIT, 0);
	crc_engine__destroy(e);
}

/*
 * A process whose cubin cost a helper sends the next ones to the fallback,
 * never to a helper again: it can cost the run one helper, not all 8, and
 * another process's cubins still get CUPTI's CRC.
 */
static void test_a_source_that_cost_a_helper_costs_no_other(void **state)
{
	unsigned char bad[64] = "GPUPROBE-T-OPEN", good[256];
	struct crc_engine *e;
	struct crc_source a, b;
	__u64 crc;

	(void)state;
	crc_engine__new(cupti, &e);
	assert_non_null(e);
	if (!crc_engine__is_cupti(e))
		fail_msg("no CRC helper (build/gpuprobe-crc and %s): %d", cupti, crc_engine__why_not(e));
	a = (struct crc_source){ .e = e };
	b = (struct crc_source){ .e = e };
	memset(good, 0x7e, sizeof(good));
	assert_int_not_equal(crc_source__fn(&a, bad, sizeof(bad), &crc), 0);
	for (int i = 0; i < 20; i++) { /* its bad cubins again: the fallback, no helper lost */
		assert_int_equal(crc_source__fn(&a, bad, sizeof(bad), &crc), 0);
		assert_int_not_equal(crc & GP_CRC_FALLBACK_BIT, 0);
	}
	assert_int_equal(crc_source__fn(&a, good, sizeof(good), &crc), 0);
	assert_int_not_equal(crc & GP_CRC_FALLBACK_BIT, 0);
	assert_int_equal(crc_source__fn(&b, good, sizeof(good), &crc), 0);
	assert_int_equal(crc, crc32c_ref(good, sizeof(good))); /* CUPTI's, from a new helper */
	assert_int_equal(crc_engine__helper_lost(e), 1);
	assert_int_equal(crc_engine__sources_blamed(e), 1);
	crc_engine__destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_cubin_that_kills_the_helper_is_lost_alone),
		cmocka_unit_test(test_restarts_are_bounded_then_the_fallback),
		cmocka_unit_test(test_a_source_that_cost_a_helper_costs_no_other),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
