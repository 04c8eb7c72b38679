/* SPDX-License-Identifier: MIT */
/*
 * The line table of a cubin (cubin_lines.h), in three steps: the section
 * table gives .debug_line and the relocations against it; the relocations
 * are indexed by the place they patch (sorted once, so each sequence finds
 * its kernel in log n); then each DWARF unit's header is read and its line
 * program run, one small function per opcode family.
 *
 * Every read of the section goes through struct rd, which holds the end of
 * what may be read there (the section, the unit, the header), so a length
 * field can only shrink what is read, never reach past it. Values that
 * grow (address, line) are added with overflow checks. The work is linear
 * in the section's bytes: each opcode makes at most one row, and the
 * opcodes that skip bytes (extended ones, unknown standard ones) move
 * forward only.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "user/cubin/cubin_elf.h"
#include "user/cubin/cubin_lines.h"
#include "user/cubin/cubin_syms.h"

/* The relocation nvcc puts on each DW_LNE_set_address: 8 bytes, S + A. */
#define R_CUDA_64 2

/* DWARF 2-4 line program opcodes (DWARF 4, section 6.2.5). */
enum {
	DW_LNS_copy = 1,
	DW_LNS_advance_pc,
	DW_LNS_advance_line,
	DW_LNS_set_file,
	DW_LNS_set_column,
	DW_LNS_negate_stmt,
	DW_LNS_set_basic_block,
	DW_LNS_const_add_pc,
	DW_LNS_fixed_advance_pc,
	DW_LNS_set_prologue_end,
	DW_LNS_set_epilogue_begin,
	DW_LNS_set_isa,
};

enum {
	DW_LNE_end_sequence = 1,
	DW_LNE_set_address = 2,
};

static const char debug_line_name[] = ".debug_line";


/* ---------------------------------------------------------------- ELF */

struct image {
	const __u8 *elf;
	size_t size;
	__u64 shoff;
	__u32 shnum;
	__u32 shstrndx;
};

static void image__shdr(const struct image *im, __u32 i, Elf64_Shdr *ret_sh)
{
	cubin_elf__shdr(im->elf, im->shoff, i, ret_sh);
}

/*
 * The header and the section table, with ELF's extended numbering
 * (cubin_elf__shnum; e_shstrndx SHN_XINDEX: the index is section 0's
 * sh_link), as cubin_syms reads them. No section table: -ENOENT, no line
 * table.
 */
static int image__open(struct image *im, const __u8 *elf, size_t size)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh0;
	__u32 n;
	int err;

	if ((err = cubin_elf__ehdr(elf, size, &eh)) || (err = cubin_elf__shnum(elf, size, &eh, &n)))
		return err;
	cubin_elf__shdr(elf, eh.e_shoff, 0, &sh0);
	*im = (struct image){ .elf = elf, .size = size, .shoff = eh.e_shoff, .shnum = n };
	im->shstrndx = eh.e_shstrndx == SHN_XINDEX ? sh0.sh_link : eh.e_shstrndx;
	return 0;
}

static bool image__is_debug_line(const struct image *im, const Elf64_Shdr *names,
				 const Elf64_Shdr *sh)
{
	return sh->sh_name <= names->sh_size &&
	       names->sh_size - sh->sh_name >= sizeof(debug_line_name) &&
	       !memcmp(im->elf + names->sh_offset + sh->sh_name, debug_line_name,
		       sizeof(debug_line_name));
}

/* .debug_line by name; only section headers are read, so a cubin without one costs little. */
static int image__debug_line(const struct image *im, __u32 *ret_idx, Elf64_Shdr *ret_sh)
{
	Elf64_Shdr names, sh;

	if (!im->shnum)
		return -ENOENT;
	if (im->shstrndx >= im->shnum)
		return -EBADMSG;
	image__shdr(im, im->shstrndx, &names);
	if (names.sh_type != SHT_STRTAB || !cubin_elf__inside(names.sh_offset, names.sh_size, im->size))
		return -EBADMSG;
	for (__u32 i = 1; i < im->shnum; i++) {
		image__shdr(im, i, &sh);
		if (!image__is_debug_line(im, &names, &sh))
			continue;
		if (sh.sh_flags & SHF_COMPRESSED)
			return -EPROTONOSUPPORT;
		if (sh.sh_type != SHT_PROGBITS ||
		    !cubin_elf__inside(sh.sh_offset, sh.sh_size, im->size))
			return -EBADMSG;
		*ret_idx = i;
		*ret_sh = sh;
		return 0;
	}
	return -ENOENT;
}

/*
 * The index cubin_syms gives the first symbol of section symtab: the
 * symbols of the SHT_SYMTAB sections before it. Saturates at the symbol
 * cap, past which cubin_syms names no symbol.
 */
static __u64 image__sym_base(const struct image *im, __u32 symtab)
{
	__u64 base = 0;
	Elf64_Shdr sh;

	for (__u32 i = 0; i < symtab && base < CUBIN_SYMS_MAX_SYMBOLS; i++) {
		image__shdr(im, i, &sh);
		if (sh.sh_type == SHT_SYMTAB)
			base += sh.sh_size / sizeof(Elf64_Sym) < CUBIN_SYMS_MAX_SYMBOLS ?
					sh.sh_size / sizeof(Elf64_Sym) : CUBIN_SYMS_MAX_SYMBOLS;
	}
	return base;
}

/* ---------------------------------------------------------------- relocations */

/* A relocation against .debug_line, as a set_address needs it. */
struct reloc {
	__u64 at;      /* the offset in .debug_line it patches */
	__s64 addend;  /* RELA's; a REL's is the 8 bytes at `at` */
	__u32 sym;     /* cubin_syms's index of its symbol */
	bool rela;
	bool kernel;   /* R_CUDA_64 against a defined function cubin_syms names */
};

/*
 * Whether section i relocates section target (*ret_is); if so, it and the
 * symbol table it names are checked to be whole and of the right kind.
 */
static int image__relsec(const struct image *im, __u32 i, __u32 target, Elf64_Shdr *ret_sh,
			 Elf64_Shdr *ret_symtab, bool *ret_is)
{
	Elf64_Shdr sh, sym;

	*ret_is = false;
	image__shdr(im, i, &sh);
	if ((sh.sh_type != SHT_REL && sh.sh_type != SHT_RELA) || sh.sh_info != target)
		return 0;
	if (sh.sh_entsize != (sh.sh_type == SHT_RELA ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel)) ||
	    !cubin_elf__inside(sh.sh_offset, sh.sh_size, im->size) || sh.sh_link >= im->shnum)
		return -EBADMSG;
	image__shdr(im, sh.sh_link, &sym);
	if (sym.sh_type != SHT_SYMTAB || sym.sh_entsize != sizeof(Elf64_Sym) ||
	    !cubin_elf__inside(sym.sh_offset, sym.sh_size, im->size))
		return -EBADMSG;
	*ret_sh = sh;
	*ret_symtab = sym;
	*ret_is = true;
	return 0;
}

/* Appends the relocations of one section to rel[*n]; the caller sized rel for them. */
static int reloc__read(const struct image *im, const Elf64_Shdr *sh, const Elf64_Shdr *symtab,
		       __u64 base, struct reloc *rel, size_t *n)
{
	__u64 nrel = sh->sh_size / sh->sh_entsize, nsyms = symtab->sh_size / sizeof(Elf64_Sym);

	for (__u64 i = 0; i < nrel; i++) {
		Elf64_Rela r = { 0 };
		Elf64_Sym sym;
		__u64 idx;

		/* Elf64_Rel is Elf64_Rela without its addend. */
		memcpy(&r, im->elf + sh->sh_offset + i * sh->sh_entsize, sh->sh_entsize);
		idx = ELF64_R_SYM(r.r_info);
		if (idx >= nsyms)
			return -EBADMSG;
		memcpy(&sym, im->elf + symtab->sh_offset + idx * sizeof(sym), sizeof(sym));
		rel[*n] = (struct reloc){
			.at = r.r_offset,
			.addend = r.r_addend,
			.sym = (__u32)(base + idx),
			.rela = sh->sh_type == SHT_RELA,
			.kernel = ELF64_R_TYPE(r.r_info) == R_CUDA_64 &&
				  ELF64_ST_TYPE(sym.st_info) == STT_FUNC &&
				  sym.st_shndx != SHN_UNDEF && base + idx < CUBIN_SYMS_MAX_SYMBOLS,
		};
		(*n)++;
	}
	return 0;
}

static int reloc__cmp(const void *a, const void *b)
{
	const struct reloc *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/*
 * The relocations against .debug_line (section target), sorted by the
 * place they patch. Two at one place would make the table mean two things.
 */
static int reloc__index(const struct image *im, __u32 target, struct reloc **ret_rel,
			size_t *ret_n)
{
	struct {
		Elf64_Shdr sh, symtab;
	} secs[CUBIN_LINES_MAX_RELSECS];
	__u32 nsecs = 0;
	__u64 total = 0;
	struct reloc *rel;
	size_t n = 0;
	bool is;
	int err;

	for (__u32 i = 1; i < im->shnum; i++) {
		Elf64_Shdr sh, symtab;

		err = image__relsec(im, i, target, &sh, &symtab, &is);
		if (err)
			return err;
		if (!is)
			continue;
		if (nsecs >= CUBIN_LINES_MAX_RELSECS)
			return -E2BIG;
		secs[nsecs].sh = sh;
		secs[nsecs++].symtab = symtab;
		total += sh.sh_size / sh.sh_entsize;
		if (total > CUBIN_LINES_MAX_RELOCS)
			return -E2BIG;
	}
	rel = calloc(total ? total : 1, sizeof(*rel));
	if (!rel)
		return -ENOMEM;
	for (__u32 i = 0; i < nsecs; i++) {
		err = reloc__read(im, &secs[i].sh, &secs[i].symtab,
				  image__sym_base(im, secs[i].sh.sh_link), rel, &n);
		if (err)
			goto err_free;
	}
	qsort(rel, n, sizeof(*rel), reloc__cmp);
	for (size_t i = 1; i < n; i++) {
		if (rel[i].at == rel[i - 1].at) {
			err = -EBADMSG;
			goto err_free;
		}
	}
	*ret_rel = rel;
	*ret_n = n;
	return 0;

err_free:
	free(rel);
	return err;
}

static const struct reloc *reloc__find(const struct reloc *rel, size_t n, __u64 at)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rel[mid].at == at)
			return &rel[mid];
		if (rel[mid].at < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---------------------------------------------------------------- reading DWARF */

/* A reader over the section: pos <= end <= the section's size, always. */
struct rd {
	const __u8 *sec;
	__u64 pos;
	__u64 end;
};

static int rd__bytes(struct rd *r, void *out, __u64 n)
{
	if (n > r->end - r->pos)
		return -EBADMSG;
	memcpy(out, r->sec + r->pos, n);
	r->pos += n;
	return 0;
}

static int rd__u8(struct rd *r, __u8 *ret)
{
	return rd__bytes(r, ret, 1);
}

/*
 * LEB128, at most 10 bytes (64 bits): no producer pads a number past that,
 * and a longer one is refused rather than read as a wrapped value.
 */
static int rd__leb(struct rd *r, __u64 *ret, bool is_signed)
{
	__u64 v = 0;
	__u8 b;

	for (unsigned int shift = 0; shift < 70; shift += 7) {
		if (r->pos >= r->end)
			return -EBADMSG;
		b = r->sec[r->pos++];
		if (shift == 63 && (b & 0x7f) > 1 && !(is_signed && (b & 0x7f) == 0x7f))
			return -EBADMSG; /* bits past 64 */
		v |= (__u64)(b & 0x7f) << shift;
		if (b & 0x80)
			continue;
		if (is_signed && shift < 57 && (b & 0x40))
			v |= ~0ull << (shift + 7);
		*ret = v;
		return 0;
	}
	return -EBADMSG;
}

static int rd__uleb(struct rd *r, __u64 *ret)
{
	return rd__leb(r, ret, false);
}

static int rd__sleb(struct rd *r, __s64 *ret)
{
	__u64 v;
	int err = rd__leb(r, &v, true);

	if (!err)
		*ret = (__s64)v;
	return err;
}

/* A NUL-terminated string before r's end, shorter than a file name may be. */
static int rd__str(struct rd *r, __u64 *ret_off, __u32 *ret_len)
{
	__u64 left = r->end - r->pos;
	const __u8 *s = r->sec + r->pos, *nul;

	nul = memchr(s, '\0', left < CUBIN_LINES_MAX_NAME ? left : CUBIN_LINES_MAX_NAME);
	if (!nul)
		return left < CUBIN_LINES_MAX_NAME ? -EBADMSG : -E2BIG;
	*ret_off = r->pos;
	*ret_len = (__u32)(nul - s);
	r->pos += (__u64)(nul - s) + 1;
	return 0;
}

/* ---------------------------------------------------------------- one unit's header */

/* A directory or file of the unit's tables: a name in the section. */
struct name {
	__u64 off;
	__u32 len;
	__u32 dir; /* a file's directory index; 0 for directories */
};

struct names {
	struct name *v;
	__u32 n, cap;
};

struct unit {
	__u64 end;         /* past the unit, in the section */
	__u64 prog;        /* the line program's first byte */
	__u64 opcode_lens; /* standard_opcode_lengths[0] */
	__u8 min_insn;
	__s8 line_base;
	__u8 line_range;
	__u8 opcode_base;
};

static int names__push(struct names *t, struct name nm)
{
	struct name *v;
	__u32 cap;

	if (t->n >= CUBIN_LINES_MAX_FILES)
		return -E2BIG;
	if (t->n == t->cap) {
		cap = t->cap ? t->cap * 2 : 16;
		v = realloc(t->v, (size_t)cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = nm;
	return 0;
}

/* unit_length and version: where the unit ends, and whether its header is one we read. */
static int unit__length(struct rd *r, struct unit *u, bool *ret_dwarf64)
{
	__u32 len32;
	__u64 len;
	__u16 version;
	int err;

	err = rd__bytes(r, &len32, sizeof(len32));
	if (err)
		return err;
	*ret_dwarf64 = len32 == 0xffffffffu;
	if (len32 >= 0xfffffff0u && !*ret_dwarf64)
		return -EBADMSG; /* reserved values */
	len = len32;
	if (*ret_dwarf64) {
		err = rd__bytes(r, &len, sizeof(len));
		if (err)
			return err;
	}
	if (len > r->end - r->pos)
		return -EBADMSG;
	u->end = r->pos + len;
	r->end = u->end;
	err = rd__bytes(r, &version, sizeof(version));
	if (err)
		return err;
	return version >= 2 && version <= 4 ? (int)version : -EPROTONOSUPPORT;
}

/* From header_length to the end of standard_opcode_lengths; r ends at the program after. */
static int unit__fields(struct rd *r, struct unit *u, int version, bool dwarf64)
{
	__u64 hlen = 0;
	__u8 max_ops = 1, is_stmt;
	int err;

	err = rd__bytes(r, &hlen, dwarf64 ? 8 : 4);
	if (err)
		return err;
	if (hlen > r->end - r->pos)
		return -EBADMSG;
	u->prog = r->pos + hlen;
	r->end = u->prog; /* the rest of the header lies before the program */
	err = rd__u8(r, &u->min_insn);
	if (!err && version >= 4)
		err = rd__u8(r, &max_ops);
	if (!err)
		err = rd__u8(r, &is_stmt);
	if (!err)
		err = rd__bytes(r, &u->line_base, 1);
	if (!err)
		err = rd__u8(r, &u->line_range);
	if (!err)
		err = rd__u8(r, &u->opcode_base);
	if (err)
		return err;
	if (max_ops != 1)
		return -EPROTONOSUPPORT; /* VLIW op_index: not a GPU's */
	if (!u->line_range || !u->opcode_base || u->opcode_base - 1u > r->end - r->pos)
		return -EBADMSG;
	u->opcode_lens = r->pos;
	r->pos += u->opcode_base - 1u;
	return 0;
}

/* include_directories, then file_names, each ended by an empty name. */
static int unit__tables(struct rd *r, struct names *dirs, struct names *files)
{
	struct name nm = { 0 };
	__u64 dir, skip;
	int err;

	dirs->n = files->n = 0;
	for (;;) {
		err = rd__str(r, &nm.off, &nm.len);
		if (err || !nm.len)
			break;
		err = names__push(dirs, nm);
		if (err)
			return err;
	}
	while (!err) {
		err = rd__str(r, &nm.off, &nm.len);
		if (err || !nm.len)
			break;
		err = rd__uleb(r, &dir);
		if (!err)
			err = rd__uleb(r, &skip); /* modification time */
		if (!err)
			err = rd__uleb(r, &skip); /* length */
		if (err)
			break;
		/* A directory past the table names none: the file alone is shown. */
		nm.dir = dir <= dirs->n ? (__u32)dir : 0;
		err = names__push(files, nm);
	}
	return err;
}

/* ---------------------------------------------------------------- the line program */

struct lines {
	cubin_lines_fn cb;
	void *ctx;
	const __u8 *sec;
	__u64 sec_size;
	const struct reloc *rel;
	size_t nrel;
	struct names dirs, files;
	__u32 rows;                       /* reported, all units */
	__u64 joined;                     /* the file whose name is in name; 0: none */
	char name[CUBIN_LINES_MAX_NAME];
};

/* The state machine's registers, and the row it holds back. */
struct seq {
	__u64 addr;
	__s64 line;
	__u64 file;
	__u32 sym;
	bool kernel;   /* set_address was relocated against a kernel */
	bool pending;  /* a row at row_addr: reported once a row at another address follows */
	__u64 row_addr;
	__s64 row_line;
	__u64 row_file;
};

static void seq__reset(struct seq *s)
{
	*s = (struct seq){ .line = 1, .file = 1 };
}

static int seq__advance(struct seq *s, __u64 ops, __u8 min_insn)
{
	__u64 delta;

	if (__builtin_mul_overflow(ops, (__u64)min_insn, &delta) ||
	    __builtin_add_overflow(s->addr, delta, &s->addr))
		return -EBADMSG;
	return 0;
}

static int seq__add_line(struct seq *s, __s64 delta)
{
	return __builtin_add_overflow(s->line, delta, &s->line) ? -EBADMSG : 0;
}

/* "dir/name" of file (1-based) in l->name; absolute names and directory 0 stand alone. */
static int lines__join(struct lines *l, __u64 file)
{
	const struct name *f = &l->files.v[file - 1], *d = NULL;
	size_t at = 0;

	if (l->joined == file)
		return 0;
	if (f->dir && l->sec[f->off] != '/')
		d = &l->dirs.v[f->dir - 1];
	if (d) {
		if ((size_t)d->len + 1 + f->len >= sizeof(l->name))
			return -E2BIG;
		memcpy(l->name, l->sec + d->off, d->len);
		at = d->len;
		if (l->name[at - 1] != '/')
			l->name[at++] = '/';
	}
	memcpy(l->name + at, l->sec + f->off, f->len);
	l->name[at + f->len] = '\0';
	l->joined = file;
	return 0;
}

static int lines__emit(struct lines *l, __u32 sym, __u64 addr, __u64 file, __s64 line)
{
	const char *name = "";
	int err;

	if (line < 0 || line > UINT32_MAX)
		return -EBADMSG;
	if (l->rows >= CUBIN_LINES_MAX_ROWS)
		return -E2BIG;
	if (!file || file > l->files.n)
		line = 0; /* a file the table does not hold: no line we can name */
	if (line) {
		err = lines__join(l, file);
		if (err)
			return err;
		name = l->name;
	}
	l->rows++;
	return l->cb(l->ctx, sym, addr, name, (__u32)line);
}

static int lines__flush(struct lines *l, struct seq *s)
{
	if (!s->pending)
		return 0;
	s->pending = false;
	return lines__emit(l, s->sym, s->row_addr, s->row_file, s->row_line);
}

/* A row (copy, special opcode): the one before it is reported if it covers an instruction. */
static int lines__row(struct lines *l, struct seq *s)
{
	int err = 0;

	if (!s->kernel)
		return 0;
	if (s->pending && s->row_addr != s->addr)
		err = lines__flush(l, s);
	s->pending = true;
	s->row_addr = s->addr;
	s->row_line = s->line;
	s->row_file = s->file;
	return err;
}

/* The end row: line 0 at the address past the sequence. */
static int lines__end_sequence(struct lines *l, struct seq *s)
{
	int err = 0;

	if (s->kernel) {
		if (s->pending && s->row_addr != s->addr)
			err = lines__flush(l, s);
		if (!err)
			err = lines__emit(l, s->sym, s->addr, 0, 0);
	}
	seq__reset(s);
	return err;
}

/*
 * The kernel a sequence belongs to: the relocation at the 8-byte operand
 * at section offset at. Without one (or against no kernel) the rows until
 * the sequence's end are skipped.
 */
static int lines__set_address(struct lines *l, struct seq *s, __u64 at, __u64 len)
{
	const struct reloc *rel;
	int err;

	err = lines__flush(l, s); /* the rows so far belong to the old address */
	if (err)
		return err;
	s->kernel = false;
	s->addr = 0;
	rel = len == 8 ? reloc__find(l->rel, l->nrel, at) : NULL;
	if (!rel || !rel->kernel)
		return 0;
	if (rel->rela)
		s->addr = (__u64)rel->addend;
	else
		memcpy(&s->addr, l->sec + at, sizeof(s->addr));
	s->sym = rel->sym;
	s->kernel = true;
	return 0;
}

/* 0, length, sub-opcode: the operand ends where the length says, whatever the sub-opcode. */
static int lines__extended(struct lines *l, struct seq *s, struct rd *r)
{
	__u64 len, start;
	int err;

	err = rd__uleb(r, &len);
	if (err)
		return err;
	if (!len || len > r->end - r->pos)
		return -EBADMSG;
	start = r->pos;
	switch (r->sec[start]) {
	case DW_LNE_end_sequence:
		err = lines__end_sequence(l, s);
		break;
	case DW_LNE_set_address:
		err = lines__set_address(l, s, start + 1, len - 1);
		break;
	default:
		/* define_file, set_discriminator, NVIDIA's 0x90 (inlining): no row. */
		break;
	}
	r->pos = start + len;
	return err;
}

/* An opcode below opcode_base; one this code does not know skips its ULEB operands. */
static int lines__standard(struct lines *l, const struct unit *u, struct seq *s, struct rd *r,
			   __u8 op)
{
	__u16 fixed;
	__u64 v;
	__s64 sv;
	int err;

	switch (op) {
	case DW_LNS_copy:
		return lines__row(l, s);
	case DW_LNS_advance_pc:
		err = rd__uleb(r, &v);
		return err ? err : seq__advance(s, v, u->min_insn);
	case DW_LNS_advance_line:
		err = rd__sleb(r, &sv);
		return err ? err : seq__add_line(s, sv);
	case DW_LNS_set_file:
		return rd__uleb(r, &s->file);
	case DW_LNS_set_column:
	case DW_LNS_set_isa:
		return rd__uleb(r, &v);
	case DW_LNS_negate_stmt:
	case DW_LNS_set_basic_block:
	case DW_LNS_set_prologue_end:
	case DW_LNS_set_epilogue_begin:
		return 0;
	case DW_LNS_const_add_pc:
		return seq__advance(s, (255u - u->opcode_base) / u->line_range, u->min_insn);
	case DW_LNS_fixed_advance_pc:
		err = rd__bytes(r, &fixed, sizeof(fixed));
		return err ? err : seq__advance(s, fixed, 1);
	default:
		for (__u8 n = l->sec[u->opcode_lens + op - 1]; n; n--) {
			err = rd__uleb(r, &v);
			if (err)
				return err;
		}
		return 0;
	}
}

static int lines__special(struct lines *l, const struct unit *u, struct seq *s, __u8 op)
{
	__u8 adj = op - u->opcode_base;
	int err;

	err = seq__advance(s, adj / u->line_range, u->min_insn);
	if (!err)
		err = seq__add_line(s, u->line_base + adj % u->line_range);
	return err ? err : lines__row(l, s);
}

static int lines__program(struct lines *l, const struct unit *u)
{
	struct rd r = { .sec = l->sec, .pos = u->prog, .end = u->end };
	struct seq s;
	int err = 0;

	seq__reset(&s);
	while (!err && r.pos < r.end) {
		__u8 op = r.sec[r.pos++];

		if (op >= u->opcode_base)
			err = lines__special(l, u, &s, op);
		else if (!op)
			err = lines__extended(l, &s, &r);
		else
			err = lines__standard(l, u, &s, &r, op);
	}
	/* A sequence cut short by the unit's end: its last row still stands. */
	return err ? err : lines__flush(l, &s);
}

static int lines__unit(struct lines *l, __u64 at, __u64 *ret_end)
{
	struct rd r = { .sec = l->sec, .pos = at, .end = l->sec_size };
	struct unit u = { 0 };
	bool dwarf64;
	int version, err;

	version = unit__length(&r, &u, &dwarf64);
	if (version < 0)
		return version;
	err = unit__fields(&r, &u, version, dwarf64);
	if (!err)
		err = unit__tables(&r, &l->dirs, &l->files);
	if (err)
		return err;
	l->joined = 0;
	*ret_end = u.end;
	return lines__program(l, &u);
}

static int lines__units(struct lines *l)
{
	__u64 at = 0;
	__u32 units = 0;
	int err;

	while (at < l->sec_size) {
		if (units++ >= CUBIN_LINES_MAX_UNITS)
			return -E2BIG;
		err = lines__unit(l, at, &at); /* moves on by 4 bytes at least */
		if (err)
			return err;
	}
	return 0;
}

int cubin_lines__parse(const void *image, size_t size, cubin_lines_fn cb, void *ctx)
{
	struct lines *l;
	struct reloc *rel = NULL;
	struct image im;
	Elf64_Shdr sh;
	__u32 idx;
	size_t nrel = 0;
	int err;

	if (!image || !cb)
		return -EINVAL;
	err = image__open(&im, image, size);
	if (!err)
		err = image__debug_line(&im, &idx, &sh);
	if (!err)
		err = reloc__index(&im, idx, &rel, &nrel);
	if (err)
		return err;
	l = calloc(1, sizeof(*l));
	if (!l) {
		err = -ENOMEM;
		goto err_free_rel;
	}
	*l = (struct lines){ .cb = cb, .ctx = ctx, .sec = im.elf + sh.sh_offset,
			     .sec_size = sh.sh_size, .rel = rel, .nrel = nrel };
	err = lines__units(l);
	free(l->dirs.v);
	free(l->files.v);
	free(l);
err_free_rel:
	free(rel);
	return err;
}

/* ---------------------------------------------------------------- rows kept by a caller */

static int line_row__cmp(const void *a, const void *b)
{
	const struct cubin_line_row *x = a, *y = b;

	if (x->sym_index != y->sym_index)
		return x->sym_index < y->sym_index ? -1 : 1;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->file < y->file ? -1 : x->file > y->file;
}

void cubin_lines__sort(struct cubin_line_row *rows, size_t n)
{
	if (rows && n > 1)
		qsort(rows, n, sizeof(*rows), line_row__cmp);
}

const struct cubin_line_row *cubin_lines__find(const struct cubin_line_row *rows, size_t n,
					       __u32 sym_index, __u64 offset)
{
	size_t lo = 0, hi = rows ? n : 0;

	/* lo ends on the first row past (sym_index, offset). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].sym_index < sym_index ||
		    (rows[mid].sym_index == sym_index && rows[mid].offset <= offset))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || rows[lo - 1].sym_index != sym_index || !rows[lo - 1].line)
		return NULL;
	return &rows[lo - 1];
}
