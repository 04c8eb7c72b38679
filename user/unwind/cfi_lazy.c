/* SPDX-License-Identifier: MIT */
/*
 * .eh_frame built FDE by FDE, when a stack walk first lands in a function.
 *
 * The linker's .eh_frame_hdr (found through PT_GNU_EH_FRAME) holds a table
 * of (function start, FDE address) pairs sorted by start. Loading reads only
 * that table, 8 bytes per function, and checks that it is sorted; a lookup
 * is a binary search in it, then the FDE and its CIE are read from the file
 * (pread, bounded by the .eh_frame's PT_LOAD and a per-entry cap) and run
 * into a small table of their own, which is cached. The cache holds at most
 * CFI_LAZY_MAX_FDES FDEs, and CFI_LAZY_MAX_BYTES of their rows (one FDE
 * past it), so memory stays bounded whatever a process's stacks pass
 * through. When full, or when the share its bytes count in
 * (cfi_lazy__share) allows no more, it keeps only the FDEs walks found
 * again since it was last full (all go when every one was): a table under
 * pressure keeps its hot functions rather than building them again at
 * every walk.
 * An FDE that does not build is remembered as such and not read again.
 *
 * Only the layout every linker writes is used (eh_frame_ptr pcrel sdata4,
 * fde_count udata4, table datarel sdata4); any other, or a table out of
 * order, and the caller loads .eh_frame whole. Every byte is hostile.
 */
#include "user/unwind/cfi_lazy.h"
#include "user/unwind/cfi_dwarf.h"
#include "user/unwind/cfi_rows.h"
#include "user/util/mem_share.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CFI_LAZY_MAX_TABLE (1u << 22)     /* FDEs indexed per file: 32 MiB of pairs */
#define CFI_LAZY_MAX_ENTRY ((__u64)1 << 20) /* bytes of one FDE or CIE */
#define CFI_LAZY_MAX_FDES (1u << 14)      /* FDEs built and cached per file */
/* Bytes of their rows, per file: an FDE of 1 MiB of instructions builds megabytes of rows */
#define CFI_LAZY_MAX_BYTES (32u << 20)

#define EH_PE_UDATA4 0x03
#define EH_PE_PCREL_SDATA4 0x1b
#define EH_PE_DATAREL_SDATA4 0x3b

struct lazy_pair {
	__s32 start, fde; /* relative to the header's address */
};

struct lazy_slot {
	__u32 key;              /* FDE index + 1; 0: empty */
	__u32 used;             /* found (not just built) since the table was last full */
	struct cfi_rows *rows;  /* NULL: it did not build */
};

struct cfi_lazy {
	struct elf_src src;      /* fd duplicated, or mem copied */
	__u8 *mem_copy;
	__u64 hdr_addr;          /* vaddr the pairs are relative to */
	__u64 eh_addr, eh_off, eh_size; /* .eh_frame: vaddr, file offset, bytes readable */
	struct lazy_pair *pairs;
	size_t n;
	struct lazy_slot *slots; /* open addressing, a power of two, at least 2 * used */
	size_t cap, used, rows, bytes, dropped, built;
	struct mem_hold *hold;   /* where its bytes count (cfi_lazy__share), NULL: nowhere */
	size_t counted;          /* what hold counts of it */
};

static __u64 le32(const __u8 *p)
{
	return (__u64)p[0] | (__u64)p[1] << 8 | (__u64)p[2] << 16 | (__u64)p[3] << 24;
}

/* Header fields and the pairs; -ENOENT for any layout we do not take. */
static int lazy__read_index(struct cfi_lazy *lz, const Elf64_Phdr *ph, size_t n_ph,
			    const Elf64_Phdr *hdr)
{
	__u8 h[12];
	__u64 count, i;
	__s64 prev = INT64_MIN, start;
	int err;

	if (hdr->p_filesz < sizeof(h) || hdr->p_offset > lz->src.size ||
	    hdr->p_filesz > lz->src.size - hdr->p_offset)
		return -ENOENT;
	err = elf_src__read(&lz->src, hdr->p_offset, h, sizeof(h));
	if (err)
		return err == -ENOMEM ? err : -ENOENT;
	if (h[0] != 1 || h[1] != EH_PE_PCREL_SDATA4 || h[2] != EH_PE_UDATA4 ||
	    h[3] != EH_PE_DATAREL_SDATA4)
		return -ENOENT;
	lz->hdr_addr = hdr->p_vaddr;
	lz->eh_addr = hdr->p_vaddr + 4 + (__u64)(__s64)(__s32)le32(h + 4);
	count = le32(h + 8);
	if (!count || count > CFI_LAZY_MAX_TABLE || count > (hdr->p_filesz - sizeof(h)) / 8)
		return -ENOENT;
	if (elf_phdrs__load_at(ph, n_ph, lz->src.size, lz->eh_addr, &lz->eh_off, &lz->eh_size))
		return -ENOENT;
	lz->pairs = malloc(count * sizeof(*lz->pairs));
	if (!lz->pairs)
		return -ENOMEM;
	err = elf_src__read(&lz->src, hdr->p_offset + sizeof(h), lz->pairs,
			    count * sizeof(*lz->pairs));
	if (err)
		return err == -ENOMEM ? err : -ENOENT;
	/* Sorted, or a binary search would answer with the wrong FDE. */
	for (i = 0; i < count; i++) {
		start = lz->pairs[i].start;
		if (start < prev)
			return -ENOENT;
		prev = start;
	}
	lz->n = count;
	return 0;
}

static int lazy__keep_src(struct cfi_lazy *lz, const struct elf_src *src)
{
	lz->src = *src;
	if (src->mem) {
		lz->mem_copy = malloc(src->size ? src->size : 1);
		if (!lz->mem_copy)
			return -ENOMEM;
		memcpy(lz->mem_copy, src->mem, src->size);
		lz->src.mem = lz->mem_copy;
		return 0;
	}
	lz->src.fd = fcntl(src->fd, F_DUPFD_CLOEXEC, 0);
	return lz->src.fd < 0 ? -errno : 0;
}

int cfi_lazy__open(const struct elf_src *src, const Elf64_Ehdr *eh, struct cfi_lazy **ret_lazy)
{
	const Elf64_Phdr *hdr;
	struct cfi_lazy *lz;
	Elf64_Phdr *ph;
	size_t n;
	int err;

	err = elf_src__phdrs(src, eh, &ph, &n);
	if (err)
		return err;
	hdr = elf_phdrs__find(ph, n, PT_GNU_EH_FRAME);
	lz = hdr ? calloc(1, sizeof(*lz)) : NULL;
	err = !hdr ? -ENOENT : !lz ? -ENOMEM : 0;
	if (lz) {
		lz->src.fd = -1;
		err = lazy__keep_src(lz, src);
		if (!err)
			err = lazy__read_index(lz, ph, n, hdr);
	}
	free(ph);
	if (err) {
		cfi_lazy__free(lz);
		return err;
	}
	*ret_lazy = lz;
	return 0;
}

/* ---------------------------------------------------------------- one FDE */

/* The whole entry at off in .eh_frame (length field first), malloc'ed. */
static int lazy__read_entry(struct cfi_lazy *lz, __u64 off, __u8 **ret, size_t *ret_len)
{
	__u8 head[12];
	__u64 len, hlen = 4;
	int err;

	if (off >= lz->eh_size || lz->eh_size - off < 4)
		return -EINVAL;
	err = elf_src__read(&lz->src, lz->eh_off + off, head, 4);
	if (err)
		return err;
	len = le32(head);
	if (len == 0xffffffff) {
		hlen = 12;
		if (lz->eh_size - off < 12 || elf_src__read(&lz->src, lz->eh_off + off, head, 12))
			return -EINVAL;
		memcpy(&len, head + 4, 8);
	} else if (len >= 0xfffffff0 || !len) {
		return -EINVAL;
	}
	if (len > CFI_LAZY_MAX_ENTRY || len > lz->eh_size - off - hlen)
		return -EINVAL;
	*ret = malloc(hlen + len);
	if (!*ret)
		return -ENOMEM;
	err = elf_src__read(&lz->src, lz->eh_off + off, *ret, hlen + len);
	if (err) {
		free(*ret);
		return err;
	}
	*ret_len = hlen + len;
	return 0;
}

/* FDE i of the index, its CIE found through its CIE pointer, run into a table. */
static int lazy__build(struct cfi_lazy *lz, size_t i, struct cfi_rows **ret)
{
	__u8 *fde = NULL, *cie = NULL;
	size_t fde_len, cie_len, id_at;
	__u64 fde_addr = lz->hdr_addr + (__u64)(__s64)lz->pairs[i].fde, fde_off, id, cie_off;
	int err;

	if (fde_addr < lz->eh_addr)
		return -EINVAL;
	fde_off = fde_addr - lz->eh_addr;
	err = lazy__read_entry(lz, fde_off, &fde, &fde_len);
	if (err)
		return err;
	/* The CIE pointer, read as cfi.c reads it: backwards from its own field. */
	id_at = le32(fde) == 0xffffffff ? 12 : 4;
	if (fde_len < id_at + (id_at == 12 ? 8 : 4)) {
		err = -EINVAL;
		goto out;
	}
	if (id_at == 12)
		memcpy(&id, fde + id_at, 8);
	else
		id = le32(fde + id_at);
	if (!id || id > fde_off + id_at) {
		err = -EINVAL;
		goto out;
	}
	cie_off = fde_off + id_at - id;
	err = lazy__read_entry(lz, cie_off, &cie, &cie_len);
	if (!err)
		err = cfi_dwarf__from_fde(fde, fde_len, fde_addr, cie, cie_len,
					  lz->eh_addr + cie_off, ret);
out:
	free(fde);
	free(cie);
	return err;
}

static void lazy__clear(struct cfi_lazy *lz)
{
	size_t i;

	for (i = 0; i < lz->cap; i++)
		cfi_rows__free(lz->slots[i].rows);
	free(lz->slots);
	lz->slots = NULL;
	lz->cap = lz->used = lz->rows = lz->bytes = 0;
}

static size_t slot__home(size_t i, size_t cap)
{
	return (size_t)((i + 1) * 0x9e3779b97f4a7c15ull >> 32) & (cap - 1);
}

/*
 * The slots rehashed into cap of them, kept: all, or (sweep) the used
 * ones, marked unused again, the others' rows freed. -ENOMEM leaves all.
 */
static int lazy__rehash(struct cfi_lazy *lz, size_t cap, bool sweep)
{
	struct lazy_slot *s = calloc(cap, sizeof(*s)), *o;
	size_t i, j;

	if (!s)
		return -ENOMEM;
	for (i = 0; i < lz->cap; i++) {
		o = &lz->slots[i];
		if (!o->key)
			continue;
		if (sweep && !o->used) {
			lz->used--;
			lz->rows -= o->rows ? o->rows->n_rows : 0;
			lz->bytes -= o->rows ? sizeof(*o->rows) + cfi_rows__array_bytes(o->rows) : 0;
			cfi_rows__free(o->rows);
			continue;
		}
		for (j = slot__home(o->key - 1, cap); s[j].key; j = (j + 1) & (cap - 1))
			;
		s[j] = *o;
		s[j].used = !sweep;
	}
	free(lz->slots);
	lz->slots = s;
	lz->cap = cap;
	return 0;
}

/* Whether every cached FDE was used since the table was last full. */
static bool lazy__all_used(const struct cfi_lazy *lz)
{
	for (size_t i = 0; i < lz->cap; i++)
		if (lz->slots[i].key && !lz->slots[i].used)
			return false;
	return true;
}

/* Room for one more cached FDE: the slots doubled, or, full, the unused ones dropped. */
static int lazy__make_room(struct cfi_lazy *lz)
{
	if (lz->used >= CFI_LAZY_MAX_FDES || lz->bytes >= CFI_LAZY_MAX_BYTES ||
	    (lz->used && lz->hold && !mem_hold__allows(lz->hold, 1))) {
		if (lazy__all_used(lz))
			lazy__clear(lz);
		else if (lazy__rehash(lz, lz->cap, true))
			lazy__clear(lz);
	}
	if ((lz->used + 1) * 2 <= lz->cap)
		return 0;
	return lazy__rehash(lz, lz->cap ? lz->cap * 2 : 64, false);
}

/* Its hold counts what it holds now. */
static void lazy__sync(struct cfi_lazy *lz)
{
	size_t now = cfi_lazy__bytes(lz);

	if (!lz->hold)
		return;
	mem_hold__add(lz->hold, (long)now - (long)lz->counted);
	lz->counted = now;
}

void cfi_lazy__share(struct cfi_lazy *lz, struct mem_hold *hold)
{
	if (!lz)
		return;
	lz->hold = hold;
	lz->counted = cfi_lazy__bytes(lz);
}

/* The cached rows of FDE i, built now if they are not; NULL when it does not build. */
static struct cfi_rows *lazy__rows(struct cfi_lazy *lz, size_t i)
{
	struct cfi_rows *t = NULL;
	size_t j;
	int err;

	for (j = lz->cap ? slot__home(i, lz->cap) : 0; lz->cap && lz->slots[j].key;
	     j = (j + 1) & (lz->cap - 1))
		if (lz->slots[j].key == i + 1) {
			lz->slots[j].used = 1;
			return lz->slots[j].rows;
		}
	if (lazy__make_room(lz))
		return NULL; /* out of memory: this walk stops here, the next may not */
	for (j = slot__home(i, lz->cap); lz->slots[j].key; j = (j + 1) & (lz->cap - 1))
		;
	err = lazy__build(lz, i, &t);
	lz->built++;
	if (err && err != -ENOENT)
		lz->dropped++;
	lz->dropped += t ? t->dropped : 0;
	/* Unused until found again: one walk's passing function goes at the next drop. */
	lz->slots[j] = (struct lazy_slot){ .key = (__u32)i + 1, .rows = t };
	lz->used++;
	lz->rows += t ? t->n_rows : 0;
	lz->bytes += t ? sizeof(*t) + cfi_rows__array_bytes(t) : 0;
	lazy__sync(lz);
	return t;
}

int cfi_lazy__find(struct cfi_lazy *lz, __u64 vaddr, struct cfi_rule *ret_rule)
{
	size_t lo = 0, hi = lz->n, mid;
	struct cfi_rows *t;

	while (lo < hi) { /* first pair starting above vaddr */
		mid = lo + (hi - lo) / 2;
		if ((__s64)(lz->hdr_addr + (__u64)(__s64)lz->pairs[mid].start) <= (__s64)vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	t = lazy__rows(lz, lo - 1);
	return t ? cfi_rows__find(t, vaddr, ret_rule) : -ENOENT;
}

/* ---------------------------------------------------------------- accounting */

size_t cfi_lazy__fdes(const struct cfi_lazy *lz)
{
	return lz ? lz->n : 0;
}

size_t cfi_lazy__rows(const struct cfi_lazy *lz)
{
	return lz ? lz->rows : 0;
}

size_t cfi_lazy__bytes(const struct cfi_lazy *lz)
{
	if (!lz)
		return 0;
	return sizeof(*lz) + lz->n * sizeof(*lz->pairs) + lz->cap * sizeof(*lz->slots) + lz->bytes +
	       (lz->mem_copy ? lz->src.size : 0);
}

size_t cfi_lazy__built(const struct cfi_lazy *lz)
{
	return lz ? lz->built : 0;
}

size_t cfi_lazy__dropped(const struct cfi_lazy *lz)
{
	return lz ? lz->dropped : 0;
}

void cfi_lazy__free(struct cfi_lazy *lz)
{
	if (!lz)
		return;
	lazy__clear(lz);
	free(lz->pairs);
	free(lz->mem_copy);
	if (!lz->src.mem && lz->src.fd >= 0)
		close(lz->src.fd);
	free(lz);
}
