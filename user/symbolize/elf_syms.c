/* SPDX-License-Identifier: MIT */
/*
 * ELF symbol tables. Files are read with pread (libelf's ELF_C_READ for the
 * headers, elf_symtab.h's reads for the symbol table), not mmap: a file truncated
 * under us must give an error, not a SIGBUS in a root process. Section sizes
 * are checked against our own caps before anything is read. Only function
 * symbols are kept, 16 bytes each, sorted by address for binary search; their
 * names stay in the file (C++ libraries carry over 100 MB of them) and are
 * read on lookup through a dup of the file's descriptor, into a small cache.
 */
#include "user/symbolize/elf_syms.h"
#include "user/symbolize/elf_symtab.h"
#include "user/proc/proc.h"
#include "user/util/grow.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ELF_SYMS_MAX_SCNS 65536
#define ELF_SYMS_MAX_PHDRS 4096
#define ELF_SYMS_MAX_BUILD_ID 64                       /* bytes; SHA-1 is 20 */
#define ELF_SYMS_MAX_NOTES ((uint64_t)1 << 20)
#define ELF_SYMS_NAME_SLOTS 256                        /* names cached per file */
#define ELF_SYMS_MAX_NAME 4096                         /* longer names are cut */
#define ELF_SYM_SIZE_MAX 0x7fffffffu
#define ELF_SYM_GLOBAL 0x80000000u                     /* in size, while sorting */

struct elf_sym {
	uint64_t addr;
	uint32_t size; /* clamped to ELF_SYM_SIZE_MAX */
	uint32_t name; /* offset in the file's string table */
};

struct elf_name {
	size_t sym;  /* index + 1; 0 for an empty slot */
	char *name;
};

struct elf_syms {
	int refs;
	struct elf_symtab tab; /* names are read from it; its fd -1 without symbols */
	struct elf_sym *syms;
	size_t n_syms;
	struct elf_name *names; /* ELF_SYMS_NAME_SLOTS, on first lookup */
	size_t name_bytes;
	struct elf_loads loads;
	char build_id[ELF_SYMS_MAX_BUILD_ID * 2 + 1];
	bool symtab; /* syms came from a .symtab (its own, or its debug file's) */
	uint64_t dev, ino, size;
	int64_t mtime_sec, mtime_nsec;
};

/* ---------------------------------------------------------------- loading */

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
	uint32_t xs = x->size & ELF_SYM_SIZE_MAX, ys = y->size & ELF_SYM_SIZE_MAX;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address prefer the global name, then the sized one. */
	if ((x->size & ELF_SYM_GLOBAL) != (y->size & ELF_SYM_GLOBAL))
		return (x->size & ELF_SYM_GLOBAL) ? -1 : 1;
	if (xs != ys)
		return xs > ys ? -1 : 1;
	return x->name < y->name ? -1 : (x->name > y->name);
}

/* What a symbol table's walk collects: its function symbols (room reserved, else grown). */
struct collect_ctx {
	struct elf_syms *s;
	size_t cap;
};

static bool elf_sym__is_function(const Elf64_Sym *sym, uint64_t strtab_len)
{
	int type = ELF64_ST_TYPE(sym->st_info);

	return (type == STT_FUNC || type == STT_GNU_IFUNC) && sym->st_shndx != SHN_UNDEF &&
	       sym->st_value && sym->st_name && sym->st_name < strtab_len;
}

static int elf_syms__collect(void *ctx, const Elf64_Sym *sym)
{
	struct collect_ctx *c = ctx;
	struct elf_syms *s = c->s;
	struct elf_sym *grown;

	if (!elf_sym__is_function(sym, s->tab.str_len))
		return 0;
	grown = grow__array(s->syms, &c->cap, s->n_syms + 1, sizeof(*grown), 1024);
	if (!grown)
		return -ENOMEM;
	s->syms = grown;
	s->syms[s->n_syms++] = (struct elf_sym){
		.addr = sym->st_value,
		.size = (sym->st_size > ELF_SYM_SIZE_MAX ? ELF_SYM_SIZE_MAX : (uint32_t)sym->st_size) |
			(ELF64_ST_BIND(sym->st_info) == STB_GLOBAL ? ELF_SYM_GLOBAL : 0),
		.name = sym->st_name,
	};
	return 0;
}

#define RADIX_BITS 11
#define RADIX_MASK ((1u << RADIX_BITS) - 1)
#define RADIX_DIGITS ((64 + RADIX_BITS - 1) / RADIX_BITS)

/* Every digit's histogram, for sort_by_addr: 48 KiB, on the heap. */
typedef uint32_t radix_counts[RADIX_DIGITS][RADIX_MASK + 1];

/*
 * Sorts a[0..n) (n < 2^32) by address, stably, a digit of RADIX_BITS at a
 * time from the lowest, through tmp (n entries). A digit's histogram does
 * not depend on the order, so one read counts them all and finds the
 * digits some address differs in; a digit every address shares (the high
 * ones: a library spans far less than 2^64) costs nothing more. Returns a
 * or tmp, whichever holds the result. A library of 350,000 functions
 * (libtorch_cpu) took qsort tens of ms at every loader start that named
 * its frames.
 */
static struct elf_sym *sort_by_addr(struct elf_sym *a, struct elf_sym *tmp, size_t n,
				    radix_counts *counts)
{
	uint32_t(*count)[RADIX_MASK + 1] = *counts;
	uint64_t differ = 0, first = a[0].addr;
	struct elf_sym *swap;
	size_t i;

	memset(count, 0, sizeof(*counts));
	for (i = 0; i < n; i++) {
		uint64_t addr = a[i].addr;

		differ |= addr ^ first;
		for (unsigned d = 0; d < RADIX_DIGITS; d++)
			count[d][(addr >> (d * RADIX_BITS)) & RADIX_MASK]++;
	}
	for (unsigned d = 0; d < RADIX_DIGITS; d++) {
		unsigned shift = d * RADIX_BITS;
		uint32_t *c = count[d], at = 0;

		if (!((differ >> shift) & RADIX_MASK))
			continue;
		for (i = 0; i <= RADIX_MASK; i++) {
			uint32_t k = c[i];

			c[i] = at;
			at += k;
		}
		for (i = 0; i < n; i++)
			tmp[c[(a[i].addr >> shift) & RADIX_MASK]++] = a[i];
		swap = a;
		a = tmp;
		tmp = swap;
	}
	return a;
}

/*
 * Sorted, one symbol per address (aliases add nothing to a lookup: of those
 * at one address, the first by elf_sym__cmp), sized to fit.
 */
static void elf_syms__sort(struct elf_syms *s)
{
	size_t i, j, best, n = 0;
	struct elf_sym *fit, *tmp, *sorted;
	radix_counts *counts;

	if (!s->n_syms)
		return;
	tmp = malloc(s->n_syms * sizeof(*tmp));
	counts = malloc(sizeof(*counts));
	if (tmp && counts) {
		sorted = sort_by_addr(s->syms, tmp, s->n_syms, counts);
	} else {
		qsort(s->syms, s->n_syms, sizeof(*s->syms), elf_sym__cmp);
		sorted = s->syms;
	}
	/* Writing s->syms[n] with n <= i never overwrites an entry still to be read. */
	for (i = 0; i < s->n_syms; i = j) {
		best = i;
		for (j = i + 1; j < s->n_syms && sorted[j].addr == sorted[i].addr; j++)
			if (elf_sym__cmp(&sorted[j], &sorted[best]) < 0)
				best = j;
		s->syms[n] = sorted[best];
		s->syms[n++].size &= ELF_SYM_SIZE_MAX;
	}
	free(tmp);
	free(counts);
	s->n_syms = n;
	fit = n ? realloc(s->syms, n * sizeof(*s->syms)) : NULL;
	if (fit)
		s->syms = fit;
}

static void elf_syms__drop_symbols(struct elf_syms *s)
{
	free(s->syms);
	s->syms = NULL;
	s->n_syms = 0;
	s->tab = (struct elf_symtab){ .fd = -1 };
}

/*
 * Room for every entry of the table at once (addresses only as written:
 * the entries past the functions are never touched), so that collecting
 * copies nothing; sized to fit once sorted. Without it, grown as it goes.
 */
static void elf_syms__reserve(struct elf_syms *s, struct collect_ctx *c)
{
	size_t want = elf_symtab__len(&s->tab);
	struct elf_sym *room = want ? grow__array(s->syms, &c->cap, want, sizeof(*room), want) : NULL;

	if (room)
		s->syms = room;
}

/*
 * The function symbols of one table (elf_symtab.h reads it in chunks
 * straight from the file: neither it nor its names are ever held whole).
 * 0 with symbols found.
 */
static int elf_syms__read_table(Elf *e, int fd, uint64_t file_size, unsigned type,
				struct elf_syms *s)
{
	struct collect_ctx c = { .s = s };
	int err;

	err = elf_symtab__open(e, fd, file_size, type, &s->tab);
	if (!err)
		elf_syms__reserve(s, &c);
	if (!err)
		err = elf_symtab__each(&s->tab, elf_syms__collect, &c);
	if (!err)
		elf_syms__sort(s);
	if (!err && !s->n_syms)
		err = -ENOENT;
	if (err)
		elf_syms__drop_symbols(s);
	return err;
}

/* The build id: from the first note section that has one, else from PT_NOTE. */
static void elf_syms__read_build_id(Elf *e, struct elf_syms *s, uint64_t file_size)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t count = 0;

	while ((scn = elf_nextscn(e, scn)) && count++ < ELF_SYMS_MAX_SCNS)
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE &&
		    shdr__fits(&sh, file_size, ELF_SYMS_MAX_NOTES) &&
		    elf_syms__scan_notes(s, elf_getdata(scn, NULL)))
			return;
	elf_syms__build_id_from_phdrs(e, s, file_size);
}

static void elf_syms__read_sections(Elf *e, int fd, struct elf_syms *s, uint64_t file_size)
{
	elf_syms__read_build_id(e, s, file_size);
	/* .symtab is a superset of .dynsym when present; stripped files have only the latter. */
	if (elf_syms__read_table(e, fd, file_size, SHT_SYMTAB, s) == 0) {
		s->symtab = true;
		return;
	}
	/* no symbols at all is still a usable file (lib+offset) */
	elf_syms__read_table(e, fd, file_size, SHT_DYNSYM, s);
}

static int elf_syms__from_elf(Elf *e, int fd, uint64_t file_size, struct elf_syms **ret_syms)
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
	s->tab.fd = -1;
	elf_loads__read(e, &s->loads);
	elf_syms__read_sections(e, fd, s, file_size);
	/* Names are read on lookup, from the file as it was opened. */
	err = 0;
	if (s->n_syms && (s->tab.fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		err = -errno;
		s->tab.fd = -1;
	}
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
	err = elf_symtab__check_headers(fd, (uint64_t)st.st_size);
	if (err)
		return err;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	err = elf_syms__from_elf(e, fd, (uint64_t)st.st_size, &s);
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

/* Through an anonymous file, so that memory and files take one path. */
int elf_syms__load_mem(const void *data, size_t len, struct elf_syms **ret_syms)
{
	size_t done = 0;
	ssize_t n;
	int fd, err;

	if ((!data && len) || !ret_syms)
		return -EINVAL;
	fd = memfd_create("gpuprobe-elf", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (done < len) {
		n = write(fd, (const char *)data + done, len - done);
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			close(fd);
			return err;
		}
		done += (size_t)n;
	}
	err = elf_syms__load_fd(fd, ret_syms);
	close(fd);
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
	size_t i;

	if (!s || --s->refs > 0)
		return;
	for (i = 0; s->names && i < ELF_SYMS_NAME_SLOTS; i++)
		free(s->names[i].name);
	free(s->names);
	if (s->tab.fd >= 0)
		close(s->tab.fd);
	free(s->syms);
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
	if (!s)
		return 0;
	return sizeof(*s) + s->n_syms * sizeof(*s->syms) + s->name_bytes +
	       (s->names ? ELF_SYMS_NAME_SLOTS * sizeof(*s->names) : 0);
}

void elf_syms__identity(const struct elf_syms *s, uint64_t *ret_dev, uint64_t *ret_ino)
{
	if (ret_dev)
		*ret_dev = s ? s->dev : 0;
	if (ret_ino)
		*ret_ino = s ? s->ino : 0;
}

/*
 * Symbol idx's name, read from the file's string table into its cache slot:
 * valid until the next lookup in this file. NULL when it cannot be read.
 */
static const char *elf_syms__name(struct elf_syms *s, size_t idx)
{
	char buf[ELF_SYMS_MAX_NAME + 1];
	struct elf_name *slot;

	if (!s->names && !(s->names = calloc(ELF_SYMS_NAME_SLOTS, sizeof(*s->names))))
		return NULL;
	slot = &s->names[idx % ELF_SYMS_NAME_SLOTS];
	if (slot->sym == idx + 1)
		return slot->name;
	if (elf_symtab__name(&s->tab, s->syms[idx].name, buf, sizeof(buf)) < 0)
		return NULL; /* truncated under us */
	if (slot->name) {
		s->name_bytes -= strlen(slot->name) + 1;
		free(slot->name);
	}
	slot->sym = 0;
	slot->name = strdup(buf);
	if (!slot->name)
		return NULL;
	s->name_bytes += strlen(slot->name) + 1;
	slot->sym = idx + 1;
	return slot->name;
}

int elf_syms__lookup(struct elf_syms *s, uint64_t vaddr, const char **ret_name,
		     uint64_t *ret_offset)
{
	size_t lo = 0, hi, mid;
	const struct elf_sym *sym;
	const char *name;

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
	name = elf_syms__name(s, lo - 1);
	if (!name || !name[0])
		return -ENOENT;
	*ret_name = name;
	*ret_offset = vaddr - sym->addr;
	return 0;
}

int elf_syms__file_to_vaddr(const struct elf_syms *s, uint64_t file_offset,
			    uint64_t *ret_vaddr)
{
	if (!s || !ret_vaddr)
		return -EINVAL;
	return elf_loads__to_vaddr(&s->loads, file_offset, ret_vaddr);
}

/* ---------------------------------------------------------------- cache */

struct elf_cache {
	struct elf_syms **files;
	uint64_t *last_use;
	size_t n;
	size_t max;
	uint64_t clock;
	int debug_root; /* where /usr/lib/debug is looked for; -1: nowhere */
	struct bounded *b; /* the opens' bounded calls */
};

struct elf_cache *elf_cache__new(struct bounded *b, size_t max_files)
{
	struct elf_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->b = b;
	c->debug_root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
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
	if (c->debug_root >= 0)
		close(c->debug_root);
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

/*
 * A stripped file (no .symtab) takes the function symbols of its debug file,
 * where the distribution's -dbg packages put it: /usr/lib/debug/.build-id/
 * NN/REST.debug under the cache's debug root (the loader's own "/": never a
 * profiled process's root, where a container could forge the debug file of
 * a library it shares, by inode, with every other process), named by the
 * file's build id and used only when it carries that same build id (a debug
 * file of another build would name every frame wrongly). Its names are read
 * from it.
 */
static void elf_syms__use_debug_file(struct elf_cache *c, struct elf_syms *s)
{
	char path[sizeof(s->build_id) + 40];
	struct elf_syms *d = NULL;
	int fd;

	if (c->debug_root < 0 || s->symtab || strlen(s->build_id) < 4)
		return;
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", s->build_id,
		 s->build_id + 2);
	if (proc__open_file_at(c->b, 0, c->debug_root, path, NULL, &fd))
		return;
	if (elf_syms__load_fd(fd, &d) == 0 && d->symtab && d->n_syms &&
	    !strcmp(d->build_id, s->build_id)) {
		/* s takes d's symbols and names; d, put below, frees what s had. */
#define SWAP(f) do { __typeof__(s->f) t_ = s->f; s->f = d->f; d->f = t_; } while (0)
		SWAP(tab);
		SWAP(syms);
		SWAP(n_syms);
		SWAP(names);
		SWAP(name_bytes);
#undef SWAP
		s->symtab = true;
	}
	elf_syms__put(d);
	close(fd);
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
	elf_syms__use_debug_file(c, s);
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
	err = proc__open_file_at(c->b, 0, root_fd, path, NULL, &fd);
	if (err)
		return err;
	err = elf_cache__get_fd(c, fd, ret_syms);
	close(fd);
	return err;
}

int elf_cache__set_debug_root(struct elf_cache *c, int dir_fd)
{
	int fd = dir_fd >= 0 ? fcntl(dir_fd, F_DUPFD_CLOEXEC, 0) : -1;

	if (dir_fd >= 0 && fd < 0)
		return -errno;
	if (c->debug_root >= 0)
		close(c->debug_root);
	c->debug_root = fd;
	return 0;
}

void elf_cache__stats(const struct elf_cache *c, size_t *ret_files, size_t *ret_bytes)
{
	size_t i, bytes = 0;

	for (i = 0; c && i < c->n; i++)
		bytes += elf_syms__bytes(c->files[i]);
	*ret_files = c ? c->n : 0;
	*ret_bytes = bytes;
}
