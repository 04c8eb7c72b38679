/* SPDX-License-Identifier: MIT */
/*
 * The loader's side of gpuprobe-crc (nvidia/helper/): a child process that
 * computes CUPTI's cubin CRC as nobody, under seccomp, fed through pipes.
 * Every wait on it is bounded: a helper that dies or stalls is an error
 * here, never a hang of the loader.
 */
#ifndef GP_CRC_HELPER_H
#define GP_CRC_HELPER_H

#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

struct crc_helper;

/* The helper beside this executable, or in PREFIX/lib/gpuprobe. */
int crc_helper__find(char *buf, size_t len);
/* Starts it and waits (bounded) until it says it is sandboxed. cupti: NULL for its defaults. */
int crc_helper__start(const char *helper, const char *cupti, struct crc_helper **ret_h);
/* The largest cubin the helper takes (nvidia/helper/gpuprobe_crc.c). */
#define CRC_HELPER_MAX_CUBIN (1ull << 30)

/*
 * 0; -EIO: CUPTI refused the bytes; -EFBIG: over CRC_HELPER_MAX_CUBIN, not
 * sent (the helper lives on); -EPIPE/-ETIMEDOUT: the helper is gone (stop it).
 */
int crc_helper__compute(struct crc_helper *h, const void *cubin, size_t size, __u64 *ret_crc);
pid_t crc_helper__pid(const struct crc_helper *h);
/* Ends it (kills it if it does not end at once) and reaps it. NULL-safe. */
void crc_helper__stop(struct crc_helper *h);

#endif
