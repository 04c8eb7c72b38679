/* SPDX-License-Identifier: MIT */
/*
 * The CUDA-graph nodes of one process, for putting each replayed kernel
 * under the stack that captured it (docs/ARCHITECTURE.md, CUDA graphs).
 * The shim reports each node made (CUPTI's GRAPHNODE_CREATED: on the
 * calling thread, inside the call that made it) and each node cloned from
 * another (instantiation copies a graph's nodes into the executable graph,
 * whose kernel records name the copies). A node made by a launch during
 * stream capture takes the site of that launch: the launch event paired
 * (user/join) with the API record whose call, on the node's thread,
 * encloses the node's time.
 *
 * Everything here comes from the profiled process and is bounded: at most
 * GRAPH_NODES_MAX nodes and GRAPH_PENDING_MAX nodes waiting for their call,
 * kept by thread and time, so that a call looks only at its own thread's
 * nodes in its span (a hostile ring's made-up nodes cost other calls
 * nothing); a clone chain is followed GRAPH_CLONE_HOPS deep at most. Nodes are never
 * forgotten while the process lives (a graph captured once is replayed for
 * the rest of the run); a full table refuses new ones, counted.
 *
 * Changed graphs (measured on the H200, CUDA 13.0, docs/BENCHMARKS.md
 * "Graph updates and child graphs"):
 * - cuGraphExecUpdate keeps the executable graph's node ids and reports,
 *   per node, which node of the graph it was updated from it now runs: the
 *   node then leads to that one's site (graph_nodes__update).
 * - New parameters for an executable graph's node (cuGraphExecKernelNodeSetParams,
 *   and each node an update changes) are counted; the node keeps its site.
 * - A child graph's nodes run under ids no callback announces. Node ids are
 *   (graph id << 32 | index); instantiating a graph with child-graph nodes
 *   clones the graph into the executable's graph E (its own nodes E:0..n-1),
 *   then each embedded graph, depth first, into graphs E+1, E+2, ..., on the
 *   same thread; the kernels of embedded graph E+k run as E:(n + the nodes of
 *   E+1..E+k-1 + index). graph_nodes__origin finds an unknown node of E by
 *   that position (its layout made once per executable graph and bounded),
 *   and keeps what it found.
 */
#ifndef GP_JOIN_GRAPH_NODES_H
#define GP_JOIN_GRAPH_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define GRAPH_NODES_MAX (1u << 18)
#define GRAPH_PENDING_MAX 16384u
/*
 * A made node waits for its call this long at most (in the records' clock):
 * a call later than that pairing says its own would have paired by now.
 */
#define GRAPH_PENDING_NS (10ull * 1000 * 1000 * 1000)
#define GRAPH_CLONE_HOPS 8u
/* Executable graphs whose child graphs' nodes were laid out, per process. */
#define GRAPH_LAYOUTS_MAX 1024u
/* Updates of one executable graph's node remembered, and nodes updated with a history. */
#define GRAPH_HISTORY 8u
#define GRAPH_UPDATED_MAX 65536u
/* Graphs embedded in one executable graph, and lookups to lay it out (its copies and
 * their sources), at most. */
#define GRAPH_LAYOUT_GRAPHS 256u
#define GRAPH_LAYOUT_NODES 65536u
/*
 * What a node and an updated node's history are counted as against a
 * shared bound (graph_nodes__set_share): the entry, its map slots and the
 * arrays' room to grow. A process at its own bounds counts about 40 MiB.
 */
#define GRAPH_NODE_BYTES 128u
#define GRAPH_HISTORY_BYTES 256u

struct graph_nodes_stats {
	__u64 nodes;        /* made and cloned, held */
	__u64 bound;        /* made nodes that took a launch's site */
	__u64 unbound;      /* made nodes no paired call enclosed (built by the node API, or
			       the call's launch event never came): given up on */
	__u64 waiting;      /* made nodes still waiting for their call (a gauge) */
	__u64 refused;      /* nodes not held: the table was full, or a duplicate id */
	__u64 updated;      /* executable graphs' nodes an update pointed at another node */
	__u64 params_set;   /* executable graphs' nodes given new parameters: kept their site */
	__u64 embedded;     /* child graphs' nodes found by their position */
	__u64 layouts_refused; /* executable graphs whose child graphs were not laid out: the
				  bound, or copies not whole (a record lost) */
	__u64 history_lost; /* kernels launched before the oldest update of their node kept
			       (or updates kept with no history): they read as updated */
};

struct graph_nodes;
struct mem_share;

int graph_nodes__new(struct graph_nodes **ret);
void graph_nodes__destroy(struct graph_nodes *gn); /* NULL-safe; leaves its share */
/*
 * Joins the bound all processes' graph nodes share (user/util/mem_share.h),
 * once: past it, a process over its share holds no new node or history
 * (counted refused and history_lost, as at its own bounds), and the others
 * keep theirs. share must outlive gn.
 */
void graph_nodes__set_share(struct graph_nodes *gn, struct mem_share *share);
/*
 * A node made by thread tid at ts (orig 0), or cloned from orig (a node
 * held as made and not bound becomes that clone: instantiation reports
 * each copy made, then cloned).
 */
void graph_nodes__add(struct graph_nodes *gn, __u64 node, __u64 orig, __u32 tid, __u64 ts);
/*
 * A launch event of tid paired with its API record [start, end]: made nodes
 * of tid waiting inside that span take site and probe. A node no call takes
 * is given up (counted unbound) once a call of its thread starts
 * GRAPH_PENDING_NS after it, or a sweep (at most every 64 calls) finds the
 * calls that far past it, or when GRAPH_PENDING_MAX newer ones wait.
 * Returns how many took it.
 */
size_t graph_nodes__on_call(struct graph_nodes *gn, __u32 tid, __u64 start, __u64 end, __u64 site,
			    __u32 probe);
/*
 * An update (GP_GRAPH_NODE_UPDATED) at ts: the executable graph's node
 * exec_node now runs what node from holds: its kernels launched at ts or
 * later lead to from's site, those launched before to what it led to then
 * (its last GRAPH_HISTORY updates are kept). Refused (counted) when
 * exec_node is not a held (or found) clone or from is not held.
 */
void graph_nodes__update(struct graph_nodes *gn, __u64 exec_node, __u64 from, __u64 ts);
/* New parameters for an executable graph's node: counted; it keeps its site. */
void graph_nodes__set_params(struct graph_nodes *gn, __u64 exec_node);
/*
 * The node a kernel record names: a handle > 0, or 0 when unknown. A node
 * not held, of an executable graph with child graphs, is looked for by its
 * place (the top of this file) and kept as a clone of what it stands for.
 */
__u32 graph_nodes__find(struct graph_nodes *gn, __u64 node);
/*
 * The made node a kernel of node `handle` (graph_nodes__find), launched at
 * ts, comes from: the node itself, or the one its clones were copied from,
 * as updates had it at ts. A handle > 0, or 0 when unknown.
 */
__u32 graph_nodes__origin(struct graph_nodes *gn, __u32 handle, __u64 ts);
/* The site and probe of the launch that made origin; false when none is known (yet). */
bool graph_nodes__site(const struct graph_nodes *gn, __u32 origin, __u64 *ret_site,
		       __u32 *ret_probe);
/* Calls fn on every site held and stores what it returns (sites are renumbered). */
void graph_nodes__visit_sites(struct graph_nodes *gn, __u64 (*fn)(void *ctx, __u64 site),
			      void *ctx);
void graph_nodes__stats(const struct graph_nodes *gn, struct graph_nodes_stats *ret);
/* Adds gn's figures to *sum (NULL-safe: a process that made no node). */
void graph_nodes__add_stats(const struct graph_nodes *gn, struct graph_nodes_stats *sum);

#endif /* GP_JOIN_GRAPH_NODES_H */
