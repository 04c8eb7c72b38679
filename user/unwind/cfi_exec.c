/* SPDX-License-Identifier: MIT */
/*
 * CFA programs run into rows (cfi_exec.h). A rule the walker cannot use
 * (a CFA behind an expression, a return address in a register) is still a
 * row: it stops the walk there, marked, rather than guess.
 */
#include "user/unwind/cfi_exec.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define CFI_STATE_DEPTH 16         /* DW_CFA_remember_state nesting */

enum {
	DW_CFA_nop = 0x00,
	DW_CFA_set_loc = 0x01,
	DW_CFA_advance_loc1 = 0x02,
	DW_CFA_advance_loc2 = 0x03,
	DW_CFA_advance_loc4 = 0x04,
	DW_CFA_offset_extended = 0x05,
	DW_CFA_restore_extended = 0x06,
	DW_CFA_undefined = 0x07,
	DW_CFA_same_value = 0x08,
	DW_CFA_register = 0x09,
	DW_CFA_remember_state = 0x0a,
	DW_CFA_restore_state = 0x0b,
	DW_CFA_def_cfa = 0x0c,
	DW_CFA_def_cfa_register = 0x0d,
	DW_CFA_def_cfa_offset = 0x0e,
	DW_CFA_def_cfa_expression = 0x0f,
	DW_CFA_expression = 0x10,
	DW_CFA_offset_extended_sf = 0x11,
	DW_CFA_def_cfa_sf = 0x12,
	DW_CFA_def_cfa_offset_sf = 0x13,
	DW_CFA_val_offset = 0x14,
	DW_CFA_val_offset_sf = 0x15,
	DW_CFA_val_expression = 0x16,
	DW_CFA_GNU_args_size = 0x2e,
	DW_CFA_GNU_negative_offset_extended = 0x2f,
	DW_CFA_advance_loc = 0x40, /* high two bits */
	DW_CFA_offset = 0x80,
	DW_CFA_restore = 0xc0,
};

enum {
	DW_OP_lit0 = 0x30,
	DW_OP_lit3 = 0x33,
	DW_OP_lit15 = 0x3f,
	DW_OP_and = 0x1a,
	DW_OP_plus = 0x22,
	DW_OP_shl = 0x24,
	DW_OP_ge = 0x2a,
	DW_OP_breg6 = 0x76,
	DW_OP_breg7 = 0x77,
	DW_OP_deref = 0x06,
	DW_OP_breg16 = 0x80,
};

static bool fits_s32(__s64 v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/* Is the block ld's PLT CFA: rsp + N + (((rip & 15) >= K) << 3)? */
static bool cfa_expr__is_plt(const __u8 *p, __u64 len, __s64 *ret_off, __u8 *ret_split)
{
	static const __u8 tail[] = { DW_OP_lit3, DW_OP_shl, DW_OP_plus };
	struct cfi_cur c = { p, p + len };
	__u8 op, lit;
	__s64 off, rip_off;

	if (!cfi_cur__u8(&c, &op) || op != DW_OP_breg7 || !cfi_cur__sleb(&c, &off) ||
	    !cfi_cur__u8(&c, &op) || op != DW_OP_breg16 || !cfi_cur__sleb(&c, &rip_off) || rip_off ||
	    !cfi_cur__u8(&c, &op) || op != DW_OP_lit15 || !cfi_cur__u8(&c, &op) || op != DW_OP_and ||
	    !cfi_cur__u8(&c, &lit) || lit < DW_OP_lit0 || lit > DW_OP_lit15 ||
	    !cfi_cur__u8(&c, &op) || op != DW_OP_ge)
		return false;
	if ((size_t)(c.end - c.p) != sizeof(tail) || memcmp(c.p, tail, sizeof(tail)))
		return false;
	*ret_off = off;
	*ret_split = (__u8)(lit - DW_OP_lit0);
	return true;
}

/* Is the block "DW_OP_breg6 off" followed by deref (want_deref) or nothing? */
static bool expr__is_rbp_rel(const __u8 *p, __u64 len, bool want_deref, __s64 *ret_off)
{
	struct cfi_cur c = { p, p + len };
	__u8 op;
	__s64 off;

	if (!cfi_cur__u8(&c, &op) || op != DW_OP_breg6 || !cfi_cur__sleb(&c, &off))
		return false;
	if (want_deref && (!cfi_cur__u8(&c, &op) || op != DW_OP_deref))
		return false;
	if (c.p != c.end)
		return false;
	*ret_off = off;
	return true;
}

static void cfa_state__rule(const struct cfa_state *st, __u8 flags, struct cfi_rule *r)
{
	memset(r, 0, sizeof(*r)); /* padding too: rules are hashed and compared as bytes */
	r->flags = flags;
	r->cfa_base = CFI_BASE_NONE;
	if (st->cfa_how == CFA_REG && fits_s32(st->cfa_off) &&
	    (st->cfa_reg == REG_RSP || st->cfa_reg == REG_RBP)) {
		r->cfa_base = st->cfa_reg == REG_RSP ? CFI_BASE_RSP : CFI_BASE_RBP;
		r->cfa_off = (__s32)st->cfa_off;
	} else if (st->cfa_how == CFA_PLT && fits_s32(st->cfa_off)) {
		r->cfa_base = CFI_BASE_PLT;
		r->cfa_off = (__s32)st->cfa_off;
		r->plt_split = st->plt_split;
	} else if (st->cfa_how == CFA_DEREF_RBP && fits_s32(st->cfa_off)) {
		r->cfa_base = CFI_BASE_DEREF_RBP;
		r->cfa_off = (__s32)st->cfa_off;
	}
	/* rbp kept in another register or behind an expression is as good as lost. */
	r->rbp_rule = CFI_RBP_UNDEFINED;
	if (st->rbp.how == REG_SAME) {
		r->rbp_rule = CFI_RBP_SAME;
	} else if (st->rbp.how == REG_OFFSET && fits_s32(st->rbp.off)) {
		r->rbp_rule = CFI_RBP_AT_CFA;
		r->rbp_off = (__s32)st->rbp.off;
	} else if (st->rbp.how == REG_VAL_OFFSET && fits_s32(st->rbp.off)) {
		r->rbp_rule = CFI_RBP_IS_CFA;
		r->rbp_off = (__s32)st->rbp.off;
	} else if (st->rbp.how == REG_AT_RBP && fits_s32(st->rbp.off)) {
		r->rbp_rule = CFI_RBP_AT_RBP;
		r->rbp_off = (__s32)st->rbp.off;
	}
	/* An unspecified return address ("same value") would loop on one pc. */
	r->ra_rule = CFI_RA_UNSUPPORTED;
	if (st->ra.how == REG_OFFSET && fits_s32(st->ra.off)) {
		r->ra_rule = CFI_RA_AT_CFA;
		r->ra_off = (__s32)st->ra.off;
	} else if (st->ra.how == REG_UNDEF) {
		r->ra_rule = CFI_RA_UNDEFINED;
	}
}

struct cfi_exec {
	struct cfi_builder *b;
	const struct cfi_section *s;
	const struct cfi_cie *cie;
	const struct cfa_state *init; /* DW_CFA_restore's target */
	struct cfa_state st;
	struct cfa_state stack[CFI_STATE_DEPTH];
	int depth;
	__u64 loc, pc_end;
	bool in_cie; /* a CIE's initial instructions: no row, no location */
	bool done;   /* reached pc_end */
};

static int cfi_exec__row(struct cfi_exec *x)
{
	struct cfi_rule r;
	__u32 idx;
	int err;

	cfa_state__rule(&x->st, x->cie->flags, &r);
	err = cfi_builder__intern(x->b, &r, &idx);
	if (err)
		return err;
	return cfi_builder__emit(x->b, x->loc, idx);
}

static int cfi_exec__advance_to(struct cfi_exec *x, __u64 loc)
{
	int err;

	if (x->in_cie || loc < x->loc)
		return -EINVAL; /* locations only grow */
	if (loc == x->loc)
		return 0;
	err = cfi_exec__row(x);
	if (err)
		return err;
	x->loc = loc;
	if (loc >= x->pc_end)
		x->done = true;
	return 0;
}

static int cfi_exec__advance(struct cfi_exec *x, __u64 delta)
{
	__u64 d, loc;

	if (__builtin_mul_overflow(delta, x->cie->code_align, &d) ||
	    __builtin_add_overflow(x->loc, d, &loc))
		return -EINVAL;
	return cfi_exec__advance_to(x, loc);
}

static struct reg_rule *cfi_exec__reg(struct cfi_exec *x, __u64 reg)
{
	if (reg == REG_RBP)
		return &x->st.rbp;
	if (reg == x->cie->ra_reg)
		return &x->st.ra;
	return NULL; /* not needed to walk with rip, rsp and rbp */
}

static int cfi_exec__set(struct cfi_exec *x, __u64 reg, __u8 how, __s64 off)
{
	struct reg_rule *rr = cfi_exec__reg(x, reg);

	if (rr) {
		rr->how = how;
		rr->off = off;
	}
	return 0;
}

/* factored offset: off * data_align, checked */
static int cfi_exec__set_factored(struct cfi_exec *x, __u64 reg, __u8 how, __s64 factor)
{
	__s64 off;

	if (__builtin_mul_overflow(factor, x->cie->data_align, &off))
		return -EINVAL;
	return cfi_exec__set(x, reg, how, off);
}

static int cfi_exec__restore(struct cfi_exec *x, __u64 reg)
{
	struct reg_rule *rr = cfi_exec__reg(x, reg);

	if (!rr)
		return 0;
	if (x->in_cie) /* the rule before any instruction */
		*rr = (struct reg_rule){ .how = REG_SAME };
	else
		*rr = reg == REG_RBP ? x->init->rbp : x->init->ra;
	return 0;
}

/* The location ops: set_loc and the advances with an operand. */
static int cfi_exec__loc_op(struct cfi_exec *x, struct cfi_cur *c, __u8 op)
{
	__u64 u;
	__u8 b8;
	__u16 b16;
	__u32 b32;

	switch (op) {
	case DW_CFA_set_loc:
		if (x->in_cie || !cfi_cur__ptr(c, x->s, x->cie->fde_enc, false, &u))
			return -EINVAL;
		return cfi_exec__advance_to(x, u);
	case DW_CFA_advance_loc1:
		if (!cfi_cur__u8(c, &b8))
			return -EINVAL;
		return cfi_exec__advance(x, b8);
	case DW_CFA_advance_loc2:
		if (!cfi_cur__bytes(c, &b16, 2))
			return -EINVAL;
		return cfi_exec__advance(x, b16);
	default: /* DW_CFA_advance_loc4 */
		if (!cfi_cur__u32(c, &b32))
			return -EINVAL;
		return cfi_exec__advance(x, b32);
	}
}

/* The register rules saved at an offset from the CFA, or given as one. */
static int cfi_exec__offset_op(struct cfi_exec *x, struct cfi_cur *c, __u8 op)
{
	__u64 reg, u;
	__s64 s;

	switch (op) {
	case DW_CFA_offset_extended:
	case DW_CFA_val_offset:
		if (!cfi_cur__uleb(c, &reg) || !cfi_cur__uleb(c, &u) || u > INT64_MAX)
			return -EINVAL;
		return cfi_exec__set_factored(x, reg,
					      op == DW_CFA_offset_extended ? REG_OFFSET :
									     REG_VAL_OFFSET,
					      (__s64)u);
	case DW_CFA_offset_extended_sf:
	case DW_CFA_val_offset_sf:
		if (!cfi_cur__uleb(c, &reg) || !cfi_cur__sleb(c, &s))
			return -EINVAL;
		return cfi_exec__set_factored(x, reg,
					      op == DW_CFA_offset_extended_sf ? REG_OFFSET :
										REG_VAL_OFFSET,
					      s);
	default: /* DW_CFA_GNU_negative_offset_extended */
		if (!cfi_cur__uleb(c, &reg) || !cfi_cur__uleb(c, &u) || u > INT64_MAX)
			return -EINVAL;
		return cfi_exec__set_factored(x, reg, REG_OFFSET, -(__s64)u);
	}
}

/* The other register rules: restored, undefined, unchanged, elsewhere. */
static int cfi_exec__reg_op(struct cfi_exec *x, struct cfi_cur *c, __u8 op)
{
	__u64 reg, reg2, len;
	__s64 s;

	if (!cfi_cur__uleb(c, &reg))
		return -EINVAL;
	switch (op) {
	case DW_CFA_restore_extended:
		return cfi_exec__restore(x, reg);
	case DW_CFA_undefined:
		return cfi_exec__set(x, reg, REG_UNDEF, 0);
	case DW_CFA_same_value:
		return cfi_exec__set(x, reg, REG_SAME, 0);
	case DW_CFA_register:
		if (!cfi_cur__uleb(c, &reg2))
			return -EINVAL;
		return cfi_exec__set(x, reg, reg == reg2 ? REG_SAME : REG_OTHER, 0);
	default: /* DW_CFA_expression, DW_CFA_val_expression */
		if (!cfi_cur__uleb(c, &len) || len > (__u64)(c->end - c->p))
			return -EINVAL;
		/* rbp saved at an address relative to rbp itself (stack realignment) */
		if (op == DW_CFA_expression && reg == REG_RBP && expr__is_rbp_rel(c->p, len, false, &s)) {
			c->p += len;
			return cfi_exec__set(x, reg, REG_AT_RBP, s);
		}
		c->p += len;
		return cfi_exec__set(x, reg, REG_OTHER, 0);
	}
}

/* The CFA as an expression: the two forms a walk can compute, or none. */
static int cfi_exec__cfa_expr(struct cfi_exec *x, struct cfi_cur *c)
{
	__u64 len;
	__s64 s;
	__u8 b8;

	if (!cfi_cur__uleb(c, &len) || len > (__u64)(c->end - c->p))
		return -EINVAL;
	if (cfa_expr__is_plt(c->p, len, &s, &b8)) {
		x->st.cfa_how = CFA_PLT;
		x->st.cfa_off = s;
		x->st.plt_split = b8;
	} else if (expr__is_rbp_rel(c->p, len, true, &s)) {
		x->st.cfa_how = CFA_DEREF_RBP;
		x->st.cfa_off = s;
	} else {
		x->st.cfa_how = CFA_EXPR;
	}
	c->p += len;
	return 0;
}

/* The CFA rules: a register and an offset, either or both. */
static int cfi_exec__cfa_op(struct cfi_exec *x, struct cfi_cur *c, __u8 op)
{
	__u64 reg = x->st.cfa_reg, u;
	__s64 s;

	switch (op) {
	case DW_CFA_def_cfa:
		if (!cfi_cur__uleb(c, &reg) || !cfi_cur__uleb(c, &u) || u > INT64_MAX)
			return -EINVAL;
		s = (__s64)u;
		break;
	case DW_CFA_def_cfa_sf:
		if (!cfi_cur__uleb(c, &reg) || !cfi_cur__sleb(c, &s) ||
		    __builtin_mul_overflow(s, x->cie->data_align, &s))
			return -EINVAL;
		break;
	case DW_CFA_def_cfa_register:
		if (!cfi_cur__uleb(c, &reg))
			return -EINVAL;
		x->st.cfa_how = CFA_REG;
		x->st.cfa_reg = reg;
		return 0;
	case DW_CFA_def_cfa_offset:
		if (!cfi_cur__uleb(c, &u) || u > INT64_MAX)
			return -EINVAL;
		s = (__s64)u;
		/* Only meaningful on a register CFA; an expression keeps its own. */
		if (x->st.cfa_how == CFA_REG)
			x->st.cfa_off = s;
		return 0;
	default: /* DW_CFA_def_cfa_offset_sf */
		if (!cfi_cur__sleb(c, &s) || __builtin_mul_overflow(s, x->cie->data_align, &s))
			return -EINVAL;
		if (x->st.cfa_how == CFA_REG)
			x->st.cfa_off = s;
		return 0;
	}
	x->st.cfa_how = CFA_REG;
	x->st.cfa_reg = reg;
	x->st.cfa_off = s;
	return 0;
}

/* remember_state / restore_state: the CFA goes with the registers, as GCC's epilogues expect. */
static int cfi_exec__state_op(struct cfi_exec *x, __u8 op)
{
	if (op == DW_CFA_remember_state) {
		if (x->depth >= CFI_STATE_DEPTH)
			return -E2BIG;
		x->stack[x->depth++] = x->st;
		return 0;
	}
	if (!x->depth)
		return -EINVAL;
	x->st = x->stack[--x->depth];
	return 0;
}

/* The ops with an operand in their low six bits. */
static int cfi_exec__low_op(struct cfi_exec *x, struct cfi_cur *c, __u8 op)
{
	__u64 u;

	switch (op & 0xc0) {
	case DW_CFA_advance_loc:
		return cfi_exec__advance(x, op & 0x3f);
	case DW_CFA_offset:
		if (!cfi_cur__uleb(c, &u) || u > INT64_MAX)
			return -EINVAL;
		return cfi_exec__set_factored(x, op & 0x3f, REG_OFFSET, (__s64)u);
	default: /* DW_CFA_restore */
		return cfi_exec__restore(x, op & 0x3f);
	}
}

static int cfi_exec__one(struct cfi_exec *x, struct cfi_cur *c)
{
	__u64 u;
	__u8 op;

	if (!x->b->work_left)
		return -E2BIG;
	x->b->work_left--;
	if (!cfi_cur__u8(c, &op))
		return -EINVAL;
	if (op & 0xc0)
		return cfi_exec__low_op(x, c, op);
	switch (op) {
	case DW_CFA_nop:
		return 0;
	case DW_CFA_set_loc:
	case DW_CFA_advance_loc1:
	case DW_CFA_advance_loc2:
	case DW_CFA_advance_loc4:
		return cfi_exec__loc_op(x, c, op);
	case DW_CFA_offset_extended:
	case DW_CFA_val_offset:
	case DW_CFA_offset_extended_sf:
	case DW_CFA_val_offset_sf:
	case DW_CFA_GNU_negative_offset_extended:
		return cfi_exec__offset_op(x, c, op);
	case DW_CFA_restore_extended:
	case DW_CFA_undefined:
	case DW_CFA_same_value:
	case DW_CFA_register:
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		return cfi_exec__reg_op(x, c, op);
	case DW_CFA_def_cfa:
	case DW_CFA_def_cfa_sf:
	case DW_CFA_def_cfa_register:
	case DW_CFA_def_cfa_offset:
	case DW_CFA_def_cfa_offset_sf:
		return cfi_exec__cfa_op(x, c, op);
	case DW_CFA_def_cfa_expression:
		return cfi_exec__cfa_expr(x, c);
	case DW_CFA_remember_state:
	case DW_CFA_restore_state:
		return cfi_exec__state_op(x, op);
	case DW_CFA_GNU_args_size:
		/* Only for landing pads: the CFA already accounts for pushed args. */
		return cfi_cur__uleb(c, &u) ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}

static int cfi_exec__run(struct cfi_exec *x, const __u8 *p, const __u8 *end)
{
	struct cfi_cur c = { p, end };
	int err;

	while (c.p < c.end && !x->done) {
		err = cfi_exec__one(x, &c);
		if (err)
			return err;
	}
	return 0;
}

static void cfi_exec__init(struct cfi_exec *x, struct cfi_builder *b,
			   const struct cfi_section *s, const struct cfi_cie *cie)
{
	memset(x, 0, sizeof(*x));
	x->b = b;
	x->s = s;
	x->cie = cie;
}

int cfi_exec__cie(struct cfi_builder *b, const struct cfi_section *s, struct cfi_cie *cie)
{
	struct cfi_exec x;
	int err;

	cfi_exec__init(&x, b, s, cie);
	x.in_cie = true;
	x.pc_end = UINT64_MAX;
	x.st.cfa_how = CFA_EXPR; /* no CFA until the CIE says so */
	x.st.rbp.how = REG_SAME;
	x.st.ra.how = REG_SAME;
	err = cfi_exec__run(&x, cie->insns, cie->insns_end);
	if (err)
		return err;
	cie->init = x.st;
	return 0;
}

int cfi_exec__fde(struct cfi_builder *b, const struct cfi_section *s, const struct cfi_cie *cie,
		  const struct cfi_fde *f, __u64 *ret_loc)
{
	struct cfi_exec x;
	int err;

	cfi_exec__init(&x, b, s, cie);
	x.init = &cie->init;
	x.st = cie->init;
	x.loc = f->pc_begin;
	x.pc_end = f->pc_end;
	err = cfi_exec__run(&x, f->insns, f->insns_end);
	if (!err && !x.done)
		err = cfi_exec__row(&x);
	*ret_loc = x.loc;
	return err;
}
