/* SPDX-License-Identifier: MIT */
/*
 * The kernel names a cubin defines: the defined STT_FUNC symbols of its ELF
 * symbol tables. CUPTI's kernel records carry a kernel's (mangled) name and
 * no module id, so a name found here is how a kernel is tied to the cubin
 * that holds it (DESIGN.md, Correlation).
 *
 * The bytes come from the profiled process (DESIGN.md invariant 5): every
 * offset, size and count is checked against the buffer, every count capped,
 * and nothing is read outside [elf, elf + size). The buffer need not be
 * aligned.
 */
#ifndef GP_USER_CUBIN_SYMS_H
#define GP_USER_CUBIN_SYMS_H

#include <stddef.h>
#include <linux/types.h>

/* Bounds on hostile input; a cubin past them is refused or cut short. */
#define CUBIN_SYMS_MAX_SECTIONS (1u << 20)
#define CUBIN_SYMS_MAX_SYMBOLS  (1u << 20) /* symbols looked at, all tables */
#define CUBIN_SYMS_MAX_NAME     4096u      /* longer names are skipped */

/*
 * Called once per defined function symbol, in symbol table order. name is
 * NUL-terminated at name[len] (len >= 1) and valid only during the call;
 * index is the symbol's position counted over all symbol tables of the
 * cubin, unique per symbol. A nonzero return stops the walk and is returned.
 */
typedef int (*cubin_syms_fn)(void *ctx, const char *name, size_t len, __u32 index);

/*
 * Walks the symbol tables of the ELF64 little-endian image at elf. 0 on
 * success, the callback's nonzero return, or:
 *   -EINVAL   elf NULL or cb NULL
 *   -ENOEXEC  not an ELF64 little-endian image
 *   -EBADMSG  a header, section or table lies outside the image, or is
 *             inconsistent (entry sizes, links)
 *   -ENOENT   no symbol table
 *   -E2BIG    more than CUBIN_SYMS_MAX_SECTIONS sections, or the symbol
 *             tables hold more than CUBIN_SYMS_MAX_SYMBOLS symbols (the
 *             first CUBIN_SYMS_MAX_SYMBOLS were walked)
 * On an error after the walk began, the names already reported stay valid:
 * each one was read within bounds.
 */
int cubin_syms__parse(const void *elf, size_t size, cubin_syms_fn cb, void *ctx);

#endif /* GP_USER_CUBIN_SYMS_H */
