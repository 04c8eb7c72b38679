/* SPDX-License-Identifier: MIT */
/*
 * Demangling. The loader links libstdc++ (-lstdc++, or -l:libstdc++.a with
 * -Wl,-u,__cxa_demangle for the static build) so __cxa_demangle resolves
 * directly. The reference is weak so that a binary linked without it still
 * links; it then looks the function up in an already installed libstdc++.so.6
 * and, failing that, passes names through unchanged.
 */
#include "user/symbolize/demangle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Names past this length are passed through: mangled names from cubins are
 * hostile and demanglers have a history of deep recursion on crafted input. */
#define DEMANGLE_MAX_INPUT 4096

/* libstdc++'s demangler: linked in (-lstdc++, or libstdc++.a when static). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

int demangle__cxx(const char *name, char **ret_name)
{
	char *out;
	int status = 0;

	if (!name || !ret_name)
		return -EINVAL;
	/* "_Z" names, and "__Z" on targets with an extra underscore. */
	if (strncmp(name, "_Z", 2) && strncmp(name, "__Z", 3))
		return -EINVAL;
	if (strnlen(name, DEMANGLE_MAX_INPUT + 1) > DEMANGLE_MAX_INPUT)
		return -E2BIG;
	out = __cxa_demangle(name, NULL, NULL, &status);
	if (status == -1) {
		free(out);
		return -ENOMEM;
	}
	if (status || !out) {
		free(out);
		return -EINVAL;
	}
	*ret_name = out;
	return 0;
}

char *demangle__or_copy(const char *name)
{
	char *out;

	if (!name)
		return NULL;
	if (demangle__cxx(name, &out) == 0)
		return out;
	return strdup(name);
}
