/* SPDX-License-Identifier: MIT */
/*
 * Parsing DWARF CFI (.eh_frame, .debug_frame): CIEs and FDEs, each FDE's
 * program run (cfi_exec.h) into rows of rules (cfi_rows.h). Every byte is
 * hostile: a malformed entry costs that entry, never a wrong rule. Not for
 * other users: cfi.h is the interface.
 */
#ifndef GP_UNWIND_CFI_DWARF_H
#define GP_UNWIND_CFI_DWARF_H

#include <linux/types.h>
#include <stddef.h>
#include "user/unwind/cfi_cur.h"
#include "user/unwind/cfi_rows.h"

/*
 * Every FDE of secs[0..n_secs) (.eh_frame first: at equal addresses it
 * wins) into *ret, sorted and clipped. 0; -ENOENT when they yield no row;
 * -ENOMEM. *ret is zeroed first and left empty on an error.
 */
int cfi_dwarf__build(struct cfi_section *secs, size_t n_secs, struct cfi_rows *ret);
/*
 * One FDE into rows of its own: fde and cie are whole .eh_frame entries
 * (length field first) at file virtual addresses fde_addr and cie_addr.
 * 0; -ENOENT when it yields no row; -EINVAL when malformed; -ENOMEM.
 */
int cfi_dwarf__from_fde(const __u8 *fde, size_t fde_len, __u64 fde_addr, const __u8 *cie,
			size_t cie_len, __u64 cie_addr, struct cfi_rows **ret_rows);

#endif /* GP_UNWIND_CFI_DWARF_H */
