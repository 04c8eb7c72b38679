/* SPDX-License-Identifier: MIT */
/* Command-line counts for the test programs. */
#ifndef GP_TESTS_PROGS_ARGS_H
#define GP_TESTS_PROGS_ARGS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* s as a count in 0..1e8; else says so, naming prog, and exits 2. */
static inline long parse_count(const char *prog, const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > 100000000) {
		fprintf(stderr, "%s: '%s' is not a count\n", prog, s);
		exit(2);
	}
	return v;
}

#endif /* GP_TESTS_PROGS_ARGS_H */
