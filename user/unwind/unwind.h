/* SPDX-License-Identifier: MIT */
/*
 * User-space stack walk over a copy of the top of a thread's stack (taken by
 * a BPF uprobe: rip, rsp, rbp and up to some KiB from rsp up), with the CFI
 * tables of the files mapped in the process, falling back to frame pointers
 * in code that has no CFI (JIT code, perf trampolines). x86-64 only.
 *
 * A wrong stack is worse than a short one: the walk stops, and says why,
 * at the first frame it cannot step with confidence.
 */
#ifndef GP_UNWIND_UNWIND_H
#define GP_UNWIND_UNWIND_H

#include <linux/types.h>

#include "user/unwind/cfi.h"
#include "user/unwind/memo.h"

struct unwind_regs {
	__u64 ip, sp, bp;
};

/* A copy of target memory [base, base + len); base is normally regs.sp. */
struct unwind_stack {
	__u64 base;
	const void *data;
	__u32 len;
	__u32 *used;      /* optional: raised to the end offset of every read */
	__u64 *ra_at;     /* optional, as many as pcs: where each return address was
			     read (ra_at[0], for regs.ip, is 0) */
};

/*
 * Maps an instruction address of the target to the CFI of the file mapped
 * there. Contract:
 *   - ip in no executable mapping: return -ENOENT (any negative: the walk
 *     stops with UNWIND_UNMAPPED); outputs untouched.
 *   - ip in an executable mapping: return 0, *ret_table = the file's table,
 *     or NULL when it has none (anonymous JIT code, a file without CFI:
 *     the walk steps with frame pointers there), and *ret_bias such that
 *     the file vaddr is ip - bias.
 * The table must stay valid until unwind() returns.
 */
typedef int (*unwind_lookup_fn)(void *ctx, __u64 ip, const struct cfi_table **ret_table,
				__u64 *ret_bias);

enum unwind_stop {
	UNWIND_ROOT,        /* the outermost frame: return address undefined (or 0 by rule) */
	UNWIND_END_OF_COPY, /* the next frame lies beyond the stack copy */
	UNWIND_UNMAPPED,    /* an address in no executable mapping */
	UNWIND_NO_CFI,      /* no CFI and no usable frame pointer */
	UNWIND_CFA_EXPR,    /* a rule we do not evaluate (DWARF expression, other register) */
	UNWIND_BAD_FRAME,   /* a step that does not go up the stack, or a bogus address */
	UNWIND_MAX_FRAMES,  /* the caller's array is full */
};

/* A short reason, for a "[truncated: ...]" frame. */
const char *unwind_stop__str(enum unwind_stop why);

/*
 * Walks from regs, writing at most max pcs: pcs[0] = regs->ip, then return
 * addresses as found on the stack (callers subtract 1 to symbolize them).
 * Returns the number written (>= 1) and *ret_why, why the walk ended; -EINVAL
 * on bad arguments.
 */
int unwind(const struct unwind_regs *regs, const struct unwind_stack *stack,
	   unwind_lookup_fn lookup, void *ctx, __u64 *pcs, int max, enum unwind_stop *ret_why);
/*
 * The same, with memo (may be NULL) answering for the addresses earlier
 * walks looked up, and keeping what this one looks up. Only for one
 * process's walks, while the mappings lookup reads stay the same (memo.h).
 */
int unwind_memo_walk(const struct unwind_regs *regs, const struct unwind_stack *stack,
		     unwind_lookup_fn lookup, void *ctx, struct unwind_memo *memo, __u64 *pcs,
		     int max, enum unwind_stop *ret_why);

#endif /* GP_UNWIND_UNWIND_H */
