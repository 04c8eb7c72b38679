/* SPDX-License-Identifier: MIT */
/*
 * Call frame information (DWARF CFI from .eh_frame and .debug_frame) of one
 * x86-64 ELF file, reduced to what a user-space stack walker needs: for each
 * code address, how to find the caller's stack pointer (the CFA), the return
 * address and the caller's rbp. The CFA programs are run into a compact
 * table sorted by address; a lookup is a binary search. Where .eh_frame_hdr
 * indexes .eh_frame (nearly every linked file), only that index is read at
 * load time and each FDE is run when a lookup first lands in it: a 1 GB
 * library costs the loader its index (8 bytes per function) and the
 * functions its stacks pass through, not all of its rows.
 *
 * The files come from profiled containers: every byte is hostile. Reads are
 * bounded, memory is capped by the sections' sizes, and a malformed entry
 * costs that entry (or the rest of one function), never a wrong rule.
 */
#ifndef GP_UNWIND_CFI_H
#define GP_UNWIND_CFI_H

#include <linux/types.h>
#include <stddef.h>

struct cfi_table;
struct mem_share;

enum cfi_base {
	CFI_BASE_NONE, /* an expression or register we cannot evaluate: stop */
	CFI_BASE_RSP,  /* cfa = rsp + cfa_off */
	CFI_BASE_RBP,  /* cfa = rbp + cfa_off */
	/*
	 * The PLT expression ld emits for .plt entries:
	 * cfa = rsp + cfa_off + ((ip & 15) >= plt_split ? 8 : 0)
	 * (an entry pushes its relocation index half way through).
	 */
	CFI_BASE_PLT,
	/*
	 * cfa = *(rbp + cfa_off): GCC's stack realignment (and $-32, %rsp)
	 * keeps the entry stack pointer in a slot below the new frame pointer:
	 * DW_CFA_def_cfa_expression (DW_OP_breg6 off; DW_OP_deref).
	 */
	CFI_BASE_DEREF_RBP,
};

enum cfi_rbp_rule {
	CFI_RBP_SAME,      /* the caller's rbp is the current rbp */
	CFI_RBP_AT_CFA,    /* saved at cfa + rbp_off */
	CFI_RBP_UNDEFINED, /* unknown: undefined, or kept where we cannot see it */
	CFI_RBP_IS_CFA,    /* the caller's rbp is cfa + rbp_off (DW_CFA_val_offset) */
	CFI_RBP_AT_RBP,    /* saved at rbp + rbp_off: DW_CFA_expression (DW_OP_breg6 off) */
};

enum cfi_ra_rule {
	CFI_RA_AT_CFA,      /* return address at cfa + ra_off (normally -8) */
	CFI_RA_UNDEFINED,   /* outermost frame: _start, a clone child, thread start */
	CFI_RA_UNSUPPORTED, /* in a register or behind an expression: stop */
};

#define CFI_FLAG_SIGNAL_FRAME 0x1 /* CIE augmentation 'S': ip is not a return address */

struct cfi_rule {
	__u8 cfa_base;  /* enum cfi_base */
	__u8 rbp_rule;  /* enum cfi_rbp_rule */
	__u8 ra_rule;   /* enum cfi_ra_rule */
	__u8 flags;     /* CFI_FLAG_* */
	__u8 plt_split; /* CFI_BASE_PLT only */
	__s32 cfa_off, rbp_off, ra_off;
};

/*
 * Loads the CFI of an ELF file: .eh_frame (found by section name, or without
 * section headers through PT_GNU_EH_FRAME) and .debug_frame; where both
 * describe an address, .eh_frame wins. 0 or -errno; -ENOENT when the file
 * has no usable CFI, -ENOEXEC when it is not a 64-bit little-endian ELF.
 * The fd is not kept.
 */
int cfi_table__load(int fd, struct cfi_table **ret_table);
/* Same, all of .eh_frame built now (comparisons: tests, gpuprobe-table-cost --check). */
int cfi_table__load_whole(int fd, struct cfi_table **ret_table);
/* Same from memory (tests, fuzzer); the bytes are not kept. */
int cfi_table__load_mem(const void *elf, size_t size, struct cfi_table **ret_table);
/*
 * The rule in force at vaddr, a file virtual address (ELF p_vaddr space).
 * 0, or -ENOENT when no FDE covers vaddr. A lookup may build and cache an
 * FDE's rows: one thread at a time per table.
 */
int cfi_table__find(const struct cfi_table *t, __u64 vaddr, struct cfi_rule *ret_rule);
/*
 * File offset -> ELF virtual address, through the file's PT_LOAD segments
 * (the first 16): what the walk needs of a mapping's address to ask the
 * table, without the file's symbols. -ENOENT when no segment holds it.
 */
int cfi_table__file_to_vaddr(const struct cfi_table *t, __u64 file_off, __u64 *ret_vaddr);
/* Rows in the table (ranges with one rule, gaps included), built so far. */
size_t cfi_table__rows(const struct cfi_table *t);
/* FDEs indexed through .eh_frame_hdr, built on demand; 0 for a table built whole. */
size_t cfi_table__fdes_on_demand(const struct cfi_table *t);
/*
 * Addresses where t answers differently from whole (a table of the same
 * file built whole), checked at each of whole's row starts and the byte
 * before: 0 when building on demand changed nothing. *ret_checked: lookups.
 */
size_t cfi_table__differences(const struct cfi_table *t, const struct cfi_table *whole,
			      size_t *ret_checked);
/* Memory held, for the loader's memory accounting. */
size_t cfi_table__bytes(const struct cfi_table *t);
/*
 * t's bytes count in s from now on (NULL: in none, those counted before
 * given back), kept up to date as its FDEs are built on demand; past its
 * share of s, t drops the built FDEs no walk found again since it was last
 * full (all, when walks found each) before it builds another.
 * cfi_table__free gives back what it counts.
 */
void cfi_table__share(struct cfi_table *t, struct mem_share *s);
/* FDEs dropped as malformed, unsupported or past a cap: a count, not a verdict. */
size_t cfi_table__dropped(const struct cfi_table *t);
/* FDEs built on demand so far, those built again after their drop included. */
size_t cfi_table__built(const struct cfi_table *t);
void cfi_table__free(struct cfi_table *t);

#endif /* GP_UNWIND_CFI_H */
