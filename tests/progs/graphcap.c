/* SPDX-License-Identifier: MIT */
/*
 * graphcap: CUDA graphs made by stream capture, replayed from elsewhere, on
 * the stub vendor: the kernels of a replay ran from replay_loop, but their
 * launches were written in capture_one/capture_two (exits 0 on success, 1 on
 * a CUDA failure, 2 on bad arguments).
 *
 *   graphcap N M
 *
 * On one stream s (all from main, each step a distinct noinline function,
 * frame pointers kept):
 *   capture_one   cuStreamBeginCapture(s); twice launch_one(s), a noinline
 *                 helper doing cuLaunchKernel(g_one, grid 2) from one call
 *                 site (a loop): both nodes share one capture stack;
 *                 cuStreamEndCapture -> graph 1 (2 kernel nodes)
 *   capture_two   cuStreamBeginCapture(s); cuLaunchKernel(g_two, grid 3)
 *                 directly; cuStreamEndCapture -> graph 2 (1 kernel node)
 *   main          cuGraphInstantiate both
 *   build_three   cuGraphCreate, cuGraphAddKernelNode(g_three, grid 4):
 *                 graph 3 made by the explicit node API; main instantiates it
 *   replay_loop   N x cuGraphLaunch(exec of graph 1), then
 *                 M x cuGraphLaunch(exec of graph 2), then
 *                 N x cuGraphLaunch(exec of graph 3)
 *   main          cuLaunchKernel(g_eager, grid 1) eagerly, cuStreamSynchronize
 * Blocks are (32,1,1); the module "graphcap" holds g_one, g_two, g_eager, g_three.
 *
 * Expected (the stub runs a kernel grid*1000 ns): kernel records
 *   g_one   2N, 4000*N ns  (N cuGraphLaunch calls, 2 kernels each)
 *   g_two   M,  3000*M ns  (M cuGraphLaunch calls)
 *   g_three N,  4000*N ns  (N cuGraphLaunch calls)
 *   g_eager 1,  1000 ns    (one cuLaunchKernel)
 * Capturing makes 3 cuLaunchKernel API calls (records, no kernels). On the
 * stub, with nothing else making graphs, the captured graphs are 1 and 2,
 * their execs' graphs 3 and 5 (replays carry those ids and the clones' node
 * ids, (graph << 32) | index).
 * Prints one line at the end: "graphcap: replays=<2N+M> kernels=<3N+M+1>".
 */
#include <cuda.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/progs/args.h"
#include "tests/progs/cubin.h"

#define CHECK(call) \
	do { \
		CUresult r_ = (call); \
		if (r_ != CUDA_SUCCESS) { \
			fprintf(stderr, "graphcap: %s:%d: %s failed: %d\n", \
				__FILE__, __LINE__, #call, (int)r_); \
			exit(1); \
		} \
	} while (0)

enum { GRID_ONE = 2, GRID_TWO = 3, GRID_EAGER = 1, GRID_THREE = 4, BLOCK = 32 };

static CUfunction g_one, g_two, g_eager, g_three;

__attribute__((noinline)) static void launch_one(CUstream s)
{
	CHECK(cuLaunchKernel(g_one, GRID_ONE, 1, 1, BLOCK, 1, 1, 0, s, NULL, NULL));
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static CUgraph capture_one(CUstream s)
{
	CUgraph g;

	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	for (int i = 0; i < 2; i++)
		launch_one(s);
	CHECK(cuStreamEndCapture(s, &g));
	__asm__ volatile("" ::: "memory");
	return g;
}

__attribute__((noinline)) static CUgraph capture_two(CUstream s)
{
	CUgraph g;

	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(cuLaunchKernel(g_two, GRID_TWO, 1, 1, BLOCK, 1, 1, 0, s, NULL, NULL));
	CHECK(cuStreamEndCapture(s, &g));
	__asm__ volatile("" ::: "memory");
	return g;
}

__attribute__((noinline)) static CUgraph build_three(void)
{
	CUDA_KERNEL_NODE_PARAMS p = {
		.func = g_three, .gridDimX = GRID_THREE, .gridDimY = 1, .gridDimZ = 1,
		.blockDimX = BLOCK, .blockDimY = 1, .blockDimZ = 1,
	};
	CUgraphNode node;
	CUgraph g;

	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddKernelNode(&node, g, NULL, 0, &p));
	__asm__ volatile("" ::: "memory");
	return g;
}

__attribute__((noinline)) static void replay_loop(CUgraphExec e1, CUgraphExec e2, CUgraphExec e3,
						  CUstream s, long n, long m)
{
	for (long i = 0; i < n; i++)
		CHECK(cuGraphLaunch(e1, s));
	for (long i = 0; i < m; i++)
		CHECK(cuGraphLaunch(e2, s));
	for (long i = 0; i < n; i++)
		CHECK(cuGraphLaunch(e3, s));
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	static const char *const kernels[] = { "g_one", "g_two", "g_eager", "g_three" };
	CUgraphExec e1, e2, e3;
	uint8_t img[2048];
	CUgraph g1, g2, g3;
	CUcontext ctx;
	CUmodule mod;
	CUstream s;
	long n, m;

	if (argc != 3) {
		fprintf(stderr, "usage: graphcap N M\n");
		return 2;
	}
	n = parse_count("graphcap", argv[1]);
	m = parse_count("graphcap", argv[2]);
	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	if (!cubin_build(img, sizeof(img), "graphcap", kernels, 4))
		return 1;
	CHECK(cuModuleLoadData(&mod, img));
	CHECK(cuModuleGetFunction(&g_one, mod, "g_one"));
	CHECK(cuModuleGetFunction(&g_two, mod, "g_two"));
	CHECK(cuModuleGetFunction(&g_eager, mod, "g_eager"));
	CHECK(cuModuleGetFunction(&g_three, mod, "g_three"));
	CHECK(cuStreamCreate(&s, 0));
	g1 = capture_one(s);
	g2 = capture_two(s);
	CHECK(cuGraphInstantiate(&e1, g1, 0));
	CHECK(cuGraphInstantiate(&e2, g2, 0));
	g3 = build_three();
	CHECK(cuGraphInstantiate(&e3, g3, 0));
	replay_loop(e1, e2, e3, s, n, m);
	CHECK(cuLaunchKernel(g_eager, GRID_EAGER, 1, 1, BLOCK, 1, 1, 0, s, NULL, NULL));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuGraphExecDestroy(e1));
	CHECK(cuGraphExecDestroy(e2));
	CHECK(cuGraphExecDestroy(e3));
	CHECK(cuGraphDestroy(g3));
	CHECK(cuGraphDestroy(g1));
	CHECK(cuGraphDestroy(g2));
	CHECK(cuModuleUnload(mod));
	CHECK(cuDevicePrimaryCtxRelease(0));
	printf("graphcap: replays=%ld kernels=%ld\n", 2 * n + m, 3 * n + m + 1);
	return 0;
}
