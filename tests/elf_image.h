/* SPDX-License-Identifier: MIT */
/*
 * Synthetic ELF images for the CFI tests and fuzzer: an x86-64 ELF header
 * and two program headers, PT_LOAD over the whole image and PT_GNU_EH_FRAME
 * at hdr (.eh_frame_hdr, hdr_size bytes); file offsets equal addresses.
 */
#ifndef GP_TESTS_ELF_IMAGE_H
#define GP_TESTS_ELF_IMAGE_H

#include <elf.h>
#include <linux/types.h>
#include <stddef.h>
#include <string.h>

/* hdr must be at least ELF_IMAGE_PHDRS_END: the headers come first. */
#define ELF_IMAGE_PHDRS_END (sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr))

static inline void elf_image__phdrs(__u8 *img, size_t total, size_t hdr, size_t hdr_size)
{
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr ph[2] = { { 0 } };

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_machine = EM_X86_64;
	eh.e_type = ET_DYN;
	eh.e_phoff = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = 2;
	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_filesz = total, .p_memsz = total };
	ph[1] = (Elf64_Phdr){ .p_type = PT_GNU_EH_FRAME, .p_offset = hdr, .p_vaddr = hdr,
			      .p_filesz = hdr_size };
	memcpy(img, &eh, sizeof(eh));
	memcpy(img + sizeof(eh), ph, sizeof(ph));
}

#endif /* GP_TESTS_ELF_IMAGE_H */
