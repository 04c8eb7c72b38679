/* SPDX-License-Identifier: MIT */
/*
 * The backward passes of one process, for putting the launches of
 * PyTorch's autograd engine threads under the thread that called
 * backward() (docs/ARCHITECTURE.md, Backward passes). A pass begins with a
 * call into the engine (Engine::execute_with_graph_task) on the calling
 * thread, whose stack the loader unwinds as it does a launch's; the engine
 * threads' launches name the pass (its graph task's address, which the
 * engine frees and reuses), and go under the caller of its latest begin.
 *
 * A caller is (thread, stack), held once however many passes it begins: a
 * training loop's thousands of backward() calls from one line are one
 * caller. Everything comes from the profiled process and is bounded:
 * AUTOGRAD_CALLERS_MAX callers (a full table refuses new ones, counted,
 * and their launches keep their own stacks) and AUTOGRAD_TASKS_MAX graph
 * tasks (past it the table starts over: a pass begun since still names its
 * caller; one begun before is counted unknown).
 */
#ifndef GP_JOIN_AUTOGRAD_CALLERS_H
#define GP_JOIN_AUTOGRAD_CALLERS_H

#include <stdbool.h>
#include <linux/types.h>

#define AUTOGRAD_CALLERS_MAX 4096u
#define AUTOGRAD_TASKS_MAX 4096u

struct autograd_callers_stats {
	__u64 passes;       /* backward passes begun */
	__u64 nested;       /* of them, begun inside another pass's node */
	__u64 callers;      /* distinct (thread, stack) held */
	__u64 refused;      /* passes whose caller was not held: the table was full */
	__u64 restarts;     /* times the graph-task table started over */
};

struct autograd_callers;

int autograd_callers__new(struct autograd_callers **ret);
void autograd_callers__destroy(struct autograd_callers *ac); /* NULL-safe */
/*
 * A pass on graph task gt begun by thread tid (its own namespace's id, as
 * the marker names it) whose stack is site (> 0): gt's launches go under it
 * from now on. Returns its caller handle (> 0), or 0 when it was refused.
 */
__u32 autograd_callers__begin(struct autograd_callers *ac, __u64 gt, __u32 tid, __u32 site);
/*
 * A pass on gt begun inside a node of another pass (a reentrant backward:
 * checkpointing's, on an engine thread) whose caller is handle: gt's
 * launches go under that outer caller, the thread that called backward().
 */
void autograd_callers__nest(struct autograd_callers *ac, __u64 gt, __u32 handle);
/* The caller of gt's latest begin, or 0 when none is known. */
__u32 autograd_callers__of(const struct autograd_callers *ac, __u64 gt);
/* A handle's thread and stack; false for an unknown handle. */
bool autograd_callers__get(const struct autograd_callers *ac, __u32 handle, __u32 *ret_tid,
			   __u32 *ret_site);
/*
 * Calls fn on every caller's site and stores what it returns (sites are
 * renumbered). A caller whose site became 0 stays, naming no stack.
 */
void autograd_callers__visit_sites(struct autograd_callers *ac, __u64 (*fn)(void *ctx, __u64 site),
				   void *ctx);
void autograd_callers__stats(const struct autograd_callers *ac, struct autograd_callers_stats *ret);
/* Adds ac's figures to *sum (NULL-safe: a process that began no pass). */
void autograd_callers__add_stats(const struct autograd_callers *ac,
				 struct autograd_callers_stats *sum);

#endif /* GP_JOIN_AUTOGRAD_CALLERS_H */
