/* SPDX-License-Identifier: MIT */
/* Option parsing (user/cli.c): every bad input is a one-line usage error. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include "user/cli.h"

static int parse(struct gp_opts *o, char *err, ...)
{
	static char *argv[32] = { "gpuprobe-bpf" }; /* o->argv points here */
	int argc = 1;
	va_list ap;

	va_start(ap, err);
	for (char *a; argc < 31 && (a = va_arg(ap, char *));)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	return cli__parse(argc, argv, o, err, 256);
}

static void test_a_command_after_double_dash_keeps_its_own_flags(void **state)
{
	struct gp_opts o;
	char err[256];

	assert_int_equal(parse(&o, err, "-o", "x.pb.gz", "--", "python3", "-v", "t.py", NULL), 0);
	assert_int_equal(o.mode, GP_MODE_COMMAND);
	assert_string_equal(o.argv[0], "python3");
	assert_string_equal(o.argv[1], "-v");
	assert_string_equal(o.output, "x.pb.gz");
	assert_false(o.verbose);
}

static void test_defaults_are_sane(void **state)
{
	struct gp_opts o;
	char err[256];

	assert_int_equal(parse(&o, err, "--pid", "42", NULL), 0);
	assert_int_equal(o.pid, 42);
	assert_string_equal(o.output, "gpuprobe.pb.gz");
	assert_int_equal(o.ringbuf_mb, 16);
	assert_int_equal(o.tick_ms, 100);
	assert_true(o.duration_s == 0);
	assert_int_equal(o.stack_cache, 16384);
	assert_int_equal(o.stack_audit, 64);
	assert_int_equal(o.stack_young, 2);
	assert_int_equal(parse(&o, err, "--pid", "42", "--stack-cache", "0", "--stack-audit", "1",
			       "--stack-young", "0", NULL), 0);
	assert_int_equal(o.stack_cache, 0);
	assert_int_equal(o.stack_audit, 1);
	assert_int_equal(o.stack_young, 0);
}

/*
 * The duty cycle: exact by default, except node-wide continuous mode; a
 * fraction as 0.1 or 10%; windows of at least 1 s, never longer than the
 * period (--interval, else -d, else 60 s).
 */
static void test_the_duty_cycle_defaults_and_bounds(void **state)
{
	struct gp_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, err, "--pid", "42", NULL), 0);
	assert_true(o.duty == 1.0 && o.window_s == 1.0);
	assert_true(cli__duty_period(&o) == GP_DUTY_PERIOD_S);
	assert_int_equal(parse(&o, err, "--all-cgroups", NULL), 0);
	assert_true(o.duty == 1.0);
	assert_int_equal(parse(&o, err, "--all-cgroups", "--interval", "30", NULL), 0);
	assert_true(o.duty == GP_DUTY_DEFAULT_ALL && cli__duty_period(&o) == 30);
	/* Too short an interval for a window of the default share: exact, not an error. */
	assert_int_equal(parse(&o, err, "--all-cgroups", "--interval", "0.5", NULL), 0);
	assert_true(o.duty == 1.0);
	assert_int_equal(parse(&o, err, "--duty", "1", "--all-cgroups", "--interval", "30", NULL), 0);
	assert_true(o.duty == 1.0);
	assert_int_equal(parse(&o, err, "--duty", "25%", "-d", "20", "--window", "2", "--pid", "1",
			       NULL), 0);
	assert_true(o.duty == 0.25 && o.window_s == 2 && cli__duty_period(&o) == 20);
	assert_int_equal(parse(&o, err, "--duty", "0", "--pid", "1", NULL), -EINVAL);
	assert_non_null(strstr(err, "--duty: '0'"));
	assert_int_equal(parse(&o, err, "--duty", "1.5", "--pid", "1", NULL), -EINVAL);
	assert_int_equal(parse(&o, err, "--duty", "10%x", "--pid", "1", NULL), -EINVAL);
	assert_int_equal(parse(&o, err, "--window", "0.5", "--pid", "1", NULL), -EINVAL);
	assert_non_null(strstr(err, "at least 1"));
	/* The tests' hook lowers the least window, never below 50 ms. */
	setenv("GPUPROBE_TEST_MIN_WINDOW", "0.1", 1);
	assert_int_equal(parse(&o, err, "--duty", "0.5", "--window", "0.2", "--pid", "1", NULL), 0);
	assert_true(o.window_s == 0.2);
	assert_int_equal(parse(&o, err, "--window", "0.05", "--pid", "1", NULL), -EINVAL);
	setenv("GPUPROBE_TEST_MIN_WINDOW", "0.01", 1);
	assert_int_equal(parse(&o, err, "--window", "0.5", "--pid", "1", NULL), -EINVAL);
	unsetenv("GPUPROBE_TEST_MIN_WINDOW");
	assert_int_equal(parse(&o, err, "--duty", "0.5", "--window", "20", "-d", "10", "--pid", "1",
			       NULL), -EINVAL);
	assert_non_null(strstr(err, "longer than the duty cycle's period"));
}

/* --trace: one timeline at the end, never over the profile, never empty. */
static void test_pc_sampling_period(void **state)
{
	struct gp_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, err, "--pid", "1", NULL), 0);
	assert_int_equal(o.pc_sampling, -1);
	assert_int_equal(parse(&o, err, "--pc-sampling", "--pid", "1", NULL), 0);
	assert_int_equal(o.pc_sampling, GP_PC_PERIOD_DEFAULT);
	assert_int_equal(GP_PC_PERIOD_DEFAULT, 17); /* the measured default (docs/BENCHMARKS.md) */
	assert_int_equal(parse(&o, err, "--pc-sampling=12", "--pid", "1", NULL), 0);
	assert_int_equal(o.pc_sampling, 12);
	assert_int_equal(parse(&o, err, "--pc-sampling=4", "--pid", "1", NULL), -EINVAL);
	assert_non_null(strstr(err, "not in 5..31"));
	assert_int_equal(parse(&o, err, "--pc-sampling=32", "--pid", "1", NULL), -EINVAL);
}

static void test_trace(void **state)
{
	struct gp_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse(&o, err, "--trace", "t.json", "--pid", "1", NULL), 0);
	assert_string_equal(o.trace, "t.json");
	assert_int_equal(parse(&o, err, "--pid", "1", NULL), 0);
	assert_null(o.trace);
	assert_int_equal(parse(&o, err, "--trace", "t.json", "--interval", "10", "--pid", "1", NULL), -EINVAL);
	assert_non_null(strstr(err, "not with --interval"));
	assert_int_equal(parse(&o, err, "--trace", "x.pb.gz", "-o", "x.pb.gz", "--pid", "1", NULL), -EINVAL);
	assert_non_null(strstr(err, "the same file"));
	assert_int_equal(parse(&o, err, "--trace", "", "--pid", "1", NULL), -EINVAL);
}

static void test_bad_numbers_are_usage_errors(void **state)
{
	const char *bad[][2] = {
		{ "--pid", "abc" }, { "--pid", "-5" }, { "--pid", "0" }, { "--pid", "99999999999" },
		{ "-d", "0" }, { "-d", "-1" }, { "-d", "nan" }, { "-d", "5x" }, { "--ringbuf-mb", "3" },
		{ "--tick-ms", "1" }, { "--interval", "inf" }, { "--stack-cache", "-1" },
		{ "--stack-cache", "999999999" }, { "--stack-cache", "1k" }, { "--stack-audit", "x" },
		{ "--stack-audit", "-64" }, { "--stack-young", "17" }, { "--stack-young", "-1" },
		{ "--mounts-of", "1" }, { "--mounts-of", "x" }, { "--mounts-of", "-3" },
	};
	struct gp_opts o;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(&o, err, "--all-cgroups", bad[i][0], bad[i][1], NULL), -EINVAL);
		assert_true(strlen(err) > 0);
		assert_null(strchr(err, '\n'));
	}
}

/* --mounts-of takes a pid other than 1 (PID 1's table is read anyway). */
static void test_mounts_of_takes_a_pid(void **state)
{
	struct gp_opts o;
	char err[256];

	assert_int_equal(parse(&o, err, "--all-cgroups", NULL), 0);
	assert_int_equal(o.mounts_of, 0);
	assert_int_equal(parse(&o, err, "--all-cgroups", "--mounts-of", "4242", NULL), 0);
	assert_int_equal(o.mounts_of, 4242);
}

static void test_targets_are_exclusive_and_required(void **state)
{
	struct gp_opts o;
	char err[256];

	assert_int_equal(parse(&o, err, "--pid", "1", "--all-cgroups", NULL), -EINVAL);
	assert_non_null(strstr(err, "choose one target"));
	assert_int_equal(parse(&o, err, "--pid", "1", "--", "true", NULL), -EINVAL);
	assert_int_equal(parse(&o, err, NULL), -EINVAL);
	assert_non_null(strstr(err, "no target"));
	assert_int_equal(parse(&o, err, "--", NULL), -EINVAL);
	assert_int_equal(parse(&o, err, "--bogus", NULL), -EINVAL);
	assert_int_equal(parse(&o, err, "--all-cgroups", "stray", NULL), -EINVAL);
	assert_int_equal(parse(&o, err, "-o", NULL), -EINVAL);
}

static void test_help_needs_no_target(void **state)
{
	struct gp_opts o;
	char err[256];

	assert_int_equal(parse(&o, err, "--help", NULL), 0);
	assert_true(o.help);
}

static void test_version_needs_no_target(void **state)
{
	struct gp_opts o;
	char err[256];

	assert_int_equal(parse(&o, err, "--version", NULL), 0);
	assert_true(o.version);
	assert_false(o.help);
	assert_int_equal(parse(&o, err, "-V", NULL), 0);
	assert_true(o.version);
	assert_int_equal(parse(&o, err, "--pid", "1", NULL), 0);
	assert_false(o.version);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_command_after_double_dash_keeps_its_own_flags),
		cmocka_unit_test(test_defaults_are_sane),
		cmocka_unit_test(test_the_duty_cycle_defaults_and_bounds),
		cmocka_unit_test(test_pc_sampling_period),
		cmocka_unit_test(test_trace),
		cmocka_unit_test(test_bad_numbers_are_usage_errors),
		cmocka_unit_test(test_mounts_of_takes_a_pid),
		cmocka_unit_test(test_targets_are_exclusive_and_required),
		cmocka_unit_test(test_help_needs_no_target),
		cmocka_unit_test(test_version_needs_no_target),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
