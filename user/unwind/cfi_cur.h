/* SPDX-License-Identifier: MIT */
/*
 * Reading DWARF's encodings (fixed-size words, LEB128, the pointer
 * encodings of .eh_frame) from a bounded buffer, for the CFI files: every
 * read checks what is left and fails rather than run past the end. Not
 * for other users: cfi.h is the interface.
 */
#ifndef GP_UNWIND_CFI_CUR_H
#define GP_UNWIND_CFI_CUR_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

enum {
	DW_EH_PE_absptr = 0x00,
	DW_EH_PE_uleb128 = 0x01,
	DW_EH_PE_udata2 = 0x02,
	DW_EH_PE_udata4 = 0x03,
	DW_EH_PE_udata8 = 0x04,
	DW_EH_PE_sleb128 = 0x09,
	DW_EH_PE_sdata2 = 0x0a,
	DW_EH_PE_sdata4 = 0x0b,
	DW_EH_PE_sdata8 = 0x0c,
	DW_EH_PE_pcrel = 0x10,
	DW_EH_PE_datarel = 0x30,
	DW_EH_PE_indirect = 0x80,
	DW_EH_PE_omit = 0xff,
};

/* A read position in [p, end). */
struct cfi_cur {
	const __u8 *p, *end;
};

static inline bool cfi_cur__u8(struct cfi_cur *c, __u8 *v)
{
	if (c->p >= c->end)
		return false;
	*v = *c->p++;
	return true;
}

static inline bool cfi_cur__bytes(struct cfi_cur *c, void *v, size_t n)
{
	if ((size_t)(c->end - c->p) < n)
		return false;
	memcpy(v, c->p, n);
	c->p += n;
	return true;
}

static inline bool cfi_cur__u32(struct cfi_cur *c, __u32 *v)
{
	return cfi_cur__bytes(c, v, 4);
}

static inline bool cfi_cur__u64(struct cfi_cur *c, __u64 *v)
{
	return cfi_cur__bytes(c, v, 8);
}

/*
 * LEB128 of at most 10 bytes; bits past 64 are dropped, longer is malformed.
 * ret_shift and ret_last say where it ended, for the sign extension.
 */
static inline bool cfi_cur__leb(struct cfi_cur *c, __u64 *v, unsigned int *ret_shift,
				__u8 *ret_last)
{
	unsigned int shift = 0;
	__u64 r = 0;
	__u8 b;

	do {
		if (shift >= 70 || !cfi_cur__u8(c, &b))
			return false;
		if (shift < 64)
			r |= (__u64)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*v = r;
	*ret_shift = shift;
	*ret_last = b;
	return true;
}

static inline bool cfi_cur__uleb(struct cfi_cur *c, __u64 *v)
{
	unsigned int shift;
	__u8 last;

	return cfi_cur__leb(c, v, &shift, &last);
}

static inline bool cfi_cur__sleb(struct cfi_cur *c, __s64 *v)
{
	unsigned int shift;
	__u64 r;
	__u8 last;

	if (!cfi_cur__leb(c, &r, &shift, &last))
		return false;
	if (shift < 64 && (last & 0x40))
		r |= ~(__u64)0 << shift;
	*v = (__s64)r;
	return true;
}

/* Where the section sits in the file's address space, for pcrel pointers. */
struct cfi_section {
	__u8 *data;
	__u64 size;
	__u64 addr;
	bool is_eh; /* .eh_frame rules: CIE id 0, relative CIE pointers */
};

/*
 * A pointer in encoding enc at c, whose bytes lie in section s (a pcrel
 * pointer is relative to its own place there). With skip_only the value
 * is not needed (a personality routine), so applications we cannot
 * compute are accepted.
 */
bool cfi_cur__ptr(struct cfi_cur *c, const struct cfi_section *s, __u8 enc, bool skip_only,
		  __u64 *ret);

#endif /* GP_UNWIND_CFI_CUR_H */
