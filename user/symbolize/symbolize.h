/* SPDX-License-Identifier: MIT */
/*
 * Address -> frame for a profiled process: native code through its
 * mappings and ELF symbol tables (read inside the process's root, so
 * containers work and cannot point us outside), JIT and CPython code
 * through its perf map. One struct symbolize holds what processes share
 * (the ELF cache); per-process state is created and destroyed explicitly.
 */
#ifndef GP_SYMBOLIZE_SYMBOLIZE_H
#define GP_SYMBOLIZE_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SYMBOLIZE_NAME_MAX 512

struct symbolize_frame {
	char function[SYMBOLIZE_NAME_MAX]; /* demangled; "lib.so+0x1234" if unknown */
	char file[SYMBOLIZE_NAME_MAX];     /* mapped file, or the .py file */
	char build_id[129];                /* hex, "" if none */
	uint64_t elf_addr;                 /* ELF virtual address; runtime address for JIT */
	bool is_python;
	bool has_symbol;                   /* function came from a symbol table or perf map */
};

struct symbolize;
struct symbolize_pid;
struct cfi_table;

struct symbolize *symbolize__new(void);
/* Every symbolize_pid made from s must be destroyed first. NULL-safe. */
void symbolize__destroy(struct symbolize *s);
/* Bytes held by the cached symbol and CFI tables, for the loader's line. */
void symbolize__stats(const struct symbolize *s, size_t *ret_sym_bytes, size_t *ret_cfi_bytes);

/*
 * Per-process state. root is the directory the process sees as "/"
 * (NULL: /proc/<pid>/root); its maps are read now, its perf map on demand.
 */
int symbolize__pid_new(struct symbolize *s, pid_t pid, const char *root,
		       struct symbolize_pid **ret_sp);
void symbolize_pid__destroy(struct symbolize_pid *sp);
/*
 * Re-reads the maps and drops the perf map (after dlopen, or new JIT code);
 * what was learnt of each mapping still there unchanged is kept. *ret_kept
 * (may be NULL): every mapping of before is still there.
 */
int symbolize_pid__refresh(struct symbolize_pid *sp, bool *ret_kept);
/*
 * The unwinder's lookup (user/unwind/unwind.h's contract): -ENOENT outside
 * every executable mapping; else 0, the CFI table of the file mapped there
 * (NULL for anonymous code or a file without CFI) and the load bias.
 */
int symbolize_pid__cfi(struct symbolize_pid *sp, uint64_t addr, const struct cfi_table **ret_table,
		       uint64_t *ret_bias);
/* -ENOENT for an address in no executable mapping and no perf map entry. */
int symbolize_pid__lookup(struct symbolize_pid *sp, uint64_t addr,
			  struct symbolize_frame *ret_frame);

/*
 * The one-handle-per-process form user/session uses: a symbolize_pid over a
 * process-wide shared ELF cache (created with the first handle, freed with
 * the last). Not thread-safe: call from the loader's one session thread.
 */
struct symbolized_frame {
	char name[SYMBOLIZE_NAME_MAX];
	char file[SYMBOLIZE_NAME_MAX];
	char build_id[129];
	uint64_t addr;  /* ELF virtual address, 0 when unknown */
	uint32_t line;  /* not known from symbol tables or perf maps: 0 */
	bool is_python;
};

struct symbolizer;

int symbolizer__new(pid_t pid, struct symbolizer **ret_sym);
void symbolizer__destroy(struct symbolizer *sym);
/* The shared tables' bytes (0 while no symbolizer exists). */
void symbolizer__stats(size_t *ret_sym_bytes, size_t *ret_cfi_bytes);
int symbolizer__lookup(struct symbolizer *sym, uint64_t addr,
		       struct symbolized_frame *ret_frame);
/* symbolize_pid__cfi, reading the maps again (rate-limited) on a miss. */
int symbolizer__cfi(struct symbolizer *sym, uint64_t addr, const struct cfi_table **ret_table,
		    uint64_t *ret_bias);
/* The least time between two reads of a process's maps on a miss. */
#define SYMBOLIZE_REREAD_NS (50 * 1000000ull)
/* Re-reads of one process's maps, both kinds: at most this many at once, then one per... */
#define SYMBOLIZE_REREAD_BURST 8u
#define SYMBOLIZE_REREAD_EVERY_NS (100 * 1000000ull)
/*
 * Reads the maps again, whatever the 50 ms rule, when they were last read
 * before ts_ns (CLOCK_MONOTONIC): for an address that was mapped at ts_ns
 * (a launch's entry point or return address, at the launch's time) that
 * they lack. Once read after ts_ns they are not read again for it. True
 * when read. Like the re-reads on a miss it draws on the process's budget
 * (SYMBOLIZE_REREAD_BURST, then one per SYMBOLIZE_REREAD_EVERY_NS).
 */
bool symbolizer__refresh_if_older(struct symbolizer *sym, uint64_t ts_ns);
/* How many times the maps were read again. */
unsigned long symbolizer__generation(const struct symbolizer *sym);
/*
 * How many of those re-reads found a mapping gone or changed: what was
 * learnt per code address before one may be stale (not after one that only
 * added mappings: a new library, CPython's trampolines, JIT code).
 */
unsigned long symbolizer__moved(const struct symbolizer *sym);
/* Re-reads the budget refused (the walk or name went without them). */
unsigned long symbolizer__limited(const struct symbolizer *sym);

#endif /* GP_SYMBOLIZE_SYMBOLIZE_H */
