/* SPDX-License-Identifier: MIT */
/*
 * nofp [N]: N launches of kernel "nofp_kernel" through nofp.h's call chain,
 * from the main thread and from a second thread; prints the count.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "../cubin.h"
#include "nofp.h"

static CUfunction fn;
static CUcontext ctx;
static int n_launch;

static void *worker(void *arg)
{
	(void)arg;
	if (cuCtxSetCurrent(ctx))
		return (void *)1;
	return (void *)(long)nofp_level1(fn, n_launch, 1);
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "nofp_kernel" };
	static uint8_t img[4096];
	CUdevice dev;
	CUmodule mod;
	pthread_t th;
	void *tr;
	int bad;

	n_launch = argc > 1 ? atoi(argv[1]) : 100;
	if (cubin_size(names, 1) > sizeof(img) || cuInit(0) || cuDeviceGet(&dev, 0) ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx))
		return 1;
	if (!cubin_build(img, sizeof(img), "nofp", names, 1))
		return 1;
	if (cuModuleLoadData(&mod, img) || cuModuleGetFunction(&fn, mod, "nofp_kernel"))
		return 1;
	if (pthread_create(&th, NULL, worker, NULL))
		return 1;
	bad = nofp_level1(fn, n_launch, 2);
	pthread_join(th, &tr);
	cuCtxSynchronize();
	printf("nofp: launches=%d\n", 2 * n_launch);
	return bad || tr ? 1 : 0;
}
