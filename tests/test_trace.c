/* SPDX-License-Identifier: MIT */
/* The timeline writer (user/output/trace.c): its JSON, its names, its bounds. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "user/output/trace.h"

static char dir[] = "/tmp/gpuprobe-trace.XXXXXX";
static char path[160];

/* Names a hostile process could choose: quotes, backslashes, control and non-ASCII bytes. */
static const char *activity(void *ctx, __u32 id)
{
	(void)ctx;
	return id == 1 ? "k\"ernel\\\x01\xff" : "_Z6kernelv";
}

static const char *api(void *ctx, __u32 probe)
{
	(void)ctx;
	(void)probe;
	return "cuLaunchKernel";
}

static __u32 frames(void *ctx, __u32 stack, const char **names, __u32 max)
{
	static const char *f[] = { "leaf", "middle", "root" };

	(void)ctx;
	if (stack != 7 || max < 3)
		return 0;
	memcpy(names, f, sizeof(f));
	return 3;
}

static const char *process(void *ctx, __u32 pid)
{
	(void)ctx;
	return pid == 42 ? "py\"thon" : NULL;
}

static const struct trace_names names = { .activity = activity, .api = api, .frames = frames,
					  .process = process };

static char *slurp(const char *p)
{
	FILE *f = fopen(p, "r");
	char *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/t.json", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return rmdir(dir);
}

/* A launch under its stack (root outermost, then the call), its kernel on its GPU track, an arrow between. */
static void test_a_launch_its_stack_its_kernel_and_the_arrow(void **state)
{
	struct trace *t;
	char *j, *root, *mid, *leaf, *call;

	(void)state;
	assert_int_equal(trace__new(&t), 0);
	trace__launch(t, 42, 43, 1000000, 1005000, 7, 1, 99);
	trace__activity(t, 42, 1010000, 1012500, 2, 0, 13, 99, true);
	trace__activity(t, 42, 1020000, 1021000, 2, 0, 13, 99, true);
	assert_int_equal(trace__write(t, path, &names), 0);
	j = slurp(path);
	root = strstr(j, "\"name\":\"root\"");
	mid = strstr(j, "\"name\":\"middle\"");
	leaf = strstr(j, "\"name\":\"leaf\"");
	call = strstr(j, "\"name\":\"cuLaunchKernel\"");
	assert_true(root && mid && leaf && call && root < mid && mid < leaf && leaf < call);
	assert_non_null(strstr(j, "\"ts\":0,\"dur\":5,\"name\":\"root\""));
	/* ts 0 is the first event, on CLOCK_MONOTONIC (the clock of the probes and the records). */
	assert_non_null(strstr(j, "\"clock\":\"CLOCK_MONOTONIC\",\"base_ns\":1000000,"));
	/* Demangled, 10 us after the launch began, 2.5 us long, on the process's GPU. */
	assert_non_null(strstr(j, "\"pid\":1073741866,\"tid\":13,\"ts\":10,\"dur\":2.5,\"name\":\"kernel()\""));
	/* An arrow a kernel: one id at both ends, from the call's thread at its start. */
	assert_non_null(strstr(j, "{\"ph\":\"s\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":1,\"pid\":42,\"tid\":43,\"ts\":0}"));
	assert_non_null(strstr(j, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":1,\"pid\":1073741866,\"tid\":13,\"ts\":10}"));
	/* A graph launch: one call, a second kernel, an arrow of its own. */
	assert_non_null(strstr(j, "\"id\":2,\"pid\":42,\"tid\":43,\"ts\":0}"));
	assert_non_null(strstr(j, "\"id\":2,\"pid\":1073741866,\"tid\":13,\"ts\":20}"));
	assert_non_null(strstr(j, "\"name\":\"process_name\",\"pid\":42,\"args\":{\"name\":\"py\\\"thon\"}"));
	assert_non_null(strstr(j, "\"name\":\"GPU of py\\\"thon (pid 42)\""));
	assert_non_null(strstr(j, "\"name\":\"device 0 stream 13\""));
	free(j);
	trace__destroy(t);
}

/* Every byte a process chose is escaped: the file stays JSON, and ASCII. */
static void test_hostile_names_are_escaped(void **state)
{
	struct trace *t;
	char *j;

	(void)state;
	assert_int_equal(trace__new(&t), 0);
	trace__activity(t, 5, 10, 20, 1, 0, 1, 3, false);
	assert_int_equal(trace__write(t, path, &names), 0);
	j = slurp(path);
	assert_non_null(strstr(j, "\"name\":\"k\\\"ernel\\\\\\u0001\\u00ff\""));
	for (const unsigned char *p = (const unsigned char *)j; *p; p++)
		assert_true(*p == '\n' || (*p >= 0x20 && *p < 0x7f));
	/* Not joined: no arrow, and it says so. */
	assert_null(strstr(j, "\"ph\":\"f\""));
	assert_non_null(strstr(j, "\"launch\":\"unknown\""));
	free(j);
	trace__destroy(t);
}

/* ns as the old printing wrote it ("12.345" us), read back as a viewer reads it. */
static double decimal_us(__u64 ns)
{
	char buf[40];

	snprintf(buf, sizeof(buf), "%llu.%03llu", (unsigned long long)(ns / 1000),
		 (unsigned long long)(ns % 1000));
	return strtod(buf, NULL);
}

/*
 * Kernels back to back on a stream: each ends, in a viewer's double
 * arithmetic, exactly where the next begins, both as written (ts + dur)
 * and after speedscope takes the first ts from every other, never a
 * fraction after it (speedscope would leave it open to the track's end);
 * each time within half a ns of the true one.
 */
static void test_back_to_back_slices_stay_nested(void **state)
{
	enum { N = 2000 };
	__u64 at = 1000000, base = at, seed = 12345, naive_over = 0, want[N];
	double ts[N], dur[N];
	struct trace *t;
	size_t n = 0;
	char *j, *p;

	(void)state;
	assert_int_equal(trace__new(&t), 0);
	trace__launch(t, 42, 43, at, at + 1, 7, 1, 99);
	for (int i = 0; i < N; i += 2) {
		__u64 len = 1 + (seed = seed * 6364136223846793005ull + 1442695040888963407ull) % 100000;

		at += (seed >> 40) % 1000000000ull; /* up to a second, so the times grow large */
		want[i] = at;
		trace__activity(t, 42, at, at + len, 2, 0, 13, 100 + i, true);
		at += len;
		want[i + 1] = at; /* the next kernel starts where this one ends */
		trace__activity(t, 42, at, at + 1000, 2, 0, 13, 100 + i, true);
		at += 1000;
	}
	assert_int_equal(trace__write(t, path, &names), 0);
	j = slurp(path);
	for (p = j; (p = strstr(p, "\"cat\":\"gpu\"")) && n < N; p++) {
		char *q = strstr(p, "\"ts\":"), *r = strstr(p, "\"dur\":");

		assert_true(q && r);
		ts[n] = strtod(q + 5, NULL);
		dur[n++] = strtod(r + 6, NULL);
	}
	assert_int_equal(n, N);
	for (size_t i = 0; i + 1 < n; i += 2) {
		double d_old = decimal_us(want[i + 1] - want[i]);

		assert_true(ts[i] + dur[i] == ts[i + 1]);
		assert_true((ts[i] - ts[0]) + dur[i] == ts[i + 1] - ts[0]);
		assert_true(fabs(ts[i] * 1000 - (double)(want[i] - base)) <= 0.5);
		assert_true(fabs(ts[i + 1] * 1000 - (double)(want[i + 1] - base)) <= 0.5);
		/* the old printing, for comparison: some of these ended past the next start */
		naive_over += decimal_us(want[i] - base) + d_old > decimal_us(want[i + 1] - base) ||
			      (decimal_us(want[i] - base) - decimal_us(want[0] - base)) + d_old >
				      decimal_us(want[i + 1] - base) - decimal_us(want[0] - base);
	}
	assert_true(naive_over > 0);
	free(j);
	trace__destroy(t);
}

/*
 * Kernels that overlap on one stream (programmatic dependent launch): the
 * one that begins inside another and ends after it goes on the stream's
 * second track, named so; one nested whole in another, or on another
 * stream, stays.
 */
static void test_overlapping_kernels_take_a_second_track(void **state)
{
	struct trace *t;
	char *j;

	(void)state;
	assert_int_equal(trace__new(&t), 0);
	trace__activity(t, 42, 10000, 20000, 2, 0, 13, 1, false);
	trace__activity(t, 42, 15000, 25000, 3, 0, 13, 2, false); /* overlaps the first */
	trace__activity(t, 42, 30000, 40000, 2, 0, 13, 3, false);
	trace__activity(t, 42, 32000, 35000, 3, 0, 13, 4, false); /* inside the third */
	trace__activity(t, 42, 15000, 25000, 3, 0, 14, 5, false); /* another stream */
	assert_int_equal(trace__write(t, path, &names), 0);
	j = slurp(path);
	assert_non_null(strstr(j, "\"name\":\"device 0 stream 13 (overlapping)\""));
	assert_non_null(strstr(j, "\"tid\":2147483661,\"ts\":5,\"dur\":10"));
	assert_non_null(strstr(j, "\"tid\":13,\"ts\":0,\"dur\":10"));
	assert_non_null(strstr(j, "\"tid\":13,\"ts\":22,\"dur\":3"));
	assert_non_null(strstr(j, "\"tid\":14,\"ts\":5,\"dur\":10"));
	assert_null(strstr(j, "stream 14 (overlapping)"));
	free(j);
	trace__destroy(t);
}

/* Past its bounds the trace keeps nothing more and counts what it did not keep. */
static void test_bounded(void **state)
{
	struct trace_stats st;
	struct trace *t;
	char *j;

	(void)state;
	assert_int_equal(trace__new(&t), 0);
	for (__u32 i = 0; i < TRACE_MAX_LAUNCHES + 5; i++)
		trace__launch(t, 1, 1, i, i + 1, 0, 1, i);
	for (__u32 i = 0; i < TRACE_MAX_ACTIVITIES + 3; i++)
		trace__activity(t, 1, i, i + 1, 2, 0, 1, i, true);
	trace__stats(t, &st);
	/* The activity of a call not kept: no arrow from nowhere, and it says why. */
	assert_int_equal(trace__write(t, path, &names), 0);
	j = slurp(path);
	assert_non_null(strstr(j, "\"correlation\":20000,\"device\":0,\"stream\":1,\"launch\":\"not kept\"}"));
	assert_non_null(strstr(j, "\"correlation\":19999,\"device\":0,\"stream\":1}}"));
	free(j);
	assert_int_equal(st.launches, TRACE_MAX_LAUNCHES);
	assert_int_equal(st.launches_dropped, 5);
	assert_int_equal(st.activities, TRACE_MAX_ACTIVITIES);
	assert_int_equal(st.activities_dropped, 3);
	trace__destroy(t);
}

/* A file that cannot be written: an error, and nothing left behind, nor the old file harmed. */
static void test_written_whole_or_not_at_all(void **state)
{
	char bad[200], *j;
	struct trace *t;
	FILE *f;

	(void)state;
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("old", f);
	fclose(f);
	assert_int_equal(trace__new(&t), 0);
	snprintf(bad, sizeof(bad), "%s/no/such/dir/t.json", dir);
	assert_int_equal(trace__write(t, bad, &names), -ENOENT);
	j = slurp(path);
	assert_string_equal(j, "old");
	free(j);
	trace__destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_launch_its_stack_its_kernel_and_the_arrow),
		cmocka_unit_test(test_hostile_names_are_escaped),
		cmocka_unit_test(test_back_to_back_slices_stay_nested),
		cmocka_unit_test(test_overlapping_kernels_take_a_second_track),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_written_whole_or_not_at_all),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
