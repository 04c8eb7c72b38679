/* SPDX-License-Identifier: MIT */
/* The outer level (see nofp.h), in a library of its own. */
#include "nofp.h"

extern volatile long nofp_sink;

__attribute__((noinline)) int nofp_level1(CUfunction f, int n, int depth_pad)
{
	volatile int scratch[24];
	int r;

	scratch[5] = depth_pad;
	__asm__ volatile("mov $0x1234, %%rbp" ::: "rbp");
	r = nofp_level2(f, n, scratch[5]);
	nofp_sink += scratch[5];
	return r;
}
