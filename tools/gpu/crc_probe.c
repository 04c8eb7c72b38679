/* SPDX-License-Identifier: MIT */
/*
 * Prints CUPTI's cuptiGetCubinCrc for each cubin file given, with the bytes'
 * size, so the algorithm can be compared with our own CRC offline.
 * Usage: crc_probe LIBCUPTI CUBIN...
 * Built on the GPU machine by tools/gpu/crc.sh (plain C, no CUDA headers).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct crc_params { /* CUpti_GetCubinCrcParams, as cupti_pcsampling.h lays it out */
	size_t size;
	size_t cubin_size;
	const void *cubin;
	uint64_t crc;
};

static void *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	void *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		return NULL;
	buf = malloc(n ? n : 1);
	if (!buf || fread(buf, 1, n, f) != (size_t)n)
		return NULL;
	fclose(f);
	*len = n;
	return buf;
}

int main(int argc, char **argv)
{
	void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
	int (*get)(struct crc_params *) = lib ? (int (*)(struct crc_params *))dlsym(lib, "cuptiGetCubinCrc") : NULL;

	if (!get) {
		fprintf(stderr, "crc_probe: no cuptiGetCubinCrc in %s\n", argc > 1 ? argv[1] : "?");
		return 1;
	}
	for (int i = 2; i < argc; i++) {
		size_t len = 0;
		void *b = slurp(argv[i], &len);
		struct crc_params p = { sizeof(p), len, b, 0 };
		int rc = b ? get(&p) : -1;

		printf("%s size=%zu rc=%d crc=%016llx\n", argv[i], len, rc, (unsigned long long)p.crc);
		free(b);
	}
	return 0;
}
