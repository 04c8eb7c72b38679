/* SPDX-License-Identifier: MIT */
/*
 * The bounded calls' cost per tenant (user/util/tenants.c, user/proc/tenant.c): a tenant is
 * refused at TENANT_STUCK_MAX stuck workers and again let in when one is
 * gone; refused while its calls owe its budget, let in again as time pays
 * the debt back; every call counts, short ones add up; one tenant's costs
 * are not another's; a full table forgets only tenants it has nothing to
 * remember of; a process whose cgroup cannot be read is no tenant of its own;
 * cgroups a user makes in a cgroup delegated to it make no more tenants,
 * in a cgroup2 hierarchy or a v1 one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "user/proc/proc_internal.h"
#include "user/util/tenants.h"

#include "tests/skip.h"

static struct tenants ts;

static void test_stuck_workers_refuse_their_tenant_until_one_is_gone(void **state)
{
	(void)state;
	tenants__init(&ts, TENANT_BUDGET_NS);
	for (unsigned i = 0; i + 1 < TENANT_STUCK_MAX; i++)
		tenants__stuck(&ts, 7, 1);
	assert_false(tenants__refuses(&ts, 7, 0));
	assert_int_equal(tenants__refused(&ts, 0), 0);
	tenants__stuck(&ts, 7, 1);
	assert_true(tenants__refuses(&ts, 7, 0));
	assert_false(tenants__refuses(&ts, 8, 0));
	assert_int_equal(tenants__refused(&ts, 0), 1);
	tenants__stuck(&ts, 7, -1);
	assert_false(tenants__refuses(&ts, 7, 0));
	assert_int_equal(tenants__refused(&ts, 0), 0);
	tenants__stuck(&ts, 9, -1); /* unknown: nothing */
	assert_false(tenants__refuses(&ts, 9, 0));
}

static void test_calls_owe_a_debt_that_time_pays_back(void **state)
{
	const __u64 s = 1000000000ull, ms = 1000000ull, t0 = 100 * s;

	(void)state;
	tenants__init(&ts, TENANT_BUDGET_NS);
	tenants__took(&ts, 5, TENANT_BUDGET_NS - 1, t0);
	assert_false(tenants__refuses(&ts, 5, t0));
	tenants__took(&ts, 6, 1, t0);
	tenants__took(&ts, 5, 1, t0); /* 1 ns more: the budget owed */
	assert_true(tenants__refuses(&ts, 5, t0));
	assert_false(tenants__refuses(&ts, 6, t0));
	/* A stuck worker come and gone changes nothing of the debt. */
	tenants__stuck(&ts, 5, 1);
	tenants__stuck(&ts, 5, -1);
	assert_true(tenants__refuses(&ts, 5, t0));
	/* Paid back at a tenth of the time: 1 ns of debt per 10 ns. */
	assert_true(tenants__refuses(&ts, 5, t0 + 9));
	assert_false(tenants__refuses(&ts, 5, t0 + TENANT_REFILL));
	assert_int_equal(tenants__refused(&ts, t0), 1);
	assert_int_equal(tenants__refused(&ts, t0 + s), 0);
	/* Again after a while: the debt is what was left, plus the call. */
	tenants__took(&ts, 5, 10 * ms, t0 + 200 * ms);
	assert_false(tenants__refuses(&ts, 5, t0 + 200 * ms));
	tenants__took(&ts, 5, 10 * ms, t0 + 200 * ms);
	assert_true(tenants__refuses(&ts, 5, t0 + 200 * ms));
}

/*
 * Every call counts, however short (a process could answer each just under
 * any threshold): short ones add up to the budget, and the tenant is
 * refused; time pays a tenth back.
 */
static void test_short_calls_add_up(void **state)
{
	const __u64 ms = 1000000, budget = 30 * ms;
	__u64 now = 1000 * ms;
	unsigned calls = 0;

	(void)state;
	tenants__init(&ts, budget);
	while (!tenants__refuses(&ts, 9, now) && calls < 1000) {
		now += ms;
		tenants__took(&ts, 9, ms, now); /* 1 ms of each 1 ms: a tenth paid back */
		calls++;
	}
	/* 30 ms owed after 34 calls of 1 ms (0.9 ms each net) */
	assert_int_equal(calls, 34);
	assert_false(tenants__refuses(&ts, 10, now));
	/* Paid back slower (a test's): 300 ms later, still owed. */
	tenants__set_refill(&ts, 10000);
	tenants__took(&ts, 10, budget + ms, now);
	assert_true(tenants__refuses(&ts, 10, now + 300 * ms));
	assert_false(tenants__refuses(&ts, 10, now + (budget + ms) * 10000)); /* 310 s */
}

/* Past TENANTS_MAX, new tenants take the places of those with nothing to remember. */
static void test_a_full_table_keeps_the_tenants_it_refuses(void **state)
{
	(void)state;
	tenants__init(&ts, TENANT_BUDGET_NS);
	tenants__took(&ts, 1, TENANT_BUDGET_NS, 1000);
	for (unsigned i = 0; i < TENANT_STUCK_MAX; i++)
		assert_true(tenants__stuck(&ts, 2, 1));
	/* Each with a debt it has not paid: all remembered until the table is full. */
	for (__u64 id = 100; id < 100 + 4 * TENANTS_MAX; id++)
		tenants__took(&ts, id, 1, 1000);
	assert_true(tenants__refuses(&ts, 1, 1000));
	assert_true(tenants__refuses(&ts, 2, 1000));
	/* Full of tenants each remembered for a reason: a new stuck worker is not counted. */
	assert_false(tenants__stuck(&ts, 99999, 1));
	tenants__stuck(&ts, 2, -1);
	assert_false(tenants__refuses(&ts, 2, 1000));
}

/* Two processes of one cgroup are one tenant; a tenant is never 0. */
static void test_processes_of_one_cgroup_are_one_tenant(void **state)
{
	pid_t child = fork();

	(void)state;
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	assert_int_equal(proc__tenant(child), proc__tenant(getpid()));
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_true(proc__tenant(getpid()) != 0);
	/* Unreadable (gone): one tenant for all, not one each. */
	assert_int_equal(proc__tenant(-5), TENANT_UNKNOWN);
	assert_int_equal(proc__tenant(-6), TENANT_UNKNOWN);
	assert_true(proc__tenant(getpid()) != TENANT_UNKNOWN);
}

/* A child that waits for a signal, moved into cgroup dir (a cgroup2 directory); -1 when it cannot be. */
static pid_t child_in(const char *dir)
{
	char procs[4200];
	pid_t child = fork();
	FILE *f;

	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	f = fopen(procs, "we");
	if (!f || fprintf(f, "%d\n", (int)child) < 0 || fclose(f)) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return -1;
	}
	return child;
}

/*
 * A user to whom a cgroup is delegated (it owns it, as systemd's
 * user@.service) makes cgroups below it: its processes there are still one
 * tenant, not one per cgroup made. Root-owned siblings stay two.
 */
static void test_cgroups_made_in_a_delegated_cgroup_are_its_tenant(void **state)
{
	static const char *dirs[] = { "", "/deleg", "/deleg/a", "/deleg/a/deeper", "/deleg/b", "/r1", "/r2" };
	enum { N = sizeof(dirs) / sizeof(dirs[0]) };
	char mnt[4096], base[4200], dir[N][4300];
	pid_t kids[4] = { -1, -1, -1, -1 };
	__u64 t[4] = { 0 };
	const int at[4] = { 3, 4, 5, 6 }; /* deeper, b, r1, r2 */
	bool moved = true;

	(void)state;
	if (geteuid() != 0)
		SKIP_BECAUSE("making and delegating cgroups needs root");
	if (proc__cgroup2_mount(mnt, sizeof(mnt)))
		SKIP_BECAUSE("no cgroup2 hierarchy mounted");
	snprintf(base, sizeof(base), "%s/gp-tenants-%d", mnt, (int)getpid());
	for (int i = 0; i < N; i++) {
		snprintf(dir[i], sizeof(dir[i]), "%s%s", base, dirs[i]);
		if (mkdir(dir[i], 0755)) {
			while (--i >= 0)
				rmdir(dir[i]);
			SKIP_BECAUSE("the cgroup2 hierarchy is not writable here");
		}
		if (!strncmp(dirs[i], "/deleg", 6))
			assert_int_equal(chown(dir[i], 4242, 4242), 0);
	}
	for (int k = 0; k < 4; k++) {
		kids[k] = child_in(dir[at[k]]);
		moved = moved && kids[k] > 0;
	}
	for (int k = 0; moved && k < 4; k++)
		t[k] = proc__tenant(kids[k]);
	for (int k = 0; k < 4; k++)
		if (kids[k] > 0) {
			kill(kids[k], SIGKILL);
			waitpid(kids[k], NULL, 0);
		}
	for (int i = N - 1; i >= 0; i--)
		while (rmdir(dir[i]) && errno == EBUSY)
			sched_yield(); /* a killed child leaves its cgroup a moment after it is reaped */
	if (!moved)
		SKIP_BECAUSE("processes cannot be moved in this cgroup2 hierarchy");
	/* deeper and b: cgroups the user made in its delegated one: one tenant */
	assert_int_equal(t[0], t[1]);
	/* root's r1 and r2: two, and neither the user's */
	assert_true(t[2] != t[3]);
	assert_true(t[0] != t[2]);
	assert_true(t[0] != proc__tenant(getpid()));
}

/*
 * The same with cgroup v1 alone: cgroups a user made below one it owns in a
 * v1 hierarchy are its one tenant, root's siblings two, in the lines of a
 * cgroup file as the kernel writes them. The hierarchy is a named one of
 * the test's own, mounted for it; a hierarchy the loader has not mounted
 * keeps its lines whole.
 */
static void test_v1_cgroups_made_in_a_delegated_cgroup_are_its_tenant(void **state)
{
	static const char *dirs[] = { "/deleg", "/deleg/a", "/deleg/a/deeper", "/deleg/b", "/r1", "/r2" };
	enum { N = sizeof(dirs) / sizeof(dirs[0]) };
	char mnt[64], opts[64], dir[N][128] = { { 0 } }, text[4][256];
	__u64 t[4], other[2];
	const int at[4] = { 2, 3, 4, 5 }; /* deeper, b, r1, r2 */
	int made = 0;

	(void)state;
	if (geteuid() != 0)
		SKIP_BECAUSE("mounting a cgroup v1 hierarchy needs root");
	snprintf(mnt, sizeof(mnt), "/tmp/gp-v1-%d", (int)getpid());
	snprintf(opts, sizeof(opts), "none,name=gpt%d", (int)getpid());
	if (mkdir(mnt, 0700))
		SKIP_BECAUSE("no room for a mount point in /tmp");
	if (mount("cgroup", mnt, "cgroup", 0, opts)) {
		rmdir(mnt);
		SKIP_BECAUSE("this kernel mounts no cgroup v1 hierarchy here");
	}
	for (; made < N; made++) {
		snprintf(dir[made], sizeof(dir[made]), "%s%s", mnt, dirs[made]);
		if (mkdir(dir[made], 0755))
			break;
		if (!strncmp(dirs[made], "/deleg", 6) && chown(dir[made], 4242, 4242))
			break;
	}
	for (int k = 0; made == N && k < 4; k++) {
		snprintf(text[k], sizeof(text[k]), "13:pids:/a\n12:name=gpt%d:%s\n0::/\n", (int)getpid(),
			 dirs[at[k]]);
		t[k] = proc__tenant_v1(text[k], strlen(text[k]));
	}
	for (int k = 0; made == N && k < 2; k++) {
		snprintf(text[k], sizeof(text[k]), "12:name=gpt-not-mounted:%s\n", dirs[at[k]]);
		other[k] = proc__tenant_v1(text[k], strlen(text[k]));
	}
	for (int i = N - 1; i >= 0; i--)
		rmdir(dir[i]); /* "" where not made */
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
	if (made < N)
		SKIP_BECAUSE("the test's own v1 hierarchy took no cgroups");
	/* deeper and b: cgroups the user made in its delegated one: one tenant */
	assert_int_equal(t[0], t[1]);
	/* root's r1 and r2: two, and neither the user's */
	assert_true(t[2] != t[3]);
	assert_true(t[0] != t[2]);
	/* where the loader has no such hierarchy mounted, the lines whole */
	assert_true(other[0] != other[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stuck_workers_refuse_their_tenant_until_one_is_gone),
		cmocka_unit_test(test_calls_owe_a_debt_that_time_pays_back),
		cmocka_unit_test(test_short_calls_add_up),
		cmocka_unit_test(test_a_full_table_keeps_the_tenants_it_refuses),
		cmocka_unit_test(test_processes_of_one_cgroup_are_one_tenant),
		cmocka_unit_test(test_cgroups_made_in_a_delegated_cgroup_are_its_tenant),
		cmocka_unit_test(test_v1_cgroups_made_in_a_delegated_cgroup_are_its_tenant),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
