/* SPDX-License-Identifier: MIT */
/*
 * Cubin CRCs for settle(): CUPTI's cuptiGetCubinCrc (the CRC PC-sampling
 * records carry), computed by the unprivileged, sandboxed gpuprobe-crc
 * helper, else a documented fallback: zlib's CRC-32 of the bytes, marked so
 * that it is never mistaken for CUPTI's (bit 63 set).
 */
#ifndef GP_CRC_H
#define GP_CRC_H

#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#define GP_CRC_FALLBACK_BIT (1ull << 63)

struct crc_engine;

/* Never fails: without CUPTI the engine uses the fallback. */
void crc_engine__new(const char *cupti_path, struct crc_engine **ret_e);
void crc_engine__destroy(struct crc_engine *e);
/* A cubin_crc_fn. */
int crc_engine__fn(void *ctx, const void *cubin, size_t size, __u64 *ret_crc);
int crc_engine__is_cupti(const struct crc_engine *e);
/* Why CUPTI's CRC is not used: -ENOENT no helper found, or its start error. */
int crc_engine__why_not(const struct crc_engine *e);
/*
 * Times the helper died or stalled mid-run: the cubin it was lost on is lost
 * alone (the crc function's error), and a new helper takes the next one, at
 * most 8 times a run; after that, the fallback.
 */
__u64 crc_engine__helper_lost(const struct crc_engine *e);
pid_t crc_engine__helper_pid(const struct crc_engine *e);

/*
 * One source of cubins (a profiled process) for an engine: once a helper
 * was lost on one of its cubins, its later ones get the fallback, never the
 * helper, so that one process can cost at most one of the run's 8 helpers,
 * and the helper's CRC stays with the others. Zeroed with its engine set.
 */
struct crc_source {
	struct crc_engine *e;
	int blamed; /* a helper was lost on one of its cubins */
};

/* A cubin_crc_fn over a struct crc_source. */
int crc_source__fn(void *ctx, const void *cubin, size_t size, __u64 *ret_crc);
/* Sources a helper was lost on, whose cubins the helper no longer sees. */
__u64 crc_engine__sources_blamed(const struct crc_engine *e);

#endif
