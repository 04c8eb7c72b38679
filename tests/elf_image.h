/* SPDX-License-Identifier: MIT */
/*
 * Synthetic ELF images for the CFI tests and fuzzer: an x86-64 ELF header
 * and two program headers, PT_LOAD over the whole image and PT_GNU_EH_FRAME
 * at hdr (.eh_frame_hdr, hdr_size bytes); file offsets equal addresses.
 * And cubin-like images made of sections (elf_image__sections).
 */
#ifndef GP_TESTS_ELF_IMAGE_H
#define GP_TESTS_ELF_IMAGE_H

#include <elf.h>
#include <linux/types.h>
#include <stddef.h>
#include <string.h>

/* hdr must be at least ELF_IMAGE_PHDRS_END: the headers come first. */
#define ELF_IMAGE_PHDRS_END (sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr))

/* An x86-64 ELF header and the n program headers ph right after it. */
static inline void elf_image__header(__u8 *img, const Elf64_Phdr *ph, size_t n)
{
	Elf64_Ehdr eh = { 0 };

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_machine = EM_X86_64;
	eh.e_type = ET_DYN;
	eh.e_phoff = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = (Elf64_Half)n;
	memcpy(img, &eh, sizeof(eh));
	memcpy(img + sizeof(eh), ph, n * sizeof(*ph));
}

static inline void elf_image__phdrs(__u8 *img, size_t total, size_t hdr, size_t hdr_size)
{
	const Elf64_Phdr ph[2] = {
		{ .p_type = PT_LOAD, .p_filesz = total, .p_memsz = total },
		{ .p_type = PT_GNU_EH_FRAME, .p_offset = hdr, .p_vaddr = hdr, .p_filesz = hdr_size },
	};

	elf_image__header(img, ph, 2);
}

/*
 * Relocatable images made of sections, as cubins are (the line table
 * tests and fuzzer): section 0 is null, section i + 1 is secs[i], and
 * section n + 1 is a .shstrtab naming them all (e_shstrndx). Layout: the
 * ELF header, the section table, .shstrtab, then each section's bytes
 * 8-aligned in order, so the last section's bytes end the image (a test
 * that cuts them short makes the cut the end of the buffer). data may be
 * NULL (zeros).
 */
struct elf_image_sec {
	const char *name;
	__u32 type, link, info;
	__u64 flags, entsize;
	const void *data;
	size_t size;
};

#define ELF_IMAGE_ALIGN8(x) (((x) + 7) & ~(size_t)7)

/* The image's size; it is written only when img is not NULL and that many bytes fit in cap. */
static inline size_t elf_image__sections(__u8 *img, size_t cap, const struct elf_image_sec *secs,
					 size_t n)
{
	size_t shoff = sizeof(Elf64_Ehdr), names = shoff + (n + 2) * sizeof(Elf64_Shdr);
	size_t names_len = 1 + sizeof(".shstrtab"), off, name_at;
	Elf64_Ehdr eh = { 0 };
	Elf64_Shdr sh;

	for (size_t i = 0; i < n; i++)
		names_len += strlen(secs[i].name) + 1;
	off = names + names_len;
	for (size_t i = 0; i < n; i++)
		off = ELF_IMAGE_ALIGN8(off) + secs[i].size;
	if (!img || off > cap)
		return off;
	memset(img, 0, off);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_CUDA;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shoff = shoff;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = (Elf64_Half)(n + 2);
	eh.e_shstrndx = (Elf64_Half)(n + 1);
	memcpy(img, &eh, sizeof(eh));
	off = names + names_len;
	name_at = 1;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(secs[i].name) + 1;

		off = ELF_IMAGE_ALIGN8(off);
		sh = (Elf64_Shdr){ .sh_name = (Elf64_Word)name_at, .sh_type = secs[i].type,
				   .sh_flags = secs[i].flags, .sh_offset = off,
				   .sh_size = secs[i].size, .sh_link = secs[i].link,
				   .sh_info = secs[i].info, .sh_addralign = 8,
				   .sh_entsize = secs[i].entsize };
		memcpy(img + shoff + (i + 1) * sizeof(sh), &sh, sizeof(sh));
		memcpy(img + names + name_at, secs[i].name, len);
		if (secs[i].data)
			memcpy(img + off, secs[i].data, secs[i].size);
		name_at += len;
		off += secs[i].size;
	}
	memcpy(img + names + name_at, ".shstrtab", sizeof(".shstrtab"));
	sh = (Elf64_Shdr){ .sh_name = (Elf64_Word)name_at, .sh_type = SHT_STRTAB,
			   .sh_offset = names, .sh_size = names_len, .sh_addralign = 1 };
	memcpy(img + shoff + (n + 1) * sizeof(sh), &sh, sizeof(sh));
	return off;
}

#endif /* GP_TESTS_ELF_IMAGE_H */
