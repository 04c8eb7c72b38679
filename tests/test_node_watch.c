/* SPDX-License-Identifier: MIT */
/* When the autograd node probe is needed (user/session/node_watch.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/session/node_watch.h"

#define MS 1000000ull

struct counts {
	__u64 nodes, learned, unlearned;
};

/* Looks every 250 ms for ms, n nodes between looks, all at known calls; the last answer. */
static bool steady(struct node_watch *w, __u64 *now, struct counts *c, __u64 ms, __u64 n)
{
	bool quiet = w->quiet;

	for (__u64 t = 0; t < ms; t += 250) {
		*now += 250 * MS;
		c->nodes += n;
		quiet = node_watch__look(w, *now, c->nodes, c->learned, c->unlearned, false);
	}
	return quiet;
}

/* Threads taking every node at a known call for 2 s: the probe goes, once. */
static void test_nodes_at_known_calls_for_a_while_take_the_probe_away(void **state)
{
	struct node_watch w;
	struct counts c = { 0 };
	__u64 now = 1000 * MS;

	(void)state;
	node_watch__init(&w, false, now);
	c.nodes = 10, c.learned = 2;
	assert_false(node_watch__look(&w, now += 250 * MS, c.nodes, c.learned, 0, true));
	assert_false(steady(&w, &now, &c, 1750, 100)); /* not yet 2 s */
	assert_true(steady(&w, &now, &c, 500, 100));
	assert_int_equal(w.quiets, 1);
	assert_true(steady(&w, &now, &c, 5000, 100));
	assert_int_equal(w.quiets, 1);
	assert_int_equal(w.wakes, 0);
}

/* Steady time without nodes (between windows, or no backward yet) proves nothing. */
static void test_time_without_nodes_keeps_the_probe(void **state)
{
	struct node_watch w;
	struct counts c = { 0 };
	__u64 now = 0;

	(void)state;
	node_watch__init(&w, false, now);
	assert_false(steady(&w, &now, &c, 10000, 0));
	/* 6 a look: the 64 nodes take 11 looks */
	assert_false(steady(&w, &now, &c, 2500, 6));
	assert_int_equal(w.steady_nodes, 60);
	assert_true(steady(&w, &now, &c, 250, 6));
}

/* Each way the probe is wanted back brings it back, and starts the steady spell again. */
static void test_a_new_call_an_unknown_launch_or_a_new_engine_brings_the_probe_back(void **state)
{
	struct node_watch w;
	struct counts c = { 0 };
	__u64 now = 0;

	(void)state;
	node_watch__init(&w, false, now);
	assert_true(steady(&w, &now, &c, 3000, 50));
	c.learned++; /* a node at a call not seen */
	assert_false(node_watch__look(&w, now += 250 * MS, c.nodes, c.learned, c.unlearned, false));
	assert_int_equal(w.wakes, 1);
	assert_true(steady(&w, &now, &c, 2250, 50));
	c.unlearned++; /* an engine thread's launch in no node known */
	assert_false(node_watch__look(&w, now += 250 * MS, c.nodes, c.learned, c.unlearned, false));
	assert_true(steady(&w, &now, &c, 2250, 50));
	/* a target's engine newly probed */
	assert_false(node_watch__look(&w, now += 250 * MS, c.nodes, c.learned, c.unlearned, true));
	assert_false(steady(&w, &now, &c, 1750, 50));
	assert_true(steady(&w, &now, &c, 500, 50));
	assert_int_equal(w.wakes, 3);
	assert_int_equal(w.quiets, 4);
}

/* GPUPROBE_NODE_PROBE=always: it never goes. */
static void test_never_keeps_the_probe(void **state)
{
	struct node_watch w;
	struct counts c = { 0 };
	__u64 now = 0;

	(void)state;
	node_watch__init(&w, true, now);
	assert_false(steady(&w, &now, &c, 60000, 100));
	assert_int_equal(w.quiets, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nodes_at_known_calls_for_a_while_take_the_probe_away),
		cmocka_unit_test(test_time_without_nodes_keeps_the_probe),
		cmocka_unit_test(test_a_new_call_an_unknown_launch_or_a_new_engine_brings_the_probe_back),
		cmocka_unit_test(test_never_keeps_the_probe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
