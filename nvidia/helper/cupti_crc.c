/* SPDX-License-Identifier: MIT */
/*
 * cuptiGetCubinCrc, dlopened by gpuprobe-crc: measured on the H200 to give
 * the in-process CRC when run on copied bytes, so cubins settle out of the
 * profiled process (and, through the helper, out of the loader's).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include "nvidia/helper/cupti_crc.h"

typedef CUptiResult (*get_crc_fn)(CUpti_GetCubinCrcParams *);

struct cupti_crc {
	void *lib;
	get_crc_fn get_crc;
};

static void *open_cupti(const char *path)
{
	static const char *const names[] = { "libcupti.so", "libcupti.so.13", "libcupti.so.12",
					     "/usr/local/cuda/lib64/libcupti.so",
					     "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so" };
	const char *env = getenv("GPUPROBE_CUPTI");
	void *h;

	if (path)
		return dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (env && (h = dlopen(env, RTLD_NOW | RTLD_LOCAL)))
		return h;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)))
			return h;
	return NULL;
}

/* Present in every dynamically linked executable, absent from static ones. */
extern char _DYNAMIC[] __attribute__((weak));

int cupti_crc__open(const char *path, struct cupti_crc **ret_c)
{
	struct cupti_crc *c;

	/*
	 * A static executable's dlopen loads a second, possibly newer libc
	 * beside its own: measured on the H200 machine, the loader then died of
	 * SIGFPE. Static builds use the fallback CRC instead.
	 */
	if (!_DYNAMIC)
		return -ENOTSUP;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->lib = open_cupti(path);
	if (!c->lib) {
		free(c);
		return -ENOENT;
	}
	c->get_crc = (get_crc_fn)dlsym(c->lib, "cuptiGetCubinCrc");
	if (!c->get_crc) {
		dlclose(c->lib);
		free(c);
		return -ENOSYS;
	}
	*ret_c = c;
	return 0;
}

int cupti_crc__compute(struct cupti_crc *c, const void *cubin, size_t size, __u64 *ret_crc)
{
	CUpti_GetCubinCrcParams p;

	memset(&p, 0, sizeof(p));
	p.size = CUpti_GetCubinCrcParamsSize;
	p.cubinSize = size;
	p.cubin = cubin;
	if (c->get_crc(&p) != CUPTI_SUCCESS)
		return -EIO;
	*ret_crc = p.cubinCrc;
	return 0;
}
