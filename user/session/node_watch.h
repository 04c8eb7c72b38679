/* SPDX-License-Identifier: MIT */
/*
 * When the autograd engines' node probe (a trap a node, hundreds a step)
 * is needed: a launch reads its node's pass where the node's caller keeps
 * the task (bpf/launch.bpf.c: node_pass), so once every thread takes its
 * nodes at calls already seen the probe can go, and it comes back when a
 * thread may take nodes at a call not seen: a target's engine newly probed,
 * an engine's device thread launching in no node known, or a pass begun
 * inside a node (the BPF counters GP_BPF_AG_*). Plain logic, no probes:
 * the session applies its answer (launch_probe__quiet_nodes).
 */
#ifndef GP_SESSION_NODE_WATCH_H
#define GP_SESSION_NODE_WATCH_H

#include <stdbool.h>
#include <linux/types.h>

/* How long nodes must come at known calls only, and how many, before the probe goes. */
#define NODE_WATCH_QUIET_NS 2000000000ull
#define NODE_WATCH_QUIET_NODES 64

struct node_watch {
	bool quiet;              /* the answer: the node probe away */
	bool never;              /* GPUPROBE_NODE_PROBE=always: it stays */
	__u64 nodes, learned, unlearned; /* the counters at the last look */
	__u64 steady_since;      /* when a node was last learnt (or the probe wanted back) */
	__u64 steady_nodes;      /* nodes taken since then, all at known calls */
	__u64 quiets, wakes;     /* times the probe went, and came back */
};

void node_watch__init(struct node_watch *w, bool never, __u64 now);
/*
 * A look at the counters (totals so far) at now; engine_new: a target's
 * engine was probed since the last look. Returns whether the probe should
 * be away from now on.
 */
bool node_watch__look(struct node_watch *w, __u64 now, __u64 nodes, __u64 learned,
		      __u64 unlearned, bool engine_new);

#endif
