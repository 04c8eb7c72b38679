/* SPDX-License-Identifier: MIT */
/*
 * Function symbols, GNU build id and PT_LOAD layout of ELF files, read with
 * libelf from files that unprivileged processes control: every size, count
 * and offset is checked and memory per file is bounded. A cache keyed by
 * (dev, inode, size, mtime) reloads a file that was replaced on disk.
 */
#ifndef GP_SYMBOLIZE_ELF_SYMS_H
#define GP_SYMBOLIZE_ELF_SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_syms;
struct elf_cache;
struct bounded;

/*
 * Loads from an open file (a duplicate of the fd is kept while the file has
 * function symbols: their names are read from it on lookup) or from memory
 * (copied into an anonymous file).
 */
int elf_syms__load_fd(int fd, struct elf_syms **ret_syms);
int elf_syms__load_mem(const void *data, size_t len, struct elf_syms **ret_syms);
/* Drops a reference; the last one frees. NULL-safe. */
void elf_syms__put(struct elf_syms *s);
struct elf_syms *elf_syms__get(struct elf_syms *s);

/* Hex GNU build id, "" when the file has none. */
const char *elf_syms__build_id(const struct elf_syms *s);
size_t elf_syms__count(const struct elf_syms *s);
/* Memory held: the symbol array and the names cached. */
size_t elf_syms__bytes(const struct elf_syms *s);
/*
 * The function containing ELF virtual address vaddr: its name (read from
 * the file, at most 4096 bytes; valid until the next lookup in s) and
 * vaddr's offset into it. -ENOENT when vaddr is outside every function
 * (past a symbol's size, or a stripped file) or its name cannot be read.
 */
int elf_syms__lookup(struct elf_syms *s, uint64_t vaddr, const char **ret_name,
		     uint64_t *ret_offset);
/* File offset -> ELF virtual address, through the PT_LOAD segments. */
int elf_syms__file_to_vaddr(const struct elf_syms *s, uint64_t file_offset,
			    uint64_t *ret_vaddr);

/* Its opens (elf_cache__get's, the debug files') are bounded calls through b (kept). */
struct elf_cache *elf_cache__new(struct bounded *b, size_t max_files);
void elf_cache__destroy(struct elf_cache *c);
/*
 * Opens path inside the directory root_fd (never leaving it) and returns a
 * reference to its symbols, loading them unless a file with the same (dev,
 * inode, size, mtime) is cached. A file without .symtab takes, when it is
 * loaded, the function symbols of its debug file, /usr/lib/debug/.build-id/
 * NN/REST.debug under the cache's debug root, if that file has the same
 * build id.
 */
int elf_cache__get(struct elf_cache *c, int root_fd, const char *path,
		   struct elf_syms **ret_syms);
/* Same, for an already open file (e.g. /proc/<pid>/map_files/...). */
int elf_cache__get_fd(struct elf_cache *c, int fd, struct elf_syms **ret_syms);
/*
 * The directory debug files are looked for under (duplicated): the loader's
 * own "/" from elf_cache__new; -1 for none. Never a profiled process's root.
 */
int elf_cache__set_debug_root(struct elf_cache *c, int dir_fd);
/* Files cached and the bytes their symbols hold, for the loader's line. */
void elf_cache__stats(const struct elf_cache *c, size_t *ret_files, size_t *ret_bytes);
/* The identity of the file behind the symbols. */
void elf_syms__identity(const struct elf_syms *s, uint64_t *ret_dev, uint64_t *ret_ino);

#endif /* GP_SYMBOLIZE_ELF_SYMS_H */
