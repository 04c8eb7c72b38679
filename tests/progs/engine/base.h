/* SPDX-License-Identifier: MIT */
/*
 * What every engine program shares, whether it links the stand-in engine
 * (prog.h: main.c, cases.c) or opens it later (late.c): the driver-call
 * check (a failed call prints where and exits 1), the context and stream,
 * a bounded wait on a condition, the engine thread's context. Each program
 * defines PROG before including this.
 */
#ifndef GP_TESTS_ENGINE_BASE_H
#define GP_TESTS_ENGINE_BASE_H

#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call) \
	do { \
		CUresult r_ = (call); \
		if (r_ != CUDA_SUCCESS) { \
			fprintf(stderr, PROG ": %s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, \
				(int)r_); \
			exit(1); \
		} \
	} while (0)

enum { BLOCK = 32 };

static CUcontext ctx;
static CUstream stream;

/* Until cond() holds, a minute at most: a wait on a condition, not on time. */
static int wait_for(int (*cond)(void))
{
	struct timespec ms = { 0, 1000 * 1000 };

	for (int i = 0; i < 60000; i++) {
		if (cond())
			return 0;
		nanosleep(&ms, NULL);
	}
	return -1;
}

/* On the engine thread, before its first launch: the context current there. */
static void on_engine(void)
{
	static __thread int set;

	if (!set)
		CHECK(cuCtxSetCurrent(ctx));
	set = 1;
}

#endif
