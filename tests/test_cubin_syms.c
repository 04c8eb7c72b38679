/* SPDX-License-Identifier: MIT */
/*
 * Tests for user/cubin/cubin_syms: the kernel names of the stub's cubins
 * (tests/progs/cubin.h, the images the stub driver loads), and every way a
 * hostile image can lie about itself: cut short, garbage, sections pointing
 * past the end, sizes of 4 GiB, names without a terminator, huge counts.
 * Each reported name must lie inside the buffer and end at its NUL.
 */
#include <elf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/progs/cubin.h"
#include "user/cubin/cubin_syms.h"

struct seen {
	const uint8_t *lo, *hi;   /* the buffer given to parse */
	char names[8][64];
	__u32 index[8];
	int n;
	int stop_after;           /* return 7 after this many; 0: never */
};

static int record(void *ctx, const char *name, size_t len, __u32 index)
{
	struct seen *s = ctx;

	/* Inside the buffer, terminated where it says. */
	assert_true((const uint8_t *)name >= s->lo && (const uint8_t *)name + len < s->hi);
	assert_int_equal(name[len], '\0');
	assert_int_equal(strlen(name), len);
	assert_true(len >= 1);
	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name);
		s->index[s->n] = index;
	}
	s->n++;
	return s->stop_after && s->n >= s->stop_after ? 7 : 0;
}

static int parse(const uint8_t *buf, size_t len, struct seen *s)
{
	s->lo = buf;
	s->hi = buf + len;
	return cubin_syms__parse(buf, len, record, s);
}

static const char *const kernels[] = { "gemm", "_Z7softmaxPfi", "graph_k1" };

/* A stub cubin in a malloc'ed buffer of exactly its size (ASan sees overreads). */
static uint8_t *stub_cubin(size_t *ret_len)
{
	size_t len = cubin_size(kernels, 3);
	uint8_t *buf = malloc(len);

	assert_non_null(buf);
	assert_int_equal(cubin_build(buf, len, "t", kernels, 3), len);
	*ret_len = len;
	return buf;
}

static Elf64_Ehdr *ehdr(uint8_t *buf)
{
	return (Elf64_Ehdr *)buf;
}

static Elf64_Shdr *shdr(uint8_t *buf, int i)
{
	return (Elf64_Shdr *)(buf + ehdr(buf)->e_shoff) + i;
}

enum { SEC_TEXT = 1, SEC_STRTAB = 2, SEC_SYMTAB = 3 };

static void test_stub_cubin_lists_each_kernel_in_symbol_order(void **state)
{
	struct seen s = { 0 };
	size_t len;
	uint8_t *buf = stub_cubin(&len);

	assert_int_equal(parse(buf, len, &s), 0);
	assert_int_equal(s.n, 3);
	for (int i = 0; i < 3; i++) {
		assert_string_equal(s.names[i], kernels[i]);
		assert_int_equal(s.index[i], i + 1); /* symbol 0 is the null symbol */
	}
	free(buf);
}

static void test_unaligned_image_parses_the_same(void **state)
{
	struct seen s = { 0 };
	size_t len;
	uint8_t *buf = stub_cubin(&len), *odd = malloc(len + 1);

	assert_non_null(odd);
	memcpy(odd + 1, buf, len);
	assert_int_equal(parse(odd + 1, len, &s), 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.names[2], "graph_k1");
	free(odd);
	free(buf);
}

static void test_every_truncation_is_refused_without_reading_past_it(void **state)
{
	size_t len;
	uint8_t *buf = stub_cubin(&len);

	/* The section table is last: any cut loses part of it. */
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *part = malloc(cut ? cut : 1);
		struct seen s = { 0 };
		int err;

		memcpy(part, buf, cut);
		err = parse(part, cut, &s);
		assert_true(err == -ENOEXEC || err == -EBADMSG);
		assert_int_equal(s.n, 0);
		free(part);
	}
	free(buf);
}

static void test_garbage_is_not_an_elf(void **state)
{
	uint8_t junk[4096];
	struct seen s = { 0 };

	srand(42);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)rand();
	assert_int_equal(parse(junk, sizeof(junk), &s), -ENOEXEC);
	/* ELF32 or big-endian: not what a cubin is. */
	memcpy(junk, ELFMAG, SELFMAG);
	junk[EI_CLASS] = ELFCLASS32;
	junk[EI_DATA] = ELFDATA2LSB;
	assert_int_equal(parse(junk, sizeof(junk), &s), -ENOEXEC);
	junk[EI_CLASS] = ELFCLASS64;
	junk[EI_DATA] = ELFDATA2MSB;
	assert_int_equal(parse(junk, sizeof(junk), &s), -ENOEXEC);
	assert_int_equal(s.n, 0);
}

static void test_garbage_after_a_valid_header_never_escapes_the_buffer(void **state)
{
	size_t len;
	uint8_t *buf = stub_cubin(&len), *copy = malloc(len);

	srand(7);
	/* Flip bytes anywhere past the ident: every answer is an answer, no crash. */
	for (int round = 0; round < 20000; round++) {
		struct seen s = { 0 };
		int err;

		memcpy(copy, buf, len);
		for (int k = 0; k < 1 + round % 4; k++)
			copy[EI_NIDENT + rand() % (len - EI_NIDENT)] = (uint8_t)rand();
		err = parse(copy, len, &s);
		assert_true(err == 0 || err == -EBADMSG || err == -ENOENT || err == -E2BIG);
	}
	free(copy);
	free(buf);
}

static void test_sections_pointing_past_the_end_are_refused(void **state)
{
	struct seen s = { 0 };
	size_t len;
	uint8_t *buf = stub_cubin(&len);

	shdr(buf, SEC_SYMTAB)->sh_offset = len - 8;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	free(buf);

	buf = stub_cubin(&len);
	shdr(buf, SEC_STRTAB)->sh_offset = len;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	free(buf);

	buf = stub_cubin(&len);
	shdr(buf, SEC_SYMTAB)->sh_link = 99;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	shdr(buf, SEC_SYMTAB)->sh_link = SEC_TEXT; /* not a string table */
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	free(buf);

	buf = stub_cubin(&len);
	ehdr(buf)->e_shoff = len - sizeof(Elf64_Shdr) + 1;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	ehdr(buf)->e_shoff = UINT64_MAX - 8; /* offset + size wraps */
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	free(buf);
	assert_int_equal(s.n, 0);
}

static void test_sizes_of_4_gib_are_refused(void **state)
{
	struct seen s = { 0 };
	size_t len;
	uint8_t *buf = stub_cubin(&len);

	shdr(buf, SEC_SYMTAB)->sh_size = 4ull << 30;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	free(buf);

	buf = stub_cubin(&len);
	shdr(buf, SEC_STRTAB)->sh_size = 4ull << 30;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	free(buf);

	/* Extended numbering claiming 4G sections: capped before any loop. */
	buf = stub_cubin(&len);
	ehdr(buf)->e_shnum = 0;
	shdr(buf, 0)->sh_size = 0xffffffffull;
	assert_int_equal(parse(buf, len, &s), -E2BIG);
	assert_int_equal(s.n, 0);
	/* ...and honest extended numbering works. */
	shdr(buf, 0)->sh_size = CUBIN_NSECT;
	assert_int_equal(parse(buf, len, &s), 0);
	assert_int_equal(s.n, 3);
	free(buf);
}

static void test_a_name_without_terminator_is_skipped(void **state)
{
	struct seen s = { 0 };
	size_t len;
	uint8_t *buf = stub_cubin(&len);
	Elf64_Shdr *str = shdr(buf, SEC_STRTAB);

	/* The table ends on the last name's NUL: overwrite it. */
	assert_int_equal(buf[str->sh_offset + str->sh_size - 1], '\0');
	buf[str->sh_offset + str->sh_size - 1] = 'X';
	assert_int_equal(parse(buf, len, &s), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.names[0], "gemm");
	assert_string_equal(s.names[1], "_Z7softmaxPfi");
	free(buf);

	/* A name offset at or past the table's end, and an empty name. */
	buf = stub_cubin(&len);
	str = shdr(buf, SEC_STRTAB);
	((Elf64_Sym *)(buf + shdr(buf, SEC_SYMTAB)->sh_offset))[1].st_name = (Elf64_Word)str->sh_size;
	((Elf64_Sym *)(buf + shdr(buf, SEC_SYMTAB)->sh_offset))[2].st_name = 0xffffffff;
	((Elf64_Sym *)(buf + shdr(buf, SEC_SYMTAB)->sh_offset))[3].st_name = 0;
	s.n = 0;
	assert_int_equal(parse(buf, len, &s), 0);
	assert_int_equal(s.n, 0);
	free(buf);
}

static void test_only_defined_functions_are_kernels(void **state)
{
	struct seen s = { 0 };
	size_t len;
	uint8_t *buf = stub_cubin(&len);
	Elf64_Sym *sym = (Elf64_Sym *)(buf + shdr(buf, SEC_SYMTAB)->sh_offset);

	sym[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
	sym[2].st_shndx = SHN_UNDEF;
	assert_int_equal(parse(buf, len, &s), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.names[0], "graph_k1");
	assert_int_equal(s.index[0], 3);
	free(buf);
}

static void test_bad_arguments_and_missing_symtab(void **state)
{
	struct seen s = { 0 };
	size_t len;
	uint8_t *buf = stub_cubin(&len);

	assert_int_equal(cubin_syms__parse(NULL, len, record, &s), -EINVAL);
	assert_int_equal(cubin_syms__parse(buf, len, NULL, &s), -EINVAL);
	shdr(buf, SEC_SYMTAB)->sh_entsize = 16;
	assert_int_equal(parse(buf, len, &s), -EBADMSG);
	shdr(buf, SEC_SYMTAB)->sh_type = SHT_PROGBITS;
	assert_int_equal(parse(buf, len, &s), -ENOENT);
	ehdr(buf)->e_shoff = 0;
	assert_int_equal(parse(buf, len, &s), -ENOENT);
	free(buf);
}

static void test_callback_can_stop_the_walk(void **state)
{
	struct seen s = { .stop_after = 1 };
	size_t len;
	uint8_t *buf = stub_cubin(&len);

	assert_int_equal(parse(buf, len, &s), 7);
	assert_int_equal(s.n, 1);
	free(buf);
}

/* A symbol table one past the cap: the walk stops at the cap with -E2BIG. */
static void test_symbol_count_is_capped(void **state)
{
	size_t nsyms = CUBIN_SYMS_MAX_SYMBOLS + 1, sym_off = sizeof(Elf64_Ehdr) + 8;
	size_t shoff = sym_off + nsyms * sizeof(Elf64_Sym), len = shoff + 3 * sizeof(Elf64_Shdr);
	uint8_t *buf = calloc(1, len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Shdr *sh = (Elf64_Shdr *)(buf + shoff);
	struct seen s = { 0 };

	assert_non_null(buf);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_shoff = shoff;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 3;
	/* Every symbol a function named "f" (the string table is 8 bytes after the header). */
	memcpy(buf + sizeof(Elf64_Ehdr), "\0f\0", 3);
	for (size_t i = 0; i < nsyms; i++) {
		Elf64_Sym *sym = (Elf64_Sym *)(buf + sym_off) + i;

		sym->st_name = 1;
		sym->st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		sym->st_shndx = 1;
	}
	sh[1] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = sizeof(Elf64_Ehdr), .sh_size = 8 };
	sh[2] = (Elf64_Shdr){ .sh_type = SHT_SYMTAB, .sh_offset = sym_off,
			      .sh_size = nsyms * sizeof(Elf64_Sym), .sh_link = 1,
			      .sh_entsize = sizeof(Elf64_Sym) };
	assert_int_equal(parse(buf, len, &s), -E2BIG);
	assert_int_equal(s.n, CUBIN_SYMS_MAX_SYMBOLS);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stub_cubin_lists_each_kernel_in_symbol_order),
		cmocka_unit_test(test_unaligned_image_parses_the_same),
		cmocka_unit_test(test_every_truncation_is_refused_without_reading_past_it),
		cmocka_unit_test(test_garbage_is_not_an_elf),
		cmocka_unit_test(test_garbage_after_a_valid_header_never_escapes_the_buffer),
		cmocka_unit_test(test_sections_pointing_past_the_end_are_refused),
		cmocka_unit_test(test_sizes_of_4_gib_are_refused),
		cmocka_unit_test(test_a_name_without_terminator_is_skipped),
		cmocka_unit_test(test_only_defined_functions_are_kernels),
		cmocka_unit_test(test_bad_arguments_and_missing_symtab),
		cmocka_unit_test(test_callback_can_stop_the_walk),
		cmocka_unit_test(test_symbol_count_is_capped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
