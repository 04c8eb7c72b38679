/* SPDX-License-Identifier: MIT */
/*
 * A launch event's stack, two steps apart: raw (cheap, per event: the
 * native return addresses from frame pointers or from unwinding the stack
 * copy with CFI, plus the Python frames the BPF walk copied), which is the
 * key that de-duplicates stacks; and resolved (once per distinct raw stack:
 * symbols, Python names and lines, Python frames placed where the
 * interpreter's evaluation loop runs them, and a reason where it stops
 * short).
 */
#ifndef GP_SESSION_STACKS_H
#define GP_SESSION_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "bpf/launch.h"
#include "bpf/python.h"
#include "user/profile/profile.h"
#include "user/symbolize/symbolize.h"

struct target;

/* Why the native part ended, beyond unwind.h's reasons. */
#define STACK_WHY_FP 0xff /* frame pointers: the end is found while resolving */
#define STACK_WHY_SKIPPED 0xfe /* no stack copy: the ring was over half full */
#define STACK_WHY_LOST 0xfd    /* a stack-cache hit whose entry was gone (never expected) */

#define RAW_PY_WALKED 0x80 /* the process runs CPython: its frames were walked */
#define RAW_PY_MAIN 0x40   /* ... and they are the main thread's, not the launcher's */
#define RAW_PY_STATUS 0x07

/* Packed: the first raw_stack__len() bytes are the de-duplication key. */
struct raw_stack {
	__u32 pid;
	__u16 n;          /* native return addresses in w[] */
	__u8 why;         /* enum unwind_stop, or STACK_WHY_FP */
	__u8 py_status;   /* enum gp_py_walk_status | RAW_PY_WALKED | RAW_PY_MAIN */
	__u32 npy;        /* Python frames after them: 2 words each */
	__u32 epoch;      /* the target's stack epoch it was met in (target.h) */
	__u64 w[GP_MAX_STACK + 2 * GP_PY_MAX_FRAMES];
};

size_t raw_stack__len(const struct raw_stack *r);

/* What a walk of a launch's copy found besides its raw stack. */
struct stack_walk_info {
	__u32 need;  /* stack bytes a copy needs to unwind such a stack in full (what the
			walk read; twice the copy when it ended short), 0 without a copy */
	__u32 ra_off[GP_MAX_STACK]; /* where the raw stack's w[i] was read, from sp;
				       UINT32_MAX where not known (no copy) */
};

/*
 * The raw stack of an event of size bytes (a hostile length: checked).
 * -EINVAL when the event's parts do not fit its size. ret_info may be NULL.
 */
int raw_stack__from_event(struct target *t, const struct gp_launch_event *e, size_t size,
			  struct raw_stack *ret, struct stack_walk_info *ret_info);
/* The copy's word at sp + off, for e of size bytes; false outside the copy. */
bool raw_stack__copy_word(const struct gp_launch_event *e, size_t size, __u64 off, __u64 *ret);

/* Storage for one resolved stack. */
struct resolved_stack {
	struct profile_frame f[GP_MAX_STACK + GP_PY_MAX_FRAMES + 2];
	struct symbolized_frame sym[GP_MAX_STACK];
	char note[2][96];
	char pyname[GP_PY_MAX_FRAMES][192];
	__u32 npyname;
	__u32 n;
	bool truncated;   /* frame pointers ran into unmapped memory */
};

/* Counters of stack resolution, for the counters line. */
struct stack_stats {
	__u64 sym_failed;       /* native frames without a mapping */
	__u64 py_unresolved;    /* Python frames whose code object could not be read */
	__u64 native_truncated; /* stacks ending short of a root (copy ended, no CFI, ...) */
	__u64 py_truncated;     /* Python walks that did not reach the oldest frame */
};

void raw_stack__resolve(struct target *t, const struct raw_stack *r, struct resolved_stack *ret,
			struct stack_stats *stats);

/*
 * Whether a raw stack's walk ended where the stack did, not where the copy
 * or the loader's knowledge ran out (end of copy, an address its maps did
 * not hold yet, no copy at all): only such a stack may stand for a key of
 * the stack cache, or prove a cached one wrong. flags: the event's.
 */
bool raw_stack__whole(const struct raw_stack *r, __u16 flags);

#endif
