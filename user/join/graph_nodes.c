/* SPDX-License-Identifier: MIT */
/* The CUDA-graph nodes of one process (graph_nodes.h). */
#include "user/join/graph_nodes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/util/grow.h"
#include "user/util/u64map.h"

/* Calls between two sweeps for nodes no call will take, at least (pending__sweep). */
#define GRAPH_SWEEP_CALLS 64u

struct gnode {
	__u64 node, orig; /* orig: the node it was cloned from; 0: made here */
	__u64 ts;         /* made: when */
	__u64 site;       /* made and bound: the site of the launch that made it; 0: none */
	__u64 prev_orig;  /* updated: what orig was before the last update, */
	__u64 since;      /* and when that update came (0: never updated) */
	__u32 tid;
	__u32 probe;
};

/* An executable graph's child graphs, laid out (graph_nodes.h): E:top.. are theirs. */
struct layout {
	__u32 top;      /* the executable graph's own nodes, E:0..top-1 */
	__u32 ngraphs;  /* embedded graphs E+1..E+ngraphs */
	__u32 *counts;  /* the nodes of each */
};

struct graph_nodes {
	struct u64map by_node;  /* node id -> index in n */
	struct u64map by_exec;  /* executable graph id -> index in layouts */
	struct layout *layouts;
	size_t nlayouts, layouts_cap;
	struct gnode *n;
	size_t len, cap;
	__u32 *pending;         /* indices of made nodes waiting for their call, by (tid, ts) */
	size_t npending;
	__u64 *scratch;         /* times of the waiting, sorted when the list is full (made then) */
	__u64 swept_at;         /* the call time of the last sweep (pending__sweep) */
	__u32 calls_since_sweep;
	struct graph_nodes_stats st;
};

int graph_nodes__new(struct graph_nodes **ret)
{
	struct graph_nodes *gn = calloc(1, sizeof(*gn));

	if (!gn)
		return -ENOMEM;
	gn->pending = calloc(GRAPH_PENDING_MAX, sizeof(*gn->pending));
	gn->calls_since_sweep = GRAPH_SWEEP_CALLS;
	if (!gn->pending || u64map__init(&gn->by_node, GRAPH_NODES_MAX) ||
	    u64map__init(&gn->by_exec, GRAPH_LAYOUTS_MAX)) {
		graph_nodes__destroy(gn);
		return -ENOMEM;
	}
	*ret = gn;
	return 0;
}

void graph_nodes__destroy(struct graph_nodes *gn)
{
	if (!gn)
		return;
	u64map__fini(&gn->by_node);
	u64map__fini(&gn->by_exec);
	for (size_t i = 0; i < gn->nlayouts; i++)
		free(gn->layouts[i].counts);
	free(gn->layouts);
	free(gn->n);
	free(gn->pending);
	free(gn->scratch);
	free(gn);
}

/*
 * The waiting list is kept in order of thread, then time: a call looks at
 * its own thread's nodes in its span only (a binary search), so nodes a
 * hostile ring made up on one thread cost no other call anything, and its
 * own calls a search each.
 */
static int pending__cmp(const struct graph_nodes *gn, __u32 idx, __u32 tid, __u64 ts)
{
	const struct gnode *n = &gn->n[idx];

	if (n->tid != tid)
		return n->tid < tid ? -1 : 1;
	return n->ts < ts ? -1 : n->ts > ts;
}

/* The first position whose node is not before (tid, ts); after every equal one when after. */
static size_t pending__find(const struct graph_nodes *gn, __u32 tid, __u64 ts, bool after)
{
	size_t lo = 0, hi = gn->npending;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = pending__cmp(gn, gn->pending[mid], tid, ts);

		if (c < 0 || (after && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool waits(const struct gnode *n)
{
	return !n->orig && !n->site;
}

/* Takes positions [from, to) out; those still waiting are given up (unbound). */
static void pending__cut(struct graph_nodes *gn, size_t from, size_t to)
{
	if (from == to)
		return;
	for (size_t i = from; i < to; i++)
		gn->st.unbound += waits(&gn->n[gn->pending[i]]);
	memmove(gn->pending + from, gn->pending + to, (gn->npending - to) * sizeof(*gn->pending));
	gn->npending -= to - from;
}

/* Keeps the nodes still waiting made at or after since; the rest go (unbound if waiting). */
static void pending__keep_since(struct graph_nodes *gn, __u64 since)
{
	size_t keep = 0;

	for (size_t i = 0; i < gn->npending; i++) {
		const struct gnode *n = &gn->n[gn->pending[i]];

		if (!waits(n))
			continue;
		if (n->ts < since) {
			gn->st.unbound++;
			continue;
		}
		gn->pending[keep++] = gn->pending[i];
	}
	gn->npending = keep;
}

static int ts_cmp(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Full of nodes still waiting: the older half give up (built by the node
 * API, or their call's launch event lost: no call will take them).
 */
static void pending__make_room(struct graph_nodes *gn)
{
	size_t half = GRAPH_PENDING_MAX / 2;

	pending__keep_since(gn, 0);
	if (gn->npending < GRAPH_PENDING_MAX)
		return;
	if (!gn->scratch)
		gn->scratch = malloc(GRAPH_PENDING_MAX * sizeof(*gn->scratch));
	if (!gn->scratch) { /* no room to sort: any half */
		pending__cut(gn, 0, half);
		return;
	}
	for (size_t i = 0; i < gn->npending; i++)
		gn->scratch[i] = gn->n[gn->pending[i]].ts;
	qsort(gn->scratch, gn->npending, sizeof(*gn->scratch), ts_cmp);
	pending__keep_since(gn, gn->scratch[half]);
	if (gn->npending > GRAPH_PENDING_MAX - half) /* all made at one time: any half */
		pending__cut(gn, 0, gn->npending - (GRAPH_PENDING_MAX - half));
}

static void pending__push(struct graph_nodes *gn, __u32 idx)
{
	const struct gnode *n = &gn->n[idx];
	size_t at;

	if (gn->npending == GRAPH_PENDING_MAX)
		pending__make_room(gn);
	at = pending__find(gn, n->tid, n->ts, true);
	memmove(gn->pending + at + 1, gn->pending + at, (gn->npending - at) * sizeof(*gn->pending));
	gn->pending[at] = idx;
	gn->npending++;
}

/*
 * Nodes of threads that make no more calls: given up once calls come
 * GRAPH_PENDING_NS after them, looked for when the calls' time has moved on
 * by that much, and not more often than every GRAPH_SWEEP_CALLS calls (a
 * hostile ring's calls, each a step later, cost a sweep only that often).
 */
static void pending__sweep(struct graph_nodes *gn, __u64 now)
{
	if (now < gn->swept_at) {
		gn->swept_at = now; /* a call stamped earlier than one before (hostile, or none yet) */
		return;
	}
	if (gn->calls_since_sweep < GRAPH_SWEEP_CALLS || now - gn->swept_at < GRAPH_PENDING_NS)
		return;
	gn->calls_since_sweep = 0;
	gn->swept_at = now;
	pending__keep_since(gn, now - GRAPH_PENDING_NS);
}

/*
 * A made node that the record after it says was cloned (instantiation
 * reports a copy as made, then as cloned): a clone, waiting for no call.
 */
static void made__to_clone(struct graph_nodes *gn, __u64 idx, __u64 orig)
{
	struct gnode *n = &gn->n[idx];

	if (n->orig || n->site) {
		gn->st.refused++;
		return;
	}
	n->orig = orig;
}

void graph_nodes__add(struct graph_nodes *gn, __u64 node, __u64 orig, __u32 tid, __u64 ts)
{
	struct gnode *n;
	__u64 have;

	if (node && orig && node != orig && u64map__get(&gn->by_node, node, &have)) {
		made__to_clone(gn, have, orig);
		return;
	}
	if (!node || node == orig || u64map__get(&gn->by_node, node, &have) ||
	    gn->len >= GRAPH_NODES_MAX) {
		gn->st.refused++;
		return;
	}
	n = grow__array(gn->n, &gn->cap, gn->len + 1, sizeof(*n), 64);
	if (!n || u64map__put(&gn->by_node, node, gn->len)) {
		if (n)
			gn->n = n;
		gn->st.refused++;
		return;
	}
	gn->n = n;
	gn->n[gn->len] = (struct gnode){ .node = node, .orig = orig, .ts = ts, .tid = tid };
	if (!orig)
		pending__push(gn, (__u32)gn->len);
	gn->len++;
	gn->st.nodes++;
}

size_t graph_nodes__on_call(struct graph_nodes *gn, __u32 tid, __u64 start, __u64 end, __u64 site,
			    __u32 probe)
{
	size_t first, old, from, to, took = 0;

	gn->calls_since_sweep++;
	if (!gn->npending)
		return 0;
	first = pending__find(gn, tid, 0, false);
	/* Its own call would have paired long before this one: none will. */
	old = start > GRAPH_PENDING_NS ? pending__find(gn, tid, start - GRAPH_PENDING_NS, false)
					 : first;
	from = pending__find(gn, tid, start, false);
	to = end < start ? from : pending__find(gn, tid, end, true);
	for (size_t i = from; i < to; i++) {
		struct gnode *n = &gn->n[gn->pending[i]];

		if (!waits(n))
			continue; /* a clone since: waits for nothing */
		n->site = site;
		n->probe = probe;
		gn->st.bound++;
		took++;
	}
	pending__cut(gn, from, to);
	pending__cut(gn, first, old);
	pending__sweep(gn, start);
	return took;
}

void graph_nodes__update(struct graph_nodes *gn, __u64 exec_node, __u64 from, __u64 ts)
{
	__u64 at, have;
	struct gnode *n;

	if (exec_node == from || !ts || !u64map__get(&gn->by_node, exec_node, &at) ||
	    !gn->n[at].orig || !u64map__get(&gn->by_node, from, &have)) {
		gn->st.refused++;
		return;
	}
	n = &gn->n[at];
	n->prev_orig = n->orig;
	n->since = ts;
	n->orig = from;
	gn->st.updated++;
}

void graph_nodes__set_params(struct graph_nodes *gn, __u64 exec_node)
{
	__u64 at;

	if (u64map__get(&gn->by_node, exec_node, &at))
		gn->st.params_set++;
	else
		gn->st.refused++;
}

static __u64 node_id(__u32 graph, __u32 index)
{
	return (__u64)graph << 32 | index;
}

/* Held clones graph:0, graph:1, ... in a row, cloned on thread tid: how many (at most max). */
static __u32 clones_in_row(const struct graph_nodes *gn, __u32 graph, __u32 tid, __u32 max)
{
	__u32 n = 0;
	__u64 idx;

	while (n < max && u64map__get(&gn->by_node, node_id(graph, n), &idx) && gn->n[idx].orig &&
	       gn->n[idx].tid == tid)
		n++;
	return n;
}

/*
 * The layout of executable graph `graph`'s child graphs (graph_nodes.h), made
 * once from the clones held: its own nodes, then graphs graph+1, graph+2, ...
 * while each has clones of the same thread. At most GRAPH_LAYOUT_NODES
 * lookups a layout and GRAPH_LAYOUTS_MAX layouts a process: a hostile ring's
 * made-up graph ids cost a bounded count of lookups in all. NULL: none.
 */
static const struct layout *layout__of(struct graph_nodes *gn, __u32 graph)
{
	__u32 counts[GRAPH_LAYOUT_GRAPHS], ngraphs = 0, budget = GRAPH_LAYOUT_NODES, top, tid;
	struct layout *l;
	__u64 at;

	if (u64map__get(&gn->by_exec, graph, &at))
		return &gn->layouts[at];
	if (!u64map__get(&gn->by_node, node_id(graph, 0), &at) || !gn->n[at].orig)
		return NULL; /* not an executable graph this process instantiated */
	if (gn->nlayouts >= GRAPH_LAYOUTS_MAX) {
		gn->st.layouts_refused++;
		return NULL;
	}
	tid = gn->n[at].tid;
	top = clones_in_row(gn, graph, tid, budget);
	budget -= top;
	while (ngraphs < GRAPH_LAYOUT_GRAPHS && budget && graph + ngraphs + 1 > graph) {
		__u32 c = clones_in_row(gn, graph + ngraphs + 1, tid, budget);

		if (!c)
			break;
		counts[ngraphs++] = c;
		budget -= c;
	}
	l = grow__array(gn->layouts, &gn->layouts_cap, gn->nlayouts + 1, sizeof(*l), 8);
	if (!l) {
		gn->st.layouts_refused++;
		return NULL;
	}
	gn->layouts = l;
	l = &gn->layouts[gn->nlayouts];
	*l = (struct layout){ .top = top, .ngraphs = ngraphs };
	if (ngraphs) {
		l->counts = malloc(ngraphs * sizeof(*l->counts));
		if (!l->counts) {
			gn->st.layouts_refused++;
			return NULL;
		}
		memcpy(l->counts, counts, ngraphs * sizeof(*l->counts));
	}
	if (u64map__put(&gn->by_exec, graph, gn->nlayouts)) {
		free(l->counts);
		gn->st.layouts_refused++;
		return NULL;
	}
	return &gn->layouts[gn->nlayouts++];
}

/* The clone an unknown node of an executable graph stands for, by its position; 0: none. */
static __u64 embedded__find(struct graph_nodes *gn, __u64 node)
{
	__u32 graph = (__u32)(node >> 32), rest = (__u32)node;
	const struct layout *l = layout__of(gn, graph);

	if (!l || rest < l->top)
		return 0;
	rest -= l->top;
	for (__u32 k = 0; k < l->ngraphs; k++) {
		if (rest < l->counts[k])
			return node_id(graph + 1 + k, rest);
		rest -= l->counts[k];
	}
	return 0;
}

/* node, not held, found to stand for clone `as`: kept as its clone (when there is room). */
static void embedded__keep(struct graph_nodes *gn, __u64 node, __u64 as)
{
	struct gnode *n;

	gn->st.embedded++;
	if (gn->len >= GRAPH_NODES_MAX)
		return;
	n = grow__array(gn->n, &gn->cap, gn->len + 1, sizeof(*n), 64);
	if (!n)
		return;
	gn->n = n;
	if (u64map__put(&gn->by_node, node, gn->len))
		return;
	gn->n[gn->len++] = (struct gnode){ .node = node, .orig = as };
}

__u32 graph_nodes__origin(struct graph_nodes *gn, __u64 node, __u64 ts)
{
	__u64 idx, as;

	if (node && !u64map__get(&gn->by_node, node, &idx) && (as = embedded__find(gn, node))) {
		embedded__keep(gn, node, as);
		node = as;
	}
	for (unsigned hop = 0; hop <= GRAPH_CLONE_HOPS; hop++) {
		const struct gnode *n;

		if (!node || !u64map__get(&gn->by_node, node, &idx))
			return 0;
		n = &gn->n[idx];
		if (!n->orig)
			return (__u32)idx + 1;
		node = n->since && ts < n->since ? n->prev_orig : n->orig;
	}
	return 0;
}

bool graph_nodes__site(const struct graph_nodes *gn, __u32 origin, __u64 *ret_site,
		       __u32 *ret_probe)
{
	const struct gnode *n;

	if (!origin || origin > gn->len)
		return false;
	n = &gn->n[origin - 1];
	if (n->orig || !n->site)
		return false;
	*ret_site = n->site;
	*ret_probe = n->probe;
	return true;
}

void graph_nodes__visit_sites(struct graph_nodes *gn, __u64 (*fn)(void *ctx, __u64 site),
			      void *ctx)
{
	for (size_t i = 0; i < gn->len; i++)
		if (gn->n[i].site)
			gn->n[i].site = fn(ctx, gn->n[i].site);
}

void graph_nodes__stats(const struct graph_nodes *gn, struct graph_nodes_stats *ret)
{
	*ret = gn->st;
	ret->waiting = 0;
	for (size_t i = 0; i < gn->npending; i++) {
		const struct gnode *n = &gn->n[gn->pending[i]];

		ret->waiting += !n->orig && !n->site;
	}
}

void graph_nodes__add_stats(const struct graph_nodes *gn, struct graph_nodes_stats *sum)
{
	struct graph_nodes_stats one;

	if (!gn)
		return;
	graph_nodes__stats(gn, &one);
	sum->nodes += one.nodes;
	sum->bound += one.bound;
	sum->unbound += one.unbound;
	sum->waiting += one.waiting;
	sum->refused += one.refused;
	sum->updated += one.updated;
	sum->params_set += one.params_set;
	sum->embedded += one.embedded;
	sum->layouts_refused += one.layouts_refused;
}
