/* SPDX-License-Identifier: MIT */
/* The CRC engine of crc.h; the CUPTI call itself lives in nvidia/loader/. */
#include <errno.h>
#include <stdlib.h>
#include <zlib.h>
#include "user/session/crc.h"
#include "nvidia/loader/cupti_crc.h"

struct crc_engine {
	struct cupti_crc *cupti; /* NULL: fallback */
};

void crc_engine__new(const char *cupti_path, struct crc_engine **ret_e)
{
	struct crc_engine *e = calloc(1, sizeof(*e));

	if (e && cupti_crc__open(cupti_path, &e->cupti))
		e->cupti = NULL;
	*ret_e = e;
}

void crc_engine__destroy(struct crc_engine *e)
{
	if (!e)
		return;
	cupti_crc__close(e->cupti);
	free(e);
}

int crc_engine__is_cupti(const struct crc_engine *e)
{
	return e && e->cupti;
}

int crc_engine__fn(void *ctx, const void *cubin, size_t size, __u64 *ret_crc)
{
	struct crc_engine *e = ctx;
	uLong c;

	if (e && e->cupti)
		return cupti_crc__compute(e->cupti, cubin, size, ret_crc);
	c = crc32(0L, Z_NULL, 0);
	for (size_t off = 0; off < size;) {
		uInt chunk = size - off > (1u << 30) ? (1u << 30) : (uInt)(size - off);

		c = crc32(c, (const Bytef *)cubin + off, chunk);
		off += chunk;
	}
	*ret_crc = GP_CRC_FALLBACK_BIT | c;
	return 0;
}
