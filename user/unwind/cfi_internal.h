/* SPDX-License-Identifier: MIT */
/*
 * Between cfi.c (DWARF CFI parsing, tables of rows) and cfi_lazy.c (the
 * .eh_frame_hdr index that builds one FDE's rows when a walk first needs
 * them). Not for other users: cfi.h is the interface.
 */
#ifndef GP_UNWIND_CFI_INTERNAL_H
#define GP_UNWIND_CFI_INTERNAL_H

#include <elf.h>
#include "user/unwind/cfi.h"

/* An ELF file, open or in memory. */
struct elf_src {
	int fd; /* or -1 with mem */
	const __u8 *mem;
	__u64 size;
};

/* len bytes at off, all or -ENOEXEC (outside the file) / -EIO (truncated) / -errno. */
int elf_src__read(const struct elf_src *src, __u64 off, void *buf, size_t len);

/*
 * One FDE into a table of its own: fde and cie are whole .eh_frame entries
 * (length field first) at file virtual addresses fde_addr and cie_addr.
 * 0; -ENOENT when it yields no row; -EINVAL when malformed; -ENOMEM.
 */
int cfi_table__from_fde(const __u8 *fde, size_t fde_len, __u64 fde_addr, const __u8 *cie,
			size_t cie_len, __u64 cie_addr, struct cfi_table **ret_table);

struct cfi_lazy;

/*
 * The file's .eh_frame_hdr search table (through PT_GNU_EH_FRAME). 0, or
 * -ENOENT when there is none we can use: then .eh_frame is loaded whole.
 * The file stays open (src's fd is duplicated; memory is copied).
 */
int cfi_lazy__open(const struct elf_src *src, const Elf64_Ehdr *eh, struct cfi_lazy **ret_lazy);
/* As cfi_table__find; builds and caches the covering FDE's rows on first use. */
int cfi_lazy__find(struct cfi_lazy *lz, __u64 vaddr, struct cfi_rule *ret_rule);
size_t cfi_lazy__fdes(const struct cfi_lazy *lz);    /* FDEs in the index */
size_t cfi_lazy__rows(const struct cfi_lazy *lz);    /* rows built so far */
size_t cfi_lazy__bytes(const struct cfi_lazy *lz);
size_t cfi_lazy__dropped(const struct cfi_lazy *lz); /* FDEs that would not build */
void cfi_lazy__free(struct cfi_lazy *lz);

#endif /* GP_UNWIND_CFI_INTERNAL_H */
