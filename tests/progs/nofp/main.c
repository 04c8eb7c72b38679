/* SPDX-License-Identifier: MIT */
/*
 * nofp [N [PAD_KIB]]: N launches of kernel "nofp_kernel" through nofp.h's
 * call chain, from the main thread and from a second thread; prints the
 * count. PAD_KIB: the second thread's root frame holds that many KiB of its
 * own (untouched, but for its ends), so its stacks are that much deeper, and
 * it makes its N launches twice: the loader's stack copy sizing has learnt
 * the depth by the second time. Between the two it waits for the file
 * GP_NOFP_GO names (the test touches it once the loader grew the copy), or,
 * without it, 300 ms.
 */
#include <alloca.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "../cubin.h"
#include "nofp.h"

static CUfunction fn;
static CUcontext ctx;
static int n_launch;
static long pad_kib;

/* The file GP_NOFP_GO names exists (60 s at most), or 300 ms have passed. */
static void between_rounds(void)
{
	const char *go = getenv("GP_NOFP_GO");

	if (!go) {
		usleep(300 * 1000);
		return;
	}
	for (int i = 0; i < 6000 && access(go, F_OK); i++)
		usleep(10 * 1000);
}

static void *worker(void *arg)
{
	volatile char *pad = alloca(pad_kib * 1024 + 1);

	long bad;

	(void)arg;
	pad[0] = pad[pad_kib * 1024] = 1;
	if (cuCtxSetCurrent(ctx))
		return (void *)1;
	bad = nofp_level1(fn, n_launch, 1);
	if (pad_kib) {
		between_rounds();
		bad |= nofp_level1(fn, n_launch, 1);
	}
	return (void *)(bad + pad[0] - 1);
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
	pad_kib = argc > 2 ? atol(argv[2]) : 0;
	if (pad_kib < 0 || pad_kib > 1024)
		return 2;
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
	printf("nofp: launches=%d\n", (pad_kib ? 3 : 2) * n_launch);
	return bad || tr ? 1 : 0;
}
