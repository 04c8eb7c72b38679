/* SPDX-License-Identifier: MIT */
/*
 * Bounded calls (user/util/bounded.c): a call runs in a worker process and
 * answers with its job and an fd; one that blocks (here: opening a FIFO no
 * one writes, as a FUSE daemon that never answers would hold a walk) is
 * given up at its deadline, its process refused at once afterwards, the
 * worker killed and reaped; a worker that dies costs its call only, and it
 * holds none of the caller's fds. Each test has its own struct bounded (its
 * *state); two are as independent as two loaders would be.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "user/proc/proc.h"
#include "user/util/bounded.h"
#include "user/util/clock.h"
#include "user/util/tenants.h"

struct job {
	int ran;
	int value;
	int probe_fd;      /* an fd number of the caller's, looked at in the worker */
	int probe_errno;
	char path[256];
};

static void add_one(void *p, int in_fd, int *ret_fd)
{
	struct job *j = p;

	j->ran = 1;
	j->value++;
	if (in_fd >= 0 && write(in_fd, "x", 1) != 1)
		j->value = -1;
	*ret_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void open_fifo(void *p, int in_fd, int *ret_fd)
{
	struct job *j = p;

	j->ran = 1;
	*ret_fd = open(j->path, O_RDONLY | O_CLOEXEC); /* no writer: blocks */
}

static void die_now(void *p, int in_fd, int *ret_fd)
{
	_exit(3);
}

static void look_at_fd(void *p, int in_fd, int *ret_fd)
{
	struct job *j = p;

	j->ran = 1;
	j->probe_errno = fcntl(j->probe_fd, F_GETFD) < 0 ? errno : 0;
}

/* A process for calls to be "about": it waits to be killed. */
static pid_t victim__start(void)
{
	pid_t victim = fork();

	assert_true(victim >= 0);
	if (victim == 0) {
		/* Gone with the test, even one that fails before it kills it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	return victim;
}

static void victim__stop(pid_t victim)
{
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
}

/* A FIFO no one writes at j->path, in a directory of its own (dir). */
static void fifo__make(char *dir, struct job *j)
{
	assert_non_null(mkdtemp(dir));
	snprintf(j->path, sizeof(j->path), "%s/fifo", dir);
	assert_int_equal(mkfifo(j->path, 0600), 0);
}

static void fifo__remove(const char *dir, const struct job *j)
{
	unlink(j->path);
	rmdir(dir);
}

static void test_a_call_answered_in_time_gives_its_job_and_fd_back(void **state)
{
	struct bounded *b = *state;
	struct job j = { .value = 41 };
	struct stat st;
	char c;
	int p[2], fd = -1;

	assert_int_equal(pipe(p), 0);
	assert_int_equal(bounded__call(b, 0, add_one, &j, sizeof(j), p[1], &fd), 0);
	assert_int_equal(j.ran, 1);
	assert_int_equal(j.value, 42);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	close(fd);
	assert_int_equal(read(p[0], &c, 1), 1); /* the worker wrote through its copy */
	close(p[0]);
	close(p[1]);
}

static void test_a_call_that_blocks_is_given_up_and_its_process_refused_after(void **state)
{
	struct bounded *b = *state;
	char dir[] = "/tmp/gp-bounded-XXXXXX";
	struct bounded_stats before, after;
	struct job j = { 0 };
	uint64_t t0, elapsed;
	pid_t victim;
	int fd = -1;

	fifo__make(dir, &j);
	victim = victim__start(); /* the process the call is "about" */
	bounded__stats(b, &before);
	t0 = clock_ns(CLOCK_MONOTONIC);
	assert_int_equal(bounded__call(b, victim, open_fifo, &j, sizeof(j), -1, &fd), -ETIMEDOUT);
	elapsed = clock_ns(CLOCK_MONOTONIC) - t0;
	assert_true(elapsed < 10ull * 1000000000);
	assert_int_equal(j.ran, 0); /* nothing came back */
	assert_int_equal(fd, -1);
	/* That process again: refused at once, without running. */
	assert_int_equal(bounded__call(b, victim, add_one, &j, sizeof(j), -1, &fd), -EDEADLK);
	assert_int_equal(j.ran, 0);
	/* Another: a fresh worker. */
	assert_int_equal(bounded__call(b, 0, add_one, &j, sizeof(j), -1, &fd), 0);
	assert_int_equal(j.ran, 1);
	close(fd);
	bounded__stats(b, &after);
	assert_int_equal(after.timeouts, before.timeouts + 1);
	assert_int_equal(after.refused, before.refused + 1);
	/* The stuck worker was killed (a FIFO open dies of it): reaped, not stuck any more. */
	for (int i = 0; i < 1000 && after.stuck; i++) {
		usleep(10000);
		bounded__stats(b, &after);
	}
	assert_int_equal(after.stuck, 0);
	victim__stop(victim);
	fifo__remove(dir, &j);
}

/*
 * What one struct bounded learnt is its own: a process that stalled a call
 * through one is refused by it, not by another, which runs the same call
 * in its own worker and counts nothing it did not do.
 */
static void test_a_process_stalled_in_one_bounded_is_not_refused_by_another(void **state)
{
	struct bounded *b = *state, *other = bounded__new();
	char dir[] = "/tmp/gp-bounded-XXXXXX";
	struct bounded_stats st;
	struct job j = { 0 };
	pid_t victim;
	int fd = -1;

	assert_non_null(other);
	fifo__make(dir, &j);
	victim = victim__start();
	assert_int_equal(bounded__call(b, victim, open_fifo, &j, sizeof(j), -1, &fd), -ETIMEDOUT);
	assert_int_equal(bounded__call(b, victim, add_one, &j, sizeof(j), -1, &fd), -EDEADLK);
	assert_int_equal(j.ran, 0);
	/* The other one has never seen it stall: the call runs. */
	assert_int_equal(bounded__call(other, victim, add_one, &j, sizeof(j), -1, &fd), 0);
	assert_int_equal(j.ran, 1);
	close(fd);
	bounded__stats(other, &st);
	assert_int_equal(st.calls, 1);
	assert_int_equal(st.timeouts, 0);
	assert_int_equal(st.refused, 0);
	assert_int_equal(st.stuck, 0);
	bounded__stats(b, &st);
	assert_int_equal(st.calls, 2);
	assert_int_equal(st.timeouts, 1);
	assert_int_equal(st.refused, 1);
	/* Still refused where it stalled. */
	j.ran = 0;
	assert_int_equal(bounded__call(b, victim, add_one, &j, sizeof(j), -1, &fd), -EDEADLK);
	assert_int_equal(j.ran, 0);
	bounded__free(other);
	victim__stop(victim);
	fifo__remove(dir, &j);
}

static void test_a_worker_that_dies_in_a_call_costs_that_call_only(void **state)
{
	struct bounded *b = *state;
	struct job j = { .value = 1 };
	int fd = -1;

	assert_int_equal(bounded__call(b, 0, die_now, &j, sizeof(j), -1, &fd), -EIO);
	assert_int_equal(bounded__call(b, 0, add_one, &j, sizeof(j), -1, &fd), 0);
	assert_int_equal(j.value, 2);
	close(fd);
}

/* A worker started while the caller held a pipe's write end keeps no copy of it. */
static void test_the_worker_holds_none_of_the_callers_fds(void **state)
{
	struct bounded *b = *state;
	struct job j = { 0 };
	int p[2], fd = -1;

	assert_int_equal(pipe(p), 0);
	/* A fresh worker next. */
	assert_int_equal(bounded__call(b, 0, die_now, &j, sizeof(j), -1, &fd), -EIO);
	j.probe_fd = p[1];
	assert_int_equal(bounded__call(b, 0, look_at_fd, &j, sizeof(j), -1, &fd), 0);
	assert_int_equal(j.ran, 1);
	assert_int_equal(j.probe_errno, EBADF);
	close(p[0]);
	close(p[1]);
}

static void sleep_ms(void *p, int in_fd, int *ret_fd)
{
	struct job *j = p;

	j->ran = 1;
	usleep((useconds_t)j->value * 1000);
}

/*
 * Calls that answer, each slowly but in time, cost their tenant (the
 * processes of one cgroup: two children of this test are one tenant)
 * from a budget: once it is spent, every process of that tenant is
 * refused, the one that was not slow too; calls about no process still
 * run. Each call takes at least 30 ms and at most the deadline, so the
 * budget is spent after TENANT_BUDGET_NS / 26 ms calls at most (time pays
 * a tenth of the debt back by default: at most 4 ms of a call of 30) and
 * TENANT_BUDGET_NS / BOUNDED_TIMEOUT_MS at least. Here time pays nothing
 * back: a refusal lasts ten times what the last call went past the budget
 * by, a fraction of a ms at times, and the checks after it (the quiet
 * process's call, the stats) came too late under TSan on two cores.
 */
static void test_a_tenant_whose_calls_are_slow_is_refused_once_its_budget_is_spent(void **state)
{
	struct bounded *b = *state;
	const unsigned most = (unsigned)(TENANT_BUDGET_NS / 26000000) + 1;
	const unsigned least = (unsigned)(TENANT_BUDGET_NS / (BOUNDED_TIMEOUT_MS * 1000000ull));
	pid_t slow = victim__start(), quiet = victim__start();
	struct bounded_stats st;
	struct job j = { 0 };
	unsigned calls = 0;
	int fd = -1, err = 0;

	bounded__set_refill(b, UINT_MAX);
	bounded__stats(b, &st);
	assert_int_equal(st.tenants_refused, 0);
	while (calls <= most) {
		j = (struct job){ .value = 30 };
		err = bounded__call(b, slow, sleep_ms, &j, sizeof(j), -1, &fd);
		if (err)
			break;
		assert_int_equal(j.ran, 1);
		calls++;
	}
	assert_int_equal(err, -EDEADLK);
	assert_true(calls >= least);
	assert_true(calls <= most);
	/* The other process of that tenant: refused, without running. */
	j = (struct job){ .value = 0 };
	assert_int_equal(bounded__call(b, quiet, add_one, &j, sizeof(j), -1, &fd), -EDEADLK);
	assert_int_equal(j.ran, 0);
	/* A call about no process runs. */
	assert_int_equal(bounded__call(b, 0, add_one, &j, sizeof(j), -1, &fd), 0);
	assert_int_equal(j.ran, 1);
	close(fd);
	bounded__stats(b, &st);
	assert_int_equal(st.tenants_refused, 1);
	assert_int_equal(st.timeouts, 0);
	victim__stop(slow);
	victim__stop(quiet);
}

/* Quick calls count, each, but 2,000 of them (well under a second) are far from the budget. */
static void test_quick_calls_cost_their_tenant_little(void **state)
{
	struct bounded *b = *state;
	pid_t victim = victim__start();
	struct bounded_stats st;
	struct job j = { 0 };
	int fd = -1;

	for (int i = 0; i < 2000; i++) {
		assert_int_equal(bounded__call(b, victim, add_one, &j, sizeof(j), -1, &fd), 0);
		close(fd);
	}
	bounded__stats(b, &st);
	assert_int_equal(st.tenants_refused, 0);
	assert_int_equal(st.refused, 0);
	victim__stop(victim);
}

/* As the loader's: each process's tenant its cgroup's. */
static int bounded_setup(void **state)
{
	*state = bounded__new();
	if (*state)
		bounded__set_tenants(*state, proc__tenant);
	return *state ? 0 : -1;
}

static int bounded_teardown(void **state)
{
	bounded__free(*state);
	return 0;
}

#define BOUNDED_TEST(fn) cmocka_unit_test_setup_teardown(fn, bounded_setup, bounded_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOUNDED_TEST(test_a_call_answered_in_time_gives_its_job_and_fd_back),
		BOUNDED_TEST(test_a_call_that_blocks_is_given_up_and_its_process_refused_after),
		BOUNDED_TEST(test_a_process_stalled_in_one_bounded_is_not_refused_by_another),
		BOUNDED_TEST(test_a_worker_that_dies_in_a_call_costs_that_call_only),
		BOUNDED_TEST(test_the_worker_holds_none_of_the_callers_fds),
		BOUNDED_TEST(test_a_tenant_whose_calls_are_slow_is_refused_once_its_budget_is_spent),
		BOUNDED_TEST(test_quick_calls_cost_their_tenant_little),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
