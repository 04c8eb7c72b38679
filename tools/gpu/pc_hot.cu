// tools/gpu/pc_hot.cu: PC sampling's facts on a real GPU (tools/gpu/pc_sampling.sh).
//
// Built twice by the script: as a cubin (-cubin -lineinfo) holding two kernels,
// and as a host program that loads that cubin with the driver API:
//   hot:  one thread's chain of dependent global loads (each address the last
//         load's value): its warps should stall on the load's result
//         (long_scoreboard), at the instruction after the load;
//   cold: arithmetic only, no memory in the loop.
//   pc_hot CUBIN ROUNDS LAUNCHES [unload]
// runs ROUNDS rounds of LAUNCHES launches of each kernel; with "unload", each
// round loads the cubin afresh and unloads it after a synchronize, so modules
// go while PC sampling runs (the hang test).
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" __global__ void hot(const unsigned *next, unsigned *out, int steps)
{
	unsigned at = threadIdx.x + blockIdx.x * blockDim.x;

	/* One load in the loop, so one instruction uses its result (unrolled, 16 did). */
#pragma unroll 1
	for (int i = 0; i < steps; i++)
		at = next[at & ((1u << 20) - 1)];
	out[threadIdx.x + blockIdx.x * blockDim.x] = at;
}

extern "C" __global__ void cold(unsigned *out, int steps)
{
	unsigned x = threadIdx.x;

	for (int i = 0; i < steps; i++)
		x = x * 1664525u + 1013904223u;
	out[threadIdx.x + blockIdx.x * blockDim.x] = x;
}

#define CHECK(call)                                                                  \
	do {                                                                         \
		CUresult r_ = (call);                                                \
		if (r_ != CUDA_SUCCESS) {                                            \
			fprintf(stderr, "pc_hot: %s: error %d\n", #call, (int)r_);   \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

#ifndef __CUDA_ARCH__
int main(int argc, char **argv)
{
	enum { N = 1 << 20, BLOCKS = 132, THREADS = 256, STEPS = 4096 };
	int rounds = argc > 2 ? atoi(argv[2]) : 10, launches = argc > 3 ? atoi(argv[3]) : 20;
	bool unload = argc > 4 && !strcmp(argv[4], "unload");
	CUdeviceptr next, out;
	CUmodule mod = NULL;
	CUfunction fh, fc;
	CUcontext ctx;
	CUdevice dev;
	unsigned *h;
	int steps = STEPS;

	if (argc < 2) {
		fprintf(stderr, "usage: pc_hot CUBIN [ROUNDS LAUNCHES [unload]]\n");
		return 2;
	}
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuMemAlloc(&next, N * sizeof(unsigned)));
	CHECK(cuMemAlloc(&out, BLOCKS * THREADS * sizeof(unsigned)));
	h = (unsigned *)malloc(N * sizeof(unsigned));
	for (unsigned i = 0; i < N; i++)
		h[i] = (i * 2654435761u) & (N - 1); /* a scattered chain */
	CHECK(cuMemcpyHtoD(next, h, N * sizeof(unsigned)));
	for (int r = 0; r < rounds; r++) {
		if (!mod || unload) {
			CHECK(cuModuleLoad(&mod, argv[1]));
			CHECK(cuModuleGetFunction(&fh, mod, "hot"));
			CHECK(cuModuleGetFunction(&fc, mod, "cold"));
		}
		for (int l = 0; l < launches; l++) {
			void *ha[] = { &next, &out, &steps }, *ca[] = { &out, &steps };

			CHECK(cuLaunchKernel(fh, BLOCKS, 1, 1, THREADS, 1, 1, 0, NULL, ha, NULL));
			CHECK(cuLaunchKernel(fc, BLOCKS, 1, 1, THREADS, 1, 1, 0, NULL, ca, NULL));
		}
		CHECK(cuCtxSynchronize());
		if (unload) {
			CHECK(cuModuleUnload(mod));
			mod = NULL;
		}
	}
	printf("pc_hot: rounds=%d launches=%d unload=%d\n", rounds, 2 * rounds * launches, unload);
	free(h);
	return 0;
}
#endif
