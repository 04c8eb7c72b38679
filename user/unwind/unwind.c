/* SPDX-License-Identifier: MIT */
/*
 * The stack walk. Each step finds the rule for the current pc (pc - 1 for
 * return addresses: a call that ends a function, e.g. to a noreturn one,
 * returns one past the end of its FDE), computes the CFA, and reads the
 * return address and the saved rbp from the stack copy. Only three
 * registers are known at the start and only rbp can be recovered on the
 * way up; rules needing anything else stop the walk.
 *
 * Checks that keep a walk from wandering into garbage: the stack pointer
 * must grow strictly at every step, every read must lie inside the copy,
 * a frame-pointer step needs rbp inside the copy above sp, and a zero
 * return address ends the walk only when a CFI rule produced it.
 */
#include "user/unwind/unwind.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

const char *unwind_stop__str(enum unwind_stop why)
{
	switch (why) {
	case UNWIND_ROOT:
		return "root";
	case UNWIND_END_OF_COPY:
		return "stack copy ended";
	case UNWIND_UNMAPPED:
		return "unmapped address";
	case UNWIND_NO_CFI:
		return "no unwind info";
	case UNWIND_CFA_EXPR:
		return "unsupported unwind rule";
	case UNWIND_BAD_FRAME:
		return "bad frame";
	case UNWIND_MAX_FRAMES:
		return "too many frames";
	}
	return "unknown";
}

static bool stack__read(const struct unwind_stack *s, __u64 addr, __u64 *ret)
{
	if (addr < s->base || addr - s->base > s->len || s->len - (addr - s->base) < 8)
		return false;
	memcpy(ret, (const __u8 *)s->data + (addr - s->base), 8);
	if (s->used && *s->used < addr - s->base + 8)
		*s->used = (__u32)(addr - s->base + 8);
	return true;
}

/* addr + off without wrapping */
static bool addr__add(__u64 addr, __s64 off, __u64 *ret)
{
	__u64 mag = off < 0 ? (__u64)0 - (__u64)off : (__u64)off;

	if (off >= 0)
		return !__builtin_add_overflow(addr, mag, ret);
	if (addr < mag)
		return false;
	*ret = addr - mag;
	return true;
}

struct frame {
	__u64 ip, sp, bp;
	__u64 ra_at;   /* where ip was read, when a return address */
	bool bp_known;
	bool ip_is_ra; /* a return address: look its rule up at ip - 1 */
};

/*
 * Frame-pointer step for code without CFI: [rbp] is the caller's rbp and
 * [rbp + 8] the return address. 1: stepped; 0: stopped with *why.
 */
static int frame__step_fp(struct frame *f, const struct unwind_stack *s, enum unwind_stop *why)
{
	__u64 ra, bp;

	/*
	 * In code without frame pointers rbp is just a register: only a value
	 * that could be a frame of this stack above us is worth following.
	 */
	if (!f->bp_known || f->bp < f->sp || f->bp & 7 || !stack__read(s, f->bp, &bp) ||
	    !stack__read(s, f->bp + 8, &ra)) {
		*why = UNWIND_NO_CFI;
		return 0;
	}
	if (!ra) {
		*why = UNWIND_BAD_FRAME;
		return 0;
	}
	f->ra_at = f->bp + 8;
	f->sp = f->bp + 16;
	f->bp = bp;
	f->ip = ra;
	f->ip_is_ra = true;
	return 1;
}

/* Where f's pc is looked up: return addresses at the call, the byte before. */
static __u64 frame__pc(const struct frame *f)
{
	return f->ip_is_ra ? f->ip - 1 : f->ip;
}

static int frame__step_cfi(struct frame *f, const struct cfi_rule *r,
			   const struct unwind_stack *s, enum unwind_stop *why)
{
	__u64 cfa, ra, ra_at, bp, pc = frame__pc(f);

	switch (r->cfa_base) {
	case CFI_BASE_RSP:
		if (!addr__add(f->sp, r->cfa_off, &cfa))
			goto bad;
		break;
	case CFI_BASE_RBP:
		if (!f->bp_known || !addr__add(f->bp, r->cfa_off, &cfa))
			goto bad;
		break;
	case CFI_BASE_PLT:
		if (!addr__add(f->sp, r->cfa_off, &cfa))
			goto bad;
		if ((pc & 15) >= r->plt_split)
			cfa += 8;
		break;
	case CFI_BASE_DEREF_RBP:
		if (!f->bp_known || !addr__add(f->bp, r->cfa_off, &cfa))
			goto bad;
		if (!stack__read(s, cfa, &cfa)) {
			*why = UNWIND_END_OF_COPY;
			return 0;
		}
		break;
	default:
		*why = UNWIND_CFA_EXPR;
		return 0;
	}
	if (r->ra_rule == CFI_RA_UNDEFINED) {
		*why = UNWIND_ROOT;
		return 0;
	}
	if (r->ra_rule != CFI_RA_AT_CFA) {
		*why = UNWIND_CFA_EXPR;
		return 0;
	}
	if (cfa <= f->sp)
		goto bad; /* a frame that does not go up loops or goes astray */
	if (!addr__add(cfa, r->ra_off, &ra_at) || !stack__read(s, ra_at, &ra)) {
		*why = UNWIND_END_OF_COPY;
		return 0;
	}
	switch (r->rbp_rule) {
	case CFI_RBP_SAME:
		break;
	case CFI_RBP_AT_CFA:
		f->bp_known = addr__add(cfa, r->rbp_off, &bp) && stack__read(s, bp, &bp);
		f->bp = f->bp_known ? bp : 0;
		break;
	case CFI_RBP_IS_CFA:
		f->bp_known = addr__add(cfa, r->rbp_off, &f->bp);
		break;
	case CFI_RBP_AT_RBP:
		f->bp_known = f->bp_known && addr__add(f->bp, r->rbp_off, &bp) && stack__read(s, bp, &bp);
		f->bp = f->bp_known ? bp : 0;
		break;
	default:
		f->bp_known = false;
		break;
	}
	if (!ra) {
		/* Threads whose start carries no CFI end with a zero return address. */
		*why = UNWIND_ROOT;
		return 0;
	}
	f->sp = cfa;
	f->ip = ra;
	f->ra_at = ra_at;
	/* After a signal frame the next pc was interrupted, not called from. */
	f->ip_is_ra = !(r->flags & CFI_FLAG_SIGNAL_FRAME);
	return 1;
bad:
	*why = UNWIND_BAD_FRAME;
	return 0;
}

/*
 * How to step f: UNWIND_MEMO_RULE with *r, UNWIND_MEMO_FP (no CFI there:
 * frame pointers), or -1 when its pc is in no executable mapping. The memo,
 * when given, answers first and keeps what the lookup said.
 */
static int frame__rule(const struct frame *f, unwind_lookup_fn lookup, void *ctx,
		       struct unwind_memo *memo, struct cfi_rule *r)
{
	const struct cfi_table *t = NULL;
	__u64 bias = 0, pc = frame__pc(f);
	int kind = unwind_memo__get(memo, pc, r);

	if (kind)
		return kind;
	if (lookup(ctx, pc, &t, &bias) < 0)
		return -1;
	kind = t && cfi_table__find(t, pc - bias, r) == 0 ? UNWIND_MEMO_RULE : UNWIND_MEMO_FP;
	unwind_memo__put(memo, pc, kind, r);
	return kind;
}

/* 1: *f is the caller's frame; 0: the walk ends with *why. */
static int frame__step(struct frame *f, int kind, const struct cfi_rule *r,
		       const struct unwind_stack *s, enum unwind_stop *why)
{
	__u64 old_sp = f->sp;
	int stepped;

	if (kind == UNWIND_MEMO_RULE)
		stepped = frame__step_cfi(f, r, s, why);
	else
		stepped = frame__step_fp(f, s, why); /* JIT code, or code no FDE covers */
	if (stepped && f->sp <= old_sp) {
		*why = UNWIND_BAD_FRAME;
		return 0;
	}
	return stepped;
}

int unwind_memo_walk(const struct unwind_regs *regs, const struct unwind_stack *stack,
		     unwind_lookup_fn lookup, void *ctx, struct unwind_memo *memo, __u64 *pcs,
		     int max, enum unwind_stop *ret_why)
{
	struct cfi_rule r;
	enum unwind_stop why;
	struct frame f;
	int n = 0, kind;

	if (!regs || !stack || (!stack->data && stack->len) || !lookup || !pcs || max < 1 ||
	    !ret_why)
		return -EINVAL;
	f = (struct frame){
		.ip = regs->ip, .sp = regs->sp, .bp = regs->bp, .bp_known = true,
	};
	if (stack->ra_at)
		stack->ra_at[n] = 0;
	pcs[n++] = f.ip;
	kind = frame__rule(&f, lookup, ctx, memo, &r);
	if (kind < 0) {
		*ret_why = UNWIND_UNMAPPED;
		return n;
	}
	for (;;) {
		if (!frame__step(&f, kind, &r, stack, &why))
			break;
		/* A return address in no mapping is garbage: it is not reported. */
		kind = frame__rule(&f, lookup, ctx, memo, &r);
		if (kind < 0) {
			why = UNWIND_UNMAPPED;
			break;
		}
		if (n == max) {
			why = UNWIND_MAX_FRAMES;
			break;
		}
		if (stack->ra_at)
			stack->ra_at[n] = f.ra_at;
		pcs[n++] = f.ip;
	}
	*ret_why = why;
	return n;
}

int unwind(const struct unwind_regs *regs, const struct unwind_stack *stack,
	   unwind_lookup_fn lookup, void *ctx, __u64 *pcs, int max, enum unwind_stop *ret_why)
{
	return unwind_memo_walk(regs, stack, lookup, ctx, NULL, pcs, max, ret_why);
}
