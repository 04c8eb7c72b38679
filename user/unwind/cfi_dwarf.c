/* SPDX-License-Identifier: MIT */
/*
 * DWARF CFI of one x86-64 ELF file, run once into a sorted table of rules.
 *
 * Two passes: the first walks every entry and records each FDE's address
 * range; the FDEs are sorted by address and the second pass runs their
 * CFA programs (cfi_exec.c), emitting a row wherever the rule changes and a
 * gap row where an FDE ends. Overlapping FDEs (hostile, or .eh_frame and
 * .debug_frame describing the same function) are clipped: the first one in
 * sorted order keeps its range, and .eh_frame sorts first at equal
 * addresses.
 *
 * Bounds: every read is checked against its section; rows are capped by the
 * sections' size (each row needs at least one instruction byte of its own),
 * distinct rules by CFI_MAX_RULES, and the instructions executed by a budget
 * proportional to the input, so a CIE shared by many FDEs cannot make the
 * load quadratic. A malformed FDE leaves a gap from where it went wrong.
 */
#include "user/unwind/cfi_dwarf.h"
#include "user/unwind/cfi_exec.h"
#include "user/util/grow.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CFI_MAX_AUG 16             /* augmentation string, NUL excluded */

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
	struct cfi_cur c = { s->data + off, s->data + s->size };
	__u64 len;
	__u32 len32, id32;

	if (off >= s->size)
		return 0;
	if (!cfi_cur__u32(&c, &len32))
		return -1;
	if (len32 == 0)
		return 0;
	if (len32 == 0xffffffff) {
		if (!cfi_cur__u64(&c, &len))
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
		if (!cfi_cur__u64(&c, &ret->id))
			return -1;
	} else {
		if (!cfi_cur__u32(&c, &id32))
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

/* ---------------------------------------------------------------- CIE, FDE */

/* The augmentation data a 'z' string announces: 'R' gives the FDEs' pointer encoding. */
static int cie__augmentation(struct cfi_cur *c, const struct cfi_section *s, const char *aug,
			     size_t aug_len, struct cfi_cie *ret)
{
	const __u8 *aug_end;
	__u64 u;
	__u8 enc;
	size_t i;

	ret->has_z = true;
	if (!cfi_cur__uleb(c, &u) || u > (__u64)(c->end - c->p))
		return -EINVAL;
	aug_end = c->p + u;
	for (i = 1; i < aug_len; i++) {
		struct cfi_cur a = { c->p, aug_end };

		switch (aug[i]) {
		case 'R':
			if (!cfi_cur__u8(&a, &ret->fde_enc))
				return -EINVAL;
			break;
		case 'P':
			if (!cfi_cur__u8(&a, &enc))
				return -EINVAL;
			if (enc != DW_EH_PE_omit && !cfi_cur__ptr(&a, s, enc, true, &u))
				return -EINVAL;
			break;
		case 'L':
			if (!cfi_cur__u8(&a, &enc))
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
		c->p = a.p;
	}
	c->p = aug_end;
	return 0;
}

/* The augmentation string, at most CFI_MAX_AUG bytes before its NUL. */
static int cie__aug_string(struct cfi_cur *c, char *aug, size_t *ret_len)
{
	size_t len = 0;
	__u8 v8;

	for (;;) {
		if (!cfi_cur__u8(c, &v8))
			return -EINVAL;
		if (!v8)
			break;
		if (len >= CFI_MAX_AUG)
			return -EINVAL;
		aug[len++] = (char)v8;
	}
	aug[len] = '\0';
	*ret_len = len;
	return 0;
}

/* The fields after the augmentation string: alignment factors and the return address column. */
static int cie__factors(struct cfi_cur *c, __u8 version, struct cfi_cie *ret)
{
	__u8 v8, addr_size, seg_size;

	if (version == 4 && (!cfi_cur__u8(c, &addr_size) || !cfi_cur__u8(c, &seg_size) ||
			     addr_size != 8 || seg_size))
		return -EINVAL;
	if (!cfi_cur__uleb(c, &ret->code_align) || !cfi_cur__sleb(c, &ret->data_align))
		return -EINVAL;
	if (version == 1) {
		if (!cfi_cur__u8(c, &v8))
			return -EINVAL;
		ret->ra_reg = v8;
	} else if (!cfi_cur__uleb(c, &ret->ra_reg)) {
		return -EINVAL;
	}
	/* The return address sharing rbp's or rsp's column would alias our rules. */
	if (ret->ra_reg == REG_RBP || ret->ra_reg == REG_RSP || ret->ra_reg > 255)
		return -EINVAL;
	return 0;
}

/* The CIE at off, its initial instructions run: what its FDEs start from. */
static int cie__parse(struct cfi_builder *b, const struct cfi_section *s, __u64 off,
		      struct cfi_cie *ret)
{
	char aug[CFI_MAX_AUG + 1];
	struct cfi_entry e;
	struct cfi_cur c;
	size_t aug_len;
	__u8 version;
	int err;

	memset(ret, 0, sizeof(*ret));
	ret->off = off;
	if (cfi_entry__read(s, off, &e) != 1 || !cfi_entry__is_cie(s, &e))
		return -EINVAL;
	c = (struct cfi_cur){ e.body, e.end };
	if (!cfi_cur__u8(&c, &version) || (version != 1 && version != 3 && version != 4))
		return -EINVAL;
	err = cie__aug_string(&c, aug, &aug_len);
	if (!err)
		err = cie__factors(&c, version, ret);
	if (err)
		return err;
	ret->fde_enc = DW_EH_PE_absptr;
	if (aug_len && aug[0] == 'z')
		err = cie__augmentation(&c, s, aug, aug_len, ret);
	else if (aug_len)
		err = -EINVAL; /* "eh" and other pre-'z' forms: FDE layout unknown */
	if (err)
		return err;
	ret->insns = c.p;
	ret->insns_end = e.end;
	err = cfi_exec__cie(b, s, ret);
	if (err)
		return err;
	ret->valid = true;
	return 0;
}

static int fde__parse(const struct cfi_section *s, const struct cfi_entry *e,
		      const struct cfi_cie *cie, struct cfi_fde *ret)
{
	struct cfi_cur c = { e->body, e->end };
	__u64 begin, range, aug;

	if (!cfi_cur__ptr(&c, s, cie->fde_enc, false, &begin) ||
	    !cfi_cur__ptr(&c, s, cie->fde_enc & 0x0f, false, &range))
		return -EINVAL;
	if (cie->has_z) {
		if (!cfi_cur__uleb(&c, &aug) || aug > (__u64)(c.end - c.p))
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
static int cie__get(struct cfi_builder *b, const struct cfi_section *s, __u64 off,
		    struct cfi_cie *cache)
{
	if (cache->valid && cache->off == off)
		return 0;
	return cie__parse(b, s, off, cache);
}

/* ---------------------------------------------------------------- the two passes */

struct fde_ref {
	__u64 pc_begin, pc_end;
	__u64 off;   /* entry offset in its section */
	__u32 sec;   /* 0: .eh_frame, 1: .debug_frame */
};

struct fde_list {
	struct fde_ref *v;
	size_t n, cap;
};

static int fde_list__push(struct fde_list *l, const struct fde_ref *r)
{
	struct fde_ref *v = grow__array(l->v, &l->cap, l->n + 1, sizeof(*v), 256);

	if (!v)
		return -ENOMEM;
	l->v = v;
	l->v[l->n++] = *r;
	return 0;
}

/* First pass: the address range of every well-formed FDE of one section. */
static int cfi_section__collect(struct cfi_builder *b, const struct cfi_section *s, __u32 sec,
				struct fde_list *l)
{
	struct cfi_entry e;
	struct cfi_cie cie = { .valid = false };
	struct cfi_fde f;
	__u64 off = 0, cie_off;
	int rc, err;

	while ((rc = cfi_entry__read(s, off, &e)) == 1) {
		off = (__u64)(e.end - s->data);
		if (cfi_entry__is_cie(s, &e))
			continue;
		if (!cfi_entry__cie_off(s, &e, &cie_off) ||
		    cie__get(b, s, cie_off, &cie) ||
		    fde__parse(s, &e, &cie, &f)) {
			b->rows->dropped++;
			continue;
		}
		err = fde_list__push(l, &(struct fde_ref){
			.pc_begin = f.pc_begin, .pc_end = f.pc_end, .off = e.off, .sec = sec,
		});
		if (err)
			return err;
	}
	if (rc < 0)
		b->rows->dropped++; /* the rest of the section is unreadable */
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
static int fde__run(struct cfi_builder *b, const struct cfi_section *s, const struct cfi_cie *cie,
		    const struct cfi_fde *f, __u64 covered)
{
	__u64 loc;
	int err;

	b->start = covered > f->pc_begin ? covered : f->pc_begin;
	err = cfi_exec__fde(b, s, cie, f, &loc);
	if (err) {
		b->rows->dropped++;
		/* Nothing from where the program went wrong: a wrong rule is worse. */
		if (cfi_builder__emit(b, loc < f->pc_end ? loc : f->pc_end, CFI_GAP))
			return -E2BIG;
		return err == -ENOMEM || err == -E2BIG ? err : 0;
	}
	return cfi_builder__emit(b, f->pc_end, CFI_GAP);
}

/* Second pass, one FDE of the sorted list. */
static int run_fde(struct cfi_builder *b, const struct cfi_section *s, const struct fde_ref *ref,
		   struct cfi_cie *cie, __u64 covered)
{
	struct cfi_entry e;
	struct cfi_fde f;
	__u64 cie_off;

	if (cfi_entry__read(s, ref->off, &e) != 1 || !cfi_entry__cie_off(s, &e, &cie_off) ||
	    cie__get(b, s, cie_off, cie) || fde__parse(s, &e, cie, &f)) {
		cie->valid = false;
		b->rows->dropped++;
		return 0; /* cannot happen after the first pass unless the work budget ran out */
	}
	return fde__run(b, s, cie, &f, covered);
}

/*
 * Second pass: the sorted FDEs run in order, each clipped to what the
 * earlier ones left uncovered. 0, or the error that stopped the table.
 */
static int run_sorted(struct cfi_builder *b, struct cfi_section *secs, const struct fde_list *l)
{
	struct cfi_cie cie = { .valid = false };
	struct cfi_rows *t = b->rows;
	__u64 covered = 0;
	__u32 last_sec = UINT32_MAX;
	int err;

	for (size_t i = 0; i < l->n; i++) {
		const struct fde_ref *r = &l->v[i];

		if (r->pc_end <= covered)
			continue; /* wholly inside an earlier FDE */
		if (r->pc_end - t->base > UINT32_MAX) {
			t->dropped++;
			continue;
		}
		if (r->sec != last_sec)
			cie.valid = false; /* the cache is per section */
		last_sec = r->sec;
		err = run_fde(b, &secs[r->sec], r, &cie, covered);
		if (err) {
			t->dropped += l->n - i - 1;
			return err;
		}
		covered = r->pc_end;
	}
	return 0;
}

int cfi_dwarf__build(struct cfi_section *secs, size_t n_secs, struct cfi_rows *ret)
{
	struct cfi_builder b = { .rows = ret };
	struct fde_list l = { 0 };
	__u64 total = 0;
	size_t i;
	int err = 0;

	memset(ret, 0, sizeof(*ret));
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
	if (!err && l.n) {
		qsort(l.v, l.n, sizeof(*l.v), fde_ref__cmp);
		ret->base = l.v[0].pc_begin;
	}
	if (!err)
		err = run_sorted(&b, secs, &l);
	free(l.v);
	cfi_builder__fini(&b);
	if (err != -ENOMEM) /* a table cut short (-E2BIG) keeps what it has */
		err = ret->n_rows ? 0 : -ENOENT;
	if (err) {
		cfi_rows__fini(ret);
		return err;
	}
	cfi_rows__shrink(ret);
	return 0;
}

int cfi_dwarf__from_fde(const __u8 *fde, size_t fde_len, __u64 fde_addr, const __u8 *cie,
			size_t cie_len, __u64 cie_addr, struct cfi_rows **ret_rows)
{
	struct cfi_section fs = { (__u8 *)fde, fde_len, fde_addr, true };
	struct cfi_section cs = { (__u8 *)cie, cie_len, cie_addr, true };
	struct cfi_builder b = { 0 };
	struct cfi_entry e;
	struct cfi_cie c;
	struct cfi_fde f;
	struct cfi_rows *t;
	int err;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	b.rows = t;
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
	cfi_builder__fini(&b);
	if (err) {
		cfi_rows__free(t);
		return err;
	}
	cfi_rows__shrink(t);
	*ret_rows = t;
	return 0;
}
