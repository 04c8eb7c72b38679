/* SPDX-License-Identifier: MIT */
/*
 * The function symbols of a cubin (cubin_syms.h): a bounds-checked walk of
 * an ELF64 image held in memory, written for bytes an unprivileged process
 * chose. Headers are copied out with memcpy (the image may be unaligned),
 * every offset + size is checked without overflow before it is used, and
 * counts are capped before any loop runs over them.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "user/cubin/cubin_elf.h"
#include "user/cubin/cubin_syms.h"

struct walk {
	cubin_syms_fn cb;
	void *ctx;
	__u32 seen; /* symbols looked at so far, all tables */
};

/* Names run to a NUL inside the table; one that does not is skipped. */
static int cubin_syms__table(struct walk *w, const __u8 *elf, const Elf64_Shdr *symtab,
			     const Elf64_Shdr *strtab)
{
	const char *str = (const char *)elf + strtab->sh_offset;
	__u64 nsyms = symtab->sh_size / sizeof(Elf64_Sym);
	int ret;

	for (__u64 i = 0; i < nsyms; i++, w->seen++) {
		const char *name, *nul;
		Elf64_Sym sym;

		if (w->seen >= CUBIN_SYMS_MAX_SYMBOLS)
			return -E2BIG;
		memcpy(&sym, elf + symtab->sh_offset + i * sizeof(sym), sizeof(sym));
		if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
		    !sym.st_name || sym.st_name >= strtab->sh_size)
			continue;
		name = str + sym.st_name;
		nul = memchr(name, '\0', strtab->sh_size - sym.st_name < CUBIN_SYMS_MAX_NAME ?
					  strtab->sh_size - sym.st_name : CUBIN_SYMS_MAX_NAME);
		if (!nul || nul == name)
			continue;
		ret = w->cb(w->ctx, name, (size_t)(nul - name), w->seen);
		if (ret)
			return ret;
	}
	return 0;
}

int cubin_syms__parse(const void *image, size_t size, cubin_syms_fn cb, void *ctx)
{
	const __u8 *elf = image;
	struct walk w = { .cb = cb, .ctx = ctx };
	Elf64_Ehdr eh;
	__u32 shnum;
	bool found = false;
	int err;

	if (!elf || !cb)
		return -EINVAL;
	err = cubin_elf__ehdr(elf, size, &eh);
	if (err)
		return err;
	err = cubin_elf__shnum(elf, size, &eh, &shnum);
	if (err)
		return err;
	for (__u32 i = 0; i < shnum; i++) {
		Elf64_Shdr sh, str;

		cubin_elf__shdr(elf, eh.e_shoff, i, &sh);
		if (sh.sh_type != SHT_SYMTAB)
			continue;
		/* A table whose entries are not Elf64_Sym cannot be read as such. */
		if (sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= shnum || sh.sh_link == i ||
		    !cubin_elf__inside(sh.sh_offset, sh.sh_size, size))
			return -EBADMSG;
		cubin_elf__shdr(elf, eh.e_shoff, sh.sh_link, &str);
		if (str.sh_type != SHT_STRTAB || !cubin_elf__inside(str.sh_offset, str.sh_size, size))
			return -EBADMSG;
		found = true;
		err = cubin_syms__table(&w, elf, &sh, &str);
		if (err)
			return err;
	}
	return found ? 0 : -ENOENT;
}
