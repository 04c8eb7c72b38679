/* SPDX-License-Identifier: MIT */
/*
 * Builds tiny but valid ELF64 "cubins" in memory for the stub workloads and
 * tests: an ELF header (EM_CUDA), a .text with 16 bytes per kernel (filled
 * with a tag, so modules with different tags differ), .strtab, .symtab with
 * one global STT_FUNC per kernel name, .shstrtab, and the section header
 * table LAST, so the image's size is exactly e_shoff + e_shnum*e_shentsize
 * (the rule the driver uses to size a cubin).
 *
 * Header-only (static functions): each tests/progs/X.c is its own program.
 */
#ifndef GP_TESTS_CUBIN_H
#define GP_TESTS_CUBIN_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef EM_CUDA
#define EM_CUDA 190
#endif

#define CUBIN_TEXT_PER_KERNEL 16
#define CUBIN_NSECT 5 /* null, .text, .strtab, .symtab, .shstrtab */

static const char cubin_shstrtab[] = "\0.text\0.strtab\0.symtab\0.shstrtab";

static size_t cubin_align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Appends name to a string table at *off; returns its index. */
static uint32_t cubin_put_str(uint8_t *tab, size_t *off, const char *name)
{
	uint32_t at = (uint32_t)*off;
	size_t len = strlen(name) + 1;

	memcpy(tab + *off, name, len);
	*off += len;
	return at;
}

static void cubin_shdr(Elf64_Shdr *sh, uint32_t name, uint32_t type,
		       size_t off, size_t size)
{
	memset(sh, 0, sizeof(*sh));
	sh->sh_name = name;
	sh->sh_type = type;
	sh->sh_offset = off;
	sh->sh_size = size;
	sh->sh_addralign = 1;
}

/* Bytes cubin_build needs for these kernels. */
static size_t cubin_size(const char *const *kernels, size_t n)
{
	size_t str = 1;

	for (size_t i = 0; i < n; i++)
		str += strlen(kernels[i]) + 1;
	return sizeof(Elf64_Ehdr) + cubin_align8(n * CUBIN_TEXT_PER_KERNEL) +
	       cubin_align8(str) + (n + 1) * sizeof(Elf64_Sym) +
	       cubin_align8(sizeof(cubin_shstrtab)) +
	       CUBIN_NSECT * sizeof(Elf64_Shdr);
}

/* Writes the image into buf (cap bytes); returns its size, 0 if cap is
 * too small. */
static size_t cubin_build(uint8_t *buf, size_t cap, const char *tag,
			  const char *const *kernels, size_t n)
{
	size_t total = cubin_size(kernels, n), off, str_off, str_len = 1;
	size_t text_off, sym_off, shstr_off, tag_len = strlen(tag);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Shdr sh[CUBIN_NSECT];

	if (cap < total)
		return 0;
	memset(buf, 0, total);
	text_off = sizeof(*eh);
	for (size_t i = 0; i < n * CUBIN_TEXT_PER_KERNEL && tag_len; i++)
		buf[text_off + i] = (uint8_t)tag[i % tag_len];
	str_off = text_off + cubin_align8(n * CUBIN_TEXT_PER_KERNEL);
	buf[str_off] = 0;
	for (size_t i = 0; i < n; i++)
		str_len += strlen(kernels[i]) + 1;
	sym_off = str_off + cubin_align8(str_len);
	str_len = 1;
	for (size_t i = 0; i < n; i++) {
		Elf64_Sym s = { 0 };

		s.st_name = cubin_put_str(buf + str_off, &str_len, kernels[i]);
		s.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		s.st_shndx = 1;
		s.st_value = i * CUBIN_TEXT_PER_KERNEL;
		s.st_size = CUBIN_TEXT_PER_KERNEL;
		memcpy(buf + sym_off + (i + 1) * sizeof(s), &s, sizeof(s));
	}
	shstr_off = sym_off + (n + 1) * sizeof(Elf64_Sym);
	memcpy(buf + shstr_off, cubin_shstrtab, sizeof(cubin_shstrtab));
	off = shstr_off + cubin_align8(sizeof(cubin_shstrtab));

	cubin_shdr(&sh[0], 0, SHT_NULL, 0, 0);
	cubin_shdr(&sh[1], 1, SHT_PROGBITS, text_off, n * CUBIN_TEXT_PER_KERNEL);
	sh[1].sh_flags = SHF_ALLOC | SHF_EXECINSTR;
	cubin_shdr(&sh[2], 7, SHT_STRTAB, str_off, str_len);
	cubin_shdr(&sh[3], 15, SHT_SYMTAB, sym_off, (n + 1) * sizeof(Elf64_Sym));
	sh[3].sh_link = 2;
	sh[3].sh_info = 1;
	sh[3].sh_entsize = sizeof(Elf64_Sym);
	sh[3].sh_addralign = 8;
	cubin_shdr(&sh[4], 23, SHT_STRTAB, shstr_off, sizeof(cubin_shstrtab));
	memcpy(buf + off, sh, sizeof(sh));

	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_CUDA;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shoff = off;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = CUBIN_NSECT;
	eh->e_shstrndx = 4;
	return total;
}

#endif /* GP_TESTS_CUBIN_H */
