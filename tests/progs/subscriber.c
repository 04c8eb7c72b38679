/* SPDX-License-Identifier: MIT */
/*
 * subscriber: takes CUPTI's one subscriber slot before CUDA starts (as
 * torch.profiler or Nsight would), then launches kernels. With the shim
 * injected, the shim must find the slot taken, say so in one line, go inert,
 * and let the program run on. Exits 0 on success.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include "tests/progs/cubin.h"

typedef int (*subscribe_fn)(void **subscriber, void *callback, void *userdata);

static void callback(void *userdata, int domain, int cbid, const void *data)
{
	(void)userdata; (void)domain; (void)cbid; (void)data;
}

int main(void)
{
	void *cupti = dlopen("libcupti.so", RTLD_NOW | RTLD_GLOBAL);
	subscribe_fn subscribe = cupti ? (subscribe_fn)dlsym(cupti, "cuptiSubscribe") : NULL;
	void *subscriber = NULL;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	static const char *const kernels[] = { "k" };
	static uint8_t img[8192];

	if (!subscribe || subscribe(&subscriber, (void *)callback, NULL) != 0) {
		fprintf(stderr, "subscriber: cannot subscribe to CUPTI first\n");
		return 1;
	}
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx))
		return 1;
	if (!cubin_build(img, sizeof(img), "subscriber", kernels, 1) || cuModuleLoadData(&mod, img) ||
	    cuModuleGetFunction(&fn, mod, "k"))
		return 1;
	for (int i = 0; i < 100; i++)
		if (cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL))
			return 1;
	cuCtxSynchronize();
	printf("subscriber: 100 launches done\n");
	return 0;
}
