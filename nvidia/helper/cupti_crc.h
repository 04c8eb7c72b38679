/* SPDX-License-Identifier: MIT */
/* gpuprobe-crc's one use of CUPTI: cuptiGetCubinCrc on copied cubin bytes. */
#ifndef GP_CUPTI_CRC_H
#define GP_CUPTI_CRC_H

#include <stddef.h>
#include <linux/types.h>

struct cupti_crc;

/*
 * path: a libcupti.so, or NULL for GPUPROBE_CUPTI / the usual names. Never
 * closed: the helper holds it until it exits.
 */
int cupti_crc__open(const char *path, struct cupti_crc **ret_c);
int cupti_crc__compute(struct cupti_crc *c, const void *cubin, size_t size, __u64 *ret_crc);

#endif
