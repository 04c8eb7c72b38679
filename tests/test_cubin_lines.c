/* SPDX-License-Identifier: MIT */
/*
 * Tests for user/cubin/cubin_lines: the rows of a line table built here
 * opcode by opcode (every opcode family, two units, REL and RELA, 32- and
 * 64-bit DWARF), the tables nvcc 13.0 wrote for real kernels checked
 * against what nvdisasm -g printed for them, the sort and lookup a loader
 * uses, and every way a hostile image can lie: cut short anywhere, lengths
 * past their container, opcode tables past the header, advances that
 * overflow, relocations to symbols that do not exist, a million rows.
 *
 * .debug_line is the image's last section, so its bytes end the buffer: a
 * read past the section is a read past the allocation, which ASan reports
 * (make test-asan).
 */
#include <elf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/elf_image.h"
#include "tests/line_image.h"
#include "tests/progs/cubin.h"
#include "user/cubin/cubin_lines.h"
#include "user/cubin/cubin_syms.h"

static Elf64_Ehdr *ehdr(__u8 *buf)
{
	return (Elf64_Ehdr *)buf;
}

static Elf64_Shdr *shdr(__u8 *buf, int i)
{
	return (Elf64_Shdr *)(buf + ehdr(buf)->e_shoff) + i;
}

static __u8 *line_bytes(__u8 *buf)
{
	return buf + shdr(buf, SEC_LINE)->sh_offset;
}

static Elf64_Rela *relas(__u8 *buf)
{
	return (Elf64_Rela *)(buf + shdr(buf, SEC_REL)->sh_offset);
}

/* ---------------------------------------------------------------- the table of most tests */

/*
 * Unit 1 (DWARF 2, opcode_base 10, as nvcc writes): kernel A from 0, a
 * sequence with no relocation, kernel B from 0x20 (the addend). Unit 2
 * (DWARF 4, opcode_base 14: opcode 13 is one this code does not know):
 * kernel A again from 0x200. With rel, the addends are in the operands
 * (SHT_REL); else in the relocations, and the operands hold garbage that
 * RELA ignores.
 */
struct table {
	struct dw d;
	struct unit_at u1, u2;
	struct rel_spec rel[3];
};

static const char *const dirs1[] = { "/src", "/inc/", NULL };
static const struct file_spec files1[] = {
	{ "a.cu", 1 }, { "b.cuh", 2 }, { "/abs/c.h", 1 }, { "d.cu", 0 }, { NULL, 0 },
};
static const struct file_spec files2[] = { { "e.cu", 0 }, { NULL, 0 } };

static void table__unit1(struct table *t, bool rel)
{
	struct dw *d = &t->d;
	struct unit_at *u = &t->u1;

	unit__begin(d, u, 2, 10, dirs1, files1, false);
	t->rel[0] = (struct rel_spec){ op__set_address(d, rel ? 0 : 0xdead), SYM_A, R_CUDA_64, 0 };
	op__set_file(d, 1);
	op__advance_line(d, 9);
	op__copy(d);                      /* 0x0 /src/a.cu:10 */
	dw__u8(d, 5);                     /* set_column 7, negate_stmt, basic_block */
	dw__uleb(d, 7);
	dw__u8(d, 6);
	dw__u8(d, 7);
	op__special(d, u, 0x10, 2);       /* 0x10 :12 */
	op__advance_pc(d, 0x30);
	op__advance_line(d, -1);
	op__copy(d);                      /* 0x40 :11, replaced by the next row */
	op__set_file(d, 2);
	op__advance_line(d, -8);
	op__copy(d);                      /* 0x40 /inc/b.cuh:3 */
	op__ext(d, 0x90, "\x05\x00", 2);  /* NVIDIA's inlining opcode: no row */
	dw__u8(d, 8);                     /* const_add_pc: (255 - 10) / 14 = 17 */
	op__set_file(d, 3);
	op__copy(d);                      /* 0x51 /abs/c.h:3 */
	dw__u8(d, 9);                     /* fixed_advance_pc 0x2f */
	dw__u16(d, 0x2f);
	op__set_file(d, 4);
	op__advance_line(d, 97);
	op__copy(d);                      /* 0x80 d.cu:100 */
	op__set_file(d, 9);
	op__special(d, u, 0x10, 1);       /* 0x90 a file past the table: line 0 */
	op__set_file(d, 1);
	op__special(d, u, 0x10, 0);       /* 0xa0 /src/a.cu:101 */
	op__advance_line(d, -101);
	op__advance_pc(d, 0x10);
	op__copy(d);                      /* 0xb0 DWARF's line 0 */
	op__advance_line(d, 5);
	op__advance_pc(d, 0x10);
	op__copy(d);                      /* 0xc0 /src/a.cu:5 */
	op__advance_pc(d, 0x40);
	op__end_sequence(d);              /* 0x100 the end */
	/* No relocation: skipped, rows and all. */
	op__set_address(d, 0x1000);
	op__copy(d);
	op__special(d, u, 0x10, 1);
	op__end_sequence(d);
	t->rel[1] = (struct rel_spec){ op__set_address(d, rel ? 0x20 : 0xdead), SYM_B, R_CUDA_64,
				       0x20 };
	op__advance_line(d, 41);
	op__copy(d);                      /* 0x20 /src/a.cu:42 */
	op__special(d, u, 0x10, 1);       /* 0x30 :43 */
	op__advance_pc(d, 0x50);
	op__end_sequence(d);              /* 0x80 */
	unit__end(d, u);
}

static void table__unit2(struct table *t, bool rel)
{
	struct dw *d = &t->d;
	struct unit_at *u = &t->u2;

	unit__begin(d, u, 4, 14, NULL, files2, false);
	t->rel[2] = (struct rel_spec){ op__set_address(d, rel ? 0x200 : 0xdead), SYM_A, R_CUDA_64,
				       0x200 };
	dw__u8(d, 13);                    /* unknown: its two operands are skipped */
	dw__uleb(d, 300);
	dw__uleb(d, 5);
	dw__u8(d, 10);                    /* set_prologue_end */
	op__copy(d);                      /* 0x200 e.cu:1 */
	dw__u8(d, 11);                    /* set_epilogue_begin, set_isa 3 */
	dw__u8(d, 12);
	dw__uleb(d, 3);
	op__special(d, u, 0x10, 3);       /* 0x210 e.cu:4 */
	op__advance_pc(d, 0x10);
	op__end_sequence(d);              /* 0x220 */
	unit__end(d, u);
}

static __u8 *table__image(struct table *t, bool rel, size_t *ret_len)
{
	*t = (struct table){ 0 };
	table__unit1(t, rel);
	table__unit2(t, rel);
	return image__build(&t->d, t->rel, 3, !rel, "k_a", "k_b", ret_len);
}

static void table__free(struct table *t)
{
	free(t->d.b);
}

/* ---------------------------------------------------------------- rows seen */

struct row {
	__u32 sym;
	__u64 off;
	char file[64];
	size_t file_len;
	__u32 line;
};

#define SEEN_ROWS 64

struct seen {
	struct row rows[SEEN_ROWS];
	size_t n;
	size_t stop_after; /* return 7 after this many; 0: never */
};

static int record(void *ctx, __u32 sym, __u64 off, const char *file, __u32 line)
{
	struct seen *s = ctx;
	size_t len = strlen(file);

	assert_true(len < CUBIN_LINES_MAX_NAME);
	assert_int_equal(line == 0, len == 0); /* line 0 and only line 0 has no file */
	if (s->n < SEEN_ROWS) {
		struct row *r = &s->rows[s->n];

		*r = (struct row){ .sym = sym, .off = off, .file_len = len, .line = line };
		snprintf(r->file, sizeof(r->file), "%s", file);
	}
	s->n++;
	return s->stop_after && s->n >= s->stop_after ? 7 : 0;
}

static int parse(const __u8 *buf, size_t len, struct seen *s)
{
	s->n = 0;
	return cubin_lines__parse(buf, len, record, s);
}

static const struct row expect_main[] = {
	{ IDX_A, 0x0, "/src/a.cu", 0, 10 },
	{ IDX_A, 0x10, "/src/a.cu", 0, 12 },
	{ IDX_A, 0x40, "/inc/b.cuh", 0, 3 },
	{ IDX_A, 0x51, "/abs/c.h", 0, 3 },
	{ IDX_A, 0x80, "d.cu", 0, 100 },
	{ IDX_A, 0x90, "", 0, 0 },
	{ IDX_A, 0xa0, "/src/a.cu", 0, 101 },
	{ IDX_A, 0xb0, "", 0, 0 },
	{ IDX_A, 0xc0, "/src/a.cu", 0, 5 },
	{ IDX_A, 0x100, "", 0, 0 },
	{ IDX_B, 0x20, "/src/a.cu", 0, 42 },
	{ IDX_B, 0x30, "/src/a.cu", 0, 43 },
	{ IDX_B, 0x80, "", 0, 0 },
	{ IDX_A, 0x200, "e.cu", 0, 1 },
	{ IDX_A, 0x210, "e.cu", 0, 4 },
	{ IDX_A, 0x220, "", 0, 0 },
};
#define N_MAIN (sizeof(expect_main) / sizeof(expect_main[0]))

static void assert_row(const struct row *got, const struct row *want)
{
	assert_int_equal(got->sym, want->sym);
	assert_int_equal(got->off, want->off);
	assert_string_equal(got->file, want->file);
	assert_int_equal(got->line, want->line);
}

static void assert_rows(const struct seen *s, const struct row *want, size_t n)
{
	assert_int_equal(s->n, n);
	for (size_t i = 0; i < n; i++)
		assert_row(&s->rows[i], &want[i]);
}

/* The rows as a loader keeps them: file ids into names, sorted. */
struct kept {
	struct cubin_line_row rows[SEEN_ROWS];
	char names[8][64];
	size_t n, nnames;
};

static void kept__from(struct kept *k, const struct seen *s)
{
	*k = (struct kept){ .n = s->n };
	assert_true(s->n <= SEEN_ROWS);
	for (size_t i = 0; i < s->n; i++) {
		size_t id = 0;

		while (id < k->nnames && strcmp(k->names[id], s->rows[i].file))
			id++;
		if (id == k->nnames) {
			assert_true(id < 8);
			snprintf(k->names[k->nnames++], sizeof(k->names[0]), "%s", s->rows[i].file);
		}
		k->rows[i] = (struct cubin_line_row){ .sym_index = s->rows[i].sym,
						      .line = s->rows[i].line,
						      .offset = s->rows[i].off, .file = (__u32)id };
	}
	cubin_lines__sort(k->rows, k->n);
}

/* (sym, off) -> file:line, or no row when line is 0. */
static void expect_line(const struct kept *k, __u32 sym, __u64 off, const char *file, __u32 line)
{
	const struct cubin_line_row *r = cubin_lines__find(k->rows, k->n, sym, off);

	if (!line) {
		assert_null(r);
		return;
	}
	assert_non_null(r);
	assert_int_equal(r->sym_index, sym);
	assert_int_equal(r->line, line);
	assert_string_equal(k->names[r->file], file);
}

/* ---------------------------------------------------------------- rows */

static void test_synthetic_table_gives_each_row_with_its_kernel(void **state)
{
	struct table t;
	struct seen s = { 0 };
	size_t len;
	__u8 *buf = table__image(&t, false, &len);

	assert_int_equal(parse(buf, len, &s), 0);
	assert_rows(&s, expect_main, N_MAIN);
	free(buf);
	table__free(&t);
}

static void test_rel_reads_the_addend_from_the_operand(void **state)
{
	struct table t;
	struct seen s = { 0 };
	size_t len;
	__u8 *buf = table__image(&t, true, &len);

	assert_int_equal(shdr(buf, SEC_REL)->sh_type, SHT_REL);
	assert_int_equal(parse(buf, len, &s), 0);
	assert_rows(&s, expect_main, N_MAIN);
	free(buf);
	table__free(&t);
}

struct named {
	__u32 a, b;
};

static int named__kernel(void *ctx, const char *name, size_t len, __u32 index)
{
	struct named *n = ctx;

	if (!strcmp(name, "k_a"))
		n->a = index;
	if (!strcmp(name, "k_b"))
		n->b = index;
	return 0;
}

/* The loader ties rows to kernels by cubin_syms's index: the same numbers, two tables in. */
static void test_sym_index_is_cubin_syms_index(void **state)
{
	struct table t;
	struct named n = { 0 };
	size_t len;
	__u8 *buf = table__image(&t, false, &len);

	assert_int_equal(cubin_syms__parse(buf, len, named__kernel, &n), 0);
	assert_int_equal(n.a, IDX_A);
	assert_int_equal(n.b, IDX_B);
	free(buf);
	table__free(&t);
}

static void test_lookup_finds_the_row_covering_an_offset(void **state)
{
	struct table t;
	struct seen s = { 0 };
	struct kept k;
	size_t len;
	__u8 *buf = table__image(&t, false, &len);

	assert_int_equal(parse(buf, len, &s), 0);
	kept__from(&k, &s);
	expect_line(&k, IDX_A, 0x0, "/src/a.cu", 10);
	expect_line(&k, IDX_A, 0xf, "/src/a.cu", 10);    /* inside */
	expect_line(&k, IDX_A, 0x10, "/src/a.cu", 12);   /* at the edge */
	expect_line(&k, IDX_A, 0x3f, "/src/a.cu", 12);
	expect_line(&k, IDX_A, 0x40, "/inc/b.cuh", 3);   /* the later of two rows at 0x40 */
	expect_line(&k, IDX_A, 0x51, "/abs/c.h", 3);
	expect_line(&k, IDX_A, 0x8f, "d.cu", 100);
	expect_line(&k, IDX_A, 0x90, NULL, 0);           /* a file past the table */
	expect_line(&k, IDX_A, 0x9f, NULL, 0);
	expect_line(&k, IDX_A, 0xa0, "/src/a.cu", 101);
	expect_line(&k, IDX_A, 0xb8, NULL, 0);           /* DWARF's line 0 */
	expect_line(&k, IDX_A, 0xff, "/src/a.cu", 5);    /* the last byte */
	expect_line(&k, IDX_A, 0x100, NULL, 0);          /* the end */
	expect_line(&k, IDX_A, 0x1ff, NULL, 0);
	expect_line(&k, IDX_A, 0x200, "e.cu", 1);        /* the second unit's sequence */
	expect_line(&k, IDX_A, 0x21f, "e.cu", 4);
	expect_line(&k, IDX_A, 0x220, NULL, 0);
	expect_line(&k, IDX_A, UINT64_MAX, NULL, 0);
	expect_line(&k, IDX_B, 0x1f, NULL, 0);           /* before the first row */
	expect_line(&k, IDX_B, 0x20, "/src/a.cu", 42);
	expect_line(&k, IDX_B, 0x7f, "/src/a.cu", 43);
	expect_line(&k, IDX_B, 0x80, NULL, 0);
	expect_line(&k, IDX_A - 1, 0x10, NULL, 0);       /* symbols with no rows */
	expect_line(&k, IDX_B + 1, 0x10, NULL, 0);
	assert_null(cubin_lines__find(NULL, 0, IDX_A, 0));
	free(buf);
	table__free(&t);
}

static void test_sort_orders_rows_whatever_they_came_in(void **state)
{
	struct cubin_line_row rows[] = {
		{ 2, 7, 0x10, 0 }, { 1, 5, 0x10, 1 }, { 1, 3, 0x10, 0 }, { 2, 0, 0x0, 0 },
		{ 1, 9, 0x0, 0 }, { 0, 4, 0x20, 0 },
	};
	const struct cubin_line_row *r;

	cubin_lines__sort(rows, 6);
	for (size_t i = 1; i < 6; i++)
		assert_true(rows[i - 1].sym_index < rows[i].sym_index ||
			    (rows[i - 1].sym_index == rows[i].sym_index &&
			     rows[i - 1].offset <= rows[i].offset));
	/* Two rows of one kernel at one offset: the order, and so the answer, is fixed. */
	assert_int_equal(rows[2].line, 3);
	assert_int_equal(rows[3].line, 5);
	r = cubin_lines__find(rows, 6, 1, 0x10);
	assert_non_null(r);
	assert_int_equal(r->line, 5);
	r = cubin_lines__find(rows, 6, 2, 0x8);
	assert_null(r); /* a line-0 row covers it */
	r = cubin_lines__find(rows, 6, 0, 0x1f);
	assert_null(r);
	cubin_lines__sort(NULL, 0);
}

/* ---------------------------------------------------------------- real tables */

/*
 * .debug_line of tools/gpu/pc_hot.cu as it was before its hot loop got
 * `#pragma unroll 1` (so its lines are two above today's file), nvcc 13.0
 * -cubin -arch=sm_90 -lineinfo: one DWARF 2 unit, two sequences, their set_address operands
 * at 0x44 (cold) and 0x93 (hot), each relocated R_CUDA_64 + 0.
 */
static const __u8 pc_hot_line[] = {
	0x02, 0x01, 0x00, 0x00, 0x02, 0x00, 0x37, 0x00, 0x00, 0x00, 0x01, 0x01,
	0xfb, 0x0e, 0x0a, 0x00, 0x01, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x01,
	0x2f, 0x77, 0x6f, 0x72, 0x6b, 0x2f, 0x6d, 0x61, 0x69, 0x6e, 0x2f, 0x74,
	0x6f, 0x6f, 0x6c, 0x73, 0x2f, 0x67, 0x70, 0x75, 0x00, 0x00, 0x70, 0x63,
	0x5f, 0x68, 0x6f, 0x74, 0x2e, 0x63, 0x75, 0x00, 0x01, 0x98, 0x82, 0xc7,
	0xd8, 0x06, 0xf4, 0x1a, 0x00, 0x00, 0x09, 0x02, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x04, 0x01, 0x03, 0x1a, 0x01, 0xf3, 0xed, 0x03,
	0x02, 0x02, 0x20, 0x01, 0x03, 0x01, 0x02, 0x80, 0x02, 0x01, 0xee, 0xf0,
	0x03, 0x7f, 0x02, 0xd0, 0x00, 0x01, 0x03, 0x01, 0x02, 0xc0, 0x00, 0x01,
	0x03, 0x7f, 0x02, 0xc0, 0x00, 0x01, 0xf0, 0xee, 0xf0, 0xee, 0x03, 0x01,
	0x02, 0xc0, 0x00, 0x01, 0xee, 0xf0, 0xee, 0x03, 0x02, 0x02, 0x20, 0x01,
	0x03, 0x01, 0x02, 0xe0, 0x00, 0x01, 0x02, 0xa0, 0x01, 0x00, 0x01, 0x01,
	0x00, 0x09, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04,
	0x01, 0x03, 0x11, 0x01, 0xf3, 0xed, 0x03, 0x02, 0x02, 0x30, 0x01, 0xed,
	0x03, 0x02, 0x02, 0x20, 0x01, 0x03, 0x01, 0x02, 0x80, 0x01, 0x01, 0xee,
	0x03, 0x01, 0x02, 0xf0, 0x00, 0x01, 0x03, 0x7f, 0x02, 0xc0, 0x09, 0x01,
	0xf0, 0x03, 0x7f, 0x02, 0xe0, 0x00, 0x01, 0x03, 0x01, 0x02, 0x30, 0x01,
	0x03, 0x7f, 0x02, 0xa0, 0x05, 0x01, 0x03, 0x01, 0x02, 0x30, 0x01, 0x03,
	0x7f, 0x02, 0xf0, 0x01, 0x01, 0xf0, 0x03, 0x7f, 0x02, 0xc0, 0x00, 0x01,
	0xf0, 0xee, 0x03, 0x01, 0x02, 0x20, 0x01, 0xee, 0xf0, 0x03, 0x7f, 0x02,
	0x20, 0x01, 0xf0, 0x03, 0x7f, 0x02, 0x20, 0x01, 0xf0, 0xee, 0xf1, 0x03,
	0x01, 0x02, 0x30, 0x01, 0x02, 0x80, 0x02, 0x00, 0x01, 0x01,
};

/*
 * The same compiler on two kernels, k2 then k1, k1 calling an inline
 * function of a header (h.cuh): two files, four zero bytes between the
 * file table and the program (header_length says where it starts), and
 * NVIDIA's extended opcode 0x90 around the inlined row. set_address
 * operands at 0x42 (k2) and 0x5f (k1).
 */
static const __u8 inline_line[] = {
	0x8c, 0x00, 0x00, 0x00, 0x02, 0x00, 0x35, 0x00, 0x00, 0x00, 0x01, 0x01,
	0xfb, 0x0e, 0x0a, 0x00, 0x01, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x01,
	0x2f, 0x74, 0x6d, 0x70, 0x2f, 0x6d, 0x00, 0x00, 0x6d, 0x2e, 0x63, 0x75,
	0x00, 0x01, 0x86, 0xd9, 0xc7, 0xd8, 0x06, 0xbf, 0x01, 0x68, 0x2e, 0x63,
	0x75, 0x68, 0x00, 0x01, 0x86, 0xd9, 0xc7, 0xd8, 0x06, 0x47, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x09, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x04, 0x01, 0x03, 0x08, 0x01, 0xf1, 0x03, 0x01, 0x02, 0xf0,
	0x00, 0x01, 0x02, 0x80, 0x02, 0x00, 0x01, 0x01, 0x00, 0x09, 0x02, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x01, 0x03, 0x01, 0x01,
	0xf1, 0xf0, 0x03, 0x01, 0x02, 0x30, 0x01, 0x02, 0xc0, 0x00, 0x01, 0x04,
	0x02, 0x00, 0x03, 0x90, 0x05, 0x00, 0x03, 0x7d, 0x01, 0x04, 0x01, 0x00,
	0x03, 0x90, 0x00, 0x00, 0xf2, 0xf0, 0x02, 0xd0, 0x01, 0x00, 0x01, 0x01,
};

static void real_table(struct kept *k, const __u8 *bytes, size_t n, __u64 at_a, __u64 at_b,
		       size_t nrows)
{
	struct dw d = { 0 };
	struct rel_spec rel[] = { { at_a, SYM_A, R_CUDA_64, 0 }, { at_b, SYM_B, R_CUDA_64, 0 } };
	struct seen s = { 0 };
	size_t len;
	__u8 *buf;

	dw__put(&d, bytes, n);
	buf = image__build(&d, rel, 2, true, "a", "b", &len);
	assert_int_equal(parse(buf, len, &s), 0);
	assert_int_equal(s.n, nrows);
	kept__from(k, &s);
	free(buf);
	free(d.b);
}

/* What nvdisasm -g printed for these kernels, instruction by instruction (all 320 agree). */
static void test_real_tables_agree_with_nvdisasm(void **state)
{
	const char *pc_hot = "/work/main/tools/gpu/pc_hot.cu";
	struct kept k;

	real_table(&k, pc_hot_line, sizeof(pc_hot_line), 0x44, 0x93, 21 + 31);
	/* cold */
	expect_line(&k, IDX_A, 0x0, pc_hot, 27);
	expect_line(&k, IDX_A, 0x10, pc_hot, 31);
	expect_line(&k, IDX_A, 0x30, pc_hot, 29);
	expect_line(&k, IDX_A, 0x140, pc_hot, 32);
	expect_line(&k, IDX_A, 0x150, pc_hot, 31);
	expect_line(&k, IDX_A, 0x360, pc_hot, 34);
	expect_line(&k, IDX_A, 0x3f0, pc_hot, 34); /* the NOPs after EXIT */
	expect_line(&k, IDX_A, 0x400, NULL, 0);    /* .text.cold is 0x400 bytes */
	/* hot */
	expect_line(&k, IDX_B, 0x0, pc_hot, 18);
	expect_line(&k, IDX_B, 0x50, pc_hot, 22);
	expect_line(&k, IDX_B, 0x60, pc_hot, 20);
	expect_line(&k, IDX_B, 0xbd0, pc_hot, 24);
	expect_line(&k, IDX_B, 0xcf0, pc_hot, 25);
	expect_line(&k, IDX_B, 0xd00, NULL, 0);

	real_table(&k, inline_line, sizeof(inline_line), 0x42, 0x5f, 4 + 8);
	/* k2 */
	expect_line(&k, IDX_A, 0x0, "/tmp/m/m.cu", 9);
	expect_line(&k, IDX_A, 0x70, "/tmp/m/m.cu", 11);
	expect_line(&k, IDX_A, 0x80, "/tmp/m/m.cu", 12);
	expect_line(&k, IDX_A, 0x180, NULL, 0);
	/* k1: the inlined FFMA at 0x90 is the header's line, as nvdisasm -g shows it */
	expect_line(&k, IDX_B, 0x40, "/tmp/m/m.cu", 5);
	expect_line(&k, IDX_B, 0x80, "/tmp/m/m.cu", 6);
	expect_line(&k, IDX_B, 0x90, "/tmp/m/h.cuh", 3);
	expect_line(&k, IDX_B, 0xa0, "/tmp/m/m.cu", 6);
	expect_line(&k, IDX_B, 0xb0, "/tmp/m/m.cu", 7);
}

/* ---------------------------------------------------------------- hostile images */

/* A copy of the image with .debug_line cut to keep bytes: the cut is the buffer's end. */
static __u8 *image__cut(__u8 *buf, size_t keep, size_t *ret_len)
{
	size_t cut_len = shdr(buf, SEC_LINE)->sh_offset + keep;
	__u8 *part = malloc(cut_len ? cut_len : 1);

	assert_non_null(part);
	memcpy(part, buf, cut_len);
	shdr(part, SEC_LINE)->sh_size = keep;
	*ret_len = cut_len;
	return part;
}

static void test_every_cut_of_the_section_is_refused_or_whole(void **state)
{
	struct table t;
	size_t len;
	__u8 *buf = table__image(&t, false, &len);

	assert_int_equal(shdr(buf, SEC_LINE)->sh_offset + t.d.n, len);
	for (size_t keep = 0; keep < t.d.n; keep++) {
		struct seen s = { 0 };
		size_t cut_len;
		__u8 *part = image__cut(buf, keep, &cut_len);
		int err = parse(part, cut_len, &s);

		/* A cut unit is refused at its length; the one before it stands. */
		if (keep == 0 || keep == t.u1.end) {
			assert_int_equal(err, 0);
			assert_int_equal(s.n, keep ? N_MAIN - 3 : 0);
		} else {
			assert_int_equal(err, -EBADMSG);
		}
		free(part);
	}
	free(buf);
	table__free(&t);
}

/*
 * A unit whose length agrees with a section cut anywhere inside it: the
 * header, the tables and every opcode are read up to the cut and no further.
 */
static void test_every_cut_inside_a_unit_reads_nothing_past_it(void **state)
{
	struct table t;
	size_t len;
	__u8 *buf = table__image(&t, false, &len);

	for (size_t keep = 4; keep < t.u1.end; keep++) {
		struct seen s = { 0 };
		size_t cut_len;
		__u8 *part = image__cut(buf, keep, &cut_len);
		__u32 unit_len = (__u32)(keep - 4);
		int err;

		memcpy(line_bytes(part), &unit_len, 4);
		err = parse(part, cut_len, &s);
		assert_true(err == 0 || err == -EBADMSG);
		/* Rows before the cut are the table's; the last may be one a later row replaced. */
		for (size_t i = 0; i + 1 < s.n; i++)
			assert_row(&s.rows[i], &expect_main[i]);
		/* The header stretched to the cut: the tables are read up to it, and no further. */
		if (keep > t.u1.hlen + 4) {
			__u32 hlen = (__u32)(keep - t.u1.hlen - 4);

			memcpy(line_bytes(part) + t.u1.hlen, &hlen, 4);
			err = parse(part, cut_len, &s);
			assert_true(err == 0 || err == -EBADMSG);
			assert_int_equal(s.n, 0);
		}
		free(part);
	}
	free(buf);
	table__free(&t);
}

/* The main table with n bytes at offset at of .debug_line replaced by v: parse's answer. */
static int parse_patched(size_t at, const void *v, size_t n, struct seen *s)
{
	struct table t;
	size_t len;
	__u8 *buf = table__image(&t, false, &len);
	int err;

	memcpy(line_bytes(buf) + at, v, n);
	err = parse(buf, len, s);
	free(buf);
	table__free(&t);
	return err;
}

static void test_header_fields_that_lie_are_refused(void **state)
{
	struct table t;
	struct seen s = { 0 };
	size_t len;
	__u32 v32;
	__u16 v16;
	__u8 v8;

	free(table__image(&t, false, &len)); /* for the offsets of its fields */
	table__free(&t);
	/* unit_length past the section, and the reserved values */
	v32 = 100000;
	assert_int_equal(parse_patched(0, &v32, 4, &s), -EBADMSG);
	v32 = 0xfffffff0u;
	assert_int_equal(parse_patched(0, &v32, 4, &s), -EBADMSG);
	/* header_length past the unit, and too short for the fields after it */
	v32 = 0xffff;
	assert_int_equal(parse_patched(t.u1.hlen, &v32, 4, &s), -EBADMSG);
	v32 = 5;
	assert_int_equal(parse_patched(t.u1.hlen, &v32, 4, &s), -EBADMSG);
	/* ...or cutting the directory table inside a name */
	v32 = (__u32)(t.u1.tables - t.u1.hlen - 4 + 3);
	assert_int_equal(parse_patched(t.u1.hlen, &v32, 4, &s), -EBADMSG);
	/* versions this code does not read */
	v16 = 5;
	assert_int_equal(parse_patched(t.u1.version, &v16, 2, &s), -EPROTONOSUPPORT);
	v16 = 1;
	assert_int_equal(parse_patched(t.u1.version, &v16, 2, &s), -EPROTONOSUPPORT);
	v16 = 0xffff;
	assert_int_equal(parse_patched(t.u1.version, &v16, 2, &s), -EPROTONOSUPPORT);
	/* line_range 0 would divide by zero */
	v8 = 0;
	assert_int_equal(parse_patched(t.u1.line_range, &v8, 1, &s), -EBADMSG);
	/* opcode_base 0 (a table of -1 lengths), and 255 (254 lengths past the header) */
	assert_int_equal(parse_patched(t.u1.opcode_base, &v8, 1, &s), -EBADMSG);
	v8 = 255;
	assert_int_equal(parse_patched(t.u1.opcode_base, &v8, 1, &s), -EBADMSG);
	assert_int_equal(s.n, 0);
	/* DWARF 4's operations per instruction: VLIW, not a GPU's; unit 1's rows stand */
	v8 = 0;
	assert_int_equal(parse_patched(t.u2.max_ops, &v8, 1, &s), -EPROTONOSUPPORT);
	assert_int_equal(s.n, N_MAIN - 3);
	v8 = 4;
	assert_int_equal(parse_patched(t.u2.max_ops, &v8, 1, &s), -EPROTONOSUPPORT);
}

/* A one-unit table (DWARF 2, opcode_base 10) whose one sequence is kernel A's. */
typedef void (*body_fn)(struct dw *d, struct unit_at *u);

static __u8 *small_image(struct dw *d, struct unit_at *u, body_fn body, size_t *ret_len)
{
	struct rel_spec rel;

	*d = (struct dw){ 0 };
	unit__begin(d, u, 2, 10, dirs1, files1, false);
	rel = (struct rel_spec){ op__set_address(d, 0), SYM_A, R_CUDA_64, 0 };
	body(d, u);
	unit__end(d, u);
	return image__build(d, &rel, 1, true, "k_a", "k_b", ret_len);
}

static int parse_small(body_fn body, struct seen *s)
{
	struct dw d;
	struct unit_at u;
	size_t len;
	__u8 *buf = small_image(&d, &u, body, &len);
	int err = parse(buf, len, s);

	free(buf);
	free(d.b);
	return err;
}

static void body_pc_overflow(struct dw *d, struct unit_at *u)
{
	op__advance_pc(d, UINT64_MAX);
	op__advance_pc(d, 1);
	op__copy(d);
}

static void body_special_overflow(struct dw *d, struct unit_at *u)
{
	op__advance_pc(d, UINT64_MAX - 3);
	op__special(d, u, 4, 0);
}

static void body_const_add_overflow(struct dw *d, struct unit_at *u)
{
	op__advance_pc(d, UINT64_MAX - 3);
	dw__u8(d, 8);
}

static void body_line_overflow(struct dw *d, struct unit_at *u)
{
	op__advance_line(d, INT64_MAX);
	op__advance_line(d, INT64_MAX);
}

static void body_line_past_u32(struct dw *d, struct unit_at *u)
{
	op__advance_line(d, 1ll << 32);
	op__copy(d);
	op__advance_pc(d, 1);
	op__copy(d);
}

static void body_negative_line(struct dw *d, struct unit_at *u)
{
	op__advance_line(d, -2);
	op__copy(d);
	op__advance_pc(d, 1);
	op__copy(d);
}

static void body_long_uleb(struct dw *d, struct unit_at *u)
{
	dw__u8(d, 2);
	for (int i = 0; i < 10; i++)
		dw__u8(d, 0x80);
	dw__u8(d, 0);
}

static void body_uleb_past_64_bits(struct dw *d, struct unit_at *u)
{
	dw__u8(d, 2);
	for (int i = 0; i < 9; i++)
		dw__u8(d, 0xff);
	dw__u8(d, 0x02);
}

static void body_uleb_cut_by_the_unit(struct dw *d, struct unit_at *u)
{
	dw__u8(d, 2);
	dw__u8(d, 0x80);
}

static void body_ext_past_the_unit(struct dw *d, struct unit_at *u)
{
	dw__u8(d, 0);
	dw__uleb(d, 100);
	dw__u8(d, 1);
}

static void body_ext_of_length_0(struct dw *d, struct unit_at *u)
{
	dw__u8(d, 0);
	dw__u8(d, 0);
	op__copy(d);
}

static void body_fixed_advance_cut(struct dw *d, struct unit_at *u)
{
	dw__u8(d, 9);
	dw__u8(d, 1);
}

static void body_file_0(struct dw *d, struct unit_at *u)
{
	op__set_file(d, 0);
	op__copy(d);
	op__set_file(d, 5); /* one past the table */
	op__advance_pc(d, 0x10);
	op__copy(d);
	op__set_file(d, UINT64_MAX);
	op__advance_pc(d, 0x10);
	op__copy(d);
	op__set_file(d, 4);
	op__advance_pc(d, 0x10);
	op__copy(d);
	op__advance_pc(d, 0x10);
	op__end_sequence(d);
}

static void body_short_address(struct dw *d, struct unit_at *u)
{
	op__end_sequence(d);
	op__ext(d, 2, "\0\0\0\0", 4); /* a 4-byte address: no relocation can be it */
	op__copy(d);
	op__end_sequence(d);
}

static void test_opcodes_that_lie_are_refused(void **state)
{
	struct seen s = { 0 };
	static const struct row file_rows[] = {
		{ IDX_A, 0x0, "", 0, 0 }, { IDX_A, 0x10, "", 0, 0 }, { IDX_A, 0x20, "", 0, 0 },
		{ IDX_A, 0x30, "d.cu", 0, 1 }, { IDX_A, 0x40, "", 0, 0 },
	};

	assert_int_equal(parse_small(body_pc_overflow, &s), -EBADMSG);
	assert_int_equal(parse_small(body_special_overflow, &s), -EBADMSG);
	assert_int_equal(parse_small(body_const_add_overflow, &s), -EBADMSG);
	assert_int_equal(parse_small(body_line_overflow, &s), -EBADMSG);
	assert_int_equal(parse_small(body_line_past_u32, &s), -EBADMSG);
	assert_int_equal(parse_small(body_negative_line, &s), -EBADMSG);
	assert_int_equal(parse_small(body_long_uleb, &s), -EBADMSG);
	assert_int_equal(parse_small(body_uleb_past_64_bits, &s), -EBADMSG);
	assert_int_equal(parse_small(body_uleb_cut_by_the_unit, &s), -EBADMSG);
	assert_int_equal(parse_small(body_ext_past_the_unit, &s), -EBADMSG);
	assert_int_equal(parse_small(body_ext_of_length_0, &s), -EBADMSG);
	assert_int_equal(parse_small(body_fixed_advance_cut, &s), -EBADMSG);
	assert_int_equal(s.n, 0);
	/* File 0 and files past the table are no line, not an error. */
	assert_int_equal(parse_small(body_file_0, &s), 0);
	assert_rows(&s, file_rows, 5);
	/* A sequence whose address is not 8 bytes belongs to no kernel. */
	assert_int_equal(parse_small(body_short_address, &s), 0);
	assert_int_equal(s.n, 1); /* the first sequence's end only */
}

/* opcode_base 14: opcode 13's two operands, per the header, run past the unit. */
static void test_unknown_opcode_operands_past_the_unit_are_refused(void **state)
{
	struct dw d = { 0 };
	struct unit_at u;
	struct rel_spec rel;
	struct seen s = { 0 };
	size_t len;
	__u8 *buf;

	unit__begin(&d, &u, 3, 14, NULL, files2, false);
	rel = (struct rel_spec){ op__set_address(&d, 0), SYM_A, R_CUDA_64, 0 };
	dw__u8(&d, 13);
	dw__uleb(&d, 1);
	unit__end(&d, &u);
	buf = image__build(&d, &rel, 1, true, "k_a", "k_b", &len);
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	free(buf);
	free(d.b);
}

static void test_a_64_bit_dwarf_unit_reads_the_same(void **state)
{
	struct dw d = { 0 };
	struct unit_at u;
	struct rel_spec rel;
	struct seen s = { 0 };
	static const struct row want[] = {
		{ IDX_B, 0x8, "/src/a.cu", 0, 2 }, { IDX_B, 0x18, "/inc/b.cuh", 0, 3 },
		{ IDX_B, 0x28, "", 0, 0 },
	};
	size_t len;
	__u8 *buf;

	unit__begin(&d, &u, 3, 10, dirs1, files1, true);
	rel = (struct rel_spec){ op__set_address(&d, 0), SYM_B, R_CUDA_64, 8 };
	op__special(&d, &u, 0, 1);
	op__set_file(&d, 2);
	op__special(&d, &u, 0x10, 1);
	op__advance_pc(&d, 0x10);
	op__end_sequence(&d);
	unit__end(&d, &u);
	buf = image__build(&d, &rel, 1, true, "k_a", "k_b", &len);
	assert_int_equal(parse(buf, len, &s), 0);
	assert_rows(&s, want, 3);
	/* The reserved lengths between 32- and 64-bit ones are not units. */
	line_bytes(buf)[0] = 0xfe;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	free(buf);
	free(d.b);
}

static void test_relocations_that_lie_are_refused_or_skip_their_sequence(void **state)
{
	struct table t;
	struct seen s = { 0 };
	size_t len;
	__u8 *buf = table__image(&t, false, &len);

	/* A symbol index past the table */
	relas(buf)[1].r_info = ELF64_R_INFO(NSYMS, R_CUDA_64);
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	relas(buf)[1].r_info = ELF64_R_INFO(0xffffffffu, R_CUDA_64);
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	/* Two relocations at one place */
	relas(buf)[1].r_info = ELF64_R_INFO(SYM_B, R_CUDA_64);
	relas(buf)[1].r_offset = relas(buf)[0].r_offset;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	free(buf);
	table__free(&t);

	/* Another type, a section symbol, an undefined function: kernel A's first sequence goes. */
	buf = table__image(&t, false, &len);
	relas(buf)[0].r_info = ELF64_R_INFO(SYM_A, 1);
	assert_int_equal(parse(buf, len, &s), 0);
	assert_rows(&s, expect_main + 10, N_MAIN - 10);
	relas(buf)[0].r_info = ELF64_R_INFO(SYM_SECTION, R_CUDA_64);
	assert_int_equal(parse(buf, len, &s), 0);
	assert_int_equal(s.n, N_MAIN - 10);
	relas(buf)[0].r_info = ELF64_R_INFO(SYM_UNDEF, R_CUDA_64);
	assert_int_equal(parse(buf, len, &s), 0);
	assert_int_equal(s.n, N_MAIN - 10);
	/* Relocations of another section: no sequence has a kernel. */
	shdr(buf, SEC_REL)->sh_info = SEC_TEXT_A;
	assert_int_equal(parse(buf, len, &s), 0);
	assert_int_equal(s.n, 0);
	free(buf);
	table__free(&t);

	/* The relocation section itself out of bounds or inconsistent */
	buf = table__image(&t, false, &len);
	shdr(buf, SEC_REL)->sh_offset = len;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	shdr(buf, SEC_REL)->sh_offset = UINT64_MAX - 8; /* offset + size wraps */
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	free(buf);
	table__free(&t);
	buf = table__image(&t, false, &len);
	shdr(buf, SEC_REL)->sh_entsize = sizeof(Elf64_Rel);
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	shdr(buf, SEC_REL)->sh_entsize = sizeof(Elf64_Rela);
	shdr(buf, SEC_REL)->sh_link = SEC_STRTAB;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	shdr(buf, SEC_REL)->sh_link = 99;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	shdr(buf, SEC_REL)->sh_link = SEC_SYMTAB;
	shdr(buf, SEC_SYMTAB)->sh_size = 4ull << 30;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	free(buf);
	table__free(&t);
}

static void test_sections_that_lie_are_refused(void **state)
{
	struct table t;
	struct seen s = { 0 };
	size_t len;
	__u8 *buf = table__image(&t, false, &len);

	shdr(buf, SEC_LINE)->sh_offset = UINT64_MAX - 8; /* offset + size wraps */
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	free(buf);
	table__free(&t);

	buf = table__image(&t, false, &len);
	shdr(buf, SEC_LINE)->sh_size = t.d.n + 1; /* one byte past the image */
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	shdr(buf, SEC_LINE)->sh_size = t.d.n;
	shdr(buf, SEC_LINE)->sh_type = SHT_NOBITS;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	shdr(buf, SEC_LINE)->sh_type = SHT_PROGBITS;
	shdr(buf, SEC_LINE)->sh_flags = SHF_COMPRESSED;
	assert_int_equal(parse(buf, len, &s), -EPROTONOSUPPORT);
	shdr(buf, SEC_LINE)->sh_flags = 0;
	ehdr(buf)->e_shstrndx = 99;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	ehdr(buf)->e_shstrndx = SEC_LINE; /* not a string table */
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	ehdr(buf)->e_shstrndx = SEC_LINE + 1;
	shdr(buf, SEC_LINE)->sh_name = 0xffffffffu; /* a name past the names: not .debug_line */
	assert_int_equal(parse(buf, len, &s), -ENOENT);
	free(buf);
	table__free(&t);

	buf = table__image(&t, false, &len);
	ehdr(buf)->e_shoff = UINT64_MAX - 8;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	ehdr(buf)->e_shoff = len - sizeof(Elf64_Shdr) + 1;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	free(buf);
	table__free(&t);

	/* Extended numbering claiming 4G sections: capped before any loop. */
	buf = table__image(&t, false, &len);
	ehdr(buf)->e_shnum = 0;
	shdr(buf, 0)->sh_size = 0xffffffffull;
	assert_int_equal(parse(buf, len, &s), -E2BIG);
	/* ...and honest extended numbering (e_shstrndx too) works. */
	shdr(buf, 0)->sh_size = SEC_LINE + 2;
	shdr(buf, 0)->sh_link = ehdr(buf)->e_shstrndx;
	ehdr(buf)->e_shstrndx = SHN_XINDEX;
	assert_int_equal(parse(buf, len, &s), 0);
	assert_int_equal(s.n, N_MAIN);
	free(buf);
	table__free(&t);
	assert_int_equal(s.n, N_MAIN);
}

static void test_a_cubin_without_lineinfo_has_no_line_table(void **state)
{
	static const char *const kernels[] = { "gemm", "softmax" };
	size_t len = cubin_size(kernels, 2);
	__u8 *buf = malloc(len);
	struct table t;
	struct seen s = { 0 };

	assert_non_null(buf);
	assert_int_equal(cubin_build(buf, len, "t", kernels, 2), len);
	assert_int_equal(parse(buf, len, &s), -ENOENT);
	free(buf);

	buf = table__image(&t, false, &len);
	ehdr(buf)->e_shoff = 0;
	assert_int_equal(parse(buf, len, &s), -ENOENT);
	free(buf);
	table__free(&t);
}

static void test_bad_arguments_and_garbage(void **state)
{
	struct table t;
	struct seen s = { 0 };
	size_t len;
	__u8 *buf = table__image(&t, false, &len), junk[256];

	assert_int_equal(cubin_lines__parse(NULL, len, record, &s), -EINVAL);
	assert_int_equal(cubin_lines__parse(buf, len, NULL, &s), -EINVAL);
	assert_int_equal(parse(buf, sizeof(Elf64_Ehdr) - 1, &s), -ENOEXEC);
	buf[EI_CLASS] = ELFCLASS32;
	assert_int_equal(parse(buf, len, &s), -ENOEXEC);
	buf[EI_CLASS] = ELFCLASS64;
	buf[EI_DATA] = ELFDATA2MSB;
	assert_int_equal(parse(buf, len, &s), -ENOEXEC);
	srand(42);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (__u8)rand();
	assert_int_equal(parse(junk, sizeof(junk), &s), -ENOEXEC);
	assert_int_equal(s.n, 0);
	free(buf);
	table__free(&t);
}

static void test_callback_can_stop_the_walk(void **state)
{
	struct table t;
	struct seen s = { .stop_after = 2 };
	size_t len;
	__u8 *buf = table__image(&t, false, &len);

	assert_int_equal(parse(buf, len, &s), 7);
	assert_int_equal(s.n, 2);
	free(buf);
	table__free(&t);
}

static void test_unaligned_image_parses_the_same(void **state)
{
	struct table t;
	struct seen s = { 0 };
	size_t len;
	__u8 *buf = table__image(&t, false, &len), *odd = malloc(len + 1);

	assert_non_null(odd);
	memcpy(odd + 1, buf, len);
	assert_int_equal(parse(odd + 1, len, &s), 0);
	assert_rows(&s, expect_main, N_MAIN);
	free(odd);
	free(buf);
	table__free(&t);
}

/* One sequence of a million rows and more: the walk stops at the cap. */
static void test_row_count_is_capped(void **state)
{
	struct dw d = { 0 };
	struct unit_at u;
	struct rel_spec rel;
	struct seen s = { 0 };
	size_t len;
	__u8 *buf;

	unit__begin(&d, &u, 2, 10, dirs1, files1, false);
	rel = (struct rel_spec){ op__set_address(&d, 0), SYM_A, R_CUDA_64, 0 };
	for (size_t i = 0; i < CUBIN_LINES_MAX_ROWS + 10; i++)
		op__special(&d, &u, 1, 0); /* a row a byte */
	op__end_sequence(&d);
	unit__end(&d, &u);
	buf = image__build(&d, &rel, 1, true, "k_a", "k_b", &len);
	assert_int_equal(parse(buf, len, &s), -E2BIG);
	assert_int_equal(s.n, CUBIN_LINES_MAX_ROWS);
	free(buf);
	free(d.b);
}

static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

/* dir (len dir_len, or none) and a file named by name_len 'f's: parse's answer. */
static int parse_names(size_t dir_len, size_t name_len, struct seen *s)
{
	char *dir = repeat('d', dir_len), *name = repeat('f', name_len);
	const char *const dirs[] = { dir, NULL };
	const struct file_spec files[] = { { name, dir_len ? 1 : 0 }, { NULL, 0 } };
	struct dw d = { 0 };
	struct unit_at u;
	struct rel_spec rel;
	size_t len;
	__u8 *buf;
	int err;

	unit__begin(&d, &u, 2, 10, dir_len ? dirs : NULL, files, false);
	rel = (struct rel_spec){ op__set_address(&d, 0), SYM_A, R_CUDA_64, 0 };
	op__copy(&d);
	op__advance_pc(&d, 0x10);
	op__end_sequence(&d);
	unit__end(&d, &u);
	buf = image__build(&d, &rel, 1, true, "k_a", "k_b", &len);
	err = parse(buf, len, s);
	free(buf);
	free(d.b);
	free(dir);
	free(name);
	return err;
}

static void test_file_names_past_the_cap_are_refused(void **state)
{
	struct seen s = { 0 };
	const size_t max = CUBIN_LINES_MAX_NAME - 1; /* characters, without the NUL */

	assert_int_equal(parse_names(0, max, &s), 0);
	assert_int_equal(s.rows[0].file_len, max);
	assert_int_equal(parse_names(0, max + 1, &s), -E2BIG);
	assert_int_equal(parse_names(max + 1, 1, &s), -E2BIG);
	/* Joined: "dir/name" of exactly max characters fits, one more does not. */
	assert_int_equal(parse_names(2000, max - 2001, &s), 0);
	assert_int_equal(s.rows[0].file_len, max);
	assert_int_equal(parse_names(2000, max - 2000, &s), -E2BIG);
}

static void test_random_bytes_never_escape_the_image(void **state)
{
	struct table t;
	size_t len;
	__u8 *buf = table__image(&t, false, &len), *copy = malloc(len);
	size_t line_off = shdr(buf, SEC_LINE)->sh_offset, rel_off = shdr(buf, SEC_REL)->sh_offset;
	size_t rel_size = shdr(buf, SEC_REL)->sh_size;

	assert_non_null(copy);
	srand(7);
	/* Line table bytes, now and then relocation bytes, flipped: an answer, no crash. */
	for (int round = 0; round < 20000; round++) {
		struct seen s = { 0 };
		int err;

		memcpy(copy, buf, len);
		for (int k = 0; k < 1 + round % 4; k++)
			copy[line_off + (size_t)rand() % t.d.n] = (__u8)rand();
		if (round % 8 == 0)
			copy[rel_off + (size_t)rand() % rel_size] = (__u8)rand();
		err = parse(copy, len, &s);
		assert_true(err == 0 || err == -EBADMSG || err == -EPROTONOSUPPORT ||
			    err == -E2BIG);
	}
	free(copy);
	free(buf);
	table__free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synthetic_table_gives_each_row_with_its_kernel),
		cmocka_unit_test(test_rel_reads_the_addend_from_the_operand),
		cmocka_unit_test(test_sym_index_is_cubin_syms_index),
		cmocka_unit_test(test_lookup_finds_the_row_covering_an_offset),
		cmocka_unit_test(test_sort_orders_rows_whatever_they_came_in),
		cmocka_unit_test(test_real_tables_agree_with_nvdisasm),
		cmocka_unit_test(test_every_cut_of_the_section_is_refused_or_whole),
		cmocka_unit_test(test_every_cut_inside_a_unit_reads_nothing_past_it),
		cmocka_unit_test(test_header_fields_that_lie_are_refused),
		cmocka_unit_test(test_opcodes_that_lie_are_refused),
		cmocka_unit_test(test_unknown_opcode_operands_past_the_unit_are_refused),
		cmocka_unit_test(test_a_64_bit_dwarf_unit_reads_the_same),
		cmocka_unit_test(test_relocations_that_lie_are_refused_or_skip_their_sequence),
		cmocka_unit_test(test_sections_that_lie_are_refused),
		cmocka_unit_test(test_a_cubin_without_lineinfo_has_no_line_table),
		cmocka_unit_test(test_bad_arguments_and_garbage),
		cmocka_unit_test(test_callback_can_stop_the_walk),
		cmocka_unit_test(test_unaligned_image_parses_the_same),
		cmocka_unit_test(test_row_count_is_capped),
		cmocka_unit_test(test_file_names_past_the_cap_are_refused),
		cmocka_unit_test(test_random_bytes_never_escape_the_image),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
