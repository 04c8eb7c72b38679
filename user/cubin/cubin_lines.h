/* SPDX-License-Identifier: MIT */
/*
 * The source line of a SASS instruction: the DWARF line table of a cubin
 * built with -lineinfo (or -G). nvcc (13.0, sm_90) writes three line
 * sections:
 *   .debug_line           SASS offset -> .cu file:line (what nvdisasm -g
 *                         prints); the one read here
 *   .nv_debug_line_sass   SASS offset -> line of the PTX text held in
 *                         .nv_debug_ptx_txt (empty file table); not read
 *   .rela.<each of them>  one relocation per sequence, R_CUDA_64 (type 2),
 *                         addend 0, at the 8-byte operand of the sequence's
 *                         DW_LNE_set_address, against the kernel's symbol
 * Each kernel is one sequence of a DWARF 2 unit, its addresses 0 plus the
 * relocation's addend: offsets from the function's first byte.
 *
 * The bytes come from the profiled process (DESIGN.md invariant 5): every
 * offset, size and count is checked against the buffer, every count capped,
 * and nothing is read outside [elf, elf + size). The buffer need not be
 * aligned.
 */
#ifndef GP_USER_CUBIN_LINES_H
#define GP_USER_CUBIN_LINES_H

#include <stddef.h>
#include <linux/types.h>

/* Bounds on hostile input; a cubin past them is refused with -E2BIG. */
#define CUBIN_LINES_MAX_ROWS    (1u << 20) /* rows reported, all units */
#define CUBIN_LINES_MAX_NAME    4096u      /* a file name, joined, with its NUL */
#define CUBIN_LINES_MAX_FILES   (1u << 16) /* directories, and files, of one unit */
#define CUBIN_LINES_MAX_UNITS   (1u << 16)
#define CUBIN_LINES_MAX_RELOCS  (1u << 20) /* relocations against .debug_line */
#define CUBIN_LINES_MAX_RELSECS 8u         /* relocation sections against it */

/*
 * One row of the line table: the instructions of the kernel whose symbol is
 * sym_index, from offset (bytes from the function's start) onward, come
 * from file:line, until the next row of that kernel. sym_index counts over
 * all symbol tables exactly as cubin_syms__parse's index does, so a row is
 * tied to a kernel by it. file is NUL-terminated and valid only during the
 * call: the name as the table has it, joined to its directory ("dir/name")
 * unless absolute or in directory 0.
 *
 * line 0 means "no line from here on", and file is then "": the end of a
 * sequence (a row at its end address), DWARF's own line 0, or a file index
 * outside the unit's file table.
 *
 * Rows are reported in table order, one per address of a sequence: of rows
 * at one address only the last is reported (the earlier ones cover no
 * instruction; nvdisasm -g shows the last too). is_stmt is not looked at.
 * A sequence whose DW_LNE_set_address has no R_CUDA_64 relocation against
 * a defined STT_FUNC symbol of a SHT_SYMTAB table (cubin_syms's kernels)
 * is skipped, rows and all, without an error. A nonzero return stops the
 * walk and is returned.
 */
typedef int (*cubin_lines_fn)(void *ctx, __u32 sym_index, __u64 offset, const char *file,
			      __u32 line);

/*
 * Walks .debug_line of the ELF64 little-endian image at elf. 0 on success,
 * the callback's nonzero return, or:
 *   -EINVAL           elf NULL or cb NULL
 *   -ENOEXEC          not an ELF64 little-endian image
 *   -ENOENT           no .debug_line (a cubin built without -lineinfo);
 *                     found from the section headers alone
 *   -EBADMSG          a section, unit, header, opcode or relocation lies
 *                     outside its container, or is inconsistent (an
 *                     address or line that overflows, two relocations at
 *                     one place, a symbol index past its table)
 *   -EPROTONOSUPPORT  a unit of DWARF version other than 2, 3 or 4 (nvcc
 *                     writes 2), more than one operation per instruction,
 *                     or a compressed .debug_line
 *   -ENOMEM           no memory for the relocation index or file table
 *   -E2BIG            past a CUBIN_LINES_MAX_* bound, or more than
 *                     CUBIN_SYMS_MAX_SECTIONS sections (past the row
 *                     cap, the first CUBIN_LINES_MAX_ROWS rows were
 *                     reported)
 * On an error after the walk began, the rows already reported stay valid:
 * each one was read within bounds.
 */
int cubin_lines__parse(const void *elf, size_t size, cubin_lines_fn cb, void *ctx);

/* A row as a caller keeps it; file is the caller's id for the name. */
struct cubin_line_row {
	__u32 sym_index;
	__u32 line;
	__u64 offset;
	__u32 file;
};

/*
 * Sorts rows by (sym_index, offset) in place; rows equal on both (two
 * sequences of one kernel over one address) are ordered by line, then file,
 * so the order does not depend on the sort.
 */
void cubin_lines__sort(struct cubin_line_row *rows, size_t n);

/*
 * The row covering (sym_index, offset) in rows sorted by cubin_lines__sort:
 * the last row of that symbol with row.offset <= offset. NULL if there is
 * none, or if it has line 0 (past a sequence's end, or no line there).
 */
const struct cubin_line_row *cubin_lines__find(const struct cubin_line_row *rows, size_t n,
					       __u32 sym_index, __u64 offset);

#endif /* GP_USER_CUBIN_LINES_H */
