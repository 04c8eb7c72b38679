/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: arbitrary bytes as a cubin's line table, as the loader
 * receives them from a profiled process. Must never crash, read outside the
 * input, or report a row that breaks the contract (a name past the cap, a
 * line without a file or a file without a line); the rows kept, sorted,
 * must each be found again where they start.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "user/cubin/cubin_lines.h"

#define FUZZ_KEPT 4096

struct fuzz_rows {
	struct cubin_line_row rows[FUZZ_KEPT];
	size_t n;
};

static int fuzz_cubin_lines__row(void *ctx, __u32 sym_index, __u64 offset, const char *file,
				 __u32 line)
{
	struct fuzz_rows *k = ctx;
	size_t len = strnlen(file, CUBIN_LINES_MAX_NAME);

	if (len >= CUBIN_LINES_MAX_NAME || (line == 0) != (len == 0))
		abort();
	if (k->n < FUZZ_KEPT)
		k->rows[k->n++] = (struct cubin_line_row){ .sym_index = sym_index, .line = line,
							   .offset = offset, .file = (__u32)len };
	return 0;
}

/* Each row's start finds a row of its symbol at that offset, or none (a line 0 there). */
static void fuzz_cubin_lines__find_each(const struct fuzz_rows *k)
{
	for (size_t i = 0; i < k->n; i++) {
		const struct cubin_line_row *r =
			cubin_lines__find(k->rows, k->n, k->rows[i].sym_index, k->rows[i].offset);

		if (r && (r->sym_index != k->rows[i].sym_index || r->offset != k->rows[i].offset ||
			  !r->line))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	/* A private copy of exactly len bytes: ASan flags the first byte past it. */
	char *copy = malloc(len ? len : 1);
	struct fuzz_rows *k = malloc(sizeof(*k));

	if (!copy || !k)
		goto out;
	memcpy(copy, data, len);
	k->n = 0;
	(void)cubin_lines__parse(copy, len, fuzz_cubin_lines__row, k);
	cubin_lines__sort(k->rows, k->n);
	fuzz_cubin_lines__find_each(k);
out:
	free(k);
	free(copy);
	return 0;
}
