/* SPDX-License-Identifier: MIT */
/*
 * The backward passes of one process, for putting the launches of
 * PyTorch's autograd engine threads under the thread that called
 * backward() (docs/ARCHITECTURE.md, Backward passes). A pass begins with a
 * call into the engine (Engine::execute_with_graph_task) on the calling
 * thread, whose stack the loader unwinds as it does a launch's; the pass
 * is named by that begin event's time, and the engine threads' launches
 * name it too (the BPF program maps the engine's graph task, an address it
 * frees and reuses, to the pass begun on it last).
 *
 * A caller is (thread, stack), held once however many passes it begins: a
 * training loop's thousands of backward() calls from one line are one
 * caller. Everything comes from the profiled process and is bounded:
 * AUTOGRAD_CALLERS_MAX callers (a full table refuses new ones, counted,
 * and their launches keep their own stacks), and passes in two
 * generations of AUTOGRAD_PASSES_MAX (a pass is known for at least that
 * many begins after its own; an older one's launches are counted unknown).
 */
#ifndef GP_JOIN_AUTOGRAD_CALLERS_H
#define GP_JOIN_AUTOGRAD_CALLERS_H

#include <stdbool.h>
#include <linux/types.h>

#define AUTOGRAD_CALLERS_MAX 4096u
#define AUTOGRAD_PASSES_MAX 4096u

struct autograd_callers_stats {
	__u64 passes;       /* backward passes begun */
	__u64 nested;       /* of them, begun inside another pass's node */
	__u64 callers;      /* distinct (thread, stack) held */
	__u64 refused;      /* passes whose caller was not held: the table was full */
	__u64 restarts;     /* pass generations forgotten */
};

struct autograd_callers;

int autograd_callers__new(struct autograd_callers **ret);
void autograd_callers__destroy(struct autograd_callers *ac); /* NULL-safe */
/*
 * A pass begun by thread tid (its own namespace's id, as the marker names
 * it) whose stack is site (> 0): pass's launches go under it. Returns its
 * caller handle (> 0), or 0 when it was refused.
 */
__u32 autograd_callers__begin(struct autograd_callers *ac, __u64 pass, __u32 tid, __u32 site);
/*
 * A pass begun inside a node of another pass (a reentrant backward:
 * checkpointing's, on an engine thread) whose caller is handle: pass's
 * launches go under that outer caller, the thread that called backward().
 */
void autograd_callers__nest(struct autograd_callers *ac, __u64 pass, __u32 handle);
/* The caller of pass, or 0 when none is known (0, or a pass never begun here). */
__u32 autograd_callers__of(const struct autograd_callers *ac, __u64 pass);
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
