/* SPDX-License-Identifier: MIT */
/* DWARF pointer encodings (cfi_cur.h). */
#include "user/unwind/cfi_cur.h"

bool cfi_cur__ptr(struct cfi_cur *c, const struct cfi_section *s, __u8 enc, bool skip_only,
		  __u64 *ret)
{
	__u64 field = s->addr + (__u64)(c->p - s->data), v;
	__u16 u16;
	__u32 u32;
	__s64 sv;

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		if (!cfi_cur__u64(c, &v))
			return false;
		break;
	case DW_EH_PE_uleb128:
		if (!cfi_cur__uleb(c, &v))
			return false;
		break;
	case DW_EH_PE_sleb128:
		if (!cfi_cur__sleb(c, &sv))
			return false;
		v = (__u64)sv;
		break;
	case DW_EH_PE_udata2:
		if (!cfi_cur__bytes(c, &u16, 2))
			return false;
		v = u16;
		break;
	case DW_EH_PE_sdata2:
		if (!cfi_cur__bytes(c, &u16, 2))
			return false;
		v = (__u64)(__s64)(__s16)u16;
		break;
	case DW_EH_PE_udata4:
		if (!cfi_cur__u32(c, &u32))
			return false;
		v = u32;
		break;
	case DW_EH_PE_sdata4:
		if (!cfi_cur__u32(c, &u32))
			return false;
		v = (__u64)(__s64)(__s32)u32;
		break;
	default:
		return false;
	}
	if (skip_only)
		return true;
	if (enc & DW_EH_PE_indirect)
		return false; /* would need the file's data, not its CFI */
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		v += field;
		break;
	default:
		return false; /* textrel/datarel/funcrel: not used on x86-64 */
	}
	*ret = v;
	return true;
}
