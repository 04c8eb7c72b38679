/* SPDX-License-Identifier: MIT */
/* The CUDA-graph nodes of a process (user/join/graph_nodes.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "user/join/graph_nodes.h"
#include "user/util/mem_share.h"

/* Node ids as the driver makes them: the graph's id above, the index below. */
#define NODE(graph, i) (((__u64)(graph) << 32) | (i))

static struct graph_nodes *fresh(void)
{
	struct graph_nodes *gn = NULL;

	assert_int_equal(graph_nodes__new(&gn), 0);
	return gn;
}

/* A kernel record's node: where it comes from as of now. */
static __u32 origin_of(struct graph_nodes *gn, __u64 node)
{
	return graph_nodes__origin(gn, graph_nodes__find(gn, node), ~0ull);
}

static __u64 site_of(struct graph_nodes *gn, __u64 node)
{
	__u64 site = 0;
	__u32 probe = 0;

	return graph_nodes__site(gn, origin_of(gn, node), &site, &probe) ? site : 0;
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
	assert_false(graph_nodes__site(gn, origin_of(gn, NODE(1, 0)), &site, &probe));
	graph_nodes__on_call(gn, 7, 100, 110, 1001, 3);
	graph_nodes__on_call(gn, 7, 200, 210, 1002, 4);
	/* Instantiation: graph 3's copies, each made and then cloned. */
	for (unsigned i = 0; i < 2; i++) {
		graph_nodes__add(gn, NODE(3, i), 0, 7, 300 + i);
		graph_nodes__add(gn, NODE(3, i), NODE(1, i), 7, 300 + i);
	}
	assert_int_equal(site_of(gn, NODE(3, 0)), 1001);
	assert_int_equal(site_of(gn, NODE(3, 1)), 1002);
	assert_true(graph_nodes__site(gn, origin_of(gn, NODE(3, 1)), &site, &probe));
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
	assert_int_equal(origin_of(gn, NODE(2, 0)), 0);
	assert_int_equal(origin_of(gn, NODE(9, 9)), 0);
	/* A chain longer than GRAPH_CLONE_HOPS is not followed. */
	graph_nodes__add(gn, NODE(10, 0), 0, 1, 1);
	for (unsigned i = 1; i <= GRAPH_CLONE_HOPS + 1; i++)
		graph_nodes__add(gn, NODE(10, i), NODE(10, i - 1), 1, 1);
	assert_int_not_equal(origin_of(gn, NODE(10, GRAPH_CLONE_HOPS)), 0);
	assert_int_equal(origin_of(gn, NODE(10, GRAPH_CLONE_HOPS + 1)), 0);
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

/* Adds n nodes of graph g made by thread 1; returns how many were held. */
static unsigned add_nodes(struct graph_nodes *gn, __u32 g, unsigned n)
{
	struct graph_nodes_stats before, after;

	graph_nodes__stats(gn, &before);
	for (unsigned i = 0; i < n; i++)
		graph_nodes__add(gn, NODE(g, i), 0, 1, 10 + i);
	graph_nodes__stats(gn, &after);
	return (unsigned)(after.nodes - before.nodes);
}

/*
 * Many processes' nodes under one bound (ten nodes' worth): the first fills
 * it alone; once a second joins, the first, over its share (half), holds no
 * more, while the second takes its share and no more. Each process's
 * refusals are its own, and the bound's ledger returns to zero as they go.
 */
static void test_many_processes_nodes_share_one_bound(void **state)
{
	struct graph_nodes *a = fresh(), *b = fresh();
	struct graph_nodes_stats st;
	struct mem_share share;

	mem_share__init(&share, 10 * GRAPH_NODE_BYTES);
	graph_nodes__set_share(a, &share);
	assert_int_equal(add_nodes(a, 1, 10), 10);
	graph_nodes__set_share(b, &share);
	assert_int_equal(add_nodes(a, 2, 3), 0);
	assert_int_equal(add_nodes(b, 1, 8), 5);
	graph_nodes__stats(b, &st);
	assert_int_equal(st.refused, 3);
	assert_int_equal(mem_share__bytes(&share), 15 * GRAPH_NODE_BYTES);
	assert_int_equal(mem_share__refused(&share), 6);
	graph_nodes__destroy(a);
	assert_int_equal(mem_share__bytes(&share), 5 * GRAPH_NODE_BYTES);
	/* Alone again and within the bound: it may grow. */
	assert_int_equal(add_nodes(b, 2, 5), 5);
	graph_nodes__destroy(b);
	assert_int_equal(mem_share__bytes(&share), 0);
	assert_int_equal(share.holders, 0);
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

/* A node made by a call on thread 7 at ts (site 0: by no call seen). */
static void made(struct graph_nodes *gn, __u64 node, __u64 ts, __u64 site)
{
	graph_nodes__add(gn, node, 0, 7, ts);
	if (site)
		assert_int_equal(graph_nodes__on_call(gn, 7, ts, ts, site, 1), 1);
}

/* A copy, reported made and then cloned, as the driver reports one. */
static void cloned(struct graph_nodes *gn, __u64 node, __u64 orig, __u32 tid, __u64 ts)
{
	graph_nodes__add(gn, node, 0, tid, ts);
	graph_nodes__add(gn, node, orig, tid, ts);
}

static __u64 site_at(struct graph_nodes *gn, __u64 node, __u64 ts)
{
	__u64 site = 0;
	__u32 probe = 0;

	return graph_nodes__site(gn, graph_nodes__origin(gn, graph_nodes__find(gn, node), ts), &site,
				 &probe) ? site : 0;
}

/*
 * cuGraphExecUpdate as the H200 reported it (tools/gpu/graph_update.sh):
 * exec node 2:0, cloned from capture 1's node, updated from capture 4's
 * node. Kernels that began before the update keep the first capture; those
 * after lead to the second. New parameters are counted and change nothing.
 */
static void test_an_update_leads_later_kernels_to_the_graph_it_came_from(void **state)
{
	struct graph_nodes *gn = fresh();
	struct graph_nodes_stats st;

	made(gn, NODE(1, 0), 100, 1001);
	cloned(gn, NODE(2, 0), NODE(1, 0), 7, 200);
	made(gn, NODE(4, 0), 300, 1004);
	graph_nodes__update(gn, NODE(2, 0), NODE(4, 0), 500);
	graph_nodes__set_params(gn, NODE(2, 0));
	assert_int_equal(site_at(gn, NODE(2, 0), 499), 1001);
	assert_int_equal(site_at(gn, NODE(2, 0), 500), 1004);
	assert_int_equal(site_at(gn, NODE(2, 0), 900), 1004);
	/* Refused: a node not held, a made node (no executable graph's), from not held, no time. */
	graph_nodes__update(gn, NODE(9, 0), NODE(4, 0), 600);
	graph_nodes__update(gn, NODE(4, 0), NODE(1, 0), 600);
	graph_nodes__update(gn, NODE(2, 0), NODE(9, 0), 600);
	graph_nodes__update(gn, NODE(2, 0), NODE(1, 0), 0);
	graph_nodes__set_params(gn, NODE(9, 1));
	assert_int_equal(site_at(gn, NODE(2, 0), 900), 1004);
	assert_int_equal(site_at(gn, NODE(4, 0), 900), 1004);
	graph_nodes__stats(gn, &st);
	assert_int_equal(st.updated, 1);
	assert_int_equal(st.params_set, 1);
	assert_int_equal(st.refused, 5);
	graph_nodes__destroy(gn);
}

/*
 * Child graphs, node for node as the H200 reported them (graph_update.sh's
 * second run): a parent (graph 11) of child node A (a copy of graph 5: two
 * captured kernels and a child node holding graph 7's kernel), a kernel
 * added by the node API, and child node B (a copy of graph 9: a child node
 * holding graph 6's kernel, and a kernel added by the node API).
 * Instantiated as graph 16, its embedded copies 17-20, depth first; the
 * child graphs' kernels ran as 16:3, 16:4, 16:6, 16:8 and 16:9, ids no
 * callback named.
 */
static void child_graphs(struct graph_nodes *gn, __u32 copy_tid)
{
	made(gn, NODE(5, 0), 100, 51);   /* cap_child: k_child */
	made(gn, NODE(5, 1), 110, 52);   /* cap_child: k_child2 */
	made(gn, NODE(6, 0), 120, 61);   /* cap_deep: k_deep */
	made(gn, NODE(7, 0), 130, 71);   /* cap_inner: k_inner */
	cloned(gn, NODE(8, 0), NODE(7, 0), 7, 140);
	made(gn, NODE(5, 2), 141, 0);    /* inner_site's child node */
	cloned(gn, NODE(10, 0), NODE(6, 0), 7, 150);
	made(gn, NODE(9, 0), 151, 0);    /* nest_site's child node */
	made(gn, NODE(9, 1), 152, 91);   /* nest_site: k_nest */
	cloned(gn, NODE(12, 0), NODE(5, 0), 7, 160);
	cloned(gn, NODE(12, 1), NODE(5, 1), 7, 161);
	cloned(gn, NODE(13, 0), NODE(8, 0), 7, 162);
	cloned(gn, NODE(12, 2), NODE(5, 2), 7, 163);
	made(gn, NODE(11, 0), 164, 0);   /* child_site: child node A */
	made(gn, NODE(11, 1), 166, 111); /* child_site: k_parent */
	cloned(gn, NODE(15, 0), NODE(10, 0), 7, 168);
	cloned(gn, NODE(14, 0), NODE(9, 0), 7, 169);
	cloned(gn, NODE(14, 1), NODE(9, 1), 7, 170);
	made(gn, NODE(11, 2), 171, 0);   /* child_site: child node B */
	/* Instantiation. */
	cloned(gn, NODE(17, 0), NODE(12, 0), copy_tid, 200);
	cloned(gn, NODE(17, 1), NODE(12, 1), copy_tid, 201);
	cloned(gn, NODE(18, 0), NODE(13, 0), copy_tid, 202);
	cloned(gn, NODE(17, 2), NODE(12, 2), copy_tid, 203);
	cloned(gn, NODE(16, 0), NODE(11, 0), 7, 204);
	cloned(gn, NODE(16, 1), NODE(11, 1), 7, 205);
	cloned(gn, NODE(20, 0), NODE(15, 0), 7, 206);
	cloned(gn, NODE(19, 0), NODE(14, 0), 7, 207);
	cloned(gn, NODE(19, 1), NODE(14, 1), 7, 208);
	cloned(gn, NODE(16, 2), NODE(11, 2), 7, 209);
	made(gn, NODE(22, 2), 210, 0);   /* the driver's own, never replayed */
	made(gn, NODE(21, 0), 211, 0);
	made(gn, NODE(16, 10), 212, 0);
}

static void test_child_graphs_kernels_are_found_by_their_place(void **state)
{
	struct graph_nodes *gn = fresh();
	struct graph_nodes_stats st;

	child_graphs(gn, 7);
	assert_int_equal(site_of(gn, NODE(16, 1)), 111);
	assert_int_equal(site_of(gn, NODE(16, 3)), 51);
	assert_int_equal(site_of(gn, NODE(16, 4)), 52);
	assert_int_equal(site_of(gn, NODE(16, 6)), 71);
	assert_int_equal(site_of(gn, NODE(16, 8)), 91);
	assert_int_equal(site_of(gn, NODE(16, 9)), 61);
	/* Child nodes themselves, made by no call; a place past the embedded graphs. */
	assert_int_not_equal(origin_of(gn, NODE(16, 5)), 0);
	assert_int_equal(site_of(gn, NODE(16, 5)), 0);
	assert_int_equal(origin_of(gn, NODE(16, 11)), 0);
	/* Again: now held. */
	assert_int_equal(site_of(gn, NODE(16, 9)), 61);
	graph_nodes__stats(gn, &st);
	assert_int_equal(st.embedded, 6);
	graph_nodes__destroy(gn);
}

/* Copies cloned on another thread than the executable graph's own are not its. */
static void test_another_threads_copies_are_not_an_executable_graphs(void **state)
{
	struct graph_nodes *gn = fresh();

	child_graphs(gn, 8);
	assert_int_equal(origin_of(gn, NODE(16, 3)), 0);
	assert_int_equal(site_of(gn, NODE(16, 1)), 111);
	graph_nodes__destroy(gn);
}

/*
 * Updated again and again before the kernels' records are read: each
 * kernel leads to what its node ran when its replay was launched, as far
 * back as GRAPH_HISTORY updates; one launched before those reads as the
 * oldest kept, counted.
 */
static void test_updates_kept_in_order_answer_each_launch_time(void **state)
{
	struct graph_nodes *gn = fresh();
	struct graph_nodes_stats st;

	made(gn, NODE(1, 0), 100, 1001);
	cloned(gn, NODE(2, 0), NODE(1, 0), 7, 200);
	for (unsigned u = 0; u < 3; u++)
		made(gn, NODE(4 + u, 0), 300 + u, 2000 + u);
	graph_nodes__update(gn, NODE(2, 0), NODE(4, 0), 500);
	graph_nodes__update(gn, NODE(2, 0), NODE(5, 0), 700);
	graph_nodes__update(gn, NODE(2, 0), NODE(6, 0), 900);
	assert_int_equal(site_at(gn, NODE(2, 0), 499), 1001);
	assert_int_equal(site_at(gn, NODE(2, 0), 600), 2000);
	assert_int_equal(site_at(gn, NODE(2, 0), 700), 2001);
	assert_int_equal(site_at(gn, NODE(2, 0), 950), 2002);
	for (unsigned u = 0; u < GRAPH_HISTORY; u++)
		graph_nodes__update(gn, NODE(2, 0), NODE(4 + u % 3, 0), 1000 + u);
	graph_nodes__stats(gn, &st);
	assert_int_equal(st.history_lost, 0);
	assert_int_equal(site_at(gn, NODE(2, 0), 499), 2002); /* past the kept history */
	graph_nodes__stats(gn, &st);
	assert_int_equal(st.history_lost, 1);
	assert_int_equal(st.updated, 3 + GRAPH_HISTORY);
	graph_nodes__destroy(gn);
}

/*
 * A copy whose record was lost (the ring dropped it, the table was full)
 * would shift every place after it: E:1's kernel would read as the child
 * graph's. The layout is refused, once, and those kernels stay unknown.
 */
static void test_a_copy_with_a_record_lost_is_not_laid_out(void **state)
{
	struct graph_nodes *gn = fresh();
	struct graph_nodes_stats st;

	made(gn, NODE(1, 0), 100, 101);   /* the child graph's two kernels */
	made(gn, NODE(1, 1), 110, 102);
	cloned(gn, NODE(3, 0), NODE(1, 0), 7, 120); /* its copy in graph 2 */
	cloned(gn, NODE(3, 1), NODE(1, 1), 7, 121);
	made(gn, NODE(2, 0), 130, 0);    /* the child node */
	made(gn, NODE(2, 1), 140, 201);  /* two kernels beside it */
	made(gn, NODE(2, 2), 150, 202);
	cloned(gn, NODE(5, 0), NODE(3, 0), 7, 200); /* instantiated: E = 4 */
	cloned(gn, NODE(5, 1), NODE(3, 1), 7, 201);
	cloned(gn, NODE(4, 0), NODE(2, 0), 7, 202);
	/* 4:1's copy lost */
	cloned(gn, NODE(4, 2), NODE(2, 2), 7, 204);
	assert_int_equal(graph_nodes__find(gn, NODE(4, 1)), 0);
	assert_int_equal(graph_nodes__find(gn, NODE(4, 3)), 0);
	assert_int_equal(graph_nodes__find(gn, NODE(4, 4)), 0);
	assert_int_equal(site_of(gn, NODE(4, 2)), 202);
	graph_nodes__stats(gn, &st);
	assert_int_equal(st.layouts_refused, 1);
	assert_int_equal(st.embedded, 0);
	graph_nodes__destroy(gn);
}

/* An update naming a child graph's kernel node before any of its kernels ran. */
static void test_an_update_of_a_child_graphs_node_finds_it_by_place(void **state)
{
	struct graph_nodes *gn = fresh();

	child_graphs(gn, 7);
	made(gn, NODE(30, 0), 300, 3000);
	graph_nodes__update(gn, NODE(16, 3), NODE(30, 0), 400);
	assert_int_equal(site_at(gn, NODE(16, 3), 399), 51);
	assert_int_equal(site_at(gn, NODE(16, 3), 401), 3000);
	graph_nodes__destroy(gn);
}

/*
 * A hostile ring: 300 copies in a row on one thread after an executable
 * graph (a layout keeps GRAPH_LAYOUT_GRAPHS at most), and graph ids at
 * the top of the range (no wrap past 0xffffffff).
 */
static void test_hostile_layouts_stay_bounded(void **state)
{
	struct graph_nodes *gn = fresh();

	made(gn, NODE(1, 0), 100, 1001);
	cloned(gn, NODE(2, 0), NODE(1, 0), 7, 200);
	for (__u32 g = 3; g < 303; g++)
		cloned(gn, NODE(g, 0), NODE(1, 0), 7, 200 + g);
	assert_int_equal(site_of(gn, NODE(2, 1)), 1001);  /* graph 3's copy */
	assert_int_equal(site_of(gn, NODE(2, GRAPH_LAYOUT_GRAPHS)), 1001);
	assert_int_equal(graph_nodes__find(gn, NODE(2, GRAPH_LAYOUT_GRAPHS + 1)), 0);
	cloned(gn, NODE(0xffffffffu, 0), NODE(1, 0), 7, 900);
	cloned(gn, NODE(0, 0), NODE(1, 0), 7, 901);
	assert_int_equal(graph_nodes__find(gn, NODE(0xffffffffu, 1)), 0);
	graph_nodes__destroy(gn);
}

/* Made-up executable graphs: laid out GRAPH_LAYOUTS_MAX times at most, counted. */
static void test_layouts_are_bounded(void **state)
{
	struct graph_nodes *gn = fresh();
	struct graph_nodes_stats st;

	made(gn, NODE(1, 0), 100, 1001);
	for (__u32 g = 0; g < GRAPH_LAYOUTS_MAX + 10; g++) {
		cloned(gn, NODE(1000 + 2 * g, 0), NODE(1, 0), 7, 200 + g);
		assert_int_equal(origin_of(gn, NODE(1000 + 2 * g, 5)), 0);
		assert_int_equal(origin_of(gn, NODE(1000 + 2 * g, 6)), 0);
	}
	graph_nodes__stats(gn, &st);
	assert_int_equal(st.layouts_refused, 10); /* once each */
	assert_int_equal(st.embedded, 0);
	graph_nodes__destroy(gn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_replayed_copy_leads_to_the_launch_that_captured_its_node),
		cmocka_unit_test(test_a_call_of_another_thread_or_time_binds_nothing),
		cmocka_unit_test(test_hostile_ids_are_refused_and_a_clone_loop_ends),
		cmocka_unit_test(test_nodes_no_call_takes_are_bounded_and_counted),
		cmocka_unit_test(test_many_processes_nodes_share_one_bound),
		cmocka_unit_test(test_sites_are_renumbered_with_the_stack_table),
		cmocka_unit_test(test_a_large_graph_instantiated_before_its_calls_pair_binds_whole),
		cmocka_unit_test(test_a_node_no_call_takes_is_given_up_in_time),
		cmocka_unit_test(test_other_threads_nodes_are_swept_at_a_bounded_rate),
		cmocka_unit_test(test_an_update_leads_later_kernels_to_the_graph_it_came_from),
		cmocka_unit_test(test_child_graphs_kernels_are_found_by_their_place),
		cmocka_unit_test(test_another_threads_copies_are_not_an_executable_graphs),
		cmocka_unit_test(test_layouts_are_bounded),
		cmocka_unit_test(test_updates_kept_in_order_answer_each_launch_time),
		cmocka_unit_test(test_a_copy_with_a_record_lost_is_not_laid_out),
		cmocka_unit_test(test_an_update_of_a_child_graphs_node_finds_it_by_place),
		cmocka_unit_test(test_hostile_layouts_stay_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
