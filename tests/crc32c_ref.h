/* SPDX-License-Identifier: MIT */
/*
 * CRC-32C computed bit by bit, the slowest and plainest way: what the CRC
 * tests compare the stub CUPTI's answers with, written apart from the code
 * under test.
 */
#ifndef GP_TESTS_CRC32C_REF_H
#define GP_TESTS_CRC32C_REF_H

#include <stddef.h>
#include <linux/types.h>

static inline __u32 crc32c_ref(const void *buf, size_t n)
{
	const unsigned char *p = buf;
	__u32 c = 0xFFFFFFFFu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
	}
	return c ^ 0xFFFFFFFFu;
}

#endif
