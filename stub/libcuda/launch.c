/* SPDX-License-Identifier: MIT */
/*
 * Kernel launches and graphs on the fake GPU. A kernel runs
 * gridX*gridY*gridZ microseconds, back to back on its stream (see
 * drv_schedule); nothing sleeps, only timestamps move. Each launch path
 * (cuLaunchKernel, _ptsz, Ex, Ex_ptsz, Cooperative, Cooperative_ptsz,
 * cuGraphLaunch, _ptsz) is its own exported function for the uprobes.
 *
 * A graph (built in graph.c) runs its kernel nodes one after the other, in
 * the order they were added, on the launch stream: one API record, n kernel
 * records carrying graphId and graphNodeId of the exec's own graph and
 * nodes (the clones instantiation made, not the source graph's).
 *
 * On a capturing stream (graph.c) a launch, on any path, runs nothing: it
 * adds a kernel node to the capture's graph and reports GRAPHNODE_CREATED
 * inside the call; its API record is made as for any launch.
 */
#include "stub/libcuda/internal.h"

#include <stdlib.h>
#include <string.h>

struct launch_args {
	CUfunction f;
	uint32_t grid[3];
	uint32_t block[3];
	uint32_t cluster[3];
	uint32_t smem;
	CUstream stream;
	bool per_thread;
	bool cooperative;
};

static uint64_t kernel_ns(const uint32_t grid[3])
{
	return (uint64_t)grid[0] * grid[1] * grid[2] * 1000ull;
}

/* Caller holds g_drv.mu. Queues one kernel and reports it. */
static void run_kernel(const struct stub_api_call *c, struct CUfunc_st *f,
		       struct CUstream_st *s, struct stub_kernel_exec *k)
{
	const struct stub_cupti_ops *ops = c->cupti;

	drv_module_device_load(f->mod); /* lazy loading: inside the launch */
	k->name = f->name;
	k->module_id = f->mod->id;
	k->context_id = STUB_CONTEXT_ID;
	k->stream_id = s->id;
	drv_schedule(s, drv_launch_time(c), kernel_ns(k->grid), &k->start_ns,
		     &k->end_ns);
	if (ops)
		ops->kernel(c, k);
}

/* Caller holds g_drv.mu; s is capturing. The launch becomes a kernel node
 * of the capture's graph: nothing runs, no kernel record. */
static CUresult capture_kernel(struct CUstream_st *s, struct CUfunc_st *f,
			       const struct stub_kernel_exec *k,
			       struct CUgraphNode_st **ret_node)
{
	struct CUgraphNode_st tmpl = {
		.func = f,
		.smem = k->dynamic_smem,
		.cooperative = k->cooperative,
	};

	if (s->capture_invalid)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	memcpy(tmpl.grid, k->grid, sizeof(tmpl.grid));
	memcpy(tmpl.block, k->block, sizeof(tmpl.block));
	memcpy(tmpl.cluster, k->cluster, sizeof(tmpl.cluster));
	return drv_graph_add(s->capture, &tmpl, ret_node);
}

static CUresult launch(const struct stub_api_call *c, const struct launch_args *a)
{
	struct stub_kernel_exec k = { .cooperative = a->cooperative,
				      .dynamic_smem = a->smem };
	struct CUgraphNode_st *node = NULL;
	struct CUgraph_st *graph = NULL;
	struct CUstream_st *s;
	struct CUfunc_st *f;
	CUresult r = drv_check_ctx();

	if (r != CUDA_SUCCESS)
		return r;
	if (!drv_dims_ok(a->grid) || !drv_dims_ok(a->block))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(k.grid, a->grid, sizeof(k.grid));
	memcpy(k.block, a->block, sizeof(k.block));
	memcpy(k.cluster, a->cluster, sizeof(k.cluster));
	pthread_mutex_lock(&g_drv.mu);
	f = drv_func(a->f);
	s = drv_stream(a->stream, a->per_thread);
	if (!f || !s) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (s->capture) {
		graph = s->capture;
		r = capture_kernel(s, f, &k, &node);
	} else {
		run_kernel(c, f, s, &k);
	}
	pthread_mutex_unlock(&g_drv.mu);
	if (node) /* as the real driver: inside the launch, on this thread */
		drv_report_node_created(c, graph, node);
	return r;
}

#define LAUNCH_ARGS(pt, coop) \
	{ .f = f, .grid = { gridDimX, gridDimY, gridDimZ }, \
	  .block = { blockDimX, blockDimY, blockDimZ }, \
	  .smem = sharedMemBytes, .stream = hStream, .per_thread = (pt), \
	  .cooperative = (coop) }

STUB_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX,
				 unsigned int gridDimY, unsigned int gridDimZ,
				 unsigned int blockDimX, unsigned int blockDimY,
				 unsigned int blockDimZ, unsigned int sharedMemBytes,
				 CUstream hStream, void **kernelParams, void **extra)
{
	struct launch_args a = LAUNCH_ARGS(false, false);

	API_BEGIN(cuLaunchKernel);
	(void)kernelParams, (void)extra;
	API_END(launch(&call_, &a));
}

STUB_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
				      unsigned int gridDimY, unsigned int gridDimZ,
				      unsigned int blockDimX, unsigned int blockDimY,
				      unsigned int blockDimZ,
				      unsigned int sharedMemBytes, CUstream hStream,
				      void **kernelParams, void **extra)
{
	struct launch_args a = LAUNCH_ARGS(true, false);

	API_BEGIN(cuLaunchKernel_ptsz);
	(void)kernelParams, (void)extra;
	API_END(launch(&call_, &a));
}

STUB_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
					    unsigned int gridDimY,
					    unsigned int gridDimZ,
					    unsigned int blockDimX,
					    unsigned int blockDimY,
					    unsigned int blockDimZ,
					    unsigned int sharedMemBytes,
					    CUstream hStream, void **kernelParams)
{
	struct launch_args a = LAUNCH_ARGS(false, true);

	API_BEGIN(cuLaunchCooperativeKernel);
	(void)kernelParams;
	API_END(launch(&call_, &a));
}

STUB_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f,
						 unsigned int gridDimX,
						 unsigned int gridDimY,
						 unsigned int gridDimZ,
						 unsigned int blockDimX,
						 unsigned int blockDimY,
						 unsigned int blockDimZ,
						 unsigned int sharedMemBytes,
						 CUstream hStream,
						 void **kernelParams)
{
	struct launch_args a = LAUNCH_ARGS(true, true);

	API_BEGIN(cuLaunchCooperativeKernel_ptsz);
	(void)kernelParams;
	API_END(launch(&call_, &a));
}

static CUresult launch_ex(const struct stub_api_call *c,
			  const CUlaunchConfig *cfg, CUfunction f, bool per_thread)
{
	struct launch_args a = { .f = f, .per_thread = per_thread };

	if (!cfg || (cfg->numAttrs && !cfg->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	a.grid[0] = cfg->gridDimX, a.grid[1] = cfg->gridDimY, a.grid[2] = cfg->gridDimZ;
	a.block[0] = cfg->blockDimX, a.block[1] = cfg->blockDimY, a.block[2] = cfg->blockDimZ;
	a.smem = cfg->sharedMemBytes;
	a.stream = cfg->hStream;
	for (unsigned int i = 0; i < cfg->numAttrs; i++) {
		const CUlaunchAttribute *at = &cfg->attrs[i];

		if (at->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
			a.cluster[0] = at->value.clusterDim.x;
			a.cluster[1] = at->value.clusterDim.y;
			a.cluster[2] = at->value.clusterDim.z;
		} else if (at->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
			a.cooperative = at->value.cooperative != 0;
		}
	}
	return launch(c, &a);
}

STUB_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
				   void **kernelParams, void **extra)
{
	API_BEGIN(cuLaunchKernelEx);
	(void)kernelParams, (void)extra;
	API_END(launch_ex(&call_, config, f, false));
}

STUB_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config,
					CUfunction f, void **kernelParams,
					void **extra)
{
	API_BEGIN(cuLaunchKernelEx_ptsz);
	(void)kernelParams, (void)extra;
	API_END(launch_ex(&call_, config, f, true));
}

/* ------------------------------------------------------------ graph launch */

static CUresult graph_launch(const struct stub_api_call *c, CUgraphExec e,
			     CUstream hStream, bool per_thread)
{
	struct CUstream_st *s;
	CUresult r = drv_check_ctx();

	if (r != CUDA_SUCCESS)
		return r;
	if (!e || e->magic != STUB_MAGIC_EXEC)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&g_drv.mu);
	s = drv_stream(hStream, per_thread);
	if (s)
		r = drv_capture_unsupported(s);
	for (size_t i = 0; s && r == CUDA_SUCCESS && i < e->n; i++) {
		const struct CUgraphNode_st *n = &e->nodes[i];
		struct stub_kernel_exec k = {
			.graph_id = e->graph.id,
			.graph_node_id = n->id,
			.dynamic_smem = n->smem,
			.cooperative = n->cooperative,
		};

		if (n->child)
			continue; /* a child-graph node: its kernels are nodes of their own */
		if (!drv_func((CUfunction)n->func)) {
			r = CUDA_ERROR_INVALID_HANDLE; /* module unloaded */
			break;
		}
		memcpy(k.grid, n->grid, sizeof(k.grid));
		memcpy(k.block, n->block, sizeof(k.block));
		memcpy(k.cluster, n->cluster, sizeof(k.cluster));
		run_kernel(c, n->func, s, &k);
	}
	pthread_mutex_unlock(&g_drv.mu);
	return s ? r : CUDA_ERROR_INVALID_HANDLE;
}

STUB_API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	API_BEGIN(cuGraphLaunch);
	API_END(graph_launch(&call_, hGraphExec, hStream, false));
}

STUB_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	API_BEGIN(cuGraphLaunch_ptsz);
	API_END(graph_launch(&call_, hGraphExec, hStream, true));
}
