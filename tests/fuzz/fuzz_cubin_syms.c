/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: arbitrary bytes as a cubin, as the loader receives them
 * from a profiled process. Must never crash, read outside the input, or
 * report a name that does not end at its NUL inside the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "user/cubin/cubin_syms.h"

struct fuzz_bounds {
	const char *lo, *hi;
	size_t names;
};

static int fuzz_cubin_syms__name(void *ctx, const char *name, size_t len, __u32 index)
{
	struct fuzz_bounds *b = ctx;

	(void)index;
	if (name < b->lo || name + len >= b->hi || !len || name[len] || strlen(name) != len ||
	    len >= CUBIN_SYMS_MAX_NAME)
		abort();
	b->names++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	/* A private copy of exactly len bytes: ASan flags the first byte past it. */
	char *copy = malloc(len ? len : 1);
	struct fuzz_bounds b;

	if (!copy)
		return 0;
	memcpy(copy, data, len);
	b = (struct fuzz_bounds){ .lo = copy, .hi = copy + len };
	(void)cubin_syms__parse(copy, len, fuzz_cubin_syms__name, &b);
	free(copy);
	return 0;
}
