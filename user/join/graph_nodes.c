/* SPDX-License-Identifier: MIT */
/* The CUDA-graph nodes of one process (graph_nodes.h). */
#include "user/join/graph_nodes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/util/grow.h"
#include "user/util/mem_share.h"
#include "user/util/u64map.h"

/* Calls between two sweeps for nodes no call will take, at least (pending__sweep). */
#define GRAPH_SWEEP_CALLS 64u

struct gnode {
	__u64 node, orig; /* orig: the node it was cloned from; 0: made here */
	__u64 ts;         /* made: when */
	__u64 site;       /* made and bound: the site of the launch that made it; 0: none */
	__u32 tid;
	__u32 probe;
	__u32 hist;       /* updated: 1 + its entry in hists; 0: never updated */
};

/* An updated node's last GRAPH_HISTORY updates: when, and what orig was before each. */
struct history {
	__u64 since[GRAPH_HISTORY];
	__u64 before[GRAPH_HISTORY];
	__u32 n;          /* updates seen; the last GRAPH_HISTORY kept, in a ring */
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
	bool layouts_full;      /* by_exec could hold no more: counted once */
	struct history *hists;
	size_t nhists, hists_cap;
	struct gnode *n;
	size_t len, cap;
	__u32 *pending;         /* indices of made nodes waiting for their call, by (tid, ts) */
	size_t npending;
	__u64 *scratch;         /* times of the waiting, sorted when the list is full (made then) */
	__u64 swept_at;         /* the call time of the last sweep (pending__sweep) */
	__u32 calls_since_sweep;
	struct mem_hold hold;    /* what it counts against the bound all processes' nodes share */
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
	    u64map__init(&gn->by_exec, 2 * GRAPH_LAYOUTS_MAX)) {
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
	mem_hold__leave(&gn->hold);
	u64map__fini(&gn->by_node);
	u64map__fini(&gn->by_exec);
	for (size_t i = 0; i < gn->nlayouts; i++)
		free(gn->layouts[i].counts);
	free(gn->layouts);
	free(gn->hists);
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

void graph_nodes__set_share(struct graph_nodes *gn, struct mem_share *share)
{
	mem_hold__join(&gn->hold, share);
}

/* A node not held, made a new entry (zero but its ids); NULL when the table is full. */
static struct gnode *node__insert(struct graph_nodes *gn, __u64 node, __u64 orig)
{
	struct gnode *n;

	if (gn->len >= GRAPH_NODES_MAX || !mem_hold__allows(&gn->hold, GRAPH_NODE_BYTES))
		return NULL;
	n = grow__array(gn->n, &gn->cap, gn->len + 1, sizeof(*n), 64);
	if (!n)
		return NULL;
	gn->n = n;
	if (u64map__put(&gn->by_node, node, gn->len))
		return NULL;
	gn->n[gn->len] = (struct gnode){ .node = node, .orig = orig };
	mem_hold__add(&gn->hold, GRAPH_NODE_BYTES);
	return &gn->n[gn->len++];
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
	    !(n = node__insert(gn, node, orig))) {
		gn->st.refused++;
		return;
	}
	n->ts = ts;
	n->tid = tid;
	if (!orig)
		pending__push(gn, (__u32)(n - gn->n));
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

static __u64 node_id(__u32 graph, __u32 index)
{
	return (__u64)graph << 32 | index;
}

/* Held nodes graph:0, graph:1, ... in a row: how many (at most max). */
static __u32 row_len(const struct graph_nodes *gn, __u32 graph, __u32 max)
{
	__u32 n = 0;

	while (n < max && u64map__get(&gn->by_node, node_id(graph, n), NULL))
		n++;
	return n;
}

/*
 * Held clones graph:0, graph:1, ... in a row, cloned on thread tid, each
 * from the node at its place in one graph, and as many as that graph
 * holds in a row: how many (at most max); 0 when they are not (a record
 * lost on either side would shift every place after it).
 */
static __u32 copy_row(const struct graph_nodes *gn, __u32 graph, __u32 tid, __u32 max)
{
	__u32 n = 0, from = 0;
	__u64 idx;

	while (n < max && u64map__get(&gn->by_node, node_id(graph, n), &idx)) {
		const struct gnode *c = &gn->n[idx];

		if (!c->orig || c->tid != tid)
			break;
		if (!n)
			from = (__u32)(c->orig >> 32);
		if (c->orig != node_id(from, n))
			return 0;
		n++;
	}
	return n && n == row_len(gn, from, n + 1) ? n : 0;
}

#define LAYOUT_NONE UINT64_MAX /* by_exec: a graph whose layout was refused */

static const struct layout *layout__refuse(struct graph_nodes *gn, __u32 graph)
{
	if (!u64map__put(&gn->by_exec, graph, LAYOUT_NONE))
		gn->st.layouts_refused++;
	else if (!gn->layouts_full && (gn->layouts_full = true))
		gn->st.layouts_refused++;
	return NULL;
}

/*
 * The layout of executable graph `graph`'s child graphs (graph_nodes.h),
 * made once from the copies held: its own nodes, then graphs graph+1,
 * graph+2, ... while each is a whole copy on the same thread. At most
 * GRAPH_LAYOUT_NODES lookups a layout and GRAPH_LAYOUTS_MAX layouts (and
 * as many refusals) a process: a hostile ring's made-up graph ids cost a
 * bounded count of lookups in all. NULL: none.
 */
static const struct layout *layout__of(struct graph_nodes *gn, __u32 graph)
{
	__u32 counts[GRAPH_LAYOUT_GRAPHS], ngraphs = 0, budget = GRAPH_LAYOUT_NODES / 2, top, tid;
	struct layout *l;
	__u64 at;

	if (u64map__get(&gn->by_exec, graph, &at))
		return at == LAYOUT_NONE ? NULL : &gn->layouts[at];
	if (!u64map__get(&gn->by_node, node_id(graph, 0), &at) || !gn->n[at].orig)
		return NULL; /* not an executable graph this process instantiated */
	if (gn->nlayouts >= GRAPH_LAYOUTS_MAX)
		return layout__refuse(gn, graph);
	tid = gn->n[at].tid;
	top = copy_row(gn, graph, tid, budget);
	if (!top)
		return layout__refuse(gn, graph);
	budget -= top;
	while (ngraphs < GRAPH_LAYOUT_GRAPHS && budget && graph + ngraphs + 1 > graph) {
		__u32 c = copy_row(gn, graph + ngraphs + 1, tid, budget);

		if (!c)
			break;
		counts[ngraphs++] = c;
		budget -= c;
	}
	l = grow__array(gn->layouts, &gn->layouts_cap, gn->nlayouts + 1, sizeof(*l), 8);
	if (!l)
		return layout__refuse(gn, graph);
	gn->layouts = l;
	l = &gn->layouts[gn->nlayouts];
	*l = (struct layout){ .top = top, .ngraphs = ngraphs };
	if (ngraphs) {
		l->counts = malloc(ngraphs * sizeof(*l->counts));
		if (!l->counts)
			return layout__refuse(gn, graph);
		memcpy(l->counts, counts, ngraphs * sizeof(*l->counts));
	}
	if (u64map__put(&gn->by_exec, graph, gn->nlayouts)) {
		free(l->counts);
		return layout__refuse(gn, graph);
	}
	return &gn->layouts[gn->nlayouts++];
}

/* The clone an unknown node of an executable graph stands for, by its place; 0: none. */
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

/* The entry of node, held or found by its place (then kept as a clone of what it stands for). */
static bool node__find(struct graph_nodes *gn, __u64 node, __u64 *ret_idx)
{
	struct gnode *n;
	__u64 as;

	if (!node)
		return false;
	if (u64map__get(&gn->by_node, node, ret_idx))
		return true;
	if (!(as = embedded__find(gn, node)))
		return false;
	gn->st.embedded++;
	if ((n = node__insert(gn, node, as))) {
		*ret_idx = (__u64)(n - gn->n);
		return true;
	}
	return u64map__get(&gn->by_node, as, ret_idx); /* no room: the clone it stands for */
}

void graph_nodes__update(struct graph_nodes *gn, __u64 exec_node, __u64 from, __u64 ts)
{
	struct history *h;
	struct gnode *n;
	__u64 at, have;

	if (exec_node == from || !ts || !node__find(gn, exec_node, &at) || !gn->n[at].orig ||
	    !u64map__get(&gn->by_node, from, &have)) {
		gn->st.refused++;
		return;
	}
	n = &gn->n[at];
	if (!n->hist && gn->nhists < GRAPH_UPDATED_MAX && mem_hold__allows(&gn->hold, GRAPH_HISTORY_BYTES) &&
	    (h = grow__array_zeroed(gn->hists, &gn->hists_cap, gn->nhists + 1, sizeof(*h), 16))) {
		mem_hold__add(&gn->hold, GRAPH_HISTORY_BYTES);
		gn->hists = h;
		n->hist = (__u32)++gn->nhists;
	}
	if (n->hist) {
		h = &gn->hists[n->hist - 1];
		h->since[h->n % GRAPH_HISTORY] = ts;
		h->before[h->n % GRAPH_HISTORY] = n->orig;
		h->n++;
	} else {
		gn->st.history_lost++; /* no room: its earlier kernels will read as updated */
	}
	n->orig = from;
	gn->st.updated++;
}

void graph_nodes__set_params(struct graph_nodes *gn, __u64 exec_node)
{
	__u64 at;

	if (node__find(gn, exec_node, &at))
		gn->st.params_set++;
	else
		gn->st.refused++;
}

__u32 graph_nodes__find(struct graph_nodes *gn, __u64 node)
{
	__u64 idx;

	return node__find(gn, node, &idx) ? (__u32)idx + 1 : 0;
}

/* What n led to for a kernel launched at ts: orig, or what it was before the updates since. */
static __u64 orig_at(struct graph_nodes *gn, const struct gnode *n, __u64 ts)
{
	const struct history *h;
	__u64 orig = n->orig;
	__u32 k;

	if (!n->hist)
		return orig;
	h = &gn->hists[n->hist - 1];
	for (k = 0; k < h->n && k < GRAPH_HISTORY; k++) {
		__u32 i = (h->n - 1 - k) % GRAPH_HISTORY;

		if (ts >= h->since[i])
			return orig;
		orig = h->before[i];
	}
	if (h->n > GRAPH_HISTORY)
		gn->st.history_lost++; /* launched before the oldest update kept */
	return orig;
}

__u32 graph_nodes__origin(struct graph_nodes *gn, __u32 handle, __u64 ts)
{
	__u64 idx, node;

	if (!handle || handle > gn->len)
		return 0;
	idx = handle - 1;
	for (unsigned hop = 0; hop <= GRAPH_CLONE_HOPS; hop++) {
		const struct gnode *n = &gn->n[idx];

		if (!n->orig)
			return (__u32)idx + 1;
		node = orig_at(gn, n, ts);
		if (!u64map__get(&gn->by_node, node, &idx))
			return 0;
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
	sum->history_lost += one.history_lost;
}
