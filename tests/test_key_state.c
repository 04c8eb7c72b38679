/* SPDX-License-Identifier: MIT */
/*
 * The recording state of a process's stack-cache keys (user/session/
 * key_state.c): keys of one state go when the other comes, and a switch
 * unseen between two looks makes them go only when a key was learnt after
 * it. Times in ms for reading; the slack is KEY_STATE_STAMP_SLACK_NS.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/session/key_state.h"

#define MS 1000000ull

/* A process looked at once, recording since 100 ms, with a key learnt at 150 ms. */
static void learnt_recording(struct key_state *ks)
{
	*ks = (struct key_state){ 0 };
	key_state__look(ks, 100 * MS, 0, 0, true);
	key_state__note(ks, 150 * MS);
	assert_false(ks->stale);
}

static void test_keys_learnt_recording_go_when_it_stops_with_the_probes_on(void **state)
{
	struct key_state ks;

	(void)state;
	learnt_recording(&ks);
	key_state__look(&ks, 100 * MS, 200 * MS, 200 * MS, true);
	assert_true(ks.stale);
	key_state__forgot(&ks);
	assert_false(ks.stale);
	/* Recording again: nothing was learnt since they went. */
	key_state__look(&ks, 300 * MS, 0, 200 * MS, true);
	assert_false(ks.stale);
}

static void test_keys_learnt_recording_stay_between_duty_windows(void **state)
{
	struct key_state ks;

	(void)state;
	learnt_recording(&ks);
	key_state__look(&ks, 100 * MS, 200 * MS, 200 * MS, false); /* probes paused */
	assert_false(ks.stale);
	key_state__look(&ks, 300 * MS, 0, 200 * MS, true);
	assert_false(ks.stale);
	/* Stopped with the probes on (no duty window's pause): they go. */
	key_state__look(&ks, 300 * MS, 400 * MS, 400 * MS, true);
	assert_true(ks.stale);
}

static void test_a_key_learnt_not_recording_goes_when_recording_comes(void **state)
{
	struct key_state ks = { 0 };

	(void)state;
	key_state__look(&ks, UINT64_MAX, 0, 0, true); /* never on */
	key_state__note(&ks, 50 * MS);
	assert_true(ks.keys_off);
	key_state__look(&ks, 100 * MS, 0, 0, true);
	assert_true(ks.stale);
}

static void test_an_unseen_off_with_no_key_learnt_after_it_keeps_the_keys(void **state)
{
	struct key_state ks;

	(void)state;
	learnt_recording(&ks);
	/* Off at 200 ms and on again at 260 ms, both between two looks. */
	key_state__look(&ks, 260 * MS, 0, 200 * MS, true);
	assert_false(ks.stale);
}

static void test_an_unseen_off_with_a_key_learnt_after_it_makes_the_keys_go(void **state)
{
	struct key_state ks;

	(void)state;
	learnt_recording(&ks);
	key_state__note(&ks, 230 * MS); /* judged recording by the span of the last look */
	key_state__look(&ks, 260 * MS, 0, 200 * MS, false);
	assert_true(ks.stale);
}

static void test_a_key_learnt_just_before_an_unseen_off_stamp_makes_the_keys_go(void **state)
{
	struct key_state ks;

	(void)state;
	learnt_recording(&ks);
	/* The shim stamps its switch after making it: within the slack, it may have been off. */
	key_state__note(&ks, 200 * MS - KEY_STATE_STAMP_SLACK_NS / 2);
	key_state__look(&ks, 260 * MS, 0, 200 * MS, true);
	assert_true(ks.stale);
}

static void test_an_unseen_off_with_an_implausible_stamp_makes_the_keys_go(void **state)
{
	struct key_state ks;

	(void)state;
	learnt_recording(&ks);
	key_state__look(&ks, 260 * MS, 0, 50 * MS, true); /* before the span seen on */
	assert_true(ks.stale);
	learnt_recording(&ks);
	key_state__look(&ks, 260 * MS, 0, 300 * MS, true); /* after the new span's start */
	assert_true(ks.stale);
}

static void test_an_unseen_on_with_a_key_learnt_in_it_makes_the_keys_go(void **state)
{
	struct key_state ks = { 0 };

	(void)state;
	key_state__look(&ks, 100 * MS, 200 * MS, 200 * MS, true);
	key_state__note(&ks, 150 * MS); /* judged recording: its span */
	key_state__forgot(&ks);
	key_state__note(&ks, 230 * MS); /* off, learnt with no switch seen */
	assert_true(ks.keys_off);
	/* Unseen: on at 220 ms, off at 280 ms; the key was learnt in between. */
	key_state__look(&ks, 220 * MS, 280 * MS, 280 * MS, false);
	assert_true(ks.stale);
}

static void test_an_unseen_on_with_no_key_learnt_in_it_keeps_the_keys(void **state)
{
	struct key_state ks = { 0 };

	(void)state;
	key_state__look(&ks, 100 * MS, 200 * MS, 200 * MS, true);
	key_state__forgot(&ks);
	key_state__note(&ks, 205 * MS); /* off, before the unseen span */
	key_state__look(&ks, 300 * MS, 380 * MS, 380 * MS, false);
	assert_false(ks.stale);
}

static void test_keys_learnt_before_the_first_look_go_at_the_first_switch(void **state)
{
	struct key_state ks = { 0 };

	(void)state;
	key_state__note(&ks, 110 * MS);
	key_state__note(&ks, 150 * MS);
	key_state__look(&ks, 100 * MS, 0, 0, true);
	assert_false(ks.stale); /* learnt in the state the first look shows */
	assert_true(ks.keys_on);
	assert_false(ks.keys_off);
	key_state__look(&ks, 100 * MS, 200 * MS, 200 * MS, true);
	assert_true(ks.stale);
}

static void test_keys_learnt_before_a_first_look_that_sees_a_later_switch_on_go(void **state)
{
	struct key_state ks = { 0 };

	(void)state;
	/* A mid-run attach: launches at 50 and 120 ms taught keys; the shim switched on at 100 ms. */
	key_state__note(&ks, 120 * MS);
	key_state__note(&ks, 50 * MS);
	key_state__look(&ks, 100 * MS, 0, 0, true);
	assert_true(ks.stale);
}

static void test_keys_learnt_recording_before_a_first_look_that_sees_it_off_go_with_the_probes_on(void **state)
{
	struct key_state ks = { 0 };

	(void)state;
	key_state__note(&ks, 150 * MS);
	key_state__look(&ks, 100 * MS, 200 * MS, 200 * MS, false);
	assert_false(ks.stale); /* paused between duty windows: kept for the next */
	ks = (struct key_state){ 0 };
	key_state__note(&ks, 150 * MS);
	key_state__look(&ks, 100 * MS, 200 * MS, 200 * MS, true);
	assert_true(ks.stale);
	ks = (struct key_state){ 0 };
	key_state__note(&ks, 250 * MS); /* after the off: of the state it shows */
	key_state__look(&ks, 100 * MS, 200 * MS, 200 * MS, true);
	assert_false(ks.stale);
}

static void test_a_launch_made_before_the_state_seen_teaches_no_key(void **state)
{
	struct key_state ks = { 0 };

	(void)state;
	assert_true(key_state__may_learn(&ks, 10 * MS)); /* before any look: judged at it */
	key_state__look(&ks, UINT64_MAX, 0, 0, true); /* a mid-run attach: not yet on */
	assert_false(key_state__may_learn(&ks, 50 * MS));
	key_state__look(&ks, 100 * MS, 0, 0, true);
	assert_false(key_state__may_learn(&ks, 90 * MS)); /* read late, made before the switch on */
	assert_true(key_state__may_learn(&ks, 110 * MS));
	key_state__look(&ks, 100 * MS, 200 * MS, 200 * MS, true);
	assert_false(key_state__may_learn(&ks, 150 * MS)); /* recording, read after the switch off */
	assert_false(key_state__may_learn(&ks, 250 * MS)); /* off: a while only */
	key_state__look(&ks, 100 * MS, 200 * MS, 200 * MS, false);
	assert_true(key_state__may_learn(&ks, 150 * MS)); /* the probes paused: kept for the next window */
	assert_false(key_state__may_learn(&ks, 250 * MS));
	/* A shim that never switches (inert, or older) records throughout. */
	ks = (struct key_state){ 0 };
	key_state__look(&ks, 0, 0, 0, true);
	assert_true(key_state__may_learn(&ks, 5 * MS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_learnt_recording_go_when_it_stops_with_the_probes_on),
		cmocka_unit_test(test_keys_learnt_recording_stay_between_duty_windows),
		cmocka_unit_test(test_a_key_learnt_not_recording_goes_when_recording_comes),
		cmocka_unit_test(test_an_unseen_off_with_no_key_learnt_after_it_keeps_the_keys),
		cmocka_unit_test(test_an_unseen_off_with_a_key_learnt_after_it_makes_the_keys_go),
		cmocka_unit_test(test_a_key_learnt_just_before_an_unseen_off_stamp_makes_the_keys_go),
		cmocka_unit_test(test_an_unseen_off_with_an_implausible_stamp_makes_the_keys_go),
		cmocka_unit_test(test_an_unseen_on_with_a_key_learnt_in_it_makes_the_keys_go),
		cmocka_unit_test(test_an_unseen_on_with_no_key_learnt_in_it_keeps_the_keys),
		cmocka_unit_test(test_keys_learnt_before_the_first_look_go_at_the_first_switch),
		cmocka_unit_test(test_keys_learnt_before_a_first_look_that_sees_a_later_switch_on_go),
		cmocka_unit_test(test_keys_learnt_recording_before_a_first_look_that_sees_it_off_go_with_the_probes_on),
		cmocka_unit_test(test_a_launch_made_before_the_state_seen_teaches_no_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
