/* SPDX-License-Identifier: MIT */
/* The CUDA-graph nodes of a process (user/join/graph_nodes.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/join/graph_nodes.h"

/* Node ids as the driver makes them: the graph's id above, the index below. */
#define NODE(graph, i) (((__u64)(graph) << 32) | (i))

static struct graph_nodes *fresh(void)
{
	struct graph_nodes *gn = NULL;

	assert_int_equal(graph_nodes__new(&gn), 0);
	return gn;
}

static __u64 site_of(const struct graph_nodes *gn, __u64 node)
{
	__u64 site = 0;
	__u32 probe = 0;

	return graph_nodes__site(gn, graph_nodes__origin(gn, node), &site, &probe) ? site : 0;
}

/*
 * Stream capture, then instantiation, as CUPTI reports them on a real
 * driver: each captured node made inside its launch's call; each copy made,
 * then cloned. The replayed copies lead to the capture launches' sites.
 */
static void test_a_replayed_copy_leads_to_the_launch_that_captured_its_node(void **state)
{
	struct graph_nodes *gn = fresh();
	struct graph_nodes_stats st;
	__u64 site;
	__u32 probe;

	graph_nodes__add(gn, NODE(1, 0), 0, 7, 105);
	graph_nodes__add(gn, NODE(1, 1), 0, 7, 205);
	/* Not bound yet: the calls have not paired. */
	assert_false(graph_nodes__site(gn, graph_nodes__origin(gn, NODE(1, 0)), &site, &probe));
	graph_nodes__on_call(gn, 7, 100, 110, 1001, 3);
	graph_nodes__on_call(gn, 7, 200, 210, 1002, 4);
	/* Instantiation: graph 3's copies, each made and then cloned. */
	for (unsigned i = 0; i < 2; i++) {
		graph_nodes__add(gn, NODE(3, i), 0, 7, 300 + i);
		graph_nodes__add(gn, NODE(3, i), NODE(1, i), 7, 300 + i);
	}
	assert_int_equal(site_of(gn, NODE(3, 0)), 1001);
	assert_int_equal(site_of(gn, NODE(3, 1)), 1002);
	assert_true(graph_nodes__site(gn, graph_nodes__origin(gn, NODE(3, 1)), &site, &probe));
	assert_int_equal(probe, 4);
	/* A later call on that thread takes none of the copies. */
	graph_nodes__on_call(gn, 7, 295, 400, 1003, 3);
	assert_int_equal(site_of(gn, NODE(3, 0)), 1001);
	graph_nodes__stats(gn, &st);
	assert_int_equal(st.nodes, 4);
	assert_int_equal(st.bound, 2);
	assert_int_equal(st.refused, 0);
	graph_nodes__destroy(gn);
}

/* Only a call of the node's own thread whose span holds the node's time makes it. */
static void test_a_call_of_another_thread_or_time_binds_nothing(void **state)
{
	struct graph_nodes *gn = fresh();

	graph_nodes__add(gn, NODE(1, 0), 0, 7, 150);
	graph_nodes__on_call(gn, 8, 100, 200, 1001, 3);  /* another thread */
	graph_nodes__on_call(gn, 7, 100, 149, 1002, 3);  /* ended before */
	graph_nodes__on_call(gn, 7, 151, 200, 1003, 3);  /* began after */
	assert_int_equal(site_of(gn, NODE(1, 0)), 0);
	graph_nodes__on_call(gn, 7, 150, 150, 1004, 3);
	assert_int_equal(site_of(gn, NODE(1, 0)), 1004);
	graph_nodes__destroy(gn);
}

/* Hostile ids: none loops the walk, none is held twice, a node is never its own origin. */
static void test_hostile_ids_are_refused_and_a_clone_loop_ends(void **state)
{
	struct graph_nodes *gn = fresh();
	struct graph_nodes_stats st;

	graph_nodes__add(gn, 0, 0, 1, 1);                 /* no id */
	graph_nodes__add(gn, NODE(1, 0), NODE(1, 0), 1, 1); /* its own origin */
	graph_nodes__add(gn, NODE(1, 1), 0, 1, 1);
	graph_nodes__add(gn, NODE(1, 1), 0, 1, 2);        /* made twice */
	/* a -> b -> a */
	graph_nodes__add(gn, NODE(2, 0), NODE(2, 1), 1, 1);
	graph_nodes__add(gn, NODE(2, 1), NODE(2, 0), 1, 1);
	assert_int_equal(graph_nodes__origin(gn, NODE(2, 0)), 0);
	assert_int_equal(graph_nodes__origin(gn, NODE(9, 9)), 0);
	/* A chain longer than GRAPH_CLONE_HOPS is not followed. */
	graph_nodes__add(gn, NODE(10, 0), 0, 1, 1);
	for (unsigned i = 1; i <= GRAPH_CLONE_HOPS + 1; i++)
		graph_nodes__add(gn, NODE(10, i), NODE(10, i - 1), 1, 1);
	assert_int_not_equal(graph_nodes__origin(gn, NODE(10, GRAPH_CLONE_HOPS)), 0);
	assert_int_equal(graph_nodes__origin(gn, NODE(10, GRAPH_CLONE_HOPS + 1)), 0);
	graph_nodes__stats(gn, &st);
	assert_int_equal(st.refused, 3);
	graph_nodes__destroy(gn);
}

/* Made nodes no call takes (the node API) wait in a bounded list, then count as unbound. */
static void test_nodes_no_call_takes_are_bounded_and_counted(void **state)
{
	struct graph_nodes *gn = fresh();
	struct graph_nodes_stats st;

	for (unsigned i = 0; i <= GRAPH_PENDING_MAX; i++)
		graph_nodes__add(gn, NODE(1, i), 0, 1, 10 + i);
	graph_nodes__stats(gn, &st);
	assert_int_equal(st.unbound, GRAPH_PENDING_MAX / 2);
	/* The newest still wait, and bind. */
	graph_nodes__on_call(gn, 1, 10 + GRAPH_PENDING_MAX, 10 + GRAPH_PENDING_MAX, 77, 3);
	assert_int_equal(site_of(gn, NODE(1, GRAPH_PENDING_MAX)), 77);
	assert_int_equal(site_of(gn, NODE(1, 0)), 0);
	graph_nodes__destroy(gn);
}

/*
 * A large graph: its capture and its instantiation are read before any of
 * its calls pair (API records come with CUPTI's flush). The copies waiting
 * make no room for the captured nodes to be lost: every one binds.
 */
static void test_a_large_graph_instantiated_before_its_calls_pair_binds_whole(void **state)
{
	struct graph_nodes *gn = fresh();
	const unsigned n = GRAPH_PENDING_MAX - 100;
	struct graph_nodes_stats st;

	for (unsigned i = 0; i < n; i++)
		graph_nodes__add(gn, NODE(1, i), 0, 7, 1000 + 10 * i);
	for (unsigned i = 0; i < n; i++) {
		graph_nodes__add(gn, NODE(3, i), 0, 7, 1000000 + i);
		graph_nodes__add(gn, NODE(3, i), NODE(1, i), 7, 1000000 + i);
	}
	for (unsigned i = 0; i < n; i++)
		graph_nodes__on_call(gn, 7, 1000 + 10 * i - 1, 1000 + 10 * i + 1, 5000 + i, 3);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(site_of(gn, NODE(3, i)), 5000 + i);
	graph_nodes__stats(gn, &st);
	assert_int_equal(st.bound, n);
	assert_int_equal(st.unbound, 0);
	assert_int_equal(st.waiting, 0);
	graph_nodes__destroy(gn);
}

/* A node no call takes (the node API) is given up once calls come long after it. */
static void test_a_node_no_call_takes_is_given_up_in_time(void **state)
{
	struct graph_nodes *gn = fresh();
	struct graph_nodes_stats st;

	graph_nodes__add(gn, NODE(1, 0), 0, 7, 100);
	graph_nodes__on_call(gn, 7, 200, 300, 1001, 3);
	graph_nodes__stats(gn, &st);
	assert_int_equal(st.waiting, 1);
	assert_int_equal(st.unbound, 0);
	graph_nodes__on_call(gn, 8, 100 + GRAPH_PENDING_NS + 1, 100 + GRAPH_PENDING_NS + 2, 1002, 3);
	graph_nodes__stats(gn, &st);
	assert_int_equal(st.waiting, 0);
	assert_int_equal(st.unbound, 1);
	assert_int_equal(site_of(gn, NODE(1, 0)), 0);
	graph_nodes__destroy(gn);
}

/*
 * Nodes of a thread that makes no more calls are given up by a sweep once
 * calls come GRAPH_PENDING_NS later, and a sweep runs at most once every
 * GRAPH_SWEEP_CALLS calls: a hostile ring's calls, each a step later, do not
 * make every call look at every waiting node. A call looks at its own
 * thread's nodes in its span only.
 */
static void test_other_threads_nodes_are_swept_at_a_bounded_rate(void **state)
{
	struct graph_nodes *gn = fresh();
	struct graph_nodes_stats st;
	const __u64 P = GRAPH_PENDING_NS;

	graph_nodes__add(gn, NODE(1, 0), 0, 9, 100);
	graph_nodes__add(gn, NODE(1, 1), 0, 7, P + 250);
	graph_nodes__on_call(gn, 7, P + 200, P + 300, 1001, 3); /* the first call sweeps */
	graph_nodes__stats(gn, &st);
	assert_int_equal(st.unbound, 1);
	assert_int_equal(st.bound, 1);
	assert_int_equal(site_of(gn, NODE(1, 1)), 1001);
	graph_nodes__add(gn, NODE(1, 2), 0, 9, P + 300);
	for (unsigned i = 1; i < 64; i++) {
		graph_nodes__on_call(gn, 7, 3 * P + i, 3 * P + i, 1002, 3);
		graph_nodes__stats(gn, &st);
		assert_int_equal(st.waiting, 1);
	}
	graph_nodes__on_call(gn, 7, 3 * P + 64, 3 * P + 64, 1003, 3);
	graph_nodes__stats(gn, &st);
	assert_int_equal(st.waiting, 0);
	assert_int_equal(st.unbound, 2);
	graph_nodes__destroy(gn);
}

static __u64 plus_one(void *ctx, __u64 site)
{
	(*(unsigned *)ctx)++;
	return site + 1;
}

/* The stack table renumbers its ids: the sites held follow. */
static void test_sites_are_renumbered_with_the_stack_table(void **state)
{
	struct graph_nodes *gn = fresh();
	unsigned visited = 0;

	graph_nodes__add(gn, NODE(1, 0), 0, 1, 5);
	graph_nodes__add(gn, NODE(1, 1), 0, 1, 50);
	graph_nodes__on_call(gn, 1, 0, 10, 40, 3);
	graph_nodes__visit_sites(gn, plus_one, &visited);
	assert_int_equal(visited, 1);
	assert_int_equal(site_of(gn, NODE(1, 0)), 41);
	graph_nodes__destroy(gn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_replayed_copy_leads_to_the_launch_that_captured_its_node),
		cmocka_unit_test(test_a_call_of_another_thread_or_time_binds_nothing),
		cmocka_unit_test(test_hostile_ids_are_refused_and_a_clone_loop_ends),
		cmocka_unit_test(test_nodes_no_call_takes_are_bounded_and_counted),
		cmocka_unit_test(test_sites_are_renumbered_with_the_stack_table),
		cmocka_unit_test(test_a_large_graph_instantiated_before_its_calls_pair_binds_whole),
		cmocka_unit_test(test_a_node_no_call_takes_is_given_up_in_time),
		cmocka_unit_test(test_other_threads_nodes_are_swept_at_a_bounded_rate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
