/* SPDX-License-Identifier: MIT */
/*
 * graphchange: CUDA graphs changed after they were made, on the stub vendor,
 * as tools/gpu/graph_update.cu does on a real GPU (exits 0 on success, 1 on
 * a CUDA failure, 2 on bad arguments).
 *
 *   graphchange N M
 *
 * On one stream s, all from main, each step a noinline function of its own
 * (frame pointers kept):
 *   cap_one      captures k_one (grid 2): graph g1; main instantiates e1;
 *                main launches k_slow (grid 100000: 0.1 s of the fake GPU),
 *                then replay_old replays e1 N times, not synchronizing: the
 *                replays' kernels run after the update below
 *   cap_two      captures k_two (grid 3): graph g2; update_site:
 *                cuGraphExecUpdate(e1, g2); replay_new replays e1 N times
 *   set_site     cuGraphExecKernelNodeSetParams(e1, g1's node, k_three grid
 *                4); replay_set replays e1 N times (the node keeps the stack
 *                that made it: k_two's capture, README's Limits)
 *   cap_child    captures k_child (grid 1) and k_child2 (grid 2): graph gc
 *   cap_deep     captures k_deep (grid 4): graph gd
 *   cap_inner    captures k_inner (grid 3); inner_site adds a child node
 *                holding it to gc
 *   nest_site    graph gn: a child node holding gd, then k_nest (grid 5)
 *                added by cuGraphAddKernelNode
 *   child_site   graph gp: a child node holding gc, k_parent (grid 6) added
 *                by cuGraphAddKernelNode, a child node holding gn
 *   replay_child replays gp's exec M times
 *
 * Expected kernel records (the stub runs a kernel grid*1000 ns), each under
 * the site named, then "[graph captured at]", then its replay function:
 *   k_one N (cap_one, replay_old: launched before the update, run after
 *   it), k_two N (cap_two, replay_new),
 *   k_three N (cap_two, replay_set), k_child M, k_child2 M (cap_child),
 *   k_inner M (cap_inner), k_deep M (cap_deep), k_nest M (nest_site),
 *   k_parent M (child_site), all under replay_child.
 * and k_slow once, eagerly, from main.
 * Prints one line at the end: "graphchange: kernels=<3N+6M+1>".
 */
#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/progs/args.h"
#include "tests/progs/cubin.h"

#define CHECK(call) \
	do { \
		CUresult r_ = (call); \
		if (r_ != CUDA_SUCCESS) { \
			fprintf(stderr, "graphchange: %s:%d: %s failed: %d\n", \
				__FILE__, __LINE__, #call, (int)r_); \
			exit(1); \
		} \
	} while (0)
#define KEEP() __asm__ volatile("" ::: "memory")

enum { BLOCK = 32 };

static CUfunction k_one, k_two, k_three, k_child, k_child2, k_deep, k_inner, k_nest, k_parent,
	k_slow;

static CUDA_KERNEL_NODE_PARAMS params(CUfunction f, unsigned grid)
{
	CUDA_KERNEL_NODE_PARAMS p;

	memset(&p, 0, sizeof(p));
	p.func = f;
	p.gridDimX = grid;
	p.gridDimY = p.gridDimZ = 1;
	p.blockDimX = BLOCK;
	p.blockDimY = p.blockDimZ = 1;
	return p;
}

static void launch(CUfunction f, unsigned grid, CUstream s)
{
	CHECK(cuLaunchKernel(f, grid, 1, 1, BLOCK, 1, 1, 0, s, NULL, NULL));
}

#define CAPTURE_SITE(site, f, grid) \
	__attribute__((noinline)) static CUgraph site(CUstream s) \
	{ \
		CUgraph g; \
		CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL)); \
		launch(f, grid, s); \
		CHECK(cuStreamEndCapture(s, &g)); \
		KEEP(); \
		return g; \
	}

CAPTURE_SITE(cap_one, k_one, 2)
CAPTURE_SITE(cap_two, k_two, 3)
CAPTURE_SITE(cap_deep, k_deep, 4)
CAPTURE_SITE(cap_inner, k_inner, 3)

__attribute__((noinline)) static CUgraph cap_child(CUstream s)
{
	CUgraph g;

	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	launch(k_child, 1, s);
	launch(k_child2, 2, s);
	CHECK(cuStreamEndCapture(s, &g));
	KEEP();
	return g;
}

__attribute__((noinline)) static void update_site(CUgraphExec e, CUgraph g)
{
	CUgraphExecUpdateResultInfo info;

	memset(&info, 0, sizeof(info));
	CHECK(cuGraphExecUpdate(e, g, &info));
	KEEP();
}

__attribute__((noinline)) static void set_site(CUgraphExec e, CUgraph made_from)
{
	CUDA_KERNEL_NODE_PARAMS p = params(k_three, 4);
	CUgraphNode node;
	size_t n = 1;

	CHECK(cuGraphGetNodes(made_from, &node, &n));
	CHECK(cuGraphExecKernelNodeSetParams(e, node, &p));
	KEEP();
}

__attribute__((noinline)) static void inner_site(CUgraph into, CUgraph inner)
{
	CUgraphNode cn;

	CHECK(cuGraphAddChildGraphNode(&cn, into, NULL, 0, inner));
	KEEP();
}

__attribute__((noinline)) static CUgraph nest_site(CUgraph deep)
{
	CUDA_KERNEL_NODE_PARAMS p = params(k_nest, 5);
	CUgraphNode cn, kn;
	CUgraph g;

	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddChildGraphNode(&cn, g, NULL, 0, deep));
	CHECK(cuGraphAddKernelNode(&kn, g, &cn, 1, &p));
	KEEP();
	return g;
}

__attribute__((noinline)) static CUgraph child_site(CUgraph child, CUgraph nest)
{
	CUDA_KERNEL_NODE_PARAMS p = params(k_parent, 6);
	CUgraphNode cn, kn, nn;
	CUgraph g;

	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddChildGraphNode(&cn, g, NULL, 0, child));
	CHECK(cuGraphAddKernelNode(&kn, g, &cn, 1, &p));
	CHECK(cuGraphAddChildGraphNode(&nn, g, &kn, 1, nest));
	KEEP();
	return g;
}

#define REPLAY_SITE(site, sync) \
	__attribute__((noinline)) static void site(CUgraphExec e, CUstream s, long r) \
	{ \
		for (long i = 0; i < r; i++) \
			CHECK(cuGraphLaunch(e, s)); \
		if (sync) \
			CHECK(cuStreamSynchronize(s)); \
		KEEP(); \
	}

REPLAY_SITE(replay_old, 0)
REPLAY_SITE(replay_new, 1)
REPLAY_SITE(replay_set, 1)
REPLAY_SITE(replay_child, 1)

int main(int argc, char **argv)
{
	static const char *const names[] = { "k_one", "k_two", "k_three", "k_child", "k_child2",
					     "k_deep", "k_inner", "k_nest", "k_parent", "k_slow" };
	CUfunction *const fns[] = { &k_one, &k_two, &k_three, &k_child, &k_child2,
				    &k_deep, &k_inner, &k_nest, &k_parent, &k_slow };
	CUgraph g1, g2, gc, gd, gn, gp;
	CUgraphExec e1, ep;
	uint8_t img[4096];
	CUcontext ctx;
	CUmodule mod;
	CUstream s;
	long n, m;

	if (argc != 3) {
		fprintf(stderr, "usage: graphchange N M\n");
		return 2;
	}
	n = parse_count("graphchange", argv[1]);
	m = parse_count("graphchange", argv[2]);
	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	if (!cubin_build(img, sizeof(img), "graphchange", names, 10))
		return 1;
	CHECK(cuModuleLoadData(&mod, img));
	for (int i = 0; i < 10; i++)
		CHECK(cuModuleGetFunction(fns[i], mod, names[i]));
	CHECK(cuStreamCreate(&s, 0));

	g1 = cap_one(s);
	CHECK(cuGraphInstantiate(&e1, g1, 0));
	launch(k_slow, 100000, s);
	replay_old(e1, s, n);
	g2 = cap_two(s);
	update_site(e1, g2);
	replay_new(e1, s, n);
	set_site(e1, g1);
	replay_set(e1, s, n);

	gc = cap_child(s);
	gd = cap_deep(s);
	inner_site(gc, cap_inner(s));
	gn = nest_site(gd);
	gp = child_site(gc, gn);
	CHECK(cuGraphInstantiate(&ep, gp, 0));
	replay_child(ep, s, m);

	CHECK(cuGraphExecDestroy(e1));
	CHECK(cuGraphExecDestroy(ep));
	CHECK(cuGraphDestroy(gp));
	CHECK(cuGraphDestroy(gn));
	CHECK(cuGraphDestroy(gd));
	CHECK(cuGraphDestroy(gc));
	CHECK(cuGraphDestroy(g2));
	CHECK(cuGraphDestroy(g1));
	CHECK(cuModuleUnload(mod));
	CHECK(cuDevicePrimaryCtxRelease(0));
	printf("graphchange: kernels=%ld\n", 3 * n + 6 * m + 1);
	return 0;
}
