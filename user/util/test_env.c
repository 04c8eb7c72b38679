/* SPDX-License-Identifier: MIT */
/* Test-only knobs (test_env.h). */
#include "user/util/test_env.h"

#include <stdlib.h>

size_t test_env__bytes(const char *name)
{
	const char *e = getenv(name);
	char *end;
	unsigned long long v;

	if (!e || !*e || *e < '0' || *e > '9')
		return 0;
	v = strtoull(e, &end, 10);
	return *end ? 0 : (size_t)v;
}
