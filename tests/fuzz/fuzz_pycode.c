/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: arbitrary bytes as a CPython line table (3.10 pairs and
 * the 3.11+ location table) and as the character data of a compact str of
 * each kind. Input: byte 0 picks the decoder, bytes 1..8 give firstlineno
 * and the queried offset, the rest is the table or the characters. Every
 * answer must be sound: a line only with success, UTF-8 within its cap,
 * NUL-terminated, with no NUL inside.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "user/python/pycode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char out[PYCODE_NAME_MAX];
	int32_t first, addr;
	size_t n, out_len = 0;
	const uint8_t *body;
	unsigned kind;
	int line, err;

	if (len < 9)
		return 0;
	memcpy(&first, data + 1, 4);
	memcpy(&addr, data + 5, 4);
	body = data + 9;
	n = len - 9;
	switch (data[0] % 3) {
	case 0:
		/* Every offset the table covers, and the one asked for. */
		for (int64_t a = -2; a < 2 * (int64_t)n + 4; a += 2)
			(void)pycode__line_310(body, n, first, a, &line);
		err = pycode__line_310(body, n, first, addr, &line);
		if (!err && addr < 0 && line != first)
			__builtin_trap();
		break;
	case 1:
		for (int64_t a = -2; a < 16 * (int64_t)n + 4; a += 2)
			(void)pycode__line_311(body, n, first, a, &line);
		err = pycode__line_311(body, n, first, addr, &line);
		if (!err && addr < 0 && line != first)
			__builtin_trap();
		break;
	default:
		kind = (data[1] & 3) == 3 ? 4 : (data[1] & 3) + 1;
		err = pycode__unicode_to_utf8(body, n / kind, kind, data[2] & 1, out,
					      1 + data[3] % sizeof(out), &out_len);
		if (!err && (out_len >= 1 + data[3] % sizeof(out) || out[out_len] != '\0' ||
			     strlen(out) != out_len))
			__builtin_trap();
		break;
	}
	return 0;
}
