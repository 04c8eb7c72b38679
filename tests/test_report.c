/* SPDX-License-Identifier: MIT */
/* The verdict line a person reads first (user/session/report.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "user/session/report.h"

/* The verdict for counters given as name=value pairs (NULL-ended), as a string. */
static char *verdict_of(__u64 gpu_ns, ...)
{
	static char buf[2048];
	struct counters c;
	const char *name;
	va_list ap;
	FILE *f;

	counters__init(&c);
	va_start(ap, gpu_ns);
	while ((name = va_arg(ap, const char *)))
		counters__add(&c, name, va_arg(ap, __u64));
	va_end(ap);
	memset(buf, 0, sizeof(buf));
	f = fmemopen(buf, sizeof(buf) - 1, "w");
	assert_non_null(f);
	report__verdict(&c, gpu_ns, f);
	fclose(f);
	return buf;
}

static void test_a_clean_run_says_no_losses(void **state)
{
	char *v = verdict_of(12000, "launch_events", (__u64)9, "records", (__u64)20, "joined", (__u64)5,
			     "unattributed", (__u64)0, "ring_dropped", (__u64)0, NULL);

	(void)state;
	assert_string_equal(v, "verdict: 9 launch events, 5 GPU activities, 5 joined (100.0%), "
			       "GPU time 0.012 ms in the profile written last; losses: none\n");
}

/* Each loss that moved is named; the counts that went well are not. */
static void test_each_loss_that_moved_is_named(void **state)
{
	char *v = verdict_of(2000000, "launch_events", (__u64)100, "records", (__u64)150,
			     "joined", (__u64)90, "unattributed", (__u64)10, "ring_dropped", (__u64)3,
			     "queue_full", (__u64)0, "caller_unknown", (__u64)2, NULL);

	(void)state;
	assert_non_null(strstr(v, "100 GPU activities, 90 joined (90.0%), GPU time 2.000 ms in the profile written last"));
	assert_non_null(strstr(v, "losses: ring_dropped=3 unattributed=10 caller_unknown=2\n"));
	assert_null(strstr(v, "queue_full"));
	assert_null(strstr(v, "none"));
}

/*
 * Launches made before the shim recorded, and those after a stop, are
 * not losses: the first are said with their label, the second not at all.
 */
static void test_launches_before_the_shim_recorded_are_said_not_lost(void **state)
{
	char *v = verdict_of(3000, "launch_events", (__u64)12, "joined", (__u64)7,
			     "unattributed", (__u64)0, "launches_before_recording", (__u64)5,
			     "launches_outside", (__u64)4, "activities_outside", (__u64)4, NULL);

	(void)state;
	assert_non_null(strstr(v, "losses: none; 5 launches made before the shim recorded, labelled "
				  "[no GPU record: before the shim recorded]\n"));
	assert_null(strstr(v, "_outside"));
}

/* A stuck correlation id is named a loss, and the verdict says what it is and how to avoid it. */
static void test_a_stuck_correlation_id_says_how_to_avoid_it(void **state)
{
	char *v = verdict_of(3000, "launch_events", (__u64)12, "joined", (__u64)7,
			     "unattributed", (__u64)2, "corr_reused", (__u64)40, NULL);

	(void)state;
	assert_non_null(strstr(v, "losses: unattributed=2 corr_reused=40; corr_reused: CUPTI gave "));
	assert_non_null(strstr(v, "gpuprobe-bpf -- COMMAND), without GPUPROBE_API_RECORDS=kinds, to avoid it\n"));
	v = verdict_of(3000, "launch_events", (__u64)12, "joined", (__u64)7, "unattributed", (__u64)0,
		       "corr_reused", (__u64)0, NULL);
	assert_null(strstr(v, "corr_reused"));
}

/* Nothing at all, launches without the shim, records without the probes: each says why. */
static void test_nothing_captured_says_the_likely_reason(void **state)
{
	char *v = verdict_of(0, "launch_events", (__u64)0, "records", (__u64)0, "joined", (__u64)0,
			     "unattributed", (__u64)0, NULL);

	(void)state;
	assert_non_null(strstr(v, "verdict: nothing captured: no launch and no GPU record"));
	assert_non_null(strstr(v, "--libcuda PATH"));
	v = verdict_of(0, "launch_events", (__u64)40, "records", (__u64)0, "joined", (__u64)0,
		       "unattributed", (__u64)0, NULL);
	assert_non_null(strstr(v, "verdict: 40 launch events, no GPU activity"));
	assert_non_null(strstr(v, "without the shim"));
	v = verdict_of(0, "launch_events", (__u64)0, "records", (__u64)7, "joined", (__u64)0,
		       "unattributed", (__u64)0, NULL);
	assert_non_null(strstr(v, "7 GPU records but no launch event"));
	/* Launches and the shim's records, no activity: failed or captured calls, not a missing shim. */
	v = verdict_of(0, "launch_events", (__u64)3, "records", (__u64)3, "joined", (__u64)0,
		       "unattributed", (__u64)0, "launches_without_activity", (__u64)1, NULL);
	assert_non_null(strstr(v, "verdict: 3 launch events, 3 shim records and no GPU activity"));
	assert_non_null(strstr(v, "launches_without_activity=1"));
	assert_null(strstr(v, "without the shim"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_clean_run_says_no_losses),
		cmocka_unit_test(test_each_loss_that_moved_is_named),
		cmocka_unit_test(test_launches_before_the_shim_recorded_are_said_not_lost),
		cmocka_unit_test(test_a_stuck_correlation_id_says_how_to_avoid_it),
		cmocka_unit_test(test_nothing_captured_says_the_likely_reason),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
