/* SPDX-License-Identifier: MIT */
/*
 * Naming a code address: what a frame is called, given where it lies. A
 * native address is named from its file's ELF symbols (file offset -> ELF
 * virtual address through PT_LOAD -> the function holding it), JIT and
 * CPython code from the process's perf map, the vdso and friends by their
 * name and offset. Which mapping and file an address falls in, and reading
 * them, is the address space's job (user/space/space.h).
 */
#ifndef GP_SYMBOLIZE_SYMBOLIZE_H
#define GP_SYMBOLIZE_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

#define SYMBOLIZE_NAME_MAX 512

struct elf_syms;
struct perfmap;

struct symbolized_frame {
	char name[SYMBOLIZE_NAME_MAX]; /* demangled; "lib.so+0x1234" if unknown */
	char file[SYMBOLIZE_NAME_MAX]; /* mapped file, or the .py file */
	char build_id[129];            /* hex, "" if none */
	uint64_t addr;                 /* ELF virtual address; runtime address for JIT */
	uint32_t line;                 /* not known from symbol tables or perf maps: 0 */
	bool is_python;
	bool has_symbol;               /* the name came from a symbol table or perf map */
};

/*
 * The frame at file_off in the file mapped from path, whose symbols are
 * syms (NULL: none could be read): its function, else "base+0xVADDR".
 */
void symbolize__native(const char *path, struct elf_syms *syms, uint64_t file_off,
		       struct symbolized_frame *ret);
/* The frame the perf map pm (may be NULL) names at addr; false when none does. */
bool symbolize__jit(const struct perfmap *pm, uint64_t addr, struct symbolized_frame *ret);
/* A frame in a special mapping ("[vdso]") starting at start: "[vdso]+0xOFF". */
void symbolize__special(const char *path, uint64_t start, uint64_t addr,
			struct symbolized_frame *ret);

#endif /* GP_SYMBOLIZE_SYMBOLIZE_H */
