/* SPDX-License-Identifier: MIT */
/*
 * Kernel launches and graphs on the fake GPU. A kernel runs
 * gridX*gridY*gridZ microseconds, back to back on its stream (see
 * drv_schedule); nothing sleeps, only timestamps move. Each launch path
 * (cuLaunchKernel, _ptsz, Ex, Ex_ptsz, Cooperative, Cooperative_ptsz,
 * cuGraphLaunch, _ptsz) is its own exported function for the uprobes.
 *
 * A graph runs its kernel nodes one after the other, in the order they were
 * added, on the launch stream: one API record, n kernel records carrying
 * graphId (the CUgraph's id) and graphNodeId (the node's id).
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

static bool dims_ok(const uint32_t d[3])
{
	return d[0] && d[1] && d[2];
}

static CUresult launch(const struct stub_api_call *c, const struct launch_args *a)
{
	struct stub_kernel_exec k = { .cooperative = a->cooperative,
				      .dynamic_smem = a->smem };
	struct CUstream_st *s;
	struct CUfunc_st *f;
	CUresult r = drv_check_ctx();

	if (r != CUDA_SUCCESS)
		return r;
	if (!dims_ok(a->grid) || !dims_ok(a->block))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(k.grid, a->grid, sizeof(k.grid));
	memcpy(k.block, a->block, sizeof(k.block));
	memcpy(k.cluster, a->cluster, sizeof(k.cluster));
	pthread_mutex_lock(&g_drv.mu);
	f = drv_func(a->f);
	s = drv_stream(a->stream, a->per_thread);
	if (f && s)
		run_kernel(c, f, s, &k);
	pthread_mutex_unlock(&g_drv.mu);
	return f && s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
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

/* ------------------------------------------------------------ graphs */

struct CUgraphNode_st {
	uint32_t magic;
	uint64_t id;
	struct CUfunc_st *func;
	uint32_t grid[3];
	uint32_t block[3];
	uint32_t smem;
};

struct CUgraph_st {
	uint32_t magic;
	uint32_t id;
	size_t n, cap;
	struct CUgraphNode_st **nodes;
};

struct CUgraphExec_st {
	uint32_t magic;
	uint32_t graph_id;
	size_t n;
	struct CUgraphNode_st nodes[]; /* copies: the graph may go first */
};

static bool graph_live(const struct CUgraph_st *g)
{
	return g && g->magic == STUB_MAGIC_GRAPH;
}

STUB_API CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	struct CUgraph_st *g;

	API_BEGIN(cuGraphCreate);
	if (!drv_is_initialized())
		API_END(CUDA_ERROR_NOT_INITIALIZED);
	if (!phGraph || flags != 0)
		API_END(CUDA_ERROR_INVALID_VALUE);
	g = calloc(1, sizeof(*g));
	if (!g)
		API_END(CUDA_ERROR_OUT_OF_MEMORY);
	g->magic = STUB_MAGIC_GRAPH;
	pthread_mutex_lock(&g_drv.mu);
	g->id = g_drv.next_graph_id++;
	pthread_mutex_unlock(&g_drv.mu);
	*phGraph = g;
	API_END(CUDA_SUCCESS);
}

static bool graph_grow(struct CUgraph_st *g)
{
	size_t cap = g->cap ? g->cap * 2 : 4;
	struct CUgraphNode_st **nodes;

	if (g->n < g->cap)
		return true;
	nodes = realloc(g->nodes, cap * sizeof(*nodes));
	if (!nodes)
		return false;
	g->nodes = nodes;
	g->cap = cap;
	return true;
}

/* Caller holds g_drv.mu. Adding a kernel node needs its code: it loads the
 * module (see module.c's rule). */
static CUresult graph_add(struct CUgraph_st *g, struct CUgraphNode_st *tmpl,
			  CUfunction func, CUgraphNode *ret_node)
{
	struct CUgraphNode_st *node;

	tmpl->func = drv_func(func);
	if (!graph_live(g) || !tmpl->func)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!dims_ok(tmpl->grid) || !dims_ok(tmpl->block))
		return CUDA_ERROR_INVALID_VALUE;
	node = malloc(sizeof(*node));
	if (!node || !graph_grow(g)) {
		free(node);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*node = *tmpl;
	node->magic = STUB_MAGIC_NODE;
	node->id = g_drv.next_node_id++;
	drv_module_device_load(node->func->mod);
	g->nodes[g->n++] = node;
	*ret_node = node;
	return CUDA_SUCCESS;
}

static CUresult add_kernel_node(CUgraphNode *ph, CUgraph hGraph,
				const CUgraphNode *deps, size_t ndeps,
				CUfunction func, struct CUgraphNode_st *tmpl)
{
	CUresult r;

	if (!ph || (ndeps && !deps))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_drv.mu);
	r = graph_add(hGraph, tmpl, func, ph);
	pthread_mutex_unlock(&g_drv.mu);
	return r;
}

#define NODE_TMPL(p) \
	{ .grid = { (p)->gridDimX, (p)->gridDimY, (p)->gridDimZ }, \
	  .block = { (p)->blockDimX, (p)->blockDimY, (p)->blockDimZ }, \
	  .smem = (p)->sharedMemBytes }

STUB_API CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode,
					  CUgraph hGraph,
					  const CUgraphNode *dependencies,
					  size_t numDependencies,
					  const CUDA_KERNEL_NODE_PARAMS *p)
{
	struct CUgraphNode_st tmpl;
	CUfunction func;
	CUresult r;

	API_BEGIN(cuGraphAddKernelNode_v2);
	r = drv_check_ctx();
	if (r != CUDA_SUCCESS || !p)
		API_END(r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE);
	tmpl = (struct CUgraphNode_st)NODE_TMPL(p);
	func = p->func ? p->func : (CUfunction)p->kern;
	API_END(add_kernel_node(phGraphNode, hGraph, dependencies,
				numDependencies, func, &tmpl));
}

STUB_API CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
				       const CUgraphNode *dependencies,
				       size_t numDependencies,
				       const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	struct CUgraphNode_st tmpl;
	CUresult r;

	API_BEGIN(cuGraphAddKernelNode);
	r = drv_check_ctx();
	if (r != CUDA_SUCCESS || !p)
		API_END(r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE);
	tmpl = (struct CUgraphNode_st)NODE_TMPL(p);
	API_END(add_kernel_node(phGraphNode, hGraph, dependencies,
				numDependencies, p->func, &tmpl));
}

static CUresult instantiate(CUgraphExec *phExec, CUgraph g)
{
	struct CUgraphExec_st *e;

	if (!phExec)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_drv.mu);
	if (!graph_live(g)) {
		pthread_mutex_unlock(&g_drv.mu);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	e = calloc(1, sizeof(*e) + g->n * sizeof(e->nodes[0]));
	if (e) {
		e->magic = STUB_MAGIC_EXEC;
		e->graph_id = g->id;
		e->n = g->n;
		for (size_t i = 0; i < g->n; i++)
			e->nodes[i] = *g->nodes[i];
	}
	pthread_mutex_unlock(&g_drv.mu);
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*phExec = e;
	return CUDA_SUCCESS;
}

STUB_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec,
					      CUgraph hGraph,
					      unsigned long long flags)
{
	API_BEGIN(cuGraphInstantiateWithFlags);
	(void)flags;
	API_END(instantiate(phGraphExec, hGraph));
}

STUB_API CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
				     CUgraphNode *phErrorNode, char *logBuffer,
				     size_t bufferSize)
{
	API_BEGIN(cuGraphInstantiate);
	(void)phErrorNode;
	if (logBuffer && bufferSize)
		logBuffer[0] = '\0';
	API_END(instantiate(phGraphExec, hGraph));
}

STUB_API CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
					CUgraphNode *phErrorNode, char *logBuffer,
					size_t bufferSize)
{
	API_BEGIN(cuGraphInstantiate_v2);
	(void)phErrorNode;
	if (logBuffer && bufferSize)
		logBuffer[0] = '\0';
	API_END(instantiate(phGraphExec, hGraph));
}

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
	for (size_t i = 0; s && i < e->n; i++) {
		const struct CUgraphNode_st *n = &e->nodes[i];
		struct stub_kernel_exec k = {
			.graph_id = e->graph_id,
			.graph_node_id = n->id,
			.dynamic_smem = n->smem,
		};

		if (!drv_func((CUfunction)n->func)) {
			r = CUDA_ERROR_INVALID_HANDLE; /* module unloaded */
			break;
		}
		memcpy(k.grid, n->grid, sizeof(k.grid));
		memcpy(k.block, n->block, sizeof(k.block));
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

STUB_API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	API_BEGIN(cuGraphExecDestroy);
	if (!hGraphExec || hGraphExec->magic != STUB_MAGIC_EXEC)
		API_END(CUDA_ERROR_INVALID_HANDLE);
	hGraphExec->magic = 0;
	free(hGraphExec);
	API_END(CUDA_SUCCESS);
}

STUB_API CUresult cuGraphDestroy(CUgraph hGraph)
{
	API_BEGIN(cuGraphDestroy);
	pthread_mutex_lock(&g_drv.mu);
	if (!graph_live(hGraph)) {
		pthread_mutex_unlock(&g_drv.mu);
		API_END(CUDA_ERROR_INVALID_HANDLE);
	}
	hGraph->magic = 0;
	pthread_mutex_unlock(&g_drv.mu);
	for (size_t i = 0; i < hGraph->n; i++)
		free(hGraph->nodes[i]);
	free(hGraph->nodes);
	free(hGraph);
	API_END(CUDA_SUCCESS);
}
