/* SPDX-License-Identifier: MIT */
/*
 * .eh_frame indexed through .eh_frame_hdr, each FDE built into rows of its
 * own (cfi_dwarf.h) when a walk first lands in it, and cached (bounded).
 * Not for other users: cfi.h is the interface.
 */
#ifndef GP_UNWIND_CFI_LAZY_H
#define GP_UNWIND_CFI_LAZY_H

#include <elf.h>
#include <stddef.h>
#include "user/unwind/cfi.h"
#include "user/unwind/cfi_elf.h"

struct cfi_lazy;
struct mem_hold;

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
size_t cfi_lazy__built(const struct cfi_lazy *lz);   /* FDE builds, again after a drop included */
/*
 * Its bytes, those counted already included, count in hold from now on,
 * kept up to date as FDEs are built and dropped; a hold whose share allows
 * no more makes it drop the built FDEs not found again since it was last
 * full (all of them when each was) before it builds another.
 */
void cfi_lazy__share(struct cfi_lazy *lz, struct mem_hold *hold);
void cfi_lazy__free(struct cfi_lazy *lz);

#endif /* GP_UNWIND_CFI_LAZY_H */
