/* SPDX-License-Identifier: MIT */
/*
 * The CRC engine of crc.h. CUPTI's CRC comes from gpuprobe-crc, a child
 * process that has dropped root and sandboxed itself before it sees a byte
 * of a cubin (user/cubin/crc_helper.c): the loader itself never hands
 * bytes a profiled process wrote to closed-source code.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "user/cubin/crc.h"
#include "user/cubin/crc_helper.h"

/*
 * A helper lost mid-run (a cubin that crashed or stalled CUPTI's parser:
 * any process can send one) is started again for the next cubin, this many
 * times at most; the cubin it was lost on is lost alone.
 */
#define HELPER_RESTARTS_MAX 8

struct crc_engine {
	struct crc_helper *helper; /* NULL: fallback */
	int start_err;             /* why there is none (0 while it runs) */
	__u64 helper_lost;         /* the helper died or stalled mid-run */
	__u64 sources_blamed;      /* crc_source: sources a helper was lost on */
	unsigned restarts;         /* helpers started after one was lost */
	bool restart;              /* start one for the next cubin */
	char path[PATH_MAX];       /* the helper's, to start it again */
	char cupti[PATH_MAX];      /* its libcupti ("": its defaults) */
};

void crc_engine__new(const char *cupti_path, struct crc_engine **ret_e)
{
	struct crc_engine *e = calloc(1, sizeof(*e));
	char path[PATH_MAX];

	if (e) {
		e->start_err = crc_helper__find(path, sizeof(path));
		if (!e->start_err)
			e->start_err = crc_helper__start(path, cupti_path, &e->helper);
		snprintf(e->path, sizeof(e->path), "%s", path);
		snprintf(e->cupti, sizeof(e->cupti), "%s", cupti_path ? cupti_path : "");
	}
	*ret_e = e;
}

void crc_engine__destroy(struct crc_engine *e)
{
	if (!e)
		return;
	crc_helper__stop(e->helper);
	free(e);
}

int crc_engine__is_cupti(const struct crc_engine *e)
{
	return e && (e->helper || (e->restart && e->restarts < HELPER_RESTARTS_MAX));
}

int crc_engine__why_not(const struct crc_engine *e)
{
	return e ? e->start_err : -ENOMEM;
}

__u64 crc_engine__helper_lost(const struct crc_engine *e)
{
	return e ? e->helper_lost : 0;
}

__u64 crc_engine__sources_blamed(const struct crc_engine *e)
{
	return e ? e->sources_blamed : 0;
}

pid_t crc_engine__helper_pid(const struct crc_engine *e)
{
	return e ? crc_helper__pid(e->helper) : 0;
}

static __u64 fallback_crc(const void *cubin, size_t size)
{
	uLong c = crc32(0L, Z_NULL, 0);

	for (size_t off = 0; off < size;) {
		uInt chunk = size - off > (1u << 30) ? (1u << 30) : (uInt)(size - off);

		c = crc32(c, (const Bytef *)cubin + off, chunk);
		off += chunk;
	}
	return GP_CRC_FALLBACK_BIT | c;
}

int crc_engine__fn(void *ctx, const void *cubin, size_t size, __u64 *ret_crc)
{
	struct crc_engine *e = ctx;
	int err;

	if (e && e->restart) {
		e->restart = false;
		if (e->restarts < HELPER_RESTARTS_MAX) {
			e->restarts++;
			e->start_err = crc_helper__start(e->path, e->cupti[0] ? e->cupti : NULL,
							 &e->helper);
		}
	}
	if (e && e->helper) {
		/* A cubin it refuses (-EIO, -EFBIG) is lost alone: counted by settle, the helper stays. */
		err = crc_helper__compute(e->helper, cubin, size, ret_crc);
		if (err != -EPIPE && err != -ETIMEDOUT)
			return err;
		/*
		 * Lost on this cubin: it is lost alone (counted by settle), and
		 * the next one gets a new helper. Past HELPER_RESTARTS_MAX, or
		 * when one cannot start, the fallback (never mistaken for CUPTI's).
		 */
		crc_helper__stop(e->helper);
		e->helper = NULL;
		e->start_err = err;
		e->helper_lost++;
		e->restart = true;
		return err;
	}
	*ret_crc = fallback_crc(cubin, size);
	return 0;
}

int crc_source__fn(void *ctx, const void *cubin, size_t size, __u64 *ret_crc)
{
	struct crc_source *src = ctx;
	__u64 lost;
	int err;

	if (src->blamed || !src->e) {
		*ret_crc = fallback_crc(cubin, size);
		return 0;
	}
	lost = src->e->helper_lost;
	err = crc_engine__fn(src->e, cubin, size, ret_crc);
	if (src->e->helper_lost != lost) {
		src->blamed = 1;
		src->e->sources_blamed++;
	}
	return err;
}
