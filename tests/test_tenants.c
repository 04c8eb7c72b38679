/* SPDX-License-Identifier: MIT */
/*
 * The bounded calls' cost per tenant (user/util/tenants.c): a tenant is
 * refused at TENANT_STUCK_MAX stuck workers and again let in when one is
 * gone; refused while its slow calls owe TENANT_SLOW_BUDGET_NS, let in again
 * as time pays the debt back; quick calls cost nothing; one tenant's costs
 * are not another's; a full table forgets only tenants it has nothing to
 * remember of; a process whose cgroup cannot be read is no tenant of its own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "user/util/tenants.h"

static struct tenants ts;

static void test_stuck_workers_refuse_their_tenant_until_one_is_gone(void **state)
{
	(void)state;
	tenants__init(&ts);
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

static void test_slow_calls_owe_a_debt_that_time_pays_back(void **state)
{
	const __u64 s = 1000000000ull, t0 = 100 * s;

	(void)state;
	tenants__init(&ts);
	for (int i = 0; i < 100000; i++)
		tenants__took(&ts, 5, TENANT_SLOW_NS - 1, t0);
	assert_false(tenants__refuses(&ts, 5, t0));
	tenants__took(&ts, 5, TENANT_SLOW_BUDGET_NS - TENANT_SLOW_NS, t0);
	assert_false(tenants__refuses(&ts, 5, t0));
	tenants__took(&ts, 6, TENANT_SLOW_NS, t0);
	tenants__took(&ts, 5, TENANT_SLOW_NS, t0);
	assert_true(tenants__refuses(&ts, 5, t0));
	assert_false(tenants__refuses(&ts, 6, t0));
	/* A stuck worker come and gone changes nothing of the debt. */
	tenants__stuck(&ts, 5, 1);
	tenants__stuck(&ts, 5, -1);
	assert_true(tenants__refuses(&ts, 5, t0));
	/* Paid back at a tenth of the time: 1 ns of debt per 10 ns. */
	assert_true(tenants__refuses(&ts, 5, t0 + 9));
	assert_false(tenants__refuses(&ts, 5, t0 + TENANT_SLOW_REFILL));
	assert_int_equal(tenants__refused(&ts, t0), 1);
	assert_int_equal(tenants__refused(&ts, t0 + s), 0);
	/* Slow again after a while: the debt is what was left, plus the call. */
	tenants__took(&ts, 5, TENANT_SLOW_NS, t0 + 20 * TENANT_SLOW_NS);
	assert_false(tenants__refuses(&ts, 5, t0 + 20 * TENANT_SLOW_NS));
	tenants__took(&ts, 5, TENANT_SLOW_NS, t0 + 20 * TENANT_SLOW_NS);
	assert_true(tenants__refuses(&ts, 5, t0 + 20 * TENANT_SLOW_NS));
}

/* Past TENANTS_MAX, new tenants take the places of those with nothing to remember. */
static void test_a_full_table_keeps_the_tenants_it_refuses(void **state)
{
	(void)state;
	tenants__init(&ts);
	tenants__took(&ts, 1, TENANT_SLOW_BUDGET_NS, 1000);
	for (unsigned i = 0; i < TENANT_STUCK_MAX; i++)
		assert_true(tenants__stuck(&ts, 2, 1));
	/* Each with a debt it has not paid: all remembered until the table is full. */
	for (__u64 id = 100; id < 100 + 4 * TENANTS_MAX; id++)
		tenants__took(&ts, id, TENANT_SLOW_NS, 1000);
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
	assert_int_equal(tenant__of(child), tenant__of(getpid()));
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_true(tenant__of(getpid()) != 0);
	/* Unreadable (gone): one tenant for all, not one each. */
	assert_int_equal(tenant__of(-5), TENANT_UNKNOWN);
	assert_int_equal(tenant__of(-6), TENANT_UNKNOWN);
	assert_true(tenant__of(getpid()) != TENANT_UNKNOWN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stuck_workers_refuse_their_tenant_until_one_is_gone),
		cmocka_unit_test(test_slow_calls_owe_a_debt_that_time_pays_back),
		cmocka_unit_test(test_a_full_table_keeps_the_tenants_it_refuses),
		cmocka_unit_test(test_processes_of_one_cgroup_are_one_tenant),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
