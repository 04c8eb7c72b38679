/* SPDX-License-Identifier: MIT */
/* The outer level (see nofp.h), in a library of its own. */
#include <pthread.h>
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

struct spawn_arg {
	CUcontext ctx;
	CUfunction f;
	int n, rc;
};

static void *spawn_main(void *p)
{
	struct spawn_arg *a = p;

	a->rc = cuCtxSetCurrent(a->ctx) ? -1 : nofp_level1(a->f, a->n, 3);
	return NULL;
}

/*
 * n launches from a thread of our own, the caller waiting for it: how
 * PyTorch's autograd runs backward() on its device threads.
 */
int nofp_spawn(CUcontext ctx, CUfunction f, int n)
{
	struct spawn_arg a = { ctx, f, n, 0 };
	pthread_t th;

	if (pthread_create(&th, NULL, spawn_main, &a))
		return -1;
	pthread_join(th, NULL);
	return a.rc;
}
