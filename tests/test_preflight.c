/* SPDX-License-Identifier: MIT */
/* The output checked before a run (user/session/preflight.c). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "user/session/preflight.h"

static char dir[] = "/tmp/gpuprobe-preflight.XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/sub", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/old.pb.gz", dir);
	unlink(path);
	return rmdir(dir);
}

/* A file to come in a writable directory, or one there we may replace: fine. */
static void test_a_new_or_replaceable_file_is_fine(void **state)
{
	char path[128];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/new.pb.gz", dir);
	assert_int_equal(preflight__output(path), 0);
	snprintf(path, sizeof(path), "%s/old.pb.gz", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(preflight__output(path), 0);
}

/* -o naming a directory, a device, or a missing directory: refused before the run. */
static void test_a_directory_a_device_or_no_directory_is_refused(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(preflight__output(path), -EISDIR);
	assert_int_equal(preflight__output("/dev/null"), -EINVAL);
	assert_int_equal(preflight__output("/nonexistent-gpuprobe-dir/x.pb.gz"), -ENOENT);
}

/* A filesystem with less free than wanted: -ENOSPC, said; nothing wanted: fine. */
static void test_a_full_filesystem_is_refused(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/x.pb.gz", dir);
	assert_int_equal(preflight__output_space(path, dir, UINT64_MAX), -ENOSPC);
	assert_int_equal(preflight__output_space(path, dir, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_new_or_replaceable_file_is_fine),
		cmocka_unit_test(test_a_directory_a_device_or_no_directory_is_refused),
		cmocka_unit_test(test_a_full_filesystem_is_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
