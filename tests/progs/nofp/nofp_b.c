/* SPDX-License-Identifier: MIT */
/* The inner two levels (see nofp.h): stack arrays give each frame its own CFA offset. */
#include <string.h>
#include "nofp.h"

/* Keeps the frames (and the garbage in rbp) from being optimised away. */
volatile long nofp_sink;

__attribute__((noinline)) int nofp_level3(CUfunction f, int depth_pad)
{
	volatile char pad[104];
	CUresult r;

	pad[0] = (char)depth_pad;
	/* rbp is a general register here: fill it with garbage across the call. */
	__asm__ volatile("mov $0x5a5a5a5a5a5a5a5a, %%rbp" ::: "rbp");
	r = cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
	nofp_sink += pad[0];
	return r == CUDA_SUCCESS ? 0 : -1;
}

__attribute__((noinline)) int nofp_level2(CUfunction f, int n, int depth_pad)
{
	volatile long buf[40];
	int bad = 0;

	buf[3] = n;
	for (int i = 0; i < n; i++)
		bad |= nofp_level3(f, depth_pad + i);
	nofp_sink += buf[3];
	return bad;
}
