/* SPDX-License-Identifier: MIT */
/*
 * The engine programs' driver-call check (prog.h, late.c): a failed call
 * prints where and exits 1. Each program defines PROG before including this.
 */
#ifndef GP_TESTS_ENGINE_CHECK_H
#define GP_TESTS_ENGINE_CHECK_H

#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>

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

#endif
