/* SPDX-License-Identifier: MIT */
/*
 * Graphs of the stub driver: cuGraphCreate, kernel nodes, stream capture,
 * instantiation and destruction. Launching an instantiated graph, and
 * adding a captured launch to its graph, is launch.c's.
 *
 * Ids as the real driver (CUDA 13, measured) gives them: graphs 1, 2, 3, ...
 * in creation order; a node is (its graph's id << 32) | its index in that
 * graph. Instantiation makes a new graph, the exec's own (the next graph id,
 * which is also what cuptiGetGraphExecId says), holding a clone of each node
 * with an id of that graph; replays report the exec's graph id and the
 * clones' ids. On the measured driver each instantiation also used up the
 * id after its own (execs of graphs 1, 2, 1 were graphs 3, 5, 7; what took
 * 4 and 6 never showed in CUPTI): the stub skips that id too, so graph ids
 * are unique but not dense, and the graph_nodes scenario
 * (tests/progs/graphsub.c) gets the real run's ids.
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

/* Caller holds g_drv.mu; g is live, tmpl's function and dimensions are
 * checked. Adding a kernel node needs its code: it loads the module (see
 * module.c's rule). */
CUresult drv_graph_add(struct CUgraph_st *g, const struct CUgraphNode_st *tmpl,
		       struct CUgraphNode_st **ret_node)
{
	struct CUgraphNode_st *node = malloc(sizeof(*node));

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

/* Caller holds g_drv.mu. */
static CUresult graph_add(struct CUgraph_st *g, struct CUgraphNode_st *tmpl,
			  CUfunction func, CUgraphNode *ret_node)
{
	tmpl->func = drv_func(func);
	if (!graph_live(g) || !tmpl->func)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!drv_dims_ok(tmpl->grid) || !drv_dims_ok(tmpl->block))
		return CUDA_ERROR_INVALID_VALUE;
	return drv_graph_add(g, tmpl, ret_node);
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
		e->graph.id = g_drv.next_graph_id;
		g_drv.next_graph_id += 2; /* see the top of this file */
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

static void graph_free(struct CUgraph_st *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->nodes[i]);
	free(g->nodes);
	free(g);
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
	graph_free(hGraph);
	API_END(CUDA_SUCCESS);
}

/* ------------------------------------------------------------ stream capture */

/*
 * cuStreamBeginCapture makes a graph (the next graph id) that the stream's
 * kernel launches, on any launch path, then add kernel nodes to instead of
 * running (launch.c); cuStreamEndCapture hands it over. What the stub cannot
 * capture is refused as the real driver refuses an unsupported call: with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, invalidating the capture (later
 * work on it gets CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, as does
 * cuStreamEndCapture, which then destroys the graph). Refused: copies and
 * memsets on the capturing stream (the stub's are synchronous),
 * cuStreamSynchronize of it, and cuGraphLaunch into it (the real driver
 * adds a child-graph node there; the stub has no such nodes). Not modelled:
 * capture modes beyond cuStreamEndCapture's thread rule (no
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT for the legacy stream while another
 * captures), cuStreamBeginCaptureToGraph, cuStreamGetCaptureInfo.
 */

/* Caller holds g_drv.mu. For work s cannot capture: CUDA_SUCCESS when s is
 * not capturing, else the error to return (the capture is invalidated). */
CUresult drv_capture_unsupported(struct CUstream_st *s)
{
	if (!s->capture)
		return CUDA_SUCCESS;
	if (s->capture_invalid)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	s->capture_invalid = true;
	return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

static CUresult begin_capture(CUstream h, bool per_thread,
			      CUstreamCaptureMode mode)
{
	struct CUstream_st *s;
	struct CUgraph_st *g;
	CUresult r = drv_check_ctx();

	if (r != CUDA_SUCCESS)
		return r;
	if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
	    mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
	    mode != CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	g = calloc(1, sizeof(*g));
	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&g_drv.mu);
	s = drv_stream(h, per_thread);
	if (!s) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (s == &g_drv.legacy) {
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	} else if (s->capture) {
		r = CUDA_ERROR_ILLEGAL_STATE;
	} else {
		g->magic = STUB_MAGIC_GRAPH;
		g->id = g_drv.next_graph_id++;
		s->capture = g;
		s->capture_invalid = false;
		s->capture_mode = mode;
		s->capture_thread = pthread_self();
	}
	pthread_mutex_unlock(&g_drv.mu);
	if (r != CUDA_SUCCESS)
		free(g);
	return r;
}

STUB_API CUresult cuStreamBeginCapture(CUstream hStream)
{
	API_BEGIN(cuStreamBeginCapture);
	API_END(begin_capture(hStream, false, CU_STREAM_CAPTURE_MODE_GLOBAL));
}

STUB_API CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
	API_BEGIN(cuStreamBeginCapture_ptsz);
	API_END(begin_capture(hStream, true, CU_STREAM_CAPTURE_MODE_GLOBAL));
}

STUB_API CUresult cuStreamBeginCapture_v2(CUstream hStream,
					  CUstreamCaptureMode mode)
{
	API_BEGIN(cuStreamBeginCapture_v2);
	API_END(begin_capture(hStream, false, mode));
}

STUB_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream,
					       CUstreamCaptureMode mode)
{
	API_BEGIN(cuStreamBeginCapture_v2_ptsz);
	API_END(begin_capture(hStream, true, mode));
}

static CUresult end_capture(CUstream h, bool per_thread, CUgraph *phGraph)
{
	struct CUgraph_st *g = NULL;
	struct CUstream_st *s;
	bool invalid = false;
	CUresult r = drv_check_ctx();

	if (r != CUDA_SUCCESS)
		return r;
	if (!phGraph)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_drv.mu);
	s = drv_stream(h, per_thread);
	if (!s) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (!s->capture) {
		r = CUDA_ERROR_ILLEGAL_STATE;
	} else if (s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
		   !pthread_equal(s->capture_thread, pthread_self())) {
		r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
	} else {
		g = s->capture;
		invalid = s->capture_invalid;
		s->capture = NULL;
		s->capture_invalid = false;
	}
	pthread_mutex_unlock(&g_drv.mu);
	if (r != CUDA_SUCCESS)
		return r;
	if (invalid) {
		graph_free(g);
		*phGraph = NULL;
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	}
	*phGraph = g;
	return CUDA_SUCCESS;
}

STUB_API CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	API_BEGIN(cuStreamEndCapture);
	API_END(end_capture(hStream, false, phGraph));
}

STUB_API CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
	API_BEGIN(cuStreamEndCapture_ptsz);
	API_END(end_capture(hStream, true, phGraph));
}

static CUresult is_capturing(CUstream h, bool per_thread,
			     CUstreamCaptureStatus *status)
{
	struct CUstream_st *s;
	CUresult r = drv_check_ctx();

	if (r != CUDA_SUCCESS)
		return r;
	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_drv.mu);
	s = drv_stream(h, per_thread);
	if (!s)
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (!s->capture)
		*status = CU_STREAM_CAPTURE_STATUS_NONE;
	else
		*status = s->capture_invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED :
					       CU_STREAM_CAPTURE_STATUS_ACTIVE;
	pthread_mutex_unlock(&g_drv.mu);
	return r;
}

STUB_API CUresult cuStreamIsCapturing(CUstream hStream,
				      CUstreamCaptureStatus *captureStatus)
{
	API_BEGIN(cuStreamIsCapturing);
	API_END(is_capturing(hStream, false, captureStatus));
}

STUB_API CUresult cuStreamIsCapturing_ptsz(CUstream hStream,
					   CUstreamCaptureStatus *captureStatus)
{
	API_BEGIN(cuStreamIsCapturing_ptsz);
	API_END(is_capturing(hStream, true, captureStatus));
}
