/* SPDX-License-Identifier: MIT */
/* A clock's reading in ns, 0 when it cannot be read (CLOCK_MONOTONIC: bpf_ktime_get_ns's clock). */
#ifndef GP_UTIL_CLOCK_H
#define GP_UTIL_CLOCK_H

#include <limits.h>
#include <time.h>
#include <linux/types.h>

static inline __u64 clock_ns(clockid_t id)
{
	struct timespec ts = { 0 };

	clock_gettime(id, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* A deadline ms from now, in CLOCK_MONOTONIC ns. */
static inline __u64 clock_deadline_ms(__u64 ms)
{
	return clock_ns(CLOCK_MONOTONIC) + ms * 1000000ull;
}

/* The whole ms left until deadline (CLOCK_MONOTONIC ns), for poll: 0 once past, INT_MAX at most. */
static inline int clock_ms_until(__u64 deadline)
{
	__u64 now = clock_ns(CLOCK_MONOTONIC), ms;

	if (now >= deadline)
		return 0;
	ms = (deadline - now) / 1000000ull;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

#endif /* GP_UTIL_CLOCK_H */
