/* SPDX-License-Identifier: MIT */
/*
 * Where a file's CFI lies (cfi_elf.h). Only the ELF header, the section or
 * program headers, the section name table and the CFI sections themselves
 * are read, so a 1 GB library costs its unwind sections, not its code.
 */
#include "user/unwind/cfi_elf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CFI_MAX_SHDRS 65536
#define CFI_MAX_PHDRS 4096
#define CFI_MAX_SHSTRTAB ((__u64)16 << 20)

int elf_src__read(const struct elf_src *src, __u64 off, void *buf, size_t len)
{
	__u8 *p = buf;
	ssize_t n;

	if (off > src->size || len > src->size - off)
		return -ENOEXEC;
	if (src->mem) {
		memcpy(buf, src->mem + off, len);
		return 0;
	}
	while (len) {
		n = pread(src->fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* truncated under us */
		p += n;
		off += (__u64)n;
		len -= (size_t)n;
	}
	return 0;
}

int elf_src__header(const struct elf_src *src, Elf64_Ehdr *ret)
{
	if (elf_src__read(src, 0, ret, sizeof(*ret)) || memcmp(ret->e_ident, ELFMAG, SELFMAG) ||
	    ret->e_ident[EI_CLASS] != ELFCLASS64 || ret->e_ident[EI_DATA] != ELFDATA2LSB ||
	    ret->e_machine != EM_X86_64)
		return -ENOEXEC;
	return 0;
}

int elf_src__section(const struct elf_src *src, __u64 off, __u64 size, __u64 addr,
		     bool is_eh, struct cfi_section *ret)
{
	__u8 *data;
	int err;

	if (!size || size > CFI_MAX_SECTION)
		return -EINVAL;
	data = malloc(size);
	if (!data)
		return -ENOMEM;
	err = elf_src__read(src, off, data, size);
	if (err) {
		free(data);
		return err;
	}
	*ret = (struct cfi_section){ .data = data, .size = size, .addr = addr, .is_eh = is_eh };
	return 0;
}

int elf_src__phdrs(const struct elf_src *src, const Elf64_Ehdr *eh, Elf64_Phdr **ret_ph,
		   size_t *ret_n)
{
	__u64 n = eh->e_phnum;
	Elf64_Phdr *ph;

	if (!eh->e_phoff || eh->e_phentsize != sizeof(Elf64_Phdr) || !n || n > CFI_MAX_PHDRS)
		return -ENOENT;
	ph = malloc(n * sizeof(*ph));
	if (!ph)
		return -ENOMEM;
	if (elf_src__read(src, eh->e_phoff, ph, n * sizeof(*ph))) {
		free(ph);
		return -ENOENT;
	}
	*ret_ph = ph;
	*ret_n = n;
	return 0;
}

const Elf64_Phdr *elf_phdrs__find(const Elf64_Phdr *ph, size_t n, __u32 type)
{
	for (size_t i = 0; i < n; i++)
		if (ph[i].p_type == type)
			return &ph[i];
	return NULL;
}

int elf_phdrs__load_at(const Elf64_Phdr *ph, size_t n, __u64 file_size, __u64 vaddr,
		       __u64 *ret_off, __u64 *ret_len)
{
	__u64 in, off, len;
	size_t i;

	for (i = 0; i < n; i++) {
		if (ph[i].p_type != PT_LOAD || vaddr < ph[i].p_vaddr ||
		    vaddr - ph[i].p_vaddr >= ph[i].p_filesz)
			continue;
		in = vaddr - ph[i].p_vaddr;
		if (ph[i].p_offset > file_size || in > file_size - ph[i].p_offset)
			return -ENOENT;
		off = ph[i].p_offset + in;
		len = ph[i].p_filesz - in;
		if (len > file_size - off)
			len = file_size - off;
		*ret_off = off;
		*ret_len = len;
		return 0;
	}
	return -ENOENT;
}

int elf_src__cfi_sections(const struct elf_src *src, const Elf64_Ehdr *eh, bool want_eh,
			  struct cfi_section *ret_eh, struct cfi_section *ret_debug)
{
	Elf64_Shdr sh0, *shdrs = NULL, *str_sh;
	char *strtab = NULL;
	__u64 shnum = eh->e_shnum, shstrndx = eh->e_shstrndx, i, name;
	int err = 0;

	if (!eh->e_shoff || eh->e_shentsize != sizeof(Elf64_Shdr))
		return 0;
	if (elf_src__read(src, eh->e_shoff, &sh0, sizeof(sh0)))
		return 0;
	/* Files with many sections keep the real counts in section 0. */
	if (!shnum)
		shnum = sh0.sh_size;
	if (shstrndx == SHN_XINDEX)
		shstrndx = sh0.sh_link;
	if (!shnum || shnum > CFI_MAX_SHDRS || shstrndx >= shnum)
		return 0;
	shdrs = malloc(shnum * sizeof(*shdrs));
	if (!shdrs)
		return -ENOMEM;
	if (elf_src__read(src, eh->e_shoff, shdrs, shnum * sizeof(*shdrs)))
		goto out;
	str_sh = &shdrs[shstrndx];
	if (str_sh->sh_type == SHT_NOBITS || !str_sh->sh_size ||
	    str_sh->sh_size > CFI_MAX_SHSTRTAB)
		goto out;
	strtab = malloc(str_sh->sh_size + 1);
	if (!strtab) {
		err = -ENOMEM;
		goto out;
	}
	if (elf_src__read(src, str_sh->sh_offset, strtab, str_sh->sh_size))
		goto out;
	strtab[str_sh->sh_size] = '\0';
	for (i = 0; i < shnum; i++) {
		const Elf64_Shdr *sh = &shdrs[i];
		struct cfi_section *want = NULL;
		bool is_eh = false;

		name = sh->sh_name;
		if (name >= str_sh->sh_size || sh->sh_type == SHT_NOBITS ||
		    (sh->sh_flags & SHF_COMPRESSED))
			continue;
		if (want_eh && !strcmp(strtab + name, ".eh_frame") && !ret_eh->data) {
			want = ret_eh;
			is_eh = true;
		} else if (!strcmp(strtab + name, ".debug_frame") && !ret_debug->data) {
			want = ret_debug;
		}
		if (!want)
			continue;
		err = elf_src__section(src, sh->sh_offset, sh->sh_size, sh->sh_addr, is_eh, want);
		if (err == -ENOMEM)
			goto out;
		err = 0; /* a section that does not fit is one we do without */
	}
out:
	free(strtab);
	free(shdrs);
	return err;
}

/* .eh_frame_hdr's eh_frame_ptr: where .eh_frame is, encoded relative to its own place. */
static int eh_frame_ptr(const struct elf_src *src, const Elf64_Phdr *hdr, __u64 *ret)
{
	__u8 buf[4 + 8];
	size_t len = hdr->p_filesz < sizeof(buf) ? hdr->p_filesz : sizeof(buf);
	struct cfi_section hs = { .data = buf, .size = sizeof(buf), .addr = hdr->p_vaddr };
	struct cfi_cur c = { buf + 4, buf + len };
	__u64 v;

	if (hdr->p_filesz < 8 || elf_src__read(src, hdr->p_offset, buf, len))
		return -ENOENT;
	if (buf[0] != 1 || buf[1] == DW_EH_PE_omit)
		return -ENOENT;
	if ((buf[1] & 0x70) == DW_EH_PE_datarel) {
		/* datarel in .eh_frame_hdr is relative to the header's start */
		if (!cfi_cur__ptr(&c, &hs, buf[1] & 0x0f, false, &v))
			return -ENOENT;
		v += hdr->p_vaddr;
	} else if (!cfi_cur__ptr(&c, &hs, buf[1], false, &v)) {
		return -ENOENT;
	}
	*ret = v;
	return 0;
}

int elf_src__eh_frame_by_phdr(const struct elf_src *src, const Elf64_Ehdr *eh,
			      struct cfi_section *ret_eh)
{
	const Elf64_Phdr *hdr;
	Elf64_Phdr *ph;
	__u64 v, off, len;
	size_t n;
	int err;

	err = elf_src__phdrs(src, eh, &ph, &n);
	if (err)
		return err == -ENOMEM ? err : 0;
	hdr = elf_phdrs__find(ph, n, PT_GNU_EH_FRAME);
	err = 0;
	if (hdr && !eh_frame_ptr(src, hdr, &v) &&
	    !elf_phdrs__load_at(ph, n, src->size, v, &off, &len)) {
		if (len > CFI_MAX_SECTION)
			len = CFI_MAX_SECTION;
		err = elf_src__section(src, off, len, v, true, ret_eh);
		if (err != -ENOMEM)
			err = 0;
	}
	free(ph);
	return err;
}
