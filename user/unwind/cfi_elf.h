/* SPDX-License-Identifier: MIT */
/*
 * Reading the ELF side of a file's CFI: its header, its program headers,
 * and the bytes of .eh_frame and .debug_frame (found by section name, or
 * without section headers through PT_GNU_EH_FRAME), from an open file
 * (pread) or memory. Every offset and size comes from the file and is
 * checked against it and a cap before anything is read. Not for other
 * users: cfi.h is the interface.
 */
#ifndef GP_UNWIND_CFI_ELF_H
#define GP_UNWIND_CFI_ELF_H

#include <elf.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include "user/unwind/cfi_cur.h"

#define CFI_MAX_SECTION ((__u64)512 << 20) /* .eh_frame or .debug_frame */

/* An ELF file, open or in memory. */
struct elf_src {
	int fd; /* or -1 with mem */
	const __u8 *mem;
	__u64 size;
};

/* len bytes at off, all or -ENOEXEC (outside the file) / -EIO (truncated) / -errno. */
int elf_src__read(const struct elf_src *src, __u64 off, void *buf, size_t len);
/* The ELF header of an x86-64 little-endian ELF64 file, or -ENOEXEC. */
int elf_src__header(const struct elf_src *src, Elf64_Ehdr *ret);
/*
 * size bytes at off, at file virtual address addr, read into a malloc'ed
 * section (*ret's data): -EINVAL for none or more than CFI_MAX_SECTION.
 */
int elf_src__section(const struct elf_src *src, __u64 off, __u64 size, __u64 addr,
		     bool is_eh, struct cfi_section *ret);
/*
 * .eh_frame (when want_eh) and .debug_frame by section name, each into its
 * *ret while that one has no data yet. A section that does not fit is one
 * we do without: 0, or -ENOMEM.
 */
int elf_src__cfi_sections(const struct elf_src *src, const Elf64_Ehdr *eh, bool want_eh,
			  struct cfi_section *ret_eh, struct cfi_section *ret_debug);
/*
 * Without section headers: PT_GNU_EH_FRAME points at .eh_frame_hdr, whose
 * eh_frame_ptr points at .eh_frame; its size is unknown, so it is read to
 * the end of the PT_LOAD holding it and the terminator ends the walk.
 * 0 (*ret_eh filled or not), or -ENOMEM.
 */
int elf_src__eh_frame_by_phdr(const struct elf_src *src, const Elf64_Ehdr *eh,
			      struct cfi_section *ret_eh);

/* The program headers (at most 4096), malloc'ed. -ENOENT when none are readable. */
int elf_src__phdrs(const struct elf_src *src, const Elf64_Ehdr *eh, Elf64_Phdr **ret_ph,
		   size_t *ret_n);
/* The first header of type, or NULL. */
const Elf64_Phdr *elf_phdrs__find(const Elf64_Phdr *ph, size_t n, __u32 type);
/*
 * The PT_LOAD holding vaddr: the file offset there and the bytes of it
 * after that lie in the file (file_size). -ENOENT when none does, or the
 * first that does lies outside the file.
 */
int elf_phdrs__load_at(const Elf64_Phdr *ph, size_t n, __u64 file_size, __u64 vaddr,
		       __u64 *ret_off, __u64 *ret_len);

#endif /* GP_UNWIND_CFI_ELF_H */
