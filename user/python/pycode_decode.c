/* SPDX-License-Identifier: MIT */
/*
 * Decoding what a code object's bytes say, once read from the target
 * (pycode.h): its line table (3.10's and 3.11+'s formats) and its names'
 * characters (PEP 393 kinds) as UTF-8. Pure functions over hostile bytes:
 * every read is bounded by the length given.
 */
#include "user/python/pycode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int pycode__line_310(const uint8_t *tab, size_t len, int firstlineno, int64_t addrq,
		     int *ret_line)
{
	int64_t line = firstlineno, start, end = 0;
	size_t p;
	int cur;

	if (!tab && len)
		return -EINVAL;
	if (addrq < 0) {
		*ret_line = firstlineno;
		return 0;
	}
	/* Objects/lnotab_notes.txt (3.10): pairs of (unsigned byte delta,
	 * signed line delta); -128 means "no line" and leaves the line alone. */
	for (p = 0; p + 1 < len; p += 2) {
		int8_t ldelta = (int8_t)tab[p + 1];

		start = end;
		end += tab[p];
		if (ldelta == -128) {
			cur = -1;
		} else {
			line += ldelta;
			if (line < 0 || line > INT32_MAX)
				return -EINVAL;
			cur = (int)line;
		}
		if (start <= addrq && addrq < end) {
			*ret_line = cur;
			return 0;
		}
	}
	return -ENOENT;
}

/* A varint of the 3.11 table: 6 bits per byte, 0x40 = more follow. Only the
 * bytes of the current entry (bit 7 clear) may be used. */
static int line311__varint(const uint8_t *tab, size_t len, size_t *pos, uint32_t *ret)
{
	uint32_t val = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*pos >= len || (tab[*pos] & 0x80) || shift > 30)
			return -EINVAL;
		b = tab[(*pos)++];
		val |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*ret = val;
	return 0;
}

int pycode__line_311(const uint8_t *tab, size_t len, int firstlineno, int64_t addrq,
		     int *ret_line)
{
	int64_t line = firstlineno, start, end = 0;
	size_t p = 0, q;
	uint32_t u;
	int code, cur, delta;

	if (!tab && len)
		return -EINVAL;
	if (addrq < 0) {
		*ret_line = firstlineno;
		return 0;
	}
	/* InternalDocs/locations.md: each entry starts with 1CCCCLLL (code,
	 * length - 1 in code units); codes 0-9 keep the line, 10-12 add 0-2,
	 * 13 and 14 start with a signed varint line delta, 15 is "no line". */
	while (p < len) {
		if (!(tab[p] & 0x80))
			return -EINVAL;
		code = (tab[p] >> 3) & 15;
		delta = 0;
		if (code == 13 || code == 14) {
			q = p + 1;
			if (line311__varint(tab, len, &q, &u))
				return -EINVAL;
			delta = (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
		} else if (code >= 10 && code <= 12) {
			delta = code - 10;
		}
		line += delta;
		if (line < INT32_MIN || line > INT32_MAX)
			return -EINVAL;
		cur = code == 15 ? -1 : (int)line;
		start = end;
		end += ((tab[p] & 7) + 1) * 2;
		for (p++; p < len && !(tab[p] & 0x80); p++)
			;
		if (start <= addrq && addrq < end) {
			*ret_line = cur;
			return 0;
		}
	}
	return -ENOENT;
}

static size_t utf8__put(uint32_t cp, char *o)
{
	if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		cp = 0xfffd;
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

int pycode__unicode_to_utf8(const uint8_t *data, size_t nchars, unsigned kind, bool ascii,
			    char *out, size_t cap, size_t *ret_len)
{
	size_t i, n = 0, k;
	uint32_t cp;
	char enc[4];

	if (!out || !cap || (nchars && !data))
		return -EINVAL;
	if (kind != 1 && kind != 2 && kind != 4)
		return -EINVAL;
	if (ascii && kind != 1)
		return -EINVAL;
	for (i = 0; i < nchars; i++) {
		if (kind == 1) {
			cp = data[i];
			if (ascii && cp >= 0x80)
				return -EINVAL;
		} else if (kind == 2) {
			cp = (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8;
		} else {
			memcpy(&cp, data + 4 * i, 4); /* native order: same host as target */
		}
		k = utf8__put(cp, enc);
		if (n + k + 1 > cap)
			break; /* cut at a character boundary */
		memcpy(out + n, enc, k);
		n += k;
	}
	out[n] = '\0';
	*ret_len = n;
	return 0;
}
