/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: CFI from hostile files. An input starting with the ELF
 * magic is a whole file (loaded from memory and from a memfd, as files are
 * read in production); anything else is a mode byte and the raw bytes of
 * an .eh_frame or .debug_frame (with MODE_INDEXED, after a count byte and
 * that many (start, FDE offset) pairs of .eh_frame_hdr's search table, so
 * that FDEs are built on demand), wrapped into a minimal ELF so the fuzzer
 * spends its time in the CFA programs rather than in ELF headers. The table
 * is then queried and a stack walk runs over a stack made of the input.
 * Must never crash, leak, or return a frame list that breaks its contract.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/elf_image.h"
#include "user/unwind/cfi.h"
#include "user/unwind/unwind.h"

#define FUZZ_MAX_FRAME (64 * 1024)

enum {
	MODE_DEBUG_FRAME = 1, /* else .eh_frame */
	MODE_NO_SECTIONS = 2, /* .eh_frame reached through PT_GNU_EH_FRAME */
	MODE_INDEXED = 4,     /* ... with a search table: FDEs built on demand */
};

/* The section (named by mode) in an ELF with section headers, at sh_addr 0x100000. */
static size_t fuzz__wrap_sections(__u8 *out, const __u8 *frame, size_t n, bool debug)
{
	static const char shstr[] = "\0.eh_frame\0.debug_frame\0.shstrtab";
	Elf64_Ehdr eh = { 0 };
	Elf64_Shdr sh[3] = { { 0 } };
	size_t off_str = sizeof(eh) + n;
	size_t off_sh = (off_str + sizeof(shstr) + 7) & ~(size_t)7;

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_machine = EM_X86_64;
	eh.e_type = ET_DYN;
	eh.e_shoff = off_sh;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 3;
	eh.e_shstrndx = 2;
	sh[1] = (Elf64_Shdr){ .sh_name = debug ? 11 : 1, .sh_type = SHT_PROGBITS,
			      .sh_offset = sizeof(eh), .sh_size = n, .sh_addr = 0x100000 };
	sh[2] = (Elf64_Shdr){ .sh_name = 24, .sh_type = SHT_STRTAB, .sh_offset = off_str,
			      .sh_size = sizeof(shstr) };
	memset(out, 0, off_sh + sizeof(sh));
	memcpy(out, &eh, sizeof(eh));
	memcpy(out + sizeof(eh), frame, n);
	memcpy(out + off_str, shstr, sizeof(shstr));
	memcpy(out + off_sh, sh, sizeof(sh));
	return off_sh + sizeof(sh);
}

/*
 * No section headers: PT_LOAD over the file, PT_GNU_EH_FRAME -> .eh_frame_hdr
 * -> the bytes; with pairs (k of them, 8 bytes each: start, then FDE offset
 * in the frame bytes), the header carries them as its search table.
 */
static size_t fuzz__wrap_phdrs(__u8 *out, const __u8 *frame, size_t n, const __u8 *pairs,
			       size_t k)
{
	size_t hdr = ELF_IMAGE_PHDRS_END, at = hdr + (k ? 12 + 8 * k : 8), total = at + n, i;
	__s32 rel = (__s32)(at - (hdr + 4)), v;
	__u32 u;

	elf_image__phdrs(out, total, hdr, at - hdr);
	out[hdr] = 1;
	out[hdr + 1] = 0x1b; /* pcrel sdata4 */
	out[hdr + 2] = k ? 0x03 : 0xff; /* udata4 count */
	out[hdr + 3] = k ? 0x3b : 0xff; /* datarel sdata4 table */
	memcpy(out + hdr + 4, &rel, 4);
	if (k) {
		v = (__s32)k;
		memcpy(out + hdr + 8, &v, 4);
	}
	for (i = 0; i < k; i++) {
		memcpy(&v, pairs + 8 * i, 4);
		v = (__s32)(0x1000 + (v & 0xfff)) - (__s32)hdr; /* starts near the frame's FDEs */
		memcpy(out + hdr + 12 + 8 * i, &v, 4);
		memcpy(&u, pairs + 8 * i + 4, 4);
		u += (__u32)(at - hdr); /* wraps as the file's own field would */
		memcpy(out + hdr + 16 + 8 * i, &u, 4);
	}
	memcpy(out + at, frame, n);
	return total;
}

struct fuzz_ctx {
	const struct cfi_table *t;
};

/* Low addresses unmapped, very high ones "JIT" (no CFI), the rest the table's file. */
static int fuzz__lookup(void *ctx, __u64 ip, const struct cfi_table **ret_table,
			__u64 *ret_bias)
{
	struct fuzz_ctx *c = ctx;

	if (ip < 0x1000)
		return -ENOENT;
	*ret_table = ip >= 0xffff000000000000ull ? NULL : c->t;
	*ret_bias = 0;
	return 0;
}

static void fuzz__query(const struct cfi_table *t, const uint8_t *data, size_t len)
{
	struct fuzz_ctx ctx = { .t = t };
	struct unwind_regs regs = { 0 };
	struct unwind_stack st;
	enum unwind_stop why;
	struct cfi_rule r;
	__u64 pcs[32], a = 0;
	size_t i;
	int n;

	(void)cfi_table__bytes(t);
	(void)cfi_table__dropped(t);
	if (!cfi_table__rows(t) && !cfi_table__fdes_on_demand(t))
		__builtin_trap(); /* a table is only returned with rows or an index */
	for (i = 0; i < 16; i++) {
		if (len >= 8 * (i + 1))
			memcpy(&a, data + len - 8 * (i + 1), 8);
		(void)cfi_table__find(t, a, &r);
		(void)cfi_table__find(t, 0x100000 + 0x10 * i, &r);
		(void)cfi_table__find(t, 0x1000 + i, &r);
	}
	/* Registers from the input's first bytes, the stack from all of it. */
	if (len >= 24) {
		memcpy(&regs, data, 24);
		regs.sp = 0x7ff000000000ull + (regs.sp & 0xff);
		st = (struct unwind_stack){ .base = 0x7ff000000000ull, .data = data,
					    .len = (__u32)(len < 4096 ? len : 4096) };
		n = unwind(&regs, &st, fuzz__lookup, &ctx, pcs, 32, &why);
		if (n < 1 || n > 32 || pcs[0] != regs.ip || !unwind_stop__str(why))
			__builtin_trap();
	}
}

static void fuzz__load(const uint8_t *elf, size_t len, const uint8_t *data, size_t dlen)
{
	struct cfi_table *t;
	int fd;

	if (cfi_table__load_mem(elf, len, &t) == 0) {
		fuzz__query(t, data, dlen);
		cfi_table__free(t);
	}
	if (len < 4 || memcmp(elf, ELFMAG, SELFMAG) || len > (1u << 20))
		return;
	fd = memfd_create("fuzz_cfi", MFD_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, elf, len) == (ssize_t)len && cfi_table__load(fd, &t) == 0) {
		fuzz__query(t, data, dlen);
		cfi_table__free(t);
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static __u8 img[FUZZ_MAX_FRAME + 512 + 8 * 255];
	size_t n, k = 0;
	__u8 mode;

	if (len >= SELFMAG && !memcmp(data, ELFMAG, SELFMAG)) {
		fuzz__load(data, len, data, len);
		return 0;
	}
	if (!len || len - 1 > FUZZ_MAX_FRAME)
		return 0;
	mode = data[0];
	if (mode & MODE_INDEXED) {
		if (len < 2 || (k = data[1]) == 0 || len - 2 < 8 * k)
			return 0;
		n = fuzz__wrap_phdrs(img, data + 2 + 8 * k, len - 2 - 8 * k, data + 2, k);
	} else if (mode & MODE_NO_SECTIONS) {
		n = fuzz__wrap_phdrs(img, data + 1, len - 1, NULL, 0);
	} else {
		n = fuzz__wrap_sections(img, data + 1, len - 1, mode & MODE_DEBUG_FRAME);
	}
	fuzz__load(img, n, data, len);
	return 0;
}
