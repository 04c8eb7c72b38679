/* SPDX-License-Identifier: MIT */
/*
 * The search for libcupti, in the order of nvidia/cupti_find.h. Runs once,
 * inside InitializeInjection (cuInit's thread), never in a callback. Every
 * candidate is bounded (fixed arrays, PATH_MAX names); nothing prints.
 */
#include "shim/glibc_compat.h"
#include "nvidia/cupti_find.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SITE_DIRS 8

static const char *const sonames[] = { "libcupti.so", "libcupti.so.13", "libcupti.so.12" };
#define N_SONAMES (sizeof(sonames) / sizeof(sonames[0]))

static void *try_open(const char *path, int extra, char *ret_where, size_t len)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | extra);

	if (h)
		snprintf(ret_where, len, "%s", path);
	return h;
}

/* Tries each soname inside dir. */
static void *try_dir(const char *dir, char *ret_where, size_t len)
{
	char path[PATH_MAX];
	void *h;

	for (size_t i = 0; i < N_SONAMES; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", dir, sonames[i]) >= (int)sizeof(path))
			continue;
		h = try_open(path, 0, ret_where, len);
		if (h)
			return h;
	}
	return NULL;
}

/* A toolkit root: lib64, lib, extras/CUPTI/lib64. */
static void *try_cuda_root(const char *root, char *ret_where, size_t len)
{
	static const char *const subs[] = { "lib64", "lib", "extras/CUPTI/lib64" };
	char dir[PATH_MAX];
	void *h;

	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		if (snprintf(dir, sizeof(dir), "%s/%s", root, subs[i]) >= (int)sizeof(dir))
			continue;
		h = try_dir(dir, ret_where, len);
		if (h)
			return h;
	}
	return NULL;
}

static void *try_usr_local(char *ret_where, size_t len)
{
	char root[PATH_MAX];
	struct dirent *de;
	void *h = try_cuda_root("/usr/local/cuda", ret_where, len);
	DIR *d;

	if (h)
		return h;
	d = opendir("/usr/local");
	if (!d)
		return NULL;
	while (!h && (de = readdir(d))) {
		if (strncmp(de->d_name, "cuda-", 5) != 0)
			continue;
		if (snprintf(root, sizeof(root), "/usr/local/%s", de->d_name) < (int)sizeof(root))
			h = try_cuda_root(root, ret_where, len);
	}
	closedir(d);
	return h;
}

struct site_dirs {
	int n;
	char dir[MAX_SITE_DIRS][PATH_MAX];
};

/* Collects distinct ".../site-packages" prefixes; no dlopen under the phdr lock. */
static int site__collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct site_dirs *s = arg;
	const char *name = info->dlpi_name, *at;
	size_t n;

	if (!name || !(at = strstr(name, "/site-packages/")) || s->n >= MAX_SITE_DIRS)
		return 0;
	n = (size_t)(at - name) + strlen("/site-packages");
	if (n >= PATH_MAX)
		return 0;
	for (int i = 0; i < s->n; i++)
		if (strlen(s->dir[i]) == n && !strncmp(s->dir[i], name, n))
			return 0;
	memcpy(s->dir[s->n], name, n);
	s->dir[s->n][n] = 0;
	s->n++;
	return 0;
}

static void *try_wheels(char *ret_where, size_t len)
{
	static const char *const subs[] = { "nvidia/cu13/lib", "nvidia/cuda_cupti/lib",
					    "nvidia/cu12/lib" };
	struct site_dirs *s = calloc(1, sizeof(*s));
	char dir[PATH_MAX];
	void *h = NULL;

	if (!s)
		return NULL;
	dl_iterate_phdr(site__collect, s);
	for (int i = 0; i < s->n && !h; i++)
		for (size_t j = 0; j < sizeof(subs) / sizeof(subs[0]) && !h; j++)
			if (snprintf(dir, sizeof(dir), "%s/%s", s->dir[i], subs[j]) < (int)sizeof(dir))
				h = try_dir(dir, ret_where, len);
	free(s);
	return h;
}

int cupti_find__open(void **ret_handle, char *ret_where, size_t len)
{
	const char *env = getenv("GPUPROBE_CUPTI"), *cuda_home = getenv("CUDA_HOME");
	void *h = NULL;

	if (env && *env)
		h = try_open(env, 0, ret_where, len);
	for (size_t i = 0; !h && i < N_SONAMES; i++)
		h = try_open(sonames[i], RTLD_NOLOAD, ret_where, len);
	for (size_t i = 0; !h && i < N_SONAMES; i++)
		h = try_open(sonames[i], 0, ret_where, len);
	if (!h && cuda_home && *cuda_home)
		h = try_cuda_root(cuda_home, ret_where, len);
	if (!h)
		h = try_usr_local(ret_where, len);
	if (!h)
		h = try_wheels(ret_where, len);
	if (!h)
		return -ENOENT;
	*ret_handle = h;
	return 0;
}
