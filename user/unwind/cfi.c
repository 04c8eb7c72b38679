/* SPDX-License-Identifier: MIT */
/*
 * The CFI table the unwinder asks (cfi.h): a file's rows of rules, built
 * whole from .debug_frame (and from .eh_frame where no .eh_frame_hdr
 * indexes it), and the index that builds .eh_frame's FDEs on demand
 * (cfi_lazy.c), asked first. Where its bytes come from: cfi_elf.c; how
 * they become rules: cfi_dwarf.c and cfi_exec.c; the rows: cfi_rows.c.
 */
#include "user/unwind/cfi.h"
#include "user/unwind/cfi_dwarf.h"
#include "user/unwind/cfi_elf.h"
#include "user/unwind/cfi_lazy.h"
#include "user/util/mem_share.h"
#include "user/unwind/cfi_rows.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The file's PT_LOAD segments kept, at most (the first ones: real files have 2 to 5). */
#define CFI_LOADS_MAX 16

struct cfi_load {
	__u64 offset, vaddr, filesz;
};

struct cfi_table {
	struct cfi_load loads[CFI_LOADS_MAX]; /* file offset -> vaddr (cfi_table__file_to_vaddr) */
	size_t nloads;
	struct cfi_rows rows;  /* built whole; empty when every FDE is on demand */
	struct cfi_lazy *lazy; /* .eh_frame built FDE by FDE on demand; NULL: all in rows */
	struct mem_hold hold;  /* its bytes, in the share of cfi_table__share */
};

/* The CFI sections to build whole, .eh_frame first: it sorts first at equal addresses and wins. */
static int load_sections(const struct elf_src *src, const Elf64_Ehdr *eh, bool want_eh,
			 struct cfi_section secs[2], size_t *ret_n)
{
	struct cfi_section found[2] = { { 0 }, { 0 } };
	size_t n = 0;
	int err;

	err = elf_src__cfi_sections(src, eh, want_eh, &found[0], &found[1]);
	if (!err && want_eh && !found[0].data)
		err = elf_src__eh_frame_by_phdr(src, eh, &found[0]);
	if (err) {
		free(found[0].data);
		free(found[1].data);
		return err;
	}
	if (found[0].data)
		secs[n++] = found[0];
	if (found[1].data)
		secs[n++] = found[1];
	*ret_n = n;
	return 0;
}

/* t's PT_LOAD segments, from the program headers (none: no addresses known). */
static void read_loads(const struct elf_src *src, const Elf64_Ehdr *eh, struct cfi_table *t)
{
	Elf64_Phdr *ph;
	size_t n;

	if (elf_src__phdrs(src, eh, &ph, &n))
		return;
	for (size_t i = 0; i < n && t->nloads < CFI_LOADS_MAX; i++)
		if (ph[i].p_type == PT_LOAD)
			t->loads[t->nloads++] = (struct cfi_load){ .offset = ph[i].p_offset,
								   .vaddr = ph[i].p_vaddr,
								   .filesz = ph[i].p_filesz };
	free(ph);
}

/*
 * With whole false, .eh_frame is left in the file when .eh_frame_hdr indexes
 * it (its FDEs are built when a walk first needs them) and only
 * .debug_frame, usually absent, is built now.
 */
static int cfi_table__load_src(const struct elf_src *src, bool whole,
			       struct cfi_table **ret_table)
{
	struct cfi_section secs[2];
	struct cfi_lazy *lazy = NULL;
	struct cfi_table *t;
	Elf64_Ehdr eh;
	size_t n = 0;
	int err;

	err = elf_src__header(src, &eh);
	if (err)
		return err;
	if (!whole) {
		err = cfi_lazy__open(src, &eh, &lazy);
		if (err && err != -ENOENT)
			return err;
	}
	err = load_sections(src, &eh, !lazy, secs, &n);
	t = err ? NULL : calloc(1, sizeof(*t));
	if (!err && !t)
		err = -ENOMEM;
	if (!err)
		err = n ? cfi_dwarf__build(secs, n, &t->rows) : -ENOENT;
	if (lazy && err == -ENOENT)
		err = 0; /* the index alone */
	for (size_t i = 0; i < n; i++)
		free(secs[i].data);
	if (err) {
		free(t);
		cfi_lazy__free(lazy);
		return err;
	}
	t->lazy = lazy; /* looked up first: .eh_frame wins */
	read_loads(src, &eh, t);
	*ret_table = t;
	return 0;
}

static int cfi_table__load_fd(int fd, bool whole, struct cfi_table **ret_table)
{
	struct elf_src src = { .fd = fd };
	struct stat st;

	if (fd < 0 || !ret_table)
		return -EINVAL;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	src.size = (__u64)st.st_size;
	return cfi_table__load_src(&src, whole, ret_table);
}

int cfi_table__load(int fd, struct cfi_table **ret_table)
{
	return cfi_table__load_fd(fd, false, ret_table);
}

int cfi_table__load_whole(int fd, struct cfi_table **ret_table)
{
	return cfi_table__load_fd(fd, true, ret_table);
}

int cfi_table__load_mem(const void *elf, size_t size, struct cfi_table **ret_table)
{
	struct elf_src src = { .fd = -1, .mem = elf, .size = size };

	if ((!elf && size) || !ret_table)
		return -EINVAL;
	if (!elf)
		return -ENOEXEC;
	return cfi_table__load_src(&src, false, ret_table);
}

/* ---------------------------------------------------------------- queries */

int cfi_table__file_to_vaddr(const struct cfi_table *t, __u64 file_off, __u64 *ret_vaddr)
{
	if (!t || !ret_vaddr)
		return -EINVAL;
	for (size_t i = 0; i < t->nloads; i++) {
		const struct cfi_load *l = &t->loads[i];

		if (file_off >= l->offset && file_off - l->offset < l->filesz) {
			*ret_vaddr = file_off - l->offset + l->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

int cfi_table__find(const struct cfi_table *t, __u64 vaddr, struct cfi_rule *ret_rule)
{
	if (!t || !ret_rule)
		return -EINVAL;
	if (t->lazy && cfi_lazy__find(t->lazy, vaddr, ret_rule) == 0)
		return 0;
	return cfi_rows__find(&t->rows, vaddr, ret_rule);
}

size_t cfi_table__rows(const struct cfi_table *t)
{
	return t ? t->rows.n_rows + cfi_lazy__rows(t->lazy) : 0;
}

size_t cfi_table__fdes_on_demand(const struct cfi_table *t)
{
	return t ? cfi_lazy__fdes(t->lazy) : 0;
}

static bool cfi_table__same_at(const struct cfi_table *a, const struct cfi_table *b, __u64 vaddr)
{
	struct cfi_rule ra, rb;
	int ea = cfi_table__find(a, vaddr, &ra), eb = cfi_table__find(b, vaddr, &rb);

	if (ea || eb)
		return ea == eb;
	return ra.cfa_base == rb.cfa_base && ra.rbp_rule == rb.rbp_rule &&
	       ra.ra_rule == rb.ra_rule && ra.flags == rb.flags && ra.plt_split == rb.plt_split &&
	       ra.cfa_off == rb.cfa_off && ra.rbp_off == rb.rbp_off && ra.ra_off == rb.ra_off;
}

size_t cfi_table__differences(const struct cfi_table *t, const struct cfi_table *whole,
			      size_t *ret_checked)
{
	size_t i, diff = 0, checked = 0;
	__u64 a;

	for (i = 0; whole && i < whole->rows.n_rows; i++) {
		a = whole->rows.base + whole->rows.addrs[i];
		diff += !cfi_table__same_at(t, whole, a);
		checked++;
		if (a) {
			diff += !cfi_table__same_at(t, whole, a - 1);
			checked++;
		}
	}
	if (ret_checked)
		*ret_checked = checked;
	return diff;
}

size_t cfi_table__bytes(const struct cfi_table *t)
{
	if (!t)
		return 0;
	return sizeof(*t) + cfi_rows__array_bytes(&t->rows) + cfi_lazy__bytes(t->lazy);
}

size_t cfi_table__built(const struct cfi_table *t)
{
	return t ? cfi_lazy__built(t->lazy) : 0;
}

size_t cfi_table__dropped(const struct cfi_table *t)
{
	return t ? t->rows.dropped + cfi_lazy__dropped(t->lazy) : 0;
}

void cfi_table__share(struct cfi_table *t, struct mem_share *s)
{
	if (!t)
		return;
	mem_hold__leave(&t->hold);
	t->hold.held = 0;
	if (!s)
		return;
	mem_hold__join(&t->hold, s);
	mem_hold__add(&t->hold, (long)cfi_table__bytes(t));
	cfi_lazy__share(t->lazy, &t->hold);
}

void cfi_table__free(struct cfi_table *t)
{
	if (!t)
		return;
	mem_hold__leave(&t->hold);
	cfi_lazy__free(t->lazy);
	cfi_rows__fini(&t->rows);
	free(t);
}
