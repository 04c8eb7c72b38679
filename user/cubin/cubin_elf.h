/* SPDX-License-Identifier: MIT */
/*
 * What the cubin readers (cubin_syms.c, cubin_lines.c) check first of an
 * image from the profiled process: a range inside it, its ELF header, and
 * its section table.
 */
#ifndef GP_USER_CUBIN_ELF_H
#define GP_USER_CUBIN_ELF_H

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <linux/types.h>
#include "user/cubin/cubin_syms.h" /* CUBIN_SYMS_MAX_SECTIONS: both readers' bound */

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

/* Section header i of the table at shoff (read unaligned; the caller checked it is inside). */
static inline void cubin_elf__shdr(const __u8 *elf, __u64 shoff, __u32 i, Elf64_Shdr *ret_sh)
{
	memcpy(ret_sh, elf + shoff + (__u64)i * sizeof(*ret_sh), sizeof(*ret_sh));
}

/*
 * The section count, with ELF's extended numbering (e_shnum 0: the count is
 * section 0's sh_size), which cubins holding tens of thousands of kernels
 * (three sections each) need. The whole table is checked to be inside.
 * -ENOENT: no section table; -EBADMSG: a table that lies; -E2BIG: more
 * than CUBIN_SYMS_MAX_SECTIONS.
 */
static inline int cubin_elf__shnum(const __u8 *elf, size_t size, const Elf64_Ehdr *eh, __u32 *ret_n)
{
	Elf64_Shdr sh0;
	__u64 n = eh->e_shnum;

	if (!eh->e_shoff)
		return -ENOENT;
	if (eh->e_shentsize != sizeof(Elf64_Shdr))
		return -EBADMSG;
	if (!cubin_elf__inside(eh->e_shoff, sizeof(sh0), size))
		return -EBADMSG;
	if (!n) {
		cubin_elf__shdr(elf, eh->e_shoff, 0, &sh0);
		n = sh0.sh_size;
	}
	if (n > CUBIN_SYMS_MAX_SECTIONS)
		return -E2BIG;
	if (!cubin_elf__inside(eh->e_shoff, n * sizeof(Elf64_Shdr), size))
		return -EBADMSG;
	*ret_n = (__u32)n;
	return 0;
}

#endif /* GP_USER_CUBIN_ELF_H */
