/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: arbitrary bytes as a whole shim shared-memory image,
 * through the loader's reader (layout validation, records, names, counters)
 * and CubinQueue settle/drain. The loader runs as root over memory an
 * unprivileged process wrote (DESIGN.md invariant 5): nothing here may
 * crash, hang or read outside the image.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "user/shm/shm_reader.h"

static int fuzz_crc(void *ctx, const void *cubin, size_t size, __u64 *ret_crc)
{
	const __u8 *p = cubin;
	__u64 h = size;

	for (size_t i = 0; i < size; i++)
		h = h * 31 + p[i];
	*ret_crc = h;
	return (h & 0xff) == 0x5a ? -EIO : 0; /* exercise the CRC-failure path */
}

static void fuzz_drain(void *ctx, const struct gpu_module_load_v1 *rec, const void *cubin,
		       size_t size)
{
	volatile __u8 sink = 0;

	if (size)
		sink = ((const __u8 *)cubin)[size - 1]; /* ASan checks the bound */
	(void)sink;
}

static void read_all(struct shm_reader *r)
{
	struct gp_record recs[32];
	char name[256];
	size_t n;

	for (int round = 0; round < 4; round++) {
		if (shm_reader__read(r, recs, 32, &n) || !n)
			break;
		for (size_t i = 0; i < n; i++) {
			shm_reader__name(r, recs[i].kernel.name_off, name, sizeof(name));
			shm_reader__name(r, (__u32)recs[i].corr, name, 8);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	__u64 ctr[GP_CTR_MAX];
	struct shm_reader *r;
	char line[1024];
	void *img;

	if (size > (64u << 20))
		return 0;
	/* The reader needs 8-byte alignment for its atomics, as a mapping has. */
	img = aligned_alloc(64, (size + 63) & ~(size_t)63);
	if (!img)
		return 0;
	memcpy(img, data, size);
	if (shm_reader__open_mem(img, size, &r) == 0) {
		read_all(r);
		shm_reader__counters(r, ctr);
		shm_reader__flags(r);
		for (int i = 0; i < 3; i++) {
			shm_reader__settle(r, fuzz_crc, NULL, NULL, NULL);
			cubin_queue__drain(shm_reader__cubins(r), 2, fuzz_drain, NULL);
		}
		cubin_queue__format_counters(shm_reader__cubins(r), line, sizeof(line));
		shm_reader__destroy(r);
	}
	free(img);
	return 0;
}
