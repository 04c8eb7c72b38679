/* SPDX-License-Identifier: MIT */
/*
 * Running DWARF CFA programs (a CIE's initial instructions, an FDE's
 * instructions) into rows of rules (cfi_rows.h). Only the registers a
 * stack walk with rip, rsp and rbp can use are tracked: the CFA, rbp and
 * the return address column; the expressions recognised are the ones
 * compilers emit for those (ld's PLT entries, GCC's stack realignment).
 * Every instruction is read through a bounded cursor and counted against
 * the builder's work budget. Not for other users: cfi.h is the interface.
 */
#ifndef GP_UNWIND_CFI_EXEC_H
#define GP_UNWIND_CFI_EXEC_H

#include <linux/types.h>
#include <stdbool.h>
#include "user/unwind/cfi_cur.h"
#include "user/unwind/cfi_rows.h"

/* DWARF register numbers on x86-64. */
#define REG_RBP 6
#define REG_RSP 7

enum reg_how { REG_SAME, REG_UNDEF, REG_OFFSET, REG_VAL_OFFSET, REG_OTHER, REG_AT_RBP };
enum cfa_how { CFA_REG, CFA_PLT, CFA_EXPR, CFA_DEREF_RBP };

struct reg_rule {
	__u8 how; /* enum reg_how */
	__s64 off;
};

struct cfa_state {
	__u8 cfa_how; /* enum cfa_how */
	__u8 plt_split;
	__u64 cfa_reg;
	__s64 cfa_off;
	struct reg_rule rbp, ra;
};

/* What a CIE gives each of its FDEs. */
struct cfi_cie {
	__u64 off;          /* cache key */
	bool valid;
	const __u8 *insns, *insns_end;
	__u64 code_align;
	__s64 data_align;
	__u64 ra_reg;
	__u8 fde_enc;
	bool has_z;
	__u8 flags;
	struct cfa_state init;
};

/* An FDE's range and its instructions. */
struct cfi_fde {
	__u64 pc_begin, pc_end;
	const __u8 *insns, *insns_end;
};

/*
 * Runs cie's initial instructions (insns..insns_end, its alignment factors
 * and return address column set) into cie->init: what every FDE of it
 * starts from. 0, or -EINVAL / -E2BIG (the work budget) / -ENOMEM.
 */
int cfi_exec__cie(struct cfi_builder *b, const struct cfi_section *s, struct cfi_cie *cie);
/*
 * Runs f's instructions from pc_begin, emitting a row wherever the rule
 * changes, and the last one; *ret_loc: where the program stopped (the row
 * in force there was not emitted on an error). 0, or what cfi_exec__cie
 * returns.
 */
int cfi_exec__fde(struct cfi_builder *b, const struct cfi_section *s, const struct cfi_cie *cie,
		  const struct cfi_fde *f, __u64 *ret_loc);

#endif /* GP_UNWIND_CFI_EXEC_H */
