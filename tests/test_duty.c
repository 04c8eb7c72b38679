/* SPDX-License-Identifier: MIT */
/* The duty cycle's windows (user/session/duty.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/session/duty.h"

#define S 1000000000ull
#define STEP (10 * 1000000ull)

/* Time on in [from, to), sampled every STEP; and the on/off switches. */
static __u64 time_on(struct duty *d, __u64 from, __u64 to, unsigned *ret_switches)
{
	bool was = false;
	__u64 on = 0;

	*ret_switches = 0;
	for (__u64 t = from; t < to; t += STEP) {
		bool now = duty__on(d, t);

		on += now ? STEP : 0;
		*ret_switches += now != was;
		was = now;
	}
	return on;
}

/* 10% of 60 s periods in 1 s windows: 6 s a period, six windows, none shorter than 1 s. */
static void test_windows_take_the_fraction_asked(void **state)
{
	struct duty d;
	unsigned switches;

	(void)state;
	duty__init(&d, 0.1, 1 * S, 60 * S, 5 * S, 42);
	for (unsigned p = 0; p < 5; p++) {
		__u64 on = time_on(&d, 5 * S + p * 60 * S, 5 * S + (p + 1) * 60 * S, &switches);

		assert_int_equal(on, 6 * S);
		assert_int_equal(d.nr, 6);
		for (unsigned i = 0; i < d.nr; i++) {
			assert_true(d.to[i] - d.from[i] >= 1 * S);
			assert_true(i == 0 || d.from[i] >= d.to[i - 1]);
			assert_true(d.from[i] >= d.period_start && d.to[i] <= d.period_start + 60 * S);
		}
	}
	assert_true(duty__fraction(&d) > 0.0999 && duty__fraction(&d) < 0.1001);
}

/*
 * Random, not periodic: a workload whose period equals the duty period
 * still finds its phase in a window in some periods and not in others.
 */
static void test_windows_move_between_periods(void **state)
{
	struct duty d;
	unsigned in = 0, out = 0;

	(void)state;
	duty__init(&d, 0.1, 1 * S, 10 * S, 0, 7);
	for (unsigned p = 0; p < 200; p++) {
		if (duty__on(&d, p * 10 * S + 3 * S))
			in++;
		else
			out++;
	}
	assert_true(in > 5 && out > 100);
}

/* A fraction below one window a period: one window of the window's length, said by duty__fraction. */
static void test_a_fraction_below_one_window_gets_one_window(void **state)
{
	struct duty d;
	unsigned switches;

	(void)state;
	duty__init(&d, 0.01, 1 * S, 10 * S, 0, 3);
	assert_int_equal(time_on(&d, 0, 10 * S, &switches), 1 * S);
	assert_true(duty__fraction(&d) > 0.0999 && duty__fraction(&d) < 0.1001);
}

/* A fraction of 1: always on, whatever the window. */
static void test_a_full_duty_is_always_on(void **state)
{
	struct duty d;
	unsigned switches;

	(void)state;
	duty__init(&d, 1.0, 1 * S, 10 * S, 0, 3);
	assert_int_equal(time_on(&d, 0, 35 * S, &switches), 35 * S);
	assert_int_equal(switches, 1);
}

/* A tick that comes periods late (a stalled loader) plans the period it falls in. */
static void test_a_late_tick_plans_its_own_period(void **state)
{
	struct duty d;

	(void)state;
	duty__init(&d, 0.5, 1 * S, 10 * S, 0, 9);
	duty__on(&d, 95 * S + 1);
	assert_int_equal(d.period_start, 90 * S);
	for (unsigned i = 0; i < d.nr; i++)
		assert_true(d.from[i] >= 90 * S && d.to[i] <= 100 * S);
}

/*
 * A target found not recording at three openings is waited for no more
 * (once: said when it happens), and again only after 32 openings in a row
 * found recording; one opening not recording among them starts the count
 * again.
 */
static void test_a_target_that_spoils_windows_is_waited_for_no_more(void **state)
{
	struct duty_wait w = { 0 };

	(void)state;
	assert_true(duty_wait__waited(&w));
	assert_false(duty_wait__note(&w, false));
	assert_false(duty_wait__note(&w, true)); /* strikes need not be in a row */
	assert_false(duty_wait__note(&w, false));
	assert_true(duty_wait__waited(&w));
	assert_true(duty_wait__note(&w, false));
	assert_false(duty_wait__waited(&w));
	for (int i = 0; i < DUTY_EARN_BACK - 1; i++)
		assert_false(duty_wait__note(&w, true));
	assert_false(duty_wait__note(&w, false)); /* not in a row: from the start */
	assert_false(duty_wait__waited(&w));
	for (int i = 0; i < DUTY_EARN_BACK - 1; i++) {
		assert_false(duty_wait__note(&w, true));
		assert_false(duty_wait__waited(&w));
	}
	assert_false(duty_wait__note(&w, true));
	assert_true(duty_wait__waited(&w));
	/* earned back: three strikes again to lose it again, and said again */
	assert_false(duty_wait__note(&w, false));
	assert_false(duty_wait__note(&w, false));
	assert_true(duty_wait__waited(&w));
	assert_true(duty_wait__note(&w, false));
	assert_false(duty_wait__waited(&w));
	/* never recording: stays unwaited, said no more */
	for (int i = 0; i < 1000; i++)
		assert_false(duty_wait__note(&w, false));
	assert_false(duty_wait__waited(&w));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_windows_take_the_fraction_asked),
		cmocka_unit_test(test_windows_move_between_periods),
		cmocka_unit_test(test_a_fraction_below_one_window_gets_one_window),
		cmocka_unit_test(test_a_full_duty_is_always_on),
		cmocka_unit_test(test_a_late_tick_plans_its_own_period),
		cmocka_unit_test(test_a_target_that_spoils_windows_is_waited_for_no_more),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
