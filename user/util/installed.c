/* SPDX-License-Identifier: MIT */
/* Where gpuprobe-bpf's companion files are (installed.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/util/installed.h"

#ifndef GP_PREFIX
#define GP_PREFIX "/usr/local"
#endif

static int candidate(const char *dir, const char *rel, const char *name, int mode, char *buf,
		     size_t len)
{
	char cand[PATH_MAX * 2], real[PATH_MAX];

	snprintf(cand, sizeof(cand), "%s/%s%s", dir, rel, name);
	if (!realpath(cand, real) || access(real, mode))
		return -ENOENT;
	return (size_t)snprintf(buf, len, "%s", real) < len ? 0 : -ENAMETOOLONG;
}

int installed__find(const char *name, int mode, char *buf, size_t len)
{
	static const char *const rel[] = { "", "../", "../lib/gpuprobe/" };
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		exe[n] = 0;
		*strrchr(exe, '/') = 0;
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++)
			if (!candidate(exe, rel[i], name, mode, buf, len))
				return 0;
	}
	return candidate(GP_PREFIX, "lib/gpuprobe/", name, mode, buf, len);
}
