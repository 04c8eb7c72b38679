/* SPDX-License-Identifier: MIT */
/*
 * ELF symbol tables. Files are read with ELF_C_READ (pread of the sections we
 * ask for), not mmap: a file truncated under us must give an error, not a
 * SIGBUS in a root process. Section sizes are checked against our own caps
 * before libelf allocates them; the string table is copied once and names are
 * offsets into it, so memory is bounded by the caps whatever the symbol
 * count claims. Function symbols are sorted by address for binary search.
 */
#include "user/symbolize/elf_syms.h"
#include "user/symbolize/root_open.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ELF_SYMS_MAX_SYMS (1u << 22)                   /* per file */
#define ELF_SYMS_MAX_SECTION ((uint64_t)256 << 20)     /* symtab or strtab */
#define ELF_SYMS_MAX_SCNS 65536
#define ELF_SYMS_MAX_LOADS 64
#define ELF_SYMS_MAX_PHDRS 4096
#define ELF_SYMS_MAX_BUILD_ID 64                       /* bytes; SHA-1 is 20 */
#define ELF_SYMS_MAX_NOTES ((uint64_t)1 << 20)

struct elf_sym {
	uint64_t addr;
	uint64_t size;
	uint32_t name; /* offset in strtab */
	uint8_t bind;
};

struct elf_load {
	uint64_t offset;
	uint64_t vaddr;
	uint64_t filesz;
};

struct elf_syms {
	int refs;
	struct elf_sym *syms;
	size_t n_syms;
	char *strtab;
	size_t strtab_len;
	struct elf_load loads[ELF_SYMS_MAX_LOADS];
	size_t n_loads;
	char build_id[ELF_SYMS_MAX_BUILD_ID * 2 + 1];
	uint64_t dev, ino, size;
	int64_t mtime_sec, mtime_nsec;
};

/* ---------------------------------------------------------------- loading */

static int elf_syms__read_loads(Elf *e, struct elf_syms *s)
{
	size_t n, i;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n))
		return 0; /* no program headers: relocatable object, no loads */
	if (n > ELF_SYMS_MAX_PHDRS)
		n = ELF_SYMS_MAX_PHDRS;
	for (i = 0; i < n && s->n_loads < ELF_SYMS_MAX_LOADS; i++) {
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		s->loads[s->n_loads++] = (struct elf_load){
			.offset = ph.p_offset, .vaddr = ph.p_vaddr, .filesz = ph.p_filesz,
		};
	}
	return 0;
}

static void elf_syms__set_build_id(struct elf_syms *s, const uint8_t *d, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	if (!len || len > ELF_SYMS_MAX_BUILD_ID)
		return;
	for (i = 0; i < len; i++) {
		s->build_id[2 * i] = hex[d[i] >> 4];
		s->build_id[2 * i + 1] = hex[d[i] & 15];
	}
	s->build_id[2 * len] = '\0';
}

/* Walks one note area; gelf_getnote bounds each note by the data it has. */
static bool elf_syms__scan_notes(struct elf_syms *s, Elf_Data *d)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	if (!d || !d->d_buf)
		return false;
	while (off < d->d_size &&
	       (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    name_off + 4 <= d->d_size && desc_off <= d->d_size &&
		    nh.n_descsz <= d->d_size - desc_off &&
		    !memcmp((const char *)d->d_buf + name_off, "GNU", 4)) {
			elf_syms__set_build_id(s, (const uint8_t *)d->d_buf + desc_off,
					       nh.n_descsz);
			return s->build_id[0] != '\0';
		}
		if (next <= off)
			break;
		off = next;
	}
	return false;
}

/* Files stripped of section headers still have their notes in PT_NOTE. */
static void elf_syms__build_id_from_phdrs(Elf *e, struct elf_syms *s, uint64_t file_size)
{
	size_t n, i;
	GElf_Phdr ph;
	Elf_Data *d;

	if (elf_getphdrnum(e, &n))
		return;
	if (n > ELF_SYMS_MAX_PHDRS)
		n = ELF_SYMS_MAX_PHDRS;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		if (ph.p_filesz > ELF_SYMS_MAX_NOTES || ph.p_offset > file_size ||
		    ph.p_filesz > file_size - ph.p_offset)
			continue;
		d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR);
		if (elf_syms__scan_notes(s, d))
			return;
	}
}

static bool shdr__fits(const GElf_Shdr *sh, uint64_t file_size, uint64_t cap)
{
	return sh->sh_type != SHT_NOBITS && sh->sh_size <= cap &&
	       sh->sh_offset <= file_size && sh->sh_size <= file_size - sh->sh_offset &&
	       !(sh->sh_flags & SHF_COMPRESSED);
}

static int elf_sym__cmp(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address prefer the global name, then the sized one. */
	if ((x->bind == STB_GLOBAL) != (y->bind == STB_GLOBAL))
		return x->bind == STB_GLOBAL ? -1 : 1;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->name < y->name ? -1 : (x->name > y->name);
}

/*
 * The string table also names data, sections and files: keep only the
 * functions' names when they are under half of it (C++ libraries carry
 * hundreds of MB of names). Best effort: without memory, the whole stays.
 */
static void elf_syms__compact_names(struct elf_syms *s)
{
	size_t i, need = 1, at = 1, len;
	char *names;

	for (i = 0; i < s->n_syms; i++)
		need += strlen(s->strtab + s->syms[i].name) + 1;
	if (need > s->strtab_len / 2)
		return;
	names = malloc(need);
	if (!names)
		return;
	names[0] = '\0';
	for (i = 0; i < s->n_syms; i++) {
		len = strlen(s->strtab + s->syms[i].name) + 1;
		memcpy(names + at, s->strtab + s->syms[i].name, len);
		s->syms[i].name = (uint32_t)at;
		at += len;
	}
	free(s->strtab);
	s->strtab = names;
	s->strtab_len = need - 1;
}

static int elf_syms__read_symtab(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh,
				 struct elf_syms *s, uint64_t file_size)
{
	Elf_Scn *str_scn;
	GElf_Shdr str_sh;
	Elf_Data *d, *sd;
	GElf_Sym sym;
	size_t n, i, k;
	int type;

	str_scn = elf_getscn(e, sh->sh_link);
	if (!str_scn || !gelf_getshdr(str_scn, &str_sh) || str_sh.sh_type != SHT_STRTAB ||
	    !shdr__fits(&str_sh, file_size, ELF_SYMS_MAX_SECTION))
		return -ENOEXEC;
	d = elf_getdata(scn, NULL);
	sd = elf_getdata(str_scn, NULL);
	if (!d || !sd || !d->d_buf || !sd->d_buf || sd->d_size == 0 ||
	    sd->d_size > UINT32_MAX)
		return -ENOEXEC;
	/* A private copy, NUL-terminated whatever the file says. */
	s->strtab = malloc(sd->d_size + 1);
	if (!s->strtab)
		return -ENOMEM;
	memcpy(s->strtab, sd->d_buf, sd->d_size);
	s->strtab[sd->d_size] = '\0';
	s->strtab_len = sd->d_size;

	n = d->d_size / gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
	if (n > ELF_SYMS_MAX_SYMS)
		n = ELF_SYMS_MAX_SYMS;
	s->syms = calloc(n ? n : 1, sizeof(*s->syms));
	if (!s->syms)
		return -ENOMEM;
	for (i = 0, k = 0; i < n; i++) {
		if (!gelf_getsym(d, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
		    !sym.st_value || !sym.st_name || sym.st_name >= s->strtab_len)
			continue;
		s->syms[k++] = (struct elf_sym){
			.addr = sym.st_value, .size = sym.st_size,
			.name = (uint32_t)sym.st_name, .bind = GELF_ST_BIND(sym.st_info),
		};
	}
	qsort(s->syms, k, sizeof(*s->syms), elf_sym__cmp);
	/* One symbol per address: aliases add nothing to a lookup. */
	for (i = 0, n = 0; i < k; i++)
		if (!n || s->syms[n - 1].addr != s->syms[i].addr)
			s->syms[n++] = s->syms[i];
	s->n_syms = n;
	/* Sized for every symbol of the table, most of which were not functions. */
	if (n) {
		struct elf_sym *fit = realloc(s->syms, n * sizeof(*s->syms));

		if (fit)
			s->syms = fit;
	}
	elf_syms__compact_names(s);
	return 0;
}

static int elf_syms__read_sections(Elf *e, struct elf_syms *s, uint64_t file_size)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr sh, symtab_sh, dynsym_sh;
	bool have_build_id = false;
	size_t count = 0;

	while ((scn = elf_nextscn(e, scn)) && count++ < ELF_SYMS_MAX_SCNS) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !symtab &&
		    shdr__fits(&sh, file_size, ELF_SYMS_MAX_SECTION)) {
			symtab = scn;
			symtab_sh = sh;
		} else if (sh.sh_type == SHT_DYNSYM && !dynsym &&
			   shdr__fits(&sh, file_size, ELF_SYMS_MAX_SECTION)) {
			dynsym = scn;
			dynsym_sh = sh;
		} else if (sh.sh_type == SHT_NOTE && !have_build_id &&
			   shdr__fits(&sh, file_size, ELF_SYMS_MAX_NOTES)) {
			have_build_id = elf_syms__scan_notes(s, elf_getdata(scn, NULL));
		}
	}
	if (!have_build_id)
		elf_syms__build_id_from_phdrs(e, s, file_size);
	/* .symtab is a superset of .dynsym when present; stripped files have only the latter. */
	if (symtab && elf_syms__read_symtab(e, symtab, &symtab_sh, s, file_size) == 0 &&
	    s->n_syms)
		return 0;
	free(s->syms);
	free(s->strtab);
	s->syms = NULL;
	s->strtab = NULL;
	s->n_syms = 0;
	s->strtab_len = 0;
	if (dynsym && elf_syms__read_symtab(e, dynsym, &dynsym_sh, s, file_size) == 0)
		return 0;
	return 0; /* no symbols at all is still a usable file (lib+offset) */
}

static int elf_syms__from_elf(Elf *e, uint64_t file_size, struct elf_syms **ret_syms)
{
	struct elf_syms *s;
	int err;

	if (!e)
		return -ENOEXEC;
	if (elf_kind(e) != ELF_K_ELF)
		return -ENOEXEC;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->refs = 1;
	err = elf_syms__read_loads(e, s);
	if (!err)
		err = elf_syms__read_sections(e, s, file_size);
	if (err) {
		elf_syms__put(s);
		return err;
	}
	*ret_syms = s;
	return 0;
}

int elf_syms__load_fd(int fd, struct elf_syms **ret_syms)
{
	struct elf_syms *s;
	struct stat st;
	Elf *e;
	int err;

	if (fd < 0 || !ret_syms)
		return -EINVAL;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	err = elf_syms__from_elf(e, (uint64_t)st.st_size, &s);
	elf_end(e);
	if (err)
		return err;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->size = (uint64_t)st.st_size;
	s->mtime_sec = st.st_mtim.tv_sec;
	s->mtime_nsec = st.st_mtim.tv_nsec;
	*ret_syms = s;
	return 0;
}

int elf_syms__load_mem(const void *data, size_t len, struct elf_syms **ret_syms)
{
	char *copy;
	Elf *e;
	int err;

	if ((!data && len) || !ret_syms)
		return -EINVAL;
	/* libelf may convert byte order in place: give it a private copy. */
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, data, len);
	elf_version(EV_CURRENT);
	e = elf_memory(copy, len);
	err = elf_syms__from_elf(e, len, ret_syms);
	elf_end(e);
	free(copy);
	return err;
}

struct elf_syms *elf_syms__get(struct elf_syms *s)
{
	if (s)
		s->refs++;
	return s;
}

void elf_syms__put(struct elf_syms *s)
{
	if (!s || --s->refs > 0)
		return;
	free(s->syms);
	free(s->strtab);
	free(s);
}

/* ---------------------------------------------------------------- queries */

const char *elf_syms__build_id(const struct elf_syms *s)
{
	return s ? s->build_id : "";
}

size_t elf_syms__count(const struct elf_syms *s)
{
	return s ? s->n_syms : 0;
}

size_t elf_syms__bytes(const struct elf_syms *s)
{
	return s ? sizeof(*s) + s->n_syms * sizeof(*s->syms) + s->strtab_len : 0;
}

void elf_syms__identity(const struct elf_syms *s, uint64_t *ret_dev, uint64_t *ret_ino)
{
	if (ret_dev)
		*ret_dev = s ? s->dev : 0;
	if (ret_ino)
		*ret_ino = s ? s->ino : 0;
}

int elf_syms__lookup(const struct elf_syms *s, uint64_t vaddr, const char **ret_name,
		     uint64_t *ret_offset)
{
	size_t lo = 0, hi, mid;
	const struct elf_sym *sym;

	if (!s || !ret_name || !ret_offset)
		return -EINVAL;
	hi = s->n_syms;
	while (lo < hi) { /* first symbol above vaddr */
		mid = lo + (hi - lo) / 2;
		if (s->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	sym = &s->syms[lo - 1];
	/* Size 0 (hand-written assembly) reaches to the next symbol. */
	if (sym->size && vaddr - sym->addr >= sym->size)
		return -ENOENT;
	*ret_name = s->strtab + sym->name;
	*ret_offset = vaddr - sym->addr;
	return 0;
}

int elf_syms__file_to_vaddr(const struct elf_syms *s, uint64_t file_offset,
			    uint64_t *ret_vaddr)
{
	const struct elf_load *l;
	size_t i;

	if (!s || !ret_vaddr)
		return -EINVAL;
	for (i = 0; i < s->n_loads; i++) {
		l = &s->loads[i];
		if (file_offset >= l->offset && file_offset - l->offset < l->filesz) {
			*ret_vaddr = file_offset - l->offset + l->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

/* ---------------------------------------------------------------- cache */

struct elf_cache {
	struct elf_syms **files;
	uint64_t *last_use;
	size_t n;
	size_t max;
	uint64_t clock;
};

struct elf_cache *elf_cache__new(size_t max_files)
{
	struct elf_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->max = max_files ? max_files : 256;
	c->files = calloc(c->max, sizeof(*c->files));
	c->last_use = calloc(c->max, sizeof(*c->last_use));
	if (!c->files || !c->last_use) {
		elf_cache__destroy(c);
		return NULL;
	}
	return c;
}

void elf_cache__destroy(struct elf_cache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++)
		elf_syms__put(c->files[i]);
	free(c->files);
	free(c->last_use);
	free(c);
}

static bool elf_syms__same_file(const struct elf_syms *s, const struct stat *st)
{
	return s->dev == (uint64_t)st->st_dev && s->ino == (uint64_t)st->st_ino &&
	       s->size == (uint64_t)st->st_size && s->mtime_sec == st->st_mtim.tv_sec &&
	       s->mtime_nsec == st->st_mtim.tv_nsec;
}

/* A linear scan: the cache holds hundreds of files and a lookup opens one anyway. */
int elf_cache__get_fd(struct elf_cache *c, int fd, struct elf_syms **ret_syms)
{
	struct elf_syms *s;
	struct stat st;
	size_t i, victim = 0;
	int err;

	if (!c || fd < 0 || !ret_syms)
		return -EINVAL;
	if (fstat(fd, &st))
		return -errno;
	for (i = 0; i < c->n; i++) {
		if (elf_syms__same_file(c->files[i], &st)) {
			c->last_use[i] = ++c->clock;
			*ret_syms = elf_syms__get(c->files[i]);
			return 0;
		}
	}
	err = elf_syms__load_fd(fd, &s);
	if (err)
		return err;
	/* A replaced file (same dev+inode, new size/mtime) takes its old slot. */
	for (i = 0; i < c->n; i++)
		if (c->files[i]->dev == s->dev && c->files[i]->ino == s->ino)
			break;
	if (i == c->n && c->n < c->max) {
		c->n++;
	} else if (i == c->n) {
		for (i = 1; i < c->n; i++)
			if (c->last_use[i] < c->last_use[victim])
				victim = i;
		i = victim;
	}
	if (i < c->n && c->files[i])
		elf_syms__put(c->files[i]);
	c->files[i] = s;
	c->last_use[i] = ++c->clock;
	*ret_syms = elf_syms__get(s);
	return 0;
}

int elf_cache__get(struct elf_cache *c, int root_fd, const char *path,
		   struct elf_syms **ret_syms)
{
	int fd, err;

	if (!c || !path || !ret_syms)
		return -EINVAL;
	err = root_open__file(root_fd, path, &fd);
	if (err)
		return err;
	err = elf_cache__get_fd(c, fd, ret_syms);
	close(fd);
	return err;
}

void elf_cache__stats(const struct elf_cache *c, size_t *ret_files, size_t *ret_bytes)
{
	size_t i, bytes = 0;

	for (i = 0; c && i < c->n; i++)
		bytes += elf_syms__bytes(c->files[i]);
	*ret_files = c ? c->n : 0;
	*ret_bytes = bytes;
}
