/* SPDX-License-Identifier: MIT */
/* The CUDA-graph nodes of one process (graph_nodes.h). */
#include "user/join/graph_nodes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/util/grow.h"
#include "user/util/u64map.h"

struct gnode {
	__u64 node, orig; /* orig: the node it was cloned from; 0: made here */
	__u64 ts;         /* made: when */
	__u64 site;       /* made and bound: the site of the launch that made it; 0: none */
	__u32 tid;
	__u32 probe;
};

struct graph_nodes {
	struct u64map by_node;  /* node id -> index in n */
	struct gnode *n;
	size_t len, cap;
	__u32 *pending;         /* indices of made nodes waiting for their call */
	size_t npending;
	struct graph_nodes_stats st;
};

int graph_nodes__new(struct graph_nodes **ret)
{
	struct graph_nodes *gn = calloc(1, sizeof(*gn));

	if (!gn)
		return -ENOMEM;
	gn->pending = calloc(GRAPH_PENDING_MAX, sizeof(*gn->pending));
	if (!gn->pending || u64map__init(&gn->by_node, GRAPH_NODES_MAX)) {
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
	free(gn->n);
	free(gn->pending);
	free(gn);
}

/* Drops from the waiting list the nodes that wait for nothing now (cloned since, or bound). */
static void pending__compact(struct graph_nodes *gn)
{
	size_t keep = 0;

	for (size_t i = 0; i < gn->npending; i++) {
		const struct gnode *n = &gn->n[gn->pending[i]];

		if (!n->orig && !n->site)
			gn->pending[keep++] = gn->pending[i];
	}
	gn->npending = keep;
}

/*
 * Full of nodes still waiting: the older half give up (built by the node
 * API, or their call's launch event lost: no call will take them).
 */
static void pending__push(struct graph_nodes *gn, __u32 idx)
{
	if (gn->npending == GRAPH_PENDING_MAX)
		pending__compact(gn);
	if (gn->npending == GRAPH_PENDING_MAX) {
		size_t half = GRAPH_PENDING_MAX / 2;

		gn->st.unbound += half;
		memmove(gn->pending, gn->pending + half, (GRAPH_PENDING_MAX - half) * sizeof(*gn->pending));
		gn->npending -= half;
	}
	gn->pending[gn->npending++] = idx;
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
	size_t keep = 0, took = 0;

	for (size_t i = 0; i < gn->npending; i++) {
		struct gnode *n = &gn->n[gn->pending[i]];

		if (n->orig)
			continue; /* a clone since: waits for nothing */
		if (n->tid == tid && n->ts >= start && n->ts <= end) {
			n->site = site;
			n->probe = probe;
			gn->st.bound++;
			took++;
			continue;
		}
		/* Its own call would have paired long before this one: none will. */
		if (n->ts + GRAPH_PENDING_NS < start) {
			gn->st.unbound++;
			continue;
		}
		gn->pending[keep++] = gn->pending[i];
	}
	gn->npending = keep;
	return took;
}

__u32 graph_nodes__origin(const struct graph_nodes *gn, __u64 node)
{
	__u64 idx;

	for (unsigned hop = 0; hop <= GRAPH_CLONE_HOPS; hop++) {
		if (!node || !u64map__get(&gn->by_node, node, &idx))
			return 0;
		if (!gn->n[idx].orig)
			return (__u32)idx + 1;
		node = gn->n[idx].orig;
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
}
