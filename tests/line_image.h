/* SPDX-License-Identifier: MIT */
/*
 * Test images of cubins with a DWARF line table: its bytes built opcode by
 * opcode (struct dw, unit__*, op__*), and an ELF image around them
 * (image__build) with two kernels and the relocations of .debug_line
 * against them. Shared by test_cubin_lines (the parser) and test_pprof (the
 * lines under PC samples). Needs cmocka.h, elf.h and tests/elf_image.h.
 */
#ifndef GP_TESTS_LINE_IMAGE_H
#define GP_TESTS_LINE_IMAGE_H

#include <elf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "tests/elf_image.h"

#define R_CUDA_64 2

/* ---------------------------------------------------------------- DWARF bytes */

struct dw {
	__u8 *b;
	size_t n, cap;
};

static inline void dw__put(struct dw *d, const void *p, size_t n)
{
	if (d->n + n > d->cap) {
		d->cap = (d->n + n) * 2 + 64;
		d->b = realloc(d->b, d->cap);
		assert_non_null(d->b);
	}
	if (n)
		memcpy(d->b + d->n, p, n);
	d->n += n;
}

static inline void dw__u8(struct dw *d, __u8 v)
{
	dw__put(d, &v, 1);
}

static inline void dw__u16(struct dw *d, __u16 v)
{
	dw__put(d, &v, 2);
}

static inline void dw__u32(struct dw *d, __u32 v)
{
	dw__put(d, &v, 4);
}

static inline void dw__u64(struct dw *d, __u64 v)
{
	dw__put(d, &v, 8);
}

static inline void dw__uleb(struct dw *d, __u64 v)
{
	do {
		__u8 b = v & 0x7f;

		v >>= 7;
		dw__u8(d, v ? b | 0x80 : b);
	} while (v);
}

static inline void dw__sleb(struct dw *d, __s64 v)
{
	bool more;

	do {
		__u8 b = v & 0x7f;

		v >>= 7; /* arithmetic on every compiler we build with */
		more = !((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40)));
		dw__u8(d, more ? b | 0x80 : b);
	} while (more);
}

static inline void dw__str(struct dw *d, const char *s)
{
	dw__put(d, s, strlen(s) + 1);
}

static inline void dw__patch(struct dw *d, size_t at, const void *v, size_t n)
{
	memcpy(d->b + at, v, n);
}

/* ---------------------------------------------------------------- units */

#define LINE_BASE  (-5)
#define LINE_RANGE 14

struct file_spec {
	const char *name;
	__u64 dir;
};

/* Where a unit's fields lie in the section, for the tests that make them lie. */
struct unit_at {
	size_t start, version, hlen, max_ops, line_range, opcode_base, tables, prog, end;
	__u8 base;
	bool dwarf64;
};

/* standard_opcode_lengths of opcodes 1..12 (DWARF 4); 13 and up: two operands. */
static const __u8 std_lens[] = { 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1 };

static inline void unit__begin(struct dw *d, struct unit_at *u, __u16 version, __u8 opcode_base,
			const char *const *dirs, const struct file_spec *files, bool dwarf64)
{
	u->start = d->n;
	u->dwarf64 = dwarf64;
	u->base = opcode_base;
	if (dwarf64) {
		dw__u32(d, 0xffffffffu);
		dw__u64(d, 0);
	} else {
		dw__u32(d, 0);
	}
	u->version = d->n;
	dw__u16(d, version);
	u->hlen = d->n;
	if (dwarf64)
		dw__u64(d, 0);
	else
		dw__u32(d, 0);
	dw__u8(d, 1); /* minimum_instruction_length */
	u->max_ops = d->n;
	if (version >= 4)
		dw__u8(d, 1);
	dw__u8(d, 1); /* default_is_stmt */
	dw__u8(d, (__u8)LINE_BASE);
	u->line_range = d->n;
	dw__u8(d, LINE_RANGE);
	u->opcode_base = d->n;
	dw__u8(d, opcode_base);
	for (int op = 1; op < opcode_base; op++)
		dw__u8(d, op <= 12 ? std_lens[op - 1] : 2);
	u->tables = d->n;
	for (; dirs && *dirs; dirs++)
		dw__str(d, *dirs);
	dw__u8(d, 0);
	for (; files && files->name; files++) {
		dw__str(d, files->name);
		dw__uleb(d, files->dir);
		dw__uleb(d, 0x12345678); /* modification time */
		dw__uleb(d, 300);        /* length */
	}
	dw__u8(d, 0);
	u->prog = d->n;
	if (dwarf64) {
		__u64 hlen = d->n - u->hlen - 8;

		dw__patch(d, u->hlen, &hlen, 8);
	} else {
		__u32 hlen = (__u32)(d->n - u->hlen - 4);

		dw__patch(d, u->hlen, &hlen, 4);
	}
}

static inline void unit__end(struct dw *d, struct unit_at *u)
{
	u->end = d->n;
	if (u->dwarf64) {
		__u64 len = d->n - u->start - 12;

		dw__patch(d, u->start + 4, &len, 8);
	} else {
		__u32 len = (__u32)(d->n - u->start - 4);

		dw__patch(d, u->start, &len, 4);
	}
}

static inline void op__special(struct dw *d, const struct unit_at *u, unsigned int addr, int line)
{
	unsigned int op = (unsigned int)(line - LINE_BASE) + LINE_RANGE * addr + u->base;

	assert_true(line >= LINE_BASE && line < LINE_BASE + LINE_RANGE && op <= 255);
	dw__u8(d, (__u8)op);
}

static inline void op__copy(struct dw *d)
{
	dw__u8(d, 1);
}

static inline void op__advance_pc(struct dw *d, __u64 v)
{
	dw__u8(d, 2);
	dw__uleb(d, v);
}

static inline void op__advance_line(struct dw *d, __s64 v)
{
	dw__u8(d, 3);
	dw__sleb(d, v);
}

static inline void op__set_file(struct dw *d, __u64 v)
{
	dw__u8(d, 4);
	dw__uleb(d, v);
}

static inline void op__ext(struct dw *d, __u8 sub, const void *operand, size_t len)
{
	dw__u8(d, 0);
	dw__uleb(d, len + 1);
	dw__u8(d, sub);
	dw__put(d, operand, len);
}

static inline void op__end_sequence(struct dw *d)
{
	op__ext(d, 1, NULL, 0);
}

/* set_address; returns its operand's offset, where the relocation goes. */
static inline size_t op__set_address(struct dw *d, __u64 value)
{
	size_t at;

	dw__u8(d, 0);
	dw__uleb(d, 9);
	dw__u8(d, 2);
	at = d->n;
	dw__u64(d, value);
	return at;
}

/* ---------------------------------------------------------------- images */

/* Sections of the image; .debug_line is last, so its bytes end the buffer. */
enum { SEC_STRTAB = 1, SEC_SYMTAB0, SEC_SYMTAB, SEC_TEXT_A, SEC_TEXT_B, SEC_REL, SEC_LINE };
/* .symtab's symbols; the table before it holds FIRST_TABLE. */
enum { SYM_SECTION = 1, SYM_A, SYM_B, SYM_UNDEF, NSYMS };
#define FIRST_TABLE 3
#define IDX_A (FIRST_TABLE + SYM_A) /* cubin_syms's index of kernel A */
#define IDX_B (FIRST_TABLE + SYM_B)

struct rel_spec {
	__u64 at;
	__u32 sym, type;
	__s64 addend;
};

/* Appends name to the string table str of *len bytes; returns its offset. */
static inline __u32 str__put(char *str, size_t *len, const char *name)
{
	__u32 at = (__u32)*len;

	assert_true(*len + strlen(name) + 1 <= 256);
	memcpy(str + *len, name, strlen(name) + 1);
	*len += strlen(name) + 1;
	return at;
}

static inline __u8 *image__build(const struct dw *line, const struct rel_spec *rels, size_t nrel,
			  bool rela, const char *name_a, const char *name_b, size_t *ret_len)
{
	char str[256] = "";
	size_t str_len = 1, len;
	__u32 at_junk, at_a, at_b, at_undef;
	Elf64_Sym sym0[FIRST_TABLE] = { { 0 } }, sym[NSYMS] = { { 0 } };
	Elf64_Rela ra[8];
	Elf64_Rel r[8];
	__u8 *buf;

	assert_true(nrel <= 8);
	at_junk = str__put(str, &str_len, "junk");
	at_a = str__put(str, &str_len, name_a);
	at_b = str__put(str, &str_len, name_b);
	at_undef = str__put(str, &str_len, "undef_fn");
	sym0[1] = (Elf64_Sym){ .st_name = at_junk, .st_info = ELF64_ST_INFO(STB_LOCAL, STT_OBJECT),
			       .st_shndx = SEC_TEXT_A };
	sym0[2] = (Elf64_Sym){ .st_name = at_junk, .st_info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC),
			       .st_shndx = SEC_TEXT_A };
	sym[SYM_SECTION] = (Elf64_Sym){ .st_info = ELF64_ST_INFO(STB_LOCAL, STT_SECTION),
					.st_shndx = SEC_LINE };
	sym[SYM_A] = (Elf64_Sym){ .st_name = at_a, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
				  .st_shndx = SEC_TEXT_A, .st_size = 16 };
	sym[SYM_B] = (Elf64_Sym){ .st_name = at_b, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
				  .st_shndx = SEC_TEXT_B, .st_size = 16 };
	sym[SYM_UNDEF] = (Elf64_Sym){ .st_name = at_undef,
				      .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC) };
	for (size_t i = 0; i < nrel; i++) {
		ra[i] = (Elf64_Rela){ .r_offset = rels[i].at,
				      .r_info = ELF64_R_INFO(rels[i].sym, rels[i].type),
				      .r_addend = rels[i].addend };
		r[i] = (Elf64_Rel){ .r_offset = rels[i].at, .r_info = ra[i].r_info };
	}
	{
		const size_t sym_size = sizeof(Elf64_Sym), exec = SHF_ALLOC | SHF_EXECINSTR;
		const size_t rel_size = rela ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
		const struct elf_image_sec secs[] = {
			{ ".strtab", SHT_STRTAB, 0, 0, 0, 0, str, str_len },
			{ ".symtab0", SHT_SYMTAB, SEC_STRTAB, 1, 0, sym_size, sym0, sizeof(sym0) },
			{ ".symtab", SHT_SYMTAB, SEC_STRTAB, 1, 0, sym_size, sym, sizeof(sym) },
			{ ".text.a", SHT_PROGBITS, 0, 0, exec, 0, NULL, 16 },
			{ ".text.b", SHT_PROGBITS, 0, 0, exec, 0, NULL, 16 },
			{ rela ? ".rela.debug_line" : ".rel.debug_line", rela ? SHT_RELA : SHT_REL,
			  SEC_SYMTAB, SEC_LINE, SHF_INFO_LINK, rel_size,
			  rela ? (void *)ra : (void *)r, nrel * rel_size },
			{ ".debug_line", SHT_PROGBITS, 0, 0, 0, 0, line->b, line->n },
		};

		len = elf_image__sections(NULL, 0, secs, 7);
		buf = malloc(len);
		assert_non_null(buf);
		assert_int_equal(elf_image__sections(buf, len, secs, 7), len);
	}
	*ret_len = len;
	return buf;
}

#endif /* GP_TESTS_LINE_IMAGE_H */
