/* SPDX-License-Identifier: MIT */
/*
 * What the stand-in engine's programs share (main.c: autograd, cases.c:
 * autograd_cases): CUDA on the stub, a module of named kernels, one
 * stream, the engine started once the loader has probed it. Each program
 * defines PROG (its name, for messages) before including this.
 */
#ifndef GP_TESTS_ENGINE_PROG_H
#define GP_TESTS_ENGINE_PROG_H

#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/progs/cubin.h"
#include "base.h"
#include "engine.h"

static CUmodule mod;

/*
 * CUDA up, the module of kernels[0..n) loaded into fns, the stream made,
 * fns[0] launched unless launch_first is 0 (the loader meets the process's
 * driver calls and probes its engine), the engine started once both its
 * functions carry a breakpoint. 0, or the exit status: 1 (CUDA), 3 (the
 * probes never appeared).
 */
static int prog__start_with(const char *const *kernels, CUfunction *fns, int n, int launch_first)
{
	uint8_t img[2048];

	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	if (!cubin_build(img, sizeof(img), PROG, kernels, n))
		return 1;
	CHECK(cuModuleLoadData(&mod, img));
	for (int i = 0; i < n; i++)
		CHECK(cuModuleGetFunction(&fns[i], mod, kernels[i]));
	CHECK(cuStreamCreate(&stream, 0));
	if (launch_first) {
		CHECK(cuLaunchKernel(fns[0], 1, 1, 1, BLOCK, 1, 1, 0, stream, NULL, NULL));
		CHECK(cuStreamSynchronize(stream));
	}
	if (engine__start() || wait_for(engine__probed)) {
		fprintf(stderr, PROG ": the engine's probes never appeared\n");
		return 3;
	}
	return 0;
}

static inline int prog__start(const char *const *kernels, CUfunction *fns, int n)
{
	return prog__start_with(kernels, fns, n, 1);
}

static void no_work(void *arg)
{
	(void)arg;
}

/*
 * With GP_TEST_QUIET_NODES=1 in the environment: passes of 8 nodes that
 * launch nothing, begun by this thread, until the loader has taken the
 * node probe away (it has learnt the engine thread's call: user/session/
 * node_watch.h), a minute at most. 0, or 3 when it never went.
 */
static int prog__quiet_nodes(void)
{
	struct timespec ms = { 0, 10 * 1000 * 1000 };
	const char *e = getenv("GP_TEST_QUIET_NODES");

	if (!e || strcmp(e, "1"))
		return 0;
	for (int i = 0; i < 6000 && engine__node_probed(); i++) {
		struct engine_task warm = { .fn = no_work, .nodes = 8 };

		engine__backward(&warm);
		nanosleep(&ms, NULL);
	}
	if (engine__node_probed()) {
		fprintf(stderr, PROG ": the node probe never went away\n");
		return 3;
	}
	return 0;
}

static void prog__end(void)
{
	CHECK(cuStreamSynchronize(stream));
	CHECK(cuModuleUnload(mod));
	CHECK(cuDevicePrimaryCtxRelease(0));
}

/* k launched depth frames deeper, each with a page of its own (below any node's call). */
__attribute__((noinline)) static void deep_after(CUfunction k, int depth)
{
	volatile char pad[4096];

	pad[0] = (char)depth;
	if (depth > 0)
		deep_after(k, depth - 1);
	else
		CHECK(cuLaunchKernel(k, 1, 1, 1, BLOCK, 1, 1, 0, stream, NULL, NULL));
	__asm__ volatile("" ::: "memory");
	(void)pad[0];
}

#endif
