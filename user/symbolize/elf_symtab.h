/* SPDX-License-Identifier: MIT */
/*
 * THE reader of ELF symbol tables (.symtab, .dynsym) and load segments in
 * files other processes control: every reader of a symbol in the loader
 * goes through it (elf_syms.c's tables for naming frames, the CPython
 * runtime's symbols, the driver's entry points for the probes). Each table
 * and its string table are checked against the file and a cap before a
 * byte is read; symbols are read with pread in chunks, never mapped (a file
 * truncated under us ends a table, it does not raise SIGBUS in a root
 * process), in the loader's own ELF64 layout (what a process of ours maps).
 */
#ifndef GP_SYMBOLIZE_ELF_SYMTAB_H
#define GP_SYMBOLIZE_ELF_SYMTAB_H

#include <elf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ELF_SYMTAB_MAX_SECTION ((uint64_t)256 << 20) /* a symbol or string table */
#define ELF_SYMTAB_MAX_SYMS (1u << 22)                /* symbols read per table */
#define ELF_LOADS_MAX 64

/*
 * Whether fd's ELF header claims no more section or program headers than
 * this loader reads (65,536 and 4,096, escape counts in section 0 read
 * too) and lays them inside the file: checked with pread before
 * elf_begin, which reads every header the file claims (a sparse file
 * claiming ten million sections cost it 2.6 GiB). 0, -ENOEXEC (not a
 * 64-bit ELF, or headers past its end), -E2BIG, or a read's -errno.
 */
int elf_symtab__check_headers(int fd, uint64_t file_size);

/* One symbol table of an open file and its string table, as elf_symtab__open found them. */
struct elf_symtab {
	int fd;                     /* not owned */
	uint64_t off, count;        /* Elf64_Sym entries at off */
	uint64_t str_off, str_len;  /* 1 .. UINT32_MAX bytes */
};

/*
 * The first table of type sh_type (SHT_SYMTAB or SHT_DYNSYM) of e, the
 * file open at fd (file_size bytes), that fits: it and its string table
 * lie within the file, are uncompressed and at most ELF_SYMTAB_MAX_SECTION
 * bytes. -ENOEXEC when the file is not in our ELF64 layout, -ENOENT when
 * it has no such table we can read.
 */
int elf_symtab__open(Elf *e, int fd, uint64_t file_size, unsigned sh_type,
		     struct elf_symtab *ret);
/* How many entries elf_symtab__each visits at most: the table's first ELF_SYMTAB_MAX_SYMS. */
uint64_t elf_symtab__len(const struct elf_symtab *t);
/*
 * fn for each of the table's first ELF_SYMTAB_MAX_SYMS entries, in order;
 * a short read ends the table. fn returns 0 to go on; anything else stops
 * the walk and is returned. 0 at the end.
 */
int elf_symtab__each(const struct elf_symtab *t, int (*fn)(void *ctx, const Elf64_Sym *sym),
		     void *ctx);
/*
 * The name at st_name, read from the file: at most cap - 1 bytes (a longer
 * one is cut), NUL-terminated. Its bytes read, or -errno (-EIO when
 * nothing could be: outside the table, or truncated under us).
 */
ssize_t elf_symtab__name(const struct elf_symtab *t, uint64_t st_name, char *buf, size_t cap);

/* The PT_LOAD segments, the first ELF_LOADS_MAX of the first 4096 program headers. */
struct elf_load {
	uint64_t offset, vaddr, filesz;
	uint32_t flags; /* PF_X, PF_W, PF_R */
};
struct elf_loads {
	struct elf_load v[ELF_LOADS_MAX];
	size_t n;
};

void elf_loads__read(Elf *e, struct elf_loads *ret);
/* File offset -> ELF virtual address. -ENOENT when no segment holds it. */
int elf_loads__to_vaddr(const struct elf_loads *l, uint64_t file_off, uint64_t *ret_vaddr);
/* ELF virtual address -> file offset, through a segment with all of flags. -ENOENT: none. */
int elf_loads__to_offset(const struct elf_loads *l, uint64_t vaddr, uint32_t flags,
			 uint64_t *ret_off);

/* A symbol type mask bit for elf_symtab__lookup_names: ELF_TYPE(STT_FUNC). */
#define ELF_TYPE(stt) (1u << (stt))
#define ELF_TYPE_ANY (~0u)

/*
 * The few symbols a caller looks for by name, in the ELF file open at fd:
 * ret_vaddr[k] is the value of the first defined, nonzero symbol named
 * names[k] (NULL: none wanted) whose type is in types, .dynsym searched
 * before .symtab; 0 where there is none. *ret_loads (may be NULL): the
 * file's load segments. Returns how many names were found, or -errno
 * (-ENOEXEC: not an ELF file).
 */
int elf_symtab__lookup_names(int fd, const char *const *names, size_t n, unsigned types,
			     uint64_t *ret_vaddr, struct elf_loads *ret_loads);
/*
 * The same through the dynamic symbols' .gnu.hash alone (what
 * lookup_names tries first): a few preads a name, never a table held
 * whole. 0 where the table has no such name (or no table, or one that
 * lies: a value is given only for a symbol read and named as asked).
 */
int elf_symtab__lookup_hashed(int fd, const char *const *names, size_t n, unsigned types,
			      uint64_t *ret_vaddr);

#endif /* GP_SYMBOLIZE_ELF_SYMTAB_H */
