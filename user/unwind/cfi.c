/* SPDX-License-Identifier: MIT */
/*
 * DWARF CFI of one x86-64 ELF file, run once into a sorted table of rules.
 *
 * Loading reads the ELF header, the section headers (or, for files stripped
 * of them, PT_GNU_EH_FRAME) and the .eh_frame / .debug_frame bytes; nothing
 * else of the file is touched, so a 1 GB library costs only its unwind
 * sections. Two passes: the first walks every entry and records each FDE's
 * address range; the FDEs are sorted by address and the second pass runs
 * their CFA programs, emitting a row wherever the rule changes and a gap row
 * where an FDE ends. Overlapping FDEs (hostile, or .eh_frame and .debug_frame
 * describing the same function) are clipped: the first one in sorted order
 * keeps its range, and .eh_frame sorts first at equal addresses.
 *
 * A row is 8 bytes: a 32-bit address relative to the lowest FDE and a 32-bit
 * index into a table of distinct rules (a file has a few thousand distinct
 * rules and millions of rows). Only the registers a stack walk with rip, rsp
 * and rbp can use are tracked: the CFA, rbp and the return address column.
 *
 * Bounds: every read is checked against its section; rows are capped by the
 * sections' size (each row needs at least one instruction byte of its own),
 * distinct rules by CFI_MAX_RULES, and the instructions executed by a budget
 * proportional to the input, so a CIE shared by many FDEs cannot make the
 * load quadratic. A malformed FDE leaves a gap from where it went wrong.
 */
#include "user/unwind/cfi.h"
#include "user/unwind/cfi_internal.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CFI_MAX_SECTION ((__u64)512 << 20) /* .eh_frame or .debug_frame */
#define CFI_MAX_SHDRS 65536
#define CFI_MAX_PHDRS 4096
#define CFI_MAX_SHSTRTAB ((__u64)16 << 20)
#define CFI_MAX_RULES (1u << 20)   /* distinct rules per file */
#define CFI_MAX_AUG 16             /* augmentation string, NUL excluded */
#define CFI_STATE_DEPTH 16         /* DW_CFA_remember_state nesting */
#define CFI_GAP UINT32_MAX         /* rule index of "no FDE here" */

/* DWARF register numbers on x86-64. */
#define REG_RBP 6
#define REG_RSP 7

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
	DW_EH_PE_absptr = 0x00,
	DW_EH_PE_uleb128 = 0x01,
	DW_EH_PE_udata2 = 0x02,
	DW_EH_PE_udata4 = 0x03,
	DW_EH_PE_udata8 = 0x04,
	DW_EH_PE_sleb128 = 0x09,
	DW_EH_PE_sdata2 = 0x0a,
	DW_EH_PE_sdata4 = 0x0b,
	DW_EH_PE_sdata8 = 0x0c,
	DW_EH_PE_pcrel = 0x10,
	DW_EH_PE_datarel = 0x30,
	DW_EH_PE_indirect = 0x80,
	DW_EH_PE_omit = 0xff,
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

struct cfi_table {
	__u64 base;          /* vaddr of row offset 0 */
	__u32 *addrs;        /* row start, relative to base, strictly increasing */
	__u32 *rule_idx;     /* into rules[], or CFI_GAP */
	size_t n_rows;
	struct cfi_rule *rules;
	size_t n_rules;
	size_t dropped;
	struct cfi_lazy *lazy; /* .eh_frame built FDE by FDE on demand; NULL: all above */
};

/* ---------------------------------------------------------------- reading */

struct cur {
	const __u8 *p, *end;
};

static bool cur__u8(struct cur *c, __u8 *v)
{
	if (c->p >= c->end)
		return false;
	*v = *c->p++;
	return true;
}

static bool cur__bytes(struct cur *c, void *v, size_t n)
{
	if ((size_t)(c->end - c->p) < n)
		return false;
	memcpy(v, c->p, n);
	c->p += n;
	return true;
}

static bool cur__u32(struct cur *c, __u32 *v)
{
	return cur__bytes(c, v, 4);
}

static bool cur__u64(struct cur *c, __u64 *v)
{
	return cur__bytes(c, v, 8);
}

/*
 * LEB128 of at most 10 bytes; bits past 64 are dropped, longer is malformed.
 * ret_shift and ret_last say where it ended, for the sign extension.
 */
static bool cur__leb(struct cur *c, __u64 *v, unsigned int *ret_shift, __u8 *ret_last)
{
	unsigned int shift = 0;
	__u64 r = 0;
	__u8 b;

	do {
		if (shift >= 70 || !cur__u8(c, &b))
			return false;
		if (shift < 64)
			r |= (__u64)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*v = r;
	*ret_shift = shift;
	*ret_last = b;
	return true;
}

static bool cur__uleb(struct cur *c, __u64 *v)
{
	unsigned int shift;
	__u8 last;

	return cur__leb(c, v, &shift, &last);
}

static bool cur__sleb(struct cur *c, __s64 *v)
{
	unsigned int shift;
	__u64 r;
	__u8 last;

	if (!cur__leb(c, &r, &shift, &last))
		return false;
	if (shift < 64 && (last & 0x40))
		r |= ~(__u64)0 << shift;
	*v = (__s64)r;
	return true;
}

/* Where the section sits in the file's address space, for pcrel pointers. */
struct cfi_section {
	__u8 *data;
	__u64 size;
	__u64 addr;
	bool is_eh; /* .eh_frame rules: CIE id 0, relative CIE pointers */
};

/*
 * A pointer in encoding enc. With skip_only the value is not needed (a
 * personality routine), so applications we cannot compute are accepted.
 */
static bool cur__ptr(struct cur *c, const struct cfi_section *s, __u8 enc, bool skip_only,
		     __u64 *ret)
{
	__u64 field = s->addr + (__u64)(c->p - s->data), v;
	__u16 u16;
	__u32 u32;
	__s64 sv;

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		if (!cur__u64(c, &v))
			return false;
		break;
	case DW_EH_PE_uleb128:
		if (!cur__uleb(c, &v))
			return false;
		break;
	case DW_EH_PE_sleb128:
		if (!cur__sleb(c, &sv))
			return false;
		v = (__u64)sv;
		break;
	case DW_EH_PE_udata2:
		if (!cur__bytes(c, &u16, 2))
			return false;
		v = u16;
		break;
	case DW_EH_PE_sdata2:
		if (!cur__bytes(c, &u16, 2))
			return false;
		v = (__u64)(__s64)(__s16)u16;
		break;
	case DW_EH_PE_udata4:
		if (!cur__u32(c, &u32))
			return false;
		v = u32;
		break;
	case DW_EH_PE_sdata4:
		if (!cur__u32(c, &u32))
			return false;
		v = (__u64)(__s64)(__s32)u32;
		break;
	default:
		return false;
	}
	if (skip_only)
		return true;
	if (enc & DW_EH_PE_indirect)
		return false; /* would need the file's data, not its CFI */
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		v += field;
		break;
	default:
		return false; /* textrel/datarel/funcrel: not used on x86-64 */
	}
	*ret = v;
	return true;
}

/* ---------------------------------------------------------------- entries */

/* One CIE or FDE: its body after the length, and its id / CIE pointer. */
struct cfi_entry {
	__u64 off;          /* of the length field, in the section */
	const __u8 *id_at;  /* the CIE id / CIE pointer field */
	const __u8 *body;   /* after the id */
	const __u8 *end;
	__u64 id;
	bool is64;
};

/* 1: an entry; 0: the .eh_frame terminator or the end; -1: malformed. */
static int cfi_entry__read(const struct cfi_section *s, __u64 off, struct cfi_entry *ret)
{
	struct cur c = { s->data + off, s->data + s->size };
	__u64 len;
	__u32 len32, id32;

	if (off >= s->size)
		return 0;
	if (!cur__u32(&c, &len32))
		return -1;
	if (len32 == 0)
		return 0;
	if (len32 == 0xffffffff) {
		if (!cur__u64(&c, &len))
			return -1;
		ret->is64 = true;
	} else if (len32 >= 0xfffffff0) {
		return -1; /* reserved */
	} else {
		len = len32;
		ret->is64 = false;
	}
	if (len > (__u64)(c.end - c.p))
		return -1;
	ret->off = off;
	ret->end = c.p + len;
	c.end = ret->end;
	ret->id_at = c.p;
	if (ret->is64) {
		if (!cur__u64(&c, &ret->id))
			return -1;
	} else {
		if (!cur__u32(&c, &id32))
			return -1;
		ret->id = id32;
	}
	ret->body = c.p;
	return 1;
}

static bool cfi_entry__is_cie(const struct cfi_section *s, const struct cfi_entry *e)
{
	if (s->is_eh)
		return e->id == 0;
	return e->is64 ? e->id == UINT64_MAX : e->id == UINT32_MAX;
}

/* The offset of the CIE an FDE points to; false when it points nowhere. */
static bool cfi_entry__cie_off(const struct cfi_section *s, const struct cfi_entry *e,
			       __u64 *ret)
{
	__u64 at = (__u64)(e->id_at - s->data);

	if (s->is_eh) {
		/* Relative to the pointer field, and always backwards. */
		if (e->id > at)
			return false;
		*ret = at - e->id;
	} else {
		*ret = e->id;
	}
	return *ret < s->size;
}

/* ---------------------------------------------------------------- state */

enum reg_how { REG_SAME, REG_UNDEF, REG_OFFSET, REG_VAL_OFFSET, REG_OTHER, REG_AT_RBP };
enum cfa_how { CFA_REG, CFA_PLT, CFA_EXPR, CFA_DEREF_RBP };

struct reg_rule {
	__u8 how; /* enum reg_how */
	__s64 off;
};

struct cfa_state {
	__u8 cfa_how; /* enum cfa_how */
	__u8 plt_split;
	__u64 cfa_reg;
	__s64 cfa_off;
	struct reg_rule rbp, ra;
};

struct cie {
	__u64 off;          /* cache key */
	bool valid;
	const __u8 *insns, *insns_end;
	__u64 code_align;
	__s64 data_align;
	__u64 ra_reg;
	__u8 fde_enc;
	bool has_z;
	__u8 flags;
	struct cfa_state init;
};

/* ---------------------------------------------------------------- builder */

struct fde_ref {
	__u64 pc_begin, pc_end;
	__u64 off;   /* entry offset in its section */
	__u32 sec;   /* 0: .eh_frame, 1: .debug_frame */
};

struct builder {
	struct cfi_table *t;
	size_t cap_rows, max_rows;
	size_t cap_rules;
	__u32 *hash;          /* rule index + 1; 0 = empty */
	size_t hash_cap;      /* power of two */
	__u64 start;          /* rows of the current FDE start no lower */
	__u64 work_left;      /* CFA instructions we still agree to run */
};

static __u64 rule__hash(const struct cfi_rule *r)
{
	const __u8 *p = (const __u8 *)r;
	__u64 h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < sizeof(*r); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static int builder__grow_hash(struct builder *b)
{
	size_t cap = b->hash_cap ? b->hash_cap * 2 : 1024, i, j;
	__u32 *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (i = 0; i < b->t->n_rules; i++) {
		j = rule__hash(&b->t->rules[i]) & (cap - 1);
		while (h[j])
			j = (j + 1) & (cap - 1);
		h[j] = (__u32)i + 1;
	}
	free(b->hash);
	b->hash = h;
	b->hash_cap = cap;
	return 0;
}

static int builder__intern(struct builder *b, const struct cfi_rule *r, __u32 *ret_idx)
{
	struct cfi_table *t = b->t;
	struct cfi_rule *rules;
	size_t j, cap;
	int err;

	if (t->n_rules * 2 >= b->hash_cap) {
		err = builder__grow_hash(b);
		if (err)
			return err;
	}
	j = rule__hash(r) & (b->hash_cap - 1);
	while (b->hash[j]) {
		if (!memcmp(&t->rules[b->hash[j] - 1], r, sizeof(*r))) {
			*ret_idx = b->hash[j] - 1;
			return 0;
		}
		j = (j + 1) & (b->hash_cap - 1);
	}
	if (t->n_rules >= CFI_MAX_RULES)
		return -E2BIG;
	if (t->n_rules == b->cap_rules) {
		cap = b->cap_rules ? b->cap_rules * 2 : 256;
		rules = realloc(t->rules, cap * sizeof(*rules));
		if (!rules)
			return -ENOMEM;
		t->rules = rules;
		b->cap_rules = cap;
	}
	t->rules[t->n_rules] = *r;
	b->hash[j] = (__u32)t->n_rules + 1;
	*ret_idx = (__u32)t->n_rules++;
	return 0;
}

/*
 * Rule idx from addr on. Rows arrive in address order; one at the address
 * of the last row replaces it (the later instruction wins), one equal to
 * the last rule is merged into it. A gap may use two reserved slots past
 * the cap so that a table cut short still ends with a gap.
 */
static int builder__emit(struct builder *b, __u64 addr, __u32 idx)
{
	struct cfi_table *t = b->t;
	size_t cap, limit = b->max_rows + (idx == CFI_GAP ? 2 : 0);
	__u32 off, *a, *r;

	if (addr < b->start)
		addr = b->start;
	off = (__u32)(addr - t->base); /* callers keep FDEs within 4 GiB of base */
	if (t->n_rows && t->addrs[t->n_rows - 1] == off) {
		t->rule_idx[t->n_rows - 1] = idx;
		if (t->n_rows > 1 && t->rule_idx[t->n_rows - 2] == idx)
			t->n_rows--;
		return 0;
	}
	if (t->n_rows ? t->rule_idx[t->n_rows - 1] == idx : idx == CFI_GAP)
		return 0;
	if (t->n_rows >= limit)
		return -E2BIG;
	if (t->n_rows == b->cap_rows) {
		cap = b->cap_rows ? b->cap_rows * 2 : 1024;
		if (cap > b->max_rows + 2)
			cap = b->max_rows + 2;
		a = realloc(t->addrs, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		t->addrs = a;
		r = realloc(t->rule_idx, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		t->rule_idx = r;
		b->cap_rows = cap;
	}
	t->addrs[t->n_rows] = off;
	t->rule_idx[t->n_rows++] = idx;
	return 0;
}

static bool fits_s32(__s64 v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/* Is the block ld's PLT CFA: rsp + N + (((rip & 15) >= K) << 3)? */
static bool cfa_expr__is_plt(const __u8 *p, __u64 len, __s64 *ret_off, __u8 *ret_split)
{
	static const __u8 tail[] = { DW_OP_lit3, DW_OP_shl, DW_OP_plus };
	struct cur c = { p, p + len };
	__u8 op, lit;
	__s64 off, rip_off;

	if (!cur__u8(&c, &op) || op != DW_OP_breg7 || !cur__sleb(&c, &off) ||
	    !cur__u8(&c, &op) || op != DW_OP_breg16 || !cur__sleb(&c, &rip_off) || rip_off ||
	    !cur__u8(&c, &op) || op != DW_OP_lit15 || !cur__u8(&c, &op) || op != DW_OP_and ||
	    !cur__u8(&c, &lit) || lit < DW_OP_lit0 || lit > DW_OP_lit15 ||
	    !cur__u8(&c, &op) || op != DW_OP_ge)
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
	struct cur c = { p, p + len };
	__u8 op;
	__s64 off;

	if (!cur__u8(&c, &op) || op != DW_OP_breg6 || !cur__sleb(&c, &off))
		return false;
	if (want_deref && (!cur__u8(&c, &op) || op != DW_OP_deref))
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

/* ---------------------------------------------------------------- CFA programs */

struct cfi_exec {
	struct builder *b;
	const struct cfi_section *s;
	const struct cie *cie;
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
	err = builder__intern(x->b, &r, &idx);
	if (err)
		return err;
	return builder__emit(x->b, x->loc, idx);
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

static int cfi_exec__one(struct cfi_exec *x, struct cur *c)
{
	__u64 reg, reg2, u, len;
	__s64 s;
	__u8 op, b8;
	__u16 b16;
	__u32 b32;

	if (!x->b->work_left)
		return -E2BIG;
	x->b->work_left--;
	if (!cur__u8(c, &op))
		return -EINVAL;
	switch (op & 0xc0) {
	case DW_CFA_advance_loc:
		return cfi_exec__advance(x, op & 0x3f);
	case DW_CFA_offset:
		if (!cur__uleb(c, &u) || u > INT64_MAX)
			return -EINVAL;
		return cfi_exec__set_factored(x, op & 0x3f, REG_OFFSET, (__s64)u);
	case DW_CFA_restore:
		return cfi_exec__restore(x, op & 0x3f);
	}
	switch (op) {
	case DW_CFA_nop:
		return 0;
	case DW_CFA_set_loc:
		if (x->in_cie || !cur__ptr(c, x->s, x->cie->fde_enc, false, &u))
			return -EINVAL;
		return cfi_exec__advance_to(x, u);
	case DW_CFA_advance_loc1:
		if (!cur__u8(c, &b8))
			return -EINVAL;
		return cfi_exec__advance(x, b8);
	case DW_CFA_advance_loc2:
		if (!cur__bytes(c, &b16, 2))
			return -EINVAL;
		return cfi_exec__advance(x, b16);
	case DW_CFA_advance_loc4:
		if (!cur__u32(c, &b32))
			return -EINVAL;
		return cfi_exec__advance(x, b32);
	case DW_CFA_offset_extended:
	case DW_CFA_val_offset:
		if (!cur__uleb(c, &reg) || !cur__uleb(c, &u) || u > INT64_MAX)
			return -EINVAL;
		return cfi_exec__set_factored(x, reg,
					      op == DW_CFA_offset_extended ? REG_OFFSET :
									     REG_VAL_OFFSET,
					      (__s64)u);
	case DW_CFA_offset_extended_sf:
	case DW_CFA_val_offset_sf:
		if (!cur__uleb(c, &reg) || !cur__sleb(c, &s))
			return -EINVAL;
		return cfi_exec__set_factored(x, reg,
					      op == DW_CFA_offset_extended_sf ? REG_OFFSET :
										REG_VAL_OFFSET,
					      s);
	case DW_CFA_GNU_negative_offset_extended:
		if (!cur__uleb(c, &reg) || !cur__uleb(c, &u) || u > INT64_MAX)
			return -EINVAL;
		return cfi_exec__set_factored(x, reg, REG_OFFSET, -(__s64)u);
	case DW_CFA_restore_extended:
		if (!cur__uleb(c, &reg))
			return -EINVAL;
		return cfi_exec__restore(x, reg);
	case DW_CFA_undefined:
		if (!cur__uleb(c, &reg))
			return -EINVAL;
		return cfi_exec__set(x, reg, REG_UNDEF, 0);
	case DW_CFA_same_value:
		if (!cur__uleb(c, &reg))
			return -EINVAL;
		return cfi_exec__set(x, reg, REG_SAME, 0);
	case DW_CFA_register:
		if (!cur__uleb(c, &reg) || !cur__uleb(c, &reg2))
			return -EINVAL;
		return cfi_exec__set(x, reg, reg == reg2 ? REG_SAME : REG_OTHER, 0);
	case DW_CFA_remember_state:
		if (x->depth >= CFI_STATE_DEPTH)
			return -E2BIG;
		/* The CFA goes with the registers, as GCC's epilogues expect. */
		x->stack[x->depth++] = x->st;
		return 0;
	case DW_CFA_restore_state:
		if (!x->depth)
			return -EINVAL;
		x->st = x->stack[--x->depth];
		return 0;
	case DW_CFA_def_cfa:
		if (!cur__uleb(c, &reg) || !cur__uleb(c, &u) || u > INT64_MAX)
			return -EINVAL;
		x->st.cfa_how = CFA_REG;
		x->st.cfa_reg = reg;
		x->st.cfa_off = (__s64)u;
		return 0;
	case DW_CFA_def_cfa_sf:
		if (!cur__uleb(c, &reg) || !cur__sleb(c, &s) ||
		    __builtin_mul_overflow(s, x->cie->data_align, &s))
			return -EINVAL;
		x->st.cfa_how = CFA_REG;
		x->st.cfa_reg = reg;
		x->st.cfa_off = s;
		return 0;
	case DW_CFA_def_cfa_register:
		if (!cur__uleb(c, &reg))
			return -EINVAL;
		x->st.cfa_how = CFA_REG;
		x->st.cfa_reg = reg;
		return 0;
	case DW_CFA_def_cfa_offset:
		if (!cur__uleb(c, &u) || u > INT64_MAX)
			return -EINVAL;
		/* Only meaningful on a register CFA; an expression keeps its own. */
		if (x->st.cfa_how == CFA_REG)
			x->st.cfa_off = (__s64)u;
		return 0;
	case DW_CFA_def_cfa_offset_sf:
		if (!cur__sleb(c, &s) || __builtin_mul_overflow(s, x->cie->data_align, &s))
			return -EINVAL;
		if (x->st.cfa_how == CFA_REG)
			x->st.cfa_off = s;
		return 0;
	case DW_CFA_def_cfa_expression:
		if (!cur__uleb(c, &len) || len > (__u64)(c->end - c->p))
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
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		if (!cur__uleb(c, &reg) || !cur__uleb(c, &len) || len > (__u64)(c->end - c->p))
			return -EINVAL;
		/* rbp saved at an address relative to rbp itself (stack realignment) */
		if (op == DW_CFA_expression && reg == REG_RBP && expr__is_rbp_rel(c->p, len, false, &s)) {
			c->p += len;
			return cfi_exec__set(x, reg, REG_AT_RBP, s);
		}
		c->p += len;
		return cfi_exec__set(x, reg, REG_OTHER, 0);
	case DW_CFA_GNU_args_size:
		/* Only for landing pads: the CFA already accounts for pushed args. */
		return cur__uleb(c, &u) ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}

static int cfi_exec__run(struct cfi_exec *x, const __u8 *p, const __u8 *end)
{
	struct cur c = { p, end };
	int err;

	while (c.p < c.end && !x->done) {
		err = cfi_exec__one(x, &c);
		if (err)
			return err;
	}
	return 0;
}

/* ---------------------------------------------------------------- CIE, FDE */

static int cie__parse(struct builder *b, const struct cfi_section *s, __u64 off,
		      struct cie *ret)
{
	struct cfi_entry e;
	struct cfi_exec x;
	struct cur c;
	char aug[CFI_MAX_AUG + 1];
	size_t aug_len = 0;
	__u64 u;
	__u8 version, v8, enc;
	const __u8 *aug_end = NULL;
	size_t i;
	int err;

	memset(ret, 0, sizeof(*ret));
	ret->off = off;
	if (cfi_entry__read(s, off, &e) != 1 || !cfi_entry__is_cie(s, &e))
		return -EINVAL;
	c = (struct cur){ e.body, e.end };
	if (!cur__u8(&c, &version) || (version != 1 && version != 3 && version != 4))
		return -EINVAL;
	for (;;) {
		if (!cur__u8(&c, &v8))
			return -EINVAL;
		if (!v8)
			break;
		if (aug_len >= CFI_MAX_AUG)
			return -EINVAL;
		aug[aug_len++] = (char)v8;
	}
	aug[aug_len] = '\0';
	if (version == 4) {
		__u8 addr_size, seg_size;

		if (!cur__u8(&c, &addr_size) || !cur__u8(&c, &seg_size) || addr_size != 8 ||
		    seg_size)
			return -EINVAL;
	}
	if (!cur__uleb(&c, &ret->code_align) || !cur__sleb(&c, &ret->data_align))
		return -EINVAL;
	if (version == 1) {
		if (!cur__u8(&c, &v8))
			return -EINVAL;
		ret->ra_reg = v8;
	} else if (!cur__uleb(&c, &ret->ra_reg)) {
		return -EINVAL;
	}
	/* The return address sharing rbp's or rsp's column would alias our rules. */
	if (ret->ra_reg == REG_RBP || ret->ra_reg == REG_RSP || ret->ra_reg > 255)
		return -EINVAL;
	ret->fde_enc = DW_EH_PE_absptr;
	if (aug_len && aug[0] == 'z') {
		ret->has_z = true;
		if (!cur__uleb(&c, &u) || u > (__u64)(c.end - c.p))
			return -EINVAL;
		aug_end = c.p + u;
		for (i = 1; i < aug_len; i++) {
			struct cur a = { c.p, aug_end };

			switch (aug[i]) {
			case 'R':
				if (!cur__u8(&a, &ret->fde_enc))
					return -EINVAL;
				break;
			case 'P':
				if (!cur__u8(&a, &enc))
					return -EINVAL;
				if (enc != DW_EH_PE_omit && !cur__ptr(&a, s, enc, true, &u))
					return -EINVAL;
				break;
			case 'L':
				if (!cur__u8(&a, &enc))
					return -EINVAL;
				break;
			case 'S':
				ret->flags |= CFI_FLAG_SIGNAL_FRAME;
				break;
			case 'B': /* AArch64 BTI, MTE: nothing to read */
			case 'G':
				break;
			default:
				i = aug_len; /* unknown: 'z' lets us skip the rest */
				continue;
			}
			c.p = a.p;
		}
		c.p = aug_end;
	} else if (aug_len) {
		return -EINVAL; /* "eh" and other pre-'z' forms: FDE layout unknown */
	}
	ret->insns = c.p;
	ret->insns_end = e.end;

	/* Initial instructions: what every FDE of this CIE starts from. */
	memset(&x, 0, sizeof(x));
	x.b = b;
	x.s = s;
	x.cie = ret;
	x.in_cie = true;
	x.pc_end = UINT64_MAX;
	x.st.cfa_how = CFA_EXPR; /* no CFA until the CIE says so */
	x.st.rbp.how = REG_SAME;
	x.st.ra.how = REG_SAME;
	err = cfi_exec__run(&x, ret->insns, ret->insns_end);
	if (err)
		return err;
	ret->init = x.st;
	ret->valid = true;
	return 0;
}

struct fde {
	__u64 pc_begin, pc_end;
	const __u8 *insns, *insns_end;
};

static int fde__parse(const struct cfi_section *s, const struct cfi_entry *e,
		      const struct cie *cie, struct fde *ret)
{
	struct cur c = { e->body, e->end };
	__u64 begin, range, aug;

	if (!cur__ptr(&c, s, cie->fde_enc, false, &begin) ||
	    !cur__ptr(&c, s, cie->fde_enc & 0x0f, false, &range))
		return -EINVAL;
	if (cie->has_z) {
		if (!cur__uleb(&c, &aug) || aug > (__u64)(c.end - c.p))
			return -EINVAL;
		c.p += aug;
	}
	if (!range || __builtin_add_overflow(begin, range, &ret->pc_end))
		return -EINVAL;
	ret->pc_begin = begin;
	ret->insns = c.p;
	ret->insns_end = c.end;
	return 0;
}

/* A one-entry cache: the FDEs of one CIE tend to be adjacent. */
static int cie__get(struct builder *b, const struct cfi_section *s, __u64 off, struct cie *cache)
{
	if (cache->valid && cache->off == off)
		return 0;
	return cie__parse(b, s, off, cache);
}

/* ---------------------------------------------------------------- the two passes */

struct fde_list {
	struct fde_ref *v;
	size_t n, cap;
};

static int fde_list__push(struct fde_list *l, const struct fde_ref *r)
{
	struct fde_ref *v;
	size_t cap;

	if (l->n == l->cap) {
		cap = l->cap ? l->cap * 2 : 256;
		v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *r;
	return 0;
}

/* First pass: the address range of every well-formed FDE of one section. */
static int cfi_section__collect(struct builder *b, const struct cfi_section *s, __u32 sec,
				struct fde_list *l)
{
	struct cfi_entry e;
	struct cie cie = { .valid = false };
	struct fde f;
	__u64 off = 0, cie_off;
	int rc, err;

	while ((rc = cfi_entry__read(s, off, &e)) == 1) {
		off = (__u64)(e.end - s->data);
		if (cfi_entry__is_cie(s, &e))
			continue;
		if (!cfi_entry__cie_off(s, &e, &cie_off) ||
		    cie__get(b, s, cie_off, &cie) ||
		    fde__parse(s, &e, &cie, &f)) {
			b->t->dropped++;
			continue;
		}
		err = fde_list__push(l, &(struct fde_ref){
			.pc_begin = f.pc_begin, .pc_end = f.pc_end, .off = e.off, .sec = sec,
		});
		if (err)
			return err;
	}
	if (rc < 0)
		b->t->dropped++; /* the rest of the section is unreadable */
	return 0;
}

static int fde_ref__cmp(const void *a, const void *b)
{
	const struct fde_ref *x = a, *y = b;

	if (x->pc_begin != y->pc_begin)
		return x->pc_begin < y->pc_begin ? -1 : 1;
	if (x->sec != y->sec)
		return x->sec < y->sec ? -1 : 1;
	if (x->pc_end != y->pc_end)
		return x->pc_end > y->pc_end ? -1 : 1;
	return x->off < y->off ? -1 : (x->off > y->off);
}

/*
 * The rows of parsed FDE f from max(pc_begin, covered) to pc_end, then a
 * gap. 0, or -E2BIG/-ENOMEM to stop the whole table (a gap is in place).
 */
static int fde__run(struct builder *b, const struct cfi_section *s, const struct cie *cie,
		    const struct fde *f, __u64 covered)
{
	struct cfi_exec x;
	int err;

	b->start = covered > f->pc_begin ? covered : f->pc_begin;
	memset(&x, 0, sizeof(x));
	x.b = b;
	x.s = s;
	x.cie = cie;
	x.init = &cie->init;
	x.st = cie->init;
	x.loc = f->pc_begin;
	x.pc_end = f->pc_end;
	err = cfi_exec__run(&x, f->insns, f->insns_end);
	if (!err && !x.done)
		err = cfi_exec__row(&x);
	if (err) {
		b->t->dropped++;
		/* Nothing from where the program went wrong: a wrong rule is worse. */
		if (builder__emit(b, x.loc < f->pc_end ? x.loc : f->pc_end, CFI_GAP))
			return -E2BIG;
		return err == -ENOMEM || err == -E2BIG ? err : 0;
	}
	return builder__emit(b, f->pc_end, CFI_GAP);
}

/* Second pass, one FDE of the sorted list. */
static int cfi_table__run_fde(struct builder *b, const struct cfi_section *s,
			      const struct fde_ref *ref, struct cie *cie, __u64 covered)
{
	struct cfi_entry e;
	struct fde f;
	__u64 cie_off;

	if (cfi_entry__read(s, ref->off, &e) != 1 || !cfi_entry__cie_off(s, &e, &cie_off) ||
	    cie__get(b, s, cie_off, cie) || fde__parse(s, &e, cie, &f)) {
		cie->valid = false;
		b->t->dropped++;
		return 0; /* cannot happen after the first pass unless the work budget ran out */
	}
	return fde__run(b, s, cie, &f, covered);
}

static void cfi_table__shrink(struct cfi_table *t)
{
	void *p;

	if (!t->n_rows)
		return;
	p = realloc(t->addrs, t->n_rows * sizeof(*t->addrs));
	if (p)
		t->addrs = p;
	p = realloc(t->rule_idx, t->n_rows * sizeof(*t->rule_idx));
	if (p)
		t->rule_idx = p;
	if (t->n_rules) {
		p = realloc(t->rules, t->n_rules * sizeof(*t->rules));
		if (p)
			t->rules = p;
	}
}

static int cfi_table__build(struct cfi_section *secs, size_t n_secs,
			    struct cfi_table **ret_table)
{
	struct builder b = { 0 };
	struct fde_list l = { 0 };
	struct cie cie = { .valid = false };
	struct cfi_table *t;
	__u64 total = 0, covered = 0;
	__u32 last_sec = UINT32_MAX;
	size_t i;
	int err = 0;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	b.t = t;
	for (i = 0; i < n_secs; i++)
		total += secs[i].size;
	/*
	 * Every row but an FDE's first and its closing gap needs an advance of
	 * its own (at least one byte), and every FDE is at least 16 bytes.
	 */
	b.max_rows = total + 16;
	b.work_left = 8 * total + (1u << 20);
	for (i = 0; i < n_secs && !err; i++)
		err = cfi_section__collect(&b, &secs[i], (__u32)i, &l);
	if (err)
		goto err_free;
	if (l.n) {
		qsort(l.v, l.n, sizeof(*l.v), fde_ref__cmp);
		t->base = l.v[0].pc_begin;
	}
	for (i = 0; i < l.n; i++) {
		const struct fde_ref *r = &l.v[i];

		if (r->pc_end <= covered)
			continue; /* wholly inside an earlier FDE */
		if (r->pc_end - t->base > UINT32_MAX) {
			t->dropped++;
			continue;
		}
		if (r->sec != last_sec)
			cie.valid = false; /* the cache is per section */
		last_sec = r->sec;
		err = cfi_table__run_fde(&b, &secs[r->sec], r, &cie, covered);
		if (err) {
			t->dropped += l.n - i - 1;
			break;
		}
		covered = r->pc_end;
	}
	if (err == -ENOMEM)
		goto err_free;
	free(l.v);
	free(b.hash);
	if (!t->n_rows) {
		cfi_table__free(t);
		return -ENOENT;
	}
	cfi_table__shrink(t);
	*ret_table = t;
	return 0;

err_free:
	free(l.v);
	free(b.hash);
	cfi_table__free(t);
	return err;
}

int cfi_table__from_fde(const __u8 *fde, size_t fde_len, __u64 fde_addr, const __u8 *cie,
			size_t cie_len, __u64 cie_addr, struct cfi_table **ret_table)
{
	struct cfi_section fs = { (__u8 *)fde, fde_len, fde_addr, true };
	struct cfi_section cs = { (__u8 *)cie, cie_len, cie_addr, true };
	struct builder b = { 0 };
	struct cfi_entry e;
	struct cie c;
	struct fde f;
	struct cfi_table *t;
	int err;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	b.t = t;
	b.max_rows = fde_len + 16;
	b.work_left = 8 * (fde_len + cie_len) + 4096;
	if (cfi_entry__read(&fs, 0, &e) != 1 || cfi_entry__is_cie(&fs, &e) ||
	    cie__parse(&b, &cs, 0, &c) || fde__parse(&fs, &e, &c, &f) ||
	    f.pc_end - f.pc_begin > UINT32_MAX) {
		err = -EINVAL;
		goto out;
	}
	t->base = f.pc_begin;
	err = fde__run(&b, &fs, &c, &f, 0);
	if (!err && !t->n_rows)
		err = -ENOENT;
out:
	free(b.hash);
	if (err) {
		cfi_table__free(t);
		return err;
	}
	cfi_table__shrink(t);
	*ret_table = t;
	return 0;
}

/* ---------------------------------------------------------------- ELF */

int elf_src__read(const struct elf_src *src, __u64 off, void *buf, size_t len)
{
	__u8 *p = buf;
	ssize_t n;

	if (off > src->size || len > src->size - off)
		return -ENOEXEC;
	if (src->mem) {
		memcpy(buf, src->mem + off, len);
		return 0;
	}
	while (len) {
		n = pread(src->fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* truncated under us */
		p += n;
		off += (__u64)n;
		len -= (size_t)n;
	}
	return 0;
}

static int elf_src__section(const struct elf_src *src, __u64 off, __u64 size, __u64 addr,
			    bool is_eh, struct cfi_section *ret)
{
	__u8 *data;
	int err;

	if (!size || size > CFI_MAX_SECTION)
		return -EINVAL;
	data = malloc(size);
	if (!data)
		return -ENOMEM;
	err = elf_src__read(src, off, data, size);
	if (err) {
		free(data);
		return err;
	}
	*ret = (struct cfi_section){ .data = data, .size = size, .addr = addr, .is_eh = is_eh };
	return 0;
}

/* .eh_frame and .debug_frame by section name. */
static int elf_src__find_sections(const struct elf_src *src, const Elf64_Ehdr *eh,
				  bool want_eh, struct cfi_section *ret_eh,
				  struct cfi_section *ret_debug)
{
	Elf64_Shdr sh0, *shdrs = NULL, *str_sh;
	char *strtab = NULL;
	__u64 shnum = eh->e_shnum, shstrndx = eh->e_shstrndx, i, name;
	int err = 0;

	if (!eh->e_shoff || eh->e_shentsize != sizeof(Elf64_Shdr))
		return 0;
	if (elf_src__read(src, eh->e_shoff, &sh0, sizeof(sh0)))
		return 0;
	/* Files with many sections keep the real counts in section 0. */
	if (!shnum)
		shnum = sh0.sh_size;
	if (shstrndx == SHN_XINDEX)
		shstrndx = sh0.sh_link;
	if (!shnum || shnum > CFI_MAX_SHDRS || shstrndx >= shnum)
		return 0;
	shdrs = malloc(shnum * sizeof(*shdrs));
	if (!shdrs)
		return -ENOMEM;
	if (elf_src__read(src, eh->e_shoff, shdrs, shnum * sizeof(*shdrs)))
		goto out;
	str_sh = &shdrs[shstrndx];
	if (str_sh->sh_type == SHT_NOBITS || !str_sh->sh_size ||
	    str_sh->sh_size > CFI_MAX_SHSTRTAB)
		goto out;
	strtab = malloc(str_sh->sh_size + 1);
	if (!strtab) {
		err = -ENOMEM;
		goto out;
	}
	if (elf_src__read(src, str_sh->sh_offset, strtab, str_sh->sh_size))
		goto out;
	strtab[str_sh->sh_size] = '\0';
	for (i = 0; i < shnum; i++) {
		const Elf64_Shdr *sh = &shdrs[i];
		struct cfi_section *want = NULL;
		bool is_eh = false;

		name = sh->sh_name;
		if (name >= str_sh->sh_size || sh->sh_type == SHT_NOBITS ||
		    (sh->sh_flags & SHF_COMPRESSED))
			continue;
		if (want_eh && !strcmp(strtab + name, ".eh_frame") && !ret_eh->data) {
			want = ret_eh;
			is_eh = true;
		} else if (!strcmp(strtab + name, ".debug_frame") && !ret_debug->data) {
			want = ret_debug;
		}
		if (!want)
			continue;
		err = elf_src__section(src, sh->sh_offset, sh->sh_size, sh->sh_addr, is_eh, want);
		if (err == -ENOMEM)
			goto out;
		err = 0; /* a section that does not fit is one we do without */
	}
out:
	free(strtab);
	free(shdrs);
	return err;
}

/*
 * Without section headers: PT_GNU_EH_FRAME points at .eh_frame_hdr, whose
 * eh_frame_ptr points at .eh_frame; its size is unknown, so read to the end
 * of the PT_LOAD holding it and let the terminator end the walk.
 */
static int elf_src__find_eh_by_phdr(const struct elf_src *src, const Elf64_Ehdr *eh,
				    struct cfi_section *ret_eh)
{
	Elf64_Phdr *ph = NULL, *hdr = NULL;
	struct cfi_section hs = { 0 };
	__u8 buf[4 + 8];
	__u64 n = eh->e_phnum, i, v = 0, end;
	struct cur c;
	int err = 0;

	if (!eh->e_phoff || eh->e_phentsize != sizeof(Elf64_Phdr) || !n || n > CFI_MAX_PHDRS)
		return 0;
	ph = malloc(n * sizeof(*ph));
	if (!ph)
		return -ENOMEM;
	if (elf_src__read(src, eh->e_phoff, ph, n * sizeof(*ph)))
		goto out;
	for (i = 0; i < n && !hdr; i++)
		if (ph[i].p_type == PT_GNU_EH_FRAME)
			hdr = &ph[i];
	if (!hdr || hdr->p_filesz < 8 ||
	    elf_src__read(src, hdr->p_offset, buf,
			  hdr->p_filesz < sizeof(buf) ? hdr->p_filesz : sizeof(buf)))
		goto out;
	if (buf[0] != 1 || buf[1] == DW_EH_PE_omit)
		goto out;
	/* The pointer is encoded relative to its own place in the file. */
	hs = (struct cfi_section){ .data = buf, .size = sizeof(buf), .addr = hdr->p_vaddr };
	c = (struct cur){ buf + 4, buf + (hdr->p_filesz < sizeof(buf) ? hdr->p_filesz :
									   sizeof(buf)) };
	if ((buf[1] & 0x70) == DW_EH_PE_datarel) {
		/* datarel in .eh_frame_hdr is relative to the header's start */
		if (!cur__ptr(&c, &hs, buf[1] & 0x0f, false, &v))
			goto out;
		v += hdr->p_vaddr;
	} else if (!cur__ptr(&c, &hs, buf[1], false, &v)) {
		goto out;
	}
	for (i = 0; i < n; i++) {
		const Elf64_Phdr *p = &ph[i];

		if (p->p_type != PT_LOAD || v < p->p_vaddr || v - p->p_vaddr >= p->p_filesz)
			continue;
		end = p->p_filesz - (v - p->p_vaddr);
		if (end > CFI_MAX_SECTION)
			end = CFI_MAX_SECTION;
		if (p->p_offset > src->size || v - p->p_vaddr > src->size - p->p_offset)
			break;
		if (end > src->size - p->p_offset - (v - p->p_vaddr))
			end = src->size - p->p_offset - (v - p->p_vaddr);
		err = elf_src__section(src, p->p_offset + (v - p->p_vaddr), end, v, true, ret_eh);
		if (err != -ENOMEM)
			err = 0;
		break;
	}
out:
	free(ph);
	return err;
}

/*
 * With whole false, .eh_frame is left in the file when .eh_frame_hdr indexes
 * it (its FDEs are built when a walk first needs them) and only
 * .debug_frame, usually absent, is built now.
 */
static int cfi_table__load_src(const struct elf_src *src, bool whole,
			       struct cfi_table **ret_table)
{
	struct cfi_section secs[2] = { { 0 }, { 0 } }, use[2];
	struct cfi_lazy *lazy = NULL;
	Elf64_Ehdr eh;
	size_t n = 0;
	int err;

	if (elf_src__read(src, 0, &eh, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != EM_X86_64)
		return -ENOEXEC;
	if (!whole) {
		err = cfi_lazy__open(src, &eh, &lazy);
		if (err && err != -ENOENT)
			return err;
	}
	err = elf_src__find_sections(src, &eh, !lazy, &secs[0], &secs[1]);
	if (!err && !lazy && !secs[0].data)
		err = elf_src__find_eh_by_phdr(src, &eh, &secs[0]);
	if (err)
		goto out;
	/* .eh_frame first: it sorts first at equal addresses and so wins. */
	if (secs[0].data)
		use[n++] = secs[0];
	if (secs[1].data)
		use[n++] = secs[1];
	err = n ? cfi_table__build(use, n, ret_table) : -ENOENT;
	if (lazy && err == -ENOENT) {
		*ret_table = calloc(1, sizeof(**ret_table));
		err = *ret_table ? 0 : -ENOMEM;
	}
	if (!err && lazy) {
		(*ret_table)->lazy = lazy; /* looked up first: .eh_frame wins */
		lazy = NULL;
	}
out:
	cfi_lazy__free(lazy);
	free(secs[0].data);
	free(secs[1].data);
	return err;
}

static int cfi_table__load_fd(int fd, bool whole, struct cfi_table **ret_table)
{
	struct elf_src src = { .fd = fd };
	struct stat st;

	if (fd < 0 || !ret_table)
		return -EINVAL;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	src.size = (__u64)st.st_size;
	return cfi_table__load_src(&src, whole, ret_table);
}

int cfi_table__load(int fd, struct cfi_table **ret_table)
{
	return cfi_table__load_fd(fd, false, ret_table);
}

int cfi_table__load_whole(int fd, struct cfi_table **ret_table)
{
	return cfi_table__load_fd(fd, true, ret_table);
}

int cfi_table__load_mem(const void *elf, size_t size, struct cfi_table **ret_table)
{
	struct elf_src src = { .fd = -1, .mem = elf, .size = size };

	if ((!elf && size) || !ret_table)
		return -EINVAL;
	if (!elf)
		return -ENOEXEC;
	return cfi_table__load_src(&src, false, ret_table);
}

/* ---------------------------------------------------------------- queries */

int cfi_table__find(const struct cfi_table *t, __u64 vaddr, struct cfi_rule *ret_rule)
{
	size_t lo = 0, hi, mid;
	__u32 off, idx;

	if (!t || !ret_rule)
		return -EINVAL;
	if (t->lazy && cfi_lazy__find(t->lazy, vaddr, ret_rule) == 0)
		return 0;
	if (!t->n_rows || vaddr < t->base || vaddr - t->base > UINT32_MAX)
		return -ENOENT;
	off = (__u32)(vaddr - t->base);
	hi = t->n_rows;
	while (lo < hi) { /* first row above off */
		mid = lo + (hi - lo) / 2;
		if (t->addrs[mid] <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	idx = t->rule_idx[lo - 1];
	if (idx == CFI_GAP || idx >= t->n_rules)
		return -ENOENT;
	*ret_rule = t->rules[idx];
	return 0;
}

size_t cfi_table__rows(const struct cfi_table *t)
{
	return t ? t->n_rows + cfi_lazy__rows(t->lazy) : 0;
}

size_t cfi_table__fdes_on_demand(const struct cfi_table *t)
{
	return t ? cfi_lazy__fdes(t->lazy) : 0;
}

static bool cfi_table__same_at(const struct cfi_table *a, const struct cfi_table *b, __u64 vaddr)
{
	struct cfi_rule ra, rb;
	int ea = cfi_table__find(a, vaddr, &ra), eb = cfi_table__find(b, vaddr, &rb);

	if (ea || eb)
		return ea == eb;
	return ra.cfa_base == rb.cfa_base && ra.rbp_rule == rb.rbp_rule &&
	       ra.ra_rule == rb.ra_rule && ra.flags == rb.flags && ra.plt_split == rb.plt_split &&
	       ra.cfa_off == rb.cfa_off && ra.rbp_off == rb.rbp_off && ra.ra_off == rb.ra_off;
}

size_t cfi_table__differences(const struct cfi_table *t, const struct cfi_table *whole,
			      size_t *ret_checked)
{
	size_t i, diff = 0, checked = 0;
	__u64 a;

	for (i = 0; whole && i < whole->n_rows; i++) {
		a = whole->base + whole->addrs[i];
		diff += !cfi_table__same_at(t, whole, a);
		checked++;
		if (a) {
			diff += !cfi_table__same_at(t, whole, a - 1);
			checked++;
		}
	}
	if (ret_checked)
		*ret_checked = checked;
	return diff;
}

size_t cfi_table__bytes(const struct cfi_table *t)
{
	if (!t)
		return 0;
	return sizeof(*t) + t->n_rows * (sizeof(*t->addrs) + sizeof(*t->rule_idx)) +
	       t->n_rules * sizeof(*t->rules) + cfi_lazy__bytes(t->lazy);
}

size_t cfi_table__dropped(const struct cfi_table *t)
{
	return t ? t->dropped + cfi_lazy__dropped(t->lazy) : 0;
}

void cfi_table__free(struct cfi_table *t)
{
	if (!t)
		return;
	cfi_lazy__free(t->lazy);
	free(t->addrs);
	free(t->rule_idx);
	free(t->rules);
	free(t);
}
