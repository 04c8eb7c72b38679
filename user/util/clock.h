/* SPDX-License-Identifier: MIT */
/* A clock's reading in ns, 0 when it cannot be read (CLOCK_MONOTONIC: bpf_ktime_get_ns's clock). */
#ifndef GP_UTIL_CLOCK_H
#define GP_UTIL_CLOCK_H

#include <time.h>
#include <linux/types.h>

static inline __u64 clock_ns(clockid_t id)
{
	struct timespec ts = { 0 };

	clock_gettime(id, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

#endif /* GP_UTIL_CLOCK_H */
