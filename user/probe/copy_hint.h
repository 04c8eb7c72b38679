/* SPDX-License-Identifier: MIT */
/*
 * How much stack each thread's launches copy (--unwind cfi). A fixed size
 * is either too small for the deepest stacks (cuBLASLt under PyTorch under
 * CPython ran past 32 KiB: the stack ends "[truncated: stack copy ended]")
 * or too costly for the shallow ones. So the loader sizes it per thread
 * from what the walks of its stacks read, starting from `initial`: a copy
 * that ended short doubles at once; a walk that needed more than 4/5 of the
 * size grows it by a quarter; a run of 512 launches that all needed under
 * half of it shrinks it to twice their deepest, 16 KiB at least. The BPF side reads
 * the size from the copy_hints map (and copies no more than the stack has).
 */
#ifndef GP_PROBE_COPY_HINT_H
#define GP_PROBE_COPY_HINT_H

#include <linux/types.h>
#include "user/util/u64map.h"

struct launch_probe;

struct copy_hints {
	struct launch_probe *lp;
	__u32 initial;         /* bytes copied for a thread without a hint (--stack-copy) */
	struct u64map tids;    /* tid -> packed state (copy_hint.c) */
	__u64 grown, shrunk;   /* map updates, for the loader: line */
};

/* lp NULL: sizes are kept, not sent (tests). */
int copy_hints__init(struct copy_hints *h, struct launch_probe *lp, __u32 initial);
void copy_hints__fini(struct copy_hints *h);
/*
 * One launch of tid whose stack copy needs need bytes (raw_stack__from_event;
 * 0: no copy, nothing learnt). Returns the size tid's copies have now.
 */
__u32 copy_hints__observe(struct copy_hints *h, __u32 tid, __u32 need);

#endif
