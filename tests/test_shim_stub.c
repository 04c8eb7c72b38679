/* SPDX-License-Identifier: MIT */
/*
 * The real shim inside real programs on the stub vendor (no GPU): flushing
 * never stalls the program or CUPTI's callbacks (DESIGN.md invariant 2), and
 * a reader that attaches late and leaves early finds every record published
 * or counted, without delaying the program's exit (invariants 3, 6).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tests/skip.h"
#include "user/shm/shm_reader.h"
#include "user/util/bounded.h"

static char build[4096];

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Starts build/tests/progs/PROG with the shim injected; stderr to err_path. */
static pid_t start(const char *err_path, char *const argv[], const char *flush_ms)
{
	char prog[4200], shim[4200], lib[4200];
	pid_t pid;

	snprintf(prog, sizeof(prog), "%s/tests/progs/%s", build, argv[0]);
	snprintf(shim, sizeof(shim), "%s/libgpuprobe_shim.so", build);
	snprintf(lib, sizeof(lib), "%s/stub", build);
	pid = fork();
	if (pid == 0) {
		int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int devnull = open("/dev/null", O_WRONLY);

		dup2(fd, 2);
		dup2(devnull, 1);
		setenv("CUDA_INJECTION64_PATH", shim, 1);
		setenv("LD_LIBRARY_PATH", lib, 1);
		setenv("GPUPROBE_FLUSH_MS", flush_ms, 1);
		unsetenv("GPUPROBE_SHM_FD");
		execv(prog, argv);
		_exit(127);
	}
	return pid;
}

/* Waits up to limit_s; kills and fails on a hang. Returns the exit status. */
static int finish(pid_t pid, double limit_s)
{
	double t0 = now_s();
	int st;

	while (now_s() - t0 < limit_s) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(5000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	fail_msg("the program hung for %.0f s", limit_s);
	return -1;
}

static bool file_has(const char *path, const char *needle)
{
	char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, needle) != NULL;
}

static double run_time(char *const argv[], const char *err)
{
	double t0 = now_s();

	assert_int_equal(finish(start(err, argv, "100"), 30), 0);
	return now_s() - t0;
}

static void test_flushing_every_millisecond_never_stalls_the_program(void **state)
{
	char err[] = "/tmp/gpuprobe-shimstub-XXXXXX";
	char *argv[] = { "launcher", "-t", "8", "-n", "100", NULL };
	int fd = mkstemp(err);
	double t0, bare;
	pid_t pid;

	assert_true(fd >= 0);
	close(fd);
	bare = run_time(argv, err); /* flushing every 100 ms */
	t0 = now_s();
	pid = start(err, argv, "1");
	/* The stub reports a flush it cannot finish after 10 s. */
	assert_int_equal(finish(pid, 30), 0);
	/*
	 * Against the same program flushing 100 times less often, seconds
	 * apart: twice as long and 2 s more only fails a program the flushes
	 * held, not a loaded machine or a slow sanitizer.
	 */
	assert_true(now_s() - t0 < 2 * bare + 2);
	assert_false(file_has(err, "stub cupti:"));
	assert_false(file_has(err, "gpuprobe-shim:"));
	unlink(err);
}

/*
 * PC sampling on, its collector running every millisecond beside eight
 * launching threads and the program's module unloads (each collecting when
 * the collector is idle), recording with no reader: the program ends, and
 * (under ThreadSanitizer) no race is reported between the callbacks and
 * the collector.
 */
static void test_pc_sampling_beside_flushes_every_millisecond_completes(void **state)
{
	char err[] = "/tmp/gpuprobe-shimstub-XXXXXX";
	char *argv[] = { "launcher", "-t", "8", "-n", "100", NULL };
	int fd = mkstemp(err);
	pid_t pid;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	setenv("GPUPROBE_PC_SAMPLING", "0", 1);
	setenv("GPUPROBE_RECORD", "always", 1);
	pid = start(err, argv, "1");
	/* the child has them: unset before anything can fail, or the next cases would inherit them */
	unsetenv("GPUPROBE_PC_SAMPLING");
	unsetenv("GPUPROBE_RECORD");
	assert_int_equal(finish(pid, 30), 0);
	assert_false(file_has(err, "stub cupti:"));
	assert_false(file_has(err, "gpuprobe-shim:"));
	assert_false(file_has(err, "ThreadSanitizer"));
	unlink(err);
}

static pid_t find_child_ready(struct bounded *b, pid_t pid, const char *err)
{
	double t0 = now_s();

	(void)err;
	/* The ring exists once the shim initialised inside cuInit: 30 s only fails a broken start. */
	while (now_s() - t0 < 30) {
		struct shm_reader *r;

		if (shm_reader__open_pid(b, pid, &r) == 0) {
			shm_reader__destroy(r);
			return pid;
		}
		usleep(5000);
	}
	return -1;
}

/*
 * A multi-threaded program with lazy loads inside its launches; a reader
 * attaches late, reads a while and leaves before the program ends. The
 * program runs a few times longer than the reader needs (about 1.5 s here):
 * what is asserted holds whenever the reader comes and goes.
 */
static void test_a_late_reader_that_leaves_early_loses_nothing_uncounted(void **state)
{
	char err[] = "/tmp/gpuprobe-shimstub-XXXXXX";
	char *argv[] = { "launcher", "-t", "4", "-n", "60000", NULL };
	__u64 ctr[GP_CTR_MAX];
	static struct gp_record recs[4096];
	struct shm_reader_stats st;
	struct shm_reader *r;
	struct bounded *b;
	size_t n, got = 0;
	int fd = mkstemp(err);
	double t0, bare;
	pid_t pid;

	if (geteuid() != 0)
		SKIP_BECAUSE("opening map_files needs root (CAP_SYS_ADMIN)");
	b = bounded__new();
	assert_non_null(b);
	assert_true(fd >= 0);
	close(fd);
	bare = run_time(argv, err); /* the same program, no reader */
	t0 = now_s();
	pid = start(err, argv, "100");
	assert_int_equal(find_child_ready(b, pid, err), pid);
	usleep(200000); /* attach late: records are likely waiting (nothing below depends on it) */
	assert_int_equal(shm_reader__open_pid(b, pid, &r), 0);
	/* Read a while: until a thousand records came (30 s only fails a stuck program). */
	for (double until = now_s() + 30; got <= 1000 && now_s() < until;) {
		assert_int_equal(shm_reader__read(r, recs, 4096, &n), 0);
		got += n;
	}
	/* Everything published by now is readable, or was counted as dropped. */
	shm_reader__counters(r, ctr);
	do {
		assert_int_equal(shm_reader__read(r, recs, 4096, &n), 0);
		got += n;
	} while (n);
	shm_reader__stats(r, &st);
	assert_true(got > 1000);
	assert_true(got + ctr[GP_CTR_RING_DROPPED] >= ctr[GP_CTR_RECORDS_WRITTEN]);
	assert_int_equal(st.records_bad, 0);
	shm_reader__destroy(r); /* leave early: the program runs on */
	bounded__free(b);
	assert_int_equal(finish(pid, 30), 0);
	/*
	 * A wait on the departed reader would show against the bare run; twice
	 * as long and 2 s more only fails a program held by it, not a loaded
	 * machine (the two runs are seconds apart).
	 */
	assert_true(now_s() - t0 < 2 * bare + 2);
	assert_false(file_has(err, "gpuprobe-shim:"));
	unlink(err);
}

static int count_lines(const char *path, const char *needle)
{
	char line[4096];
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

static void test_another_cupti_subscriber_makes_the_shim_inert_in_one_line(void **state)
{
	char err[] = "/tmp/gpuprobe-shimstub-XXXXXX";
	char *argv[] = { "subscriber", NULL };
	int fd = mkstemp(err);

	assert_true(fd >= 0);
	close(fd);
	/* The program keeps its CUPTI session and runs to the end. */
	assert_int_equal(finish(start(err, argv, "10"), 20), 0);
	assert_int_equal(count_lines(err, "gpuprobe-shim:"), 1);
	assert_true(file_has(err, "profiling off, the program runs on"));
	unlink(err);
}

int main(void)
{
	const char *b = getenv("GP_BUILD");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flushing_every_millisecond_never_stalls_the_program),
		cmocka_unit_test(test_pc_sampling_beside_flushes_every_millisecond_completes),
		cmocka_unit_test(test_a_late_reader_that_leaves_early_loses_nothing_uncounted),
		cmocka_unit_test(test_another_cupti_subscriber_makes_the_shim_inert_in_one_line),
	};

	snprintf(build, sizeof(build), "%s", b ? b : "build");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
