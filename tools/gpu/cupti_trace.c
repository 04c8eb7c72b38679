/* SPDX-License-Identifier: MIT */
/*
 * The peer for the CUDA C workload in tools/gpu/bench: a bare CUPTI activity
 * tracer, as profilers built on CUPTI run it (kernels, runtime and driver
 * API records, 8 MiB buffers), injected with CUDA_INJECTION64_PATH. It only
 * counts the records; at exit it flushes and prints the count.
 * CUPTI_TRACE_KINDS=kernel enables the kernel records alone (all, or unset:
 * the tracer's set; anything else exits 2): the floor any
 * profiler that takes GPU time from CUPTI's activity records pays (the bench's
 * floor mode).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cupti.h>

#define BUF_SIZE (8u << 20)

static unsigned long long records, dropped;

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	*buf = aligned_alloc(8, BUF_SIZE);
	*size = *buf ? BUF_SIZE : 0;
	*max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
				      size_t valid)
{
	CUpti_Activity *rec = NULL;
	size_t n = 0;

	(void)ctx;
	(void)size;
	while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS)
		records++;
	if (cuptiActivityGetNumDroppedRecords(ctx, stream, &n) == CUPTI_SUCCESS)
		dropped += n;
	free(buf);
}

static void at_exit(void)
{
	cuptiActivityFlushAll(1);
	fprintf(stderr, "cupti_trace: records=%llu dropped=%llu\n", records, dropped);
}

static int enable_kinds(void)
{
	const char *kinds = getenv("CUPTI_TRACE_KINDS");

	if (kinds && strcmp(kinds, "kernel") && strcmp(kinds, "all")) {
		/* A typo must not measure something else under the mode's name. */
		fprintf(stderr, "cupti_trace: CUPTI_TRACE_KINDS=%s: want kernel or all\n", kinds);
		_exit(2);
	}
	if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
		return -1;
	if (kinds && !strcmp(kinds, "kernel"))
		return 0;
	if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS ||
	    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) != CUPTI_SUCCESS ||
	    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS)
		return -1;
	return 0;
}

int InitializeInjection(void)
{
	if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
	    enable_kinds()) {
		fprintf(stderr, "cupti_trace: cannot enable CUPTI activities\n");
		return 1;
	}
	atexit(at_exit);
	return 1;
}
