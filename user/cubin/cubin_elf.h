/* SPDX-License-Identifier: MIT */
/*
 * What the cubin readers (cubin_syms.c, cubin_lines.c) check first of an
 * image from the profiled process: a range inside it, and its ELF header.
 */
#ifndef GP_USER_CUBIN_ELF_H
#define GP_USER_CUBIN_ELF_H

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <linux/types.h>

/* [off, off + len) inside an image of size bytes, without overflow. */
static inline bool cubin_elf__inside(__u64 off, __u64 len, size_t size)
{
	return off <= size && len <= size - off;
}

/* The ELF header of an ELF64 little-endian image (read unaligned); -ENOEXEC if it is not one. */
static inline int cubin_elf__ehdr(const __u8 *elf, size_t size, Elf64_Ehdr *ret_eh)
{
	Elf64_Ehdr eh;

	if (size < sizeof(eh))
		return -ENOEXEC;
	memcpy(&eh, elf, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return -ENOEXEC;
	*ret_eh = eh;
	return 0;
}

#endif /* GP_USER_CUBIN_ELF_H */
