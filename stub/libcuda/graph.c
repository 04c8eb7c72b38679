/* SPDX-License-Identifier: MIT */
/*
 * Graphs of the stub driver: cuGraphCreate, kernel nodes, instantiation and
 * destruction. Launching an instantiated graph is launch.c's (cuGraphLaunch
 * is one more launch path).
 *
 * Ids as the real driver (CUDA 13, measured) gives them: graphs 1, 2, 3, ...
 * in creation order; a node is (its graph's id << 32) | its index in that
 * graph. Instantiation makes a new graph, the exec's own (the next graph id,
 * which is also what cuptiGetGraphExecId says), holding a clone of each node
 * with an id of that graph; replays report the exec's graph id and the
 * clones' ids. The real driver may skip graph ids (it made an internal graph
 * per instantiation on the measured machine): ids are unique, not dense.
 */
#include "stub/libcuda/internal.h"

#include <stdlib.h>

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
	if (!drv_dims_ok(tmpl->grid) || !drv_dims_ok(tmpl->block))
		return CUDA_ERROR_INVALID_VALUE;
	node = malloc(sizeof(*node));
	if (!node || !graph_grow(g)) {
		free(node);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*node = *tmpl;
	node->magic = STUB_MAGIC_NODE;
	node->id = drv_node_id(g->id, g->n);
	drv_module_device_load(node->func->mod);
	g->nodes[g->n++] = node;
	*ret_node = node;
	return CUDA_SUCCESS;
}

/* No driver lock held (see stub_hooks.h): GRAPHNODE_CREATED for node n of
 * graph g, inside the API call c. */
void drv_report_node_created(const struct stub_api_call *c,
			     struct CUgraph_st *g, struct CUgraphNode_st *n)
{
	const struct stub_cupti_ops *ops = c->cupti;
	struct stub_graph_event ev = {
		.context = &g_drv.primary,
		.graph = g,
		.node = n,
		.node_type = CU_GRAPH_NODE_TYPE_KERNEL,
	};

	if (ops)
		ops->graph_node_created(&ev);
}

static CUresult add_kernel_node(const struct stub_api_call *c, CUgraphNode *ph,
				CUgraph hGraph, const CUgraphNode *deps,
				size_t ndeps, CUfunction func,
				struct CUgraphNode_st *tmpl)
{
	CUresult r;

	if (!ph || (ndeps && !deps))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_drv.mu);
	r = graph_add(hGraph, tmpl, func, ph);
	pthread_mutex_unlock(&g_drv.mu);
	if (r == CUDA_SUCCESS)
		drv_report_node_created(c, hGraph, *ph);
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
	API_END(add_kernel_node(&call_, phGraphNode, hGraph, dependencies,
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
	API_END(add_kernel_node(&call_, phGraphNode, hGraph, dependencies,
				numDependencies, p->func, &tmpl));
}

/* No driver lock held: the clones of instantiation as the real driver
 * reports them, per node GRAPHNODE_CREATED then GRAPHNODE_CLONED (graphExec
 * NULL, as measured), then GRAPHEXEC_CREATED naming the source graph. */
static void report_instantiated(const struct stub_api_call *c,
				struct CUgraph_st *g, struct CUgraphExec_st *e)
{
	const struct stub_cupti_ops *ops = c->cupti;
	struct stub_graph_event ev = {
		.context = &g_drv.primary,
		.node_type = CU_GRAPH_NODE_TYPE_KERNEL,
	};

	if (!ops)
		return;
	for (size_t i = 0; i < e->n; i++) {
		drv_report_node_created(c, &e->graph, &e->nodes[i]);
		ev.graph = &e->graph;
		ev.node = &e->nodes[i];
		ev.original_graph = g;
		ev.original_node = g->nodes[i];
		ops->graph_node_cloned(&ev);
	}
	ev = (struct stub_graph_event){ .context = &g_drv.primary, .graph = g,
					.graph_exec = e };
	ops->graph_exec_created(&ev);
}

static CUresult instantiate(const struct stub_api_call *c, CUgraphExec *phExec,
			    CUgraph g)
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
		e->graph.magic = STUB_MAGIC_EXEC_GRAPH;
		e->graph.id = g_drv.next_graph_id++;
		e->n = g->n;
		for (size_t i = 0; i < g->n; i++) {
			e->nodes[i] = *g->nodes[i];
			e->nodes[i].id = drv_node_id(e->graph.id, i);
		}
	}
	pthread_mutex_unlock(&g_drv.mu);
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	report_instantiated(c, g, e);
	*phExec = e;
	return CUDA_SUCCESS;
}

STUB_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec,
					      CUgraph hGraph,
					      unsigned long long flags)
{
	API_BEGIN(cuGraphInstantiateWithFlags);
	(void)flags;
	API_END(instantiate(&call_, phGraphExec, hGraph));
}

STUB_API CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
				     CUgraphNode *phErrorNode, char *logBuffer,
				     size_t bufferSize)
{
	API_BEGIN(cuGraphInstantiate);
	(void)phErrorNode;
	if (logBuffer && bufferSize)
		logBuffer[0] = '\0';
	API_END(instantiate(&call_, phGraphExec, hGraph));
}

STUB_API CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
					CUgraphNode *phErrorNode, char *logBuffer,
					size_t bufferSize)
{
	API_BEGIN(cuGraphInstantiate_v2);
	(void)phErrorNode;
	if (logBuffer && bufferSize)
		logBuffer[0] = '\0';
	API_END(instantiate(&call_, phGraphExec, hGraph));
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
