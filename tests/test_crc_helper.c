/* SPDX-License-Identifier: MIT */
/*
 * gpuprobe-crc, the sandboxed helper that hands cubins to CUPTI (here the
 * stub's cuptiGetCubinCrc, CRC-32C): it computes what CUPTI computes, runs
 * without privileges under seccomp, and a cubin that makes CUPTI open a file
 * or spin costs the helper, never the loader.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <dirent.h>
#include "user/cubin/crc_helper.h"
#include "tests/crc32c_ref.h"

static char helper[4096], cupti[4096];

static int setup(void **state)
{
	const char *b = getenv("GP_BUILD");

	(void)state;
	snprintf(helper, sizeof(helper), "%s/gpuprobe-crc", b ? b : "build");
	snprintf(cupti, sizeof(cupti), "%s/stub/libcupti.so", b ? b : "build");
	return 0;
}

/* The value of "Field:" in /proc/pid/status. */
static long status_field(pid_t pid, const char *field)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			v = strtol(line + strlen(field), NULL, 10);
	fclose(f);
	return v;
}

static void test_the_helper_gives_cuptis_crc_for_each_cubin(void **state)
{
	struct crc_helper *h;
	unsigned char buf[100000];
	__u64 crc;

	(void)state;
	assert_int_equal(crc_helper__start(helper, cupti, &h), 0);
	for (size_t n = 1; n <= sizeof(buf); n = n * 7 + 3) {
		for (size_t i = 0; i < n; i++)
			buf[i] = (unsigned char)(i * 31 + n);
		assert_int_equal(crc_helper__compute(h, buf, n, &crc), 0);
		assert_int_equal(crc, crc32c_ref(buf, n));
	}
	crc_helper__stop(h);
}

/*
 * Cubins many times the request pipe (their pages are handed to the pipe,
 * not copied): each answer is the CRC of what the buffer held during its
 * call, though the buffer is rewritten at once for the next.
 */
static void test_large_cubins_pass_whole_and_as_they_were(void **state)
{
	size_t max = 5u << 20;
	unsigned char *buf = malloc(max);
	struct crc_helper *h;
	__u64 crc;

	(void)state;
	assert_non_null(buf);
	assert_int_equal(crc_helper__start(helper, cupti, &h), 0);
	for (size_t n = 2u << 20; n <= max; n = n * 2 + (1u << 20)) {
		for (unsigned round = 0; round < 2; round++) {
			memset(buf, (int)(n >> 20) + (int)round * 101, n);
			buf[n / 2] ^= 0x5a;
			assert_int_equal(crc_helper__compute(h, buf, n, &crc), 0);
			assert_int_equal(crc, crc32c_ref(buf, n));
		}
	}
	crc_helper__stop(h);
	free(buf);
}

/*
 * A cubin over the helper's limit (1 GiB) is refused before a byte is sent:
 * the helper, which would end on it, answers the next cubin as before. The
 * bytes are an untouched mapping: nothing is read.
 */
static void test_a_cubin_over_the_helpers_limit_is_refused_and_the_helper_stays(void **state)
{
	size_t big = CRC_HELPER_MAX_CUBIN + 4096;
	unsigned char small[4096];
	struct crc_helper *h;
	void *p;
	__u64 crc;

	(void)state;
	signal(SIGPIPE, SIG_IGN); /* as the loader: a helper gone is -EPIPE */
	p = mmap(NULL, big, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(crc_helper__start(helper, cupti, &h), 0);
	assert_int_equal(crc_helper__compute(h, p, big, &crc), -EFBIG);
	memset(small, 0x5a, sizeof(small));
	assert_int_equal(crc_helper__compute(h, small, sizeof(small), &crc), 0);
	assert_int_equal(crc, crc32c_ref(small, sizeof(small)));
	crc_helper__stop(h);
	munmap(p, big);
}

static void test_the_helper_runs_without_privileges_under_seccomp(void **state)
{
	struct crc_helper *h;

	(void)state;
	assert_int_equal(crc_helper__start(helper, cupti, &h), 0);
	assert_int_equal(status_field(crc_helper__pid(h), "Seccomp:"), 2);
	assert_int_equal(status_field(crc_helper__pid(h), "NoNewPrivs:"), 1);
	if (geteuid() == 0) /* root hands it nobody's ids */
		assert_int_equal(status_field(crc_helper__pid(h), "Uid:"), 65534);
	else
		assert_int_equal(status_field(crc_helper__pid(h), "Uid:"), (long)getuid());
	crc_helper__stop(h);
}

/*
 * A thread libcupti's constructor started before the sandbox went in (the
 * stub's, on request) is under the same seccomp filter and no_new_privs as
 * the thread that took it: every thread's status says so.
 */
static void test_the_sandbox_covers_threads_libcupti_started(void **state)
{
	char path[64], status[96];
	struct crc_helper *h;
	struct dirent *de;
	int threads = 0, err;
	DIR *d;

	(void)state;
	setenv("GPUPROBE_STUB_CTOR_THREAD", "1", 1);
	err = crc_helper__start(helper, cupti, &h);
	unsetenv("GPUPROBE_STUB_CTOR_THREAD"); /* before a failure ends the case: the next have none */
	assert_int_equal(err, 0);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)crc_helper__pid(h));
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d))) {
		char line[256];
		long seccomp = -1, nnp = -1;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(status, sizeof(status), "%s/%s/status", path, de->d_name);
		f = fopen(status, "r");
		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "Seccomp:", 8))
				seccomp = strtol(line + 8, NULL, 10);
			else if (!strncmp(line, "NoNewPrivs:", 11))
				nnp = strtol(line + 11, NULL, 10);
		}
		fclose(f);
		if (seccomp != 2 || nnp != 1)
			fail_msg("thread %s of the helper: Seccomp %ld, NoNewPrivs %ld", de->d_name,
				 seccomp, nnp);
		threads++;
	}
	closedir(d);
	assert_true(threads >= 2); /* ours and the constructor's (and a sanitizer's own) */
	crc_helper__stop(h);
}

static void test_a_cubin_that_makes_cupti_open_a_file_kills_only_the_helper(void **state)
{
	unsigned char bad[64] = "GPUPROBE-T-OPEN";
	struct crc_helper *h;
	__u64 crc;

	(void)state;
	assert_int_equal(crc_helper__start(helper, cupti, &h), 0);
	assert_int_equal(crc_helper__compute(h, bad, sizeof(bad), &crc), -EPIPE);
	crc_helper__stop(h);
}

/*
 * Sleeping and reading the time are not what the sandbox stops: a library's
 * threads poll so (and ThreadSanitizer's own thread sleeps, in the tsan
 * build), and the helper they ran in answers the next cubin.
 */
static void test_a_cubin_that_makes_cupti_wait_is_answered(void **state)
{
	unsigned char wait[64] = "GPUPROBE-T-WAIT";
	struct crc_helper *h;
	__u64 crc;

	(void)state;
	assert_int_equal(crc_helper__start(helper, cupti, &h), 0);
	assert_int_equal(crc_helper__compute(h, wait, sizeof(wait), &crc), 0);
	assert_int_equal(crc, crc32c_ref(wait, sizeof(wait)));
	assert_int_equal(crc_helper__compute(h, wait, 16, &crc), 0);
	crc_helper__stop(h);
}

static void test_a_cubin_that_makes_cupti_spin_times_out(void **state)
{
	unsigned char bad[64] = "GPUPROBE-T-SPIN";
	struct crc_helper *h;
	struct timespec a, b;
	__u64 crc;

	(void)state;
	assert_int_equal(crc_helper__start(helper, cupti, &h), 0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(crc_helper__compute(h, bad, sizeof(bad), &crc), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(b.tv_sec - a.tv_sec < 30);
	crc_helper__stop(h); /* kills and reaps it */
}

static void test_no_cupti_is_a_start_error_not_a_hang(void **state)
{
	struct crc_helper *h = NULL;

	(void)state;
	assert_int_not_equal(crc_helper__start(helper, "/nonexistent/libcupti.so", &h), 0);
	assert_null(h);
	assert_int_not_equal(crc_helper__start("/nonexistent/gpuprobe-crc", cupti, &h), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_helper_gives_cuptis_crc_for_each_cubin),
		cmocka_unit_test(test_large_cubins_pass_whole_and_as_they_were),
		cmocka_unit_test(test_a_cubin_over_the_helpers_limit_is_refused_and_the_helper_stays),
		cmocka_unit_test(test_the_helper_runs_without_privileges_under_seccomp),
		cmocka_unit_test(test_the_sandbox_covers_threads_libcupti_started),
		cmocka_unit_test(test_a_cubin_that_makes_cupti_open_a_file_kills_only_the_helper),
		cmocka_unit_test(test_a_cubin_that_makes_cupti_wait_is_answered),
		cmocka_unit_test(test_a_cubin_that_makes_cupti_spin_times_out),
		cmocka_unit_test(test_no_cupti_is_a_start_error_not_a_hang),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
