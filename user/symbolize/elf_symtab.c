/* SPDX-License-Identifier: MIT */
/*
 * The one ELF symbol reader (elf_symtab.h). libelf reads the headers
 * (ELF_C_READ); the tables themselves are read here with pread, so that
 * neither a symbol table nor (for elf_syms.c's million-symbol C++
 * libraries) its string table is ever held whole. Looking a few names up
 * goes through .gnu.hash first (a few preads a name); only names it does
 * not find (not exported, or no such table) make a scan, which holds one
 * string table, bounded by ELF_SYMTAB_MAX_SECTION like the rest.
 */
#include "user/symbolize/elf_symtab.h"

#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ELF_SYMTAB_READ_CHUNK 512 /* symbols per pread */
#define ELF_MAX_PHDRS 4096
#define ELF_MAX_SCNS 65536

static bool shdr__fits(const GElf_Shdr *sh, uint64_t file_size)
{
	return sh->sh_type != SHT_NOBITS && sh->sh_size <= ELF_SYMTAB_MAX_SECTION &&
	       sh->sh_offset <= file_size && sh->sh_size <= file_size - sh->sh_offset &&
	       !(sh->sh_flags & SHF_COMPRESSED);
}

static bool elf__native_64(Elf *e)
{
	const char *ident = elf_getident(e, NULL);
	static const uint16_t probe = 1;
	int native = *(const uint8_t *)&probe ? ELFDATA2LSB : ELFDATA2MSB;

	return ident && ident[EI_CLASS] == ELFCLASS64 && ident[EI_DATA] == native;
}

/* The string table a symbol table names, when it is one we can read. */
static bool strtab_of(Elf *e, const GElf_Shdr *sh, uint64_t file_size, GElf_Shdr *ret_str)
{
	Elf_Scn *str_scn = elf_getscn(e, sh->sh_link);

	return str_scn && gelf_getshdr(str_scn, ret_str) && ret_str->sh_type == SHT_STRTAB &&
	       shdr__fits(ret_str, file_size) && ret_str->sh_size &&
	       ret_str->sh_size <= UINT32_MAX;
}

int elf_symtab__open(Elf *e, int fd, uint64_t file_size, unsigned sh_type,
		     struct elf_symtab *ret)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh, str;
	size_t count = 0;

	if (!e || elf_kind(e) != ELF_K_ELF || !elf__native_64(e))
		return -ENOEXEC;
	while ((scn = elf_nextscn(e, scn)) && count++ < ELF_MAX_SCNS) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != sh_type || !shdr__fits(&sh, file_size))
			continue;
		if (!strtab_of(e, &sh, file_size, &str))
			return -ENOENT; /* the table we would read: no names, no table */
		*ret = (struct elf_symtab){ .fd = fd, .off = sh.sh_offset,
					    .count = sh.sh_size / sizeof(Elf64_Sym),
					    .str_off = str.sh_offset, .str_len = str.sh_size };
		return 0;
	}
	return -ENOENT;
}

uint64_t elf_symtab__len(const struct elf_symtab *t)
{
	return t->count < ELF_SYMTAB_MAX_SYMS ? t->count : ELF_SYMTAB_MAX_SYMS;
}

int elf_symtab__each(const struct elf_symtab *t, int (*fn)(void *ctx, const Elf64_Sym *sym),
		     void *ctx)
{
	Elf64_Sym chunk[ELF_SYMTAB_READ_CHUNK];
	uint64_t n = elf_symtab__len(t), i, j, want;
	ssize_t got;
	int rc;

	for (i = 0; i < n; i += want) {
		want = n - i < ELF_SYMTAB_READ_CHUNK ? n - i : ELF_SYMTAB_READ_CHUNK;
		got = pread(t->fd, chunk, want * sizeof(Elf64_Sym),
			    (off_t)(t->off + i * sizeof(Elf64_Sym)));
		if (got < (ssize_t)(want * sizeof(Elf64_Sym)))
			break;
		for (j = 0; j < want; j++) {
			rc = fn(ctx, &chunk[j]);
			if (rc)
				return rc;
		}
	}
	return 0;
}

ssize_t elf_symtab__name(const struct elf_symtab *t, uint64_t st_name, char *buf, size_t cap)
{
	uint64_t want;
	ssize_t got;

	if (!cap || st_name >= t->str_len)
		return -EIO;
	want = t->str_len - st_name;
	if (want > cap - 1)
		want = cap - 1;
	got = pread(t->fd, buf, want, (off_t)(t->str_off + st_name));
	if (got <= 0)
		return got < 0 ? -errno : -EIO; /* truncated under us */
	buf[got] = '\0';
	return got;
}

/* ---------------------------------------------------------------- load segments */

void elf_loads__read(Elf *e, struct elf_loads *ret)
{
	size_t n, i;
	GElf_Phdr ph;

	ret->n = 0;
	if (elf_getphdrnum(e, &n))
		return; /* no program headers: a relocatable object, no loads */
	if (n > ELF_MAX_PHDRS)
		n = ELF_MAX_PHDRS;
	for (i = 0; i < n && ret->n < ELF_LOADS_MAX; i++) {
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		ret->v[ret->n++] = (struct elf_load){ .offset = ph.p_offset, .vaddr = ph.p_vaddr,
						      .filesz = ph.p_filesz, .flags = ph.p_flags };
	}
}

int elf_loads__to_vaddr(const struct elf_loads *l, uint64_t file_off, uint64_t *ret_vaddr)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct elf_load *s = &l->v[i];

		if (file_off >= s->offset && file_off - s->offset < s->filesz) {
			*ret_vaddr = file_off - s->offset + s->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

int elf_loads__to_offset(const struct elf_loads *l, uint64_t vaddr, uint32_t flags,
			 uint64_t *ret_off)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct elf_load *s = &l->v[i];

		if ((s->flags & flags) != flags)
			continue;
		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz) {
			*ret_off = vaddr - s->vaddr + s->offset;
			return 0;
		}
	}
	return -ENOENT;
}

/* ---------------------------------------------------------------- by name */

struct names_ctx {
	const char *const *names;
	size_t n;
	unsigned types;
	uint64_t *vaddr;
	const char *str; /* the string table, read whole */
	uint64_t str_len;
};

/* The name at off equals want: all its bytes and the NUL after them lie in the table. */
static bool name_is(const struct names_ctx *c, uint64_t off, const char *want)
{
	size_t len = strlen(want);

	return off < c->str_len && c->str_len - off > len && c->str[off + len] == '\0' &&
	       !memcmp(c->str + off, want, len);
}

static int names__visit(void *ctx, const Elf64_Sym *sym)
{
	struct names_ctx *c = ctx;

	if (sym->st_shndx == SHN_UNDEF || !sym->st_value ||
	    !(c->types & ELF_TYPE(ELF64_ST_TYPE(sym->st_info))))
		return 0;
	for (size_t k = 0; k < c->n; k++)
		if (!c->vaddr[k] && c->names[k] && name_is(c, sym->st_name, c->names[k]))
			c->vaddr[k] = sym->st_value;
	return 0;
}

/* ---------------------------------------------------------------- by hash */

/* The .gnu.hash section that indexes the dynamic symbols, as found in the file. */
struct gnu_hash {
	uint64_t off, size;       /* the section */
	uint32_t nbuckets, symoffset, bloom_words;
};

/*
 * One name's walk, at most: entries followed in its chain, and symbols read
 * whose hash matched (a real table's chains are a few entries long, and
 * two different names rarely share a 32-bit hash; a file a process made up
 * can do anything, and then costs a scan, not seconds of preads).
 */
#define GNU_HASH_MAX_CHAIN 64
#define GNU_HASH_MAX_READS 4

static uint32_t gnu_hash__of(const char *name)
{
	uint32_t h = 5381;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = h * 33 + *p;
	return h;
}

static bool read_u32(int fd, uint64_t off, uint32_t *ret)
{
	return pread(fd, ret, sizeof(*ret), (off_t)off) == (ssize_t)sizeof(*ret);
}

/* The file's .gnu.hash, when it has one whose header fits the section. */
static bool gnu_hash__open(Elf *e, int fd, uint64_t file_size, struct gnu_hash *ret)
{
	Elf_Scn *scn = NULL;
	size_t count = 0;
	uint32_t hdr[4];
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn)) && count++ < ELF_MAX_SCNS) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_GNU_HASH || !shdr__fits(&sh, file_size))
			continue;
		if (sh.sh_size < sizeof(hdr) ||
		    pread(fd, hdr, sizeof(hdr), (off_t)sh.sh_offset) != (ssize_t)sizeof(hdr))
			return false;
		*ret = (struct gnu_hash){ .off = sh.sh_offset, .size = sh.sh_size, .nbuckets = hdr[0],
					  .symoffset = hdr[1], .bloom_words = hdr[2] };
		/* Header, bloom words (8 bytes each), buckets: all inside the section. */
		return ret->nbuckets && (uint64_t)ret->bloom_words * 8 + (uint64_t)ret->nbuckets * 4 <=
							  ret->size - sizeof(hdr);
	}
	return false;
}

/* Whether dynamic symbol i is a wanted one named name: read, checked, its value in *ret. */
static bool gnu_hash__sym_is(const struct elf_symtab *t, uint64_t i, const char *name,
			     unsigned types, uint64_t *ret)
{
	size_t len = strlen(name);
	char buf[len + 2];
	Elf64_Sym sym;

	if (i >= t->count || pread(t->fd, &sym, sizeof(sym), (off_t)(t->off + i * sizeof(sym))) !=
				     (ssize_t)sizeof(sym))
		return false;
	if (sym.st_shndx == SHN_UNDEF || !sym.st_value || !(types & ELF_TYPE(ELF64_ST_TYPE(sym.st_info))))
		return false;
	/* len + 1 bytes read: the name and the NUL that ends it in the table. */
	if (elf_symtab__name(t, sym.st_name, buf, sizeof(buf)) != (ssize_t)len + 1 || buf[len] ||
	    memcmp(buf, name, len))
		return false;
	*ret = sym.st_value;
	return true;
}

/*
 * One name through the hash table: its bucket, then its chain (entries
 * whose hash matches but for the low bit, the last one marked by it),
 * a few preads in all, where a scan reads the whole table. 0 when not
 * there (or the table lies: the caller scans).
 */
static uint64_t gnu_hash__lookup(const struct gnu_hash *g, const struct elf_symtab *dyn,
				 const char *name, unsigned types)
{
	uint32_t h = gnu_hash__of(name), sym_i, cw;
	uint64_t buckets = g->off + 16 + (uint64_t)g->bloom_words * 8;
	uint64_t chain = buckets + (uint64_t)g->nbuckets * 4, value;
	unsigned reads = 0;

	if (!read_u32(dyn->fd, buckets + (uint64_t)(h % g->nbuckets) * 4, &sym_i) ||
	    sym_i < g->symoffset)
		return 0;
	for (unsigned n = 0; n < GNU_HASH_MAX_CHAIN; n++, sym_i++) {
		uint64_t at = chain + (uint64_t)(sym_i - g->symoffset) * 4;

		if (at + 4 > g->off + g->size || !read_u32(dyn->fd, at, &cw))
			return 0;
		if ((cw | 1) == (h | 1)) {
			if (gnu_hash__sym_is(dyn, sym_i, name, types, &value))
				return value;
			if (++reads == GNU_HASH_MAX_READS)
				return 0;
		}
		if (cw & 1)
			return 0;
	}
	return 0;
}

/* A header table of n entries of entsize bytes at off fits in the file (n 0: nothing to fit). */
static bool table_fits(uint64_t off, uint64_t n, uint64_t entsize, uint64_t want_entsize,
		       uint64_t file_size)
{
	return !n || (entsize == want_entsize && off <= file_size &&
		      n <= (file_size - off) / entsize);
}

int elf_symtab__check_headers(int fd, uint64_t file_size)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh0;
	uint64_t shnum, phnum;

	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh))
		return -ENOEXEC;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return -ENOEXEC;
	shnum = eh.e_shnum;
	phnum = eh.e_phnum;
	/* Past 0xff00 sections or 0xffff program headers, the counts are in section 0. */
	if (eh.e_shoff && (!shnum || phnum == PN_XNUM)) {
		if (eh.e_shentsize != sizeof(sh0) || eh.e_shoff > file_size ||
		    pread(fd, &sh0, sizeof(sh0), (off_t)eh.e_shoff) != (ssize_t)sizeof(sh0))
			return -ENOEXEC;
		if (!shnum)
			shnum = sh0.sh_size;
		if (phnum == PN_XNUM)
			phnum = sh0.sh_info;
	}
	if (!eh.e_shoff)
		shnum = 0;
	if (shnum > ELF_MAX_SCNS || phnum > ELF_MAX_PHDRS)
		return -E2BIG;
	if (!table_fits(eh.e_shoff, shnum, eh.e_shentsize, sizeof(Elf64_Shdr), file_size) ||
	    !table_fits(eh.e_phoff, phnum, eh.e_phentsize, sizeof(Elf64_Phdr), file_size))
		return -ENOEXEC;
	return 0;
}

/* The names the dynamic symbols' hash table finds. */
static void names__by_hash(Elf *e, int fd, uint64_t file_size, struct names_ctx *c)
{
	struct elf_symtab dyn;
	struct gnu_hash g;

	if (elf_symtab__open(e, fd, file_size, SHT_DYNSYM, &dyn) || !gnu_hash__open(e, fd, file_size, &g))
		return;
	for (size_t k = 0; k < c->n; k++)
		if (c->names[k] && !c->vaddr[k])
			c->vaddr[k] = gnu_hash__lookup(&g, &dyn, c->names[k], c->types);
}

int elf_symtab__lookup_hashed(int fd, const char *const *names, size_t n, unsigned types,
			      uint64_t *ret_vaddr)
{
	struct names_ctx c = { .names = names, .n = n, .types = types, .vaddr = ret_vaddr };
	struct stat st;
	size_t found = 0;
	Elf *e;

	memset(ret_vaddr, 0, n * sizeof(*ret_vaddr));
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	if (elf_symtab__check_headers(fd, (uint64_t)st.st_size))
		return -ENOEXEC;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return -ENOEXEC;
	}
	names__by_hash(e, fd, (uint64_t)st.st_size, &c);
	elf_end(e);
	for (size_t k = 0; k < n; k++)
		found += ret_vaddr[k] != 0;
	return (int)found;
}

static bool names__all_found(const struct names_ctx *c)
{
	for (size_t k = 0; k < c->n; k++)
		if (c->names[k] && !c->vaddr[k])
			return false;
	return true;
}

static int names__in_table(const struct elf_symtab *t, struct names_ctx *c)
{
	char *str = malloc(t->str_len);
	ssize_t got;

	if (!str)
		return -ENOMEM;
	got = pread(t->fd, str, t->str_len, (off_t)t->str_off);
	if (got == (ssize_t)t->str_len) {
		c->str = str;
		c->str_len = t->str_len;
		elf_symtab__each(t, names__visit, c);
	}
	free(str);
	return 0;
}

int elf_symtab__lookup_names(int fd, const char *const *names, size_t n, unsigned types,
			     uint64_t *ret_vaddr, struct elf_loads *ret_loads)
{
	static const unsigned order[] = { SHT_DYNSYM, SHT_SYMTAB };
	struct names_ctx c = { .names = names, .n = n, .types = types, .vaddr = ret_vaddr };
	struct elf_symtab t;
	struct stat st;
	size_t found = 0;
	int err = 0;
	Elf *e;

	memset(ret_vaddr, 0, n * sizeof(*ret_vaddr));
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	if (elf_symtab__check_headers(fd, (uint64_t)st.st_size))
		return -ENOEXEC;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return -ENOEXEC;
	}
	if (ret_loads)
		elf_loads__read(e, ret_loads);
	/* Exported names through the hash table: a 30 MB .dynstr (libtorch's) is not read whole. */
	names__by_hash(e, fd, (uint64_t)st.st_size, &c);
	for (size_t i = 0; i < 2 && !err && !names__all_found(&c); i++)
		if (elf_symtab__open(e, fd, (uint64_t)st.st_size, order[i], &t) == 0)
			err = names__in_table(&t, &c);
	elf_end(e);
	for (size_t k = 0; k < n; k++)
		found += ret_vaddr[k] != 0;
	return err ? err : (int)found;
}
