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
 *
 * Child graphs as the same driver gave them (tools/gpu/graph_update.sh):
 * cuGraphAddChildGraphNode copies the child graph, depth first, into new
 * graphs (each copy's id taken when its child node is reached), reporting
 * each node of a copy made then cloned, a child node after its own copy's
 * nodes; then the child node itself is made. Instantiation does the same
 * for every child node of the source into graphs E+1, E+2, ... after the
 * exec's own graph E, and the exec runs the embedded graphs' kernels as
 * E:(the source's node count + their place, graph by graph): ids that no
 * callback reports. cuGraphExecUpdate (same shape only) reports per node
 * GRAPH_NODE_UPDATED (the new graph's node -> the exec's) then
 * GRAPH_NODE_SET_PARAMS; cuGraphExecKernelNodeSetParams reports
 * GRAPH_NODE_SET_PARAMS (the exec's node, from the source node named).
 */
#include "stub/libcuda/internal.h"

#include <stdlib.h>
#include <string.h>

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

/* A graph and the copies its child nodes own. */
static void graph_free(struct CUgraph_st *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++) {
		graph_free(g->nodes[i]->child);
		free(g->nodes[i]);
	}
	free(g->nodes);
	free(g);
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

/* Caller holds g_drv.mu. A copy of src (ids taken depth first), its child
 * nodes owning copies of theirs; NULL when out of memory. */
static struct CUgraph_st *graph_copy(const struct CUgraph_st *src)
{
	struct CUgraph_st *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->magic = STUB_MAGIC_GRAPH;
	g->id = g_drv.next_graph_id++;
	for (size_t i = 0; i < src->n; i++) {
		struct CUgraphNode_st *n;

		if (!graph_grow(g) || !(n = malloc(sizeof(*n)))) {
			graph_free(g);
			return NULL;
		}
		*n = *src->nodes[i];
		n->id = drv_node_id(g->id, i);
		n->child = NULL;
		g->nodes[g->n++] = n;
		if (src->nodes[i]->child && !(n->child = graph_copy(src->nodes[i]->child))) {
			graph_free(g);
			return NULL;
		}
	}
	return g;
}

/* No driver lock held: a node made, then cloned from orig. */
static void report_clone(const struct stub_api_call *c, struct CUgraph_st *g,
			 struct CUgraphNode_st *n, struct CUgraph_st *og,
			 struct CUgraphNode_st *orig)
{
	const struct stub_cupti_ops *ops = c->cupti;
	struct stub_graph_event ev = {
		.context = &g_drv.primary,
		.graph = g,
		.node = n,
		.node_type = n->child ? CU_GRAPH_NODE_TYPE_GRAPH : CU_GRAPH_NODE_TYPE_KERNEL,
		.original_graph = og,
		.original_node = orig,
	};

	if (!ops)
		return;
	drv_report_node_created(c, g, n);
	ops->graph_node_cloned(&ev);
}

/* No driver lock held: the copy of graph src made as graph id (by
 * cuGraphAddChildGraphNode, or instantiation for a child node), its nodes'
 * handles made up here (the callbacks read their ids), nested copies
 * taking the next ids depth first (as graph_copy numbers them); a child
 * node reported after its own copy's nodes. */
static void report_embedded(const struct stub_api_call *c, struct CUgraph_st *src,
			    uint32_t id, uint32_t *next)
{
	struct CUgraph_st gh = { .magic = STUB_MAGIC_GRAPH, .id = id };

	for (size_t j = 0; j < src->n; j++) {
		struct CUgraphNode_st nh = *src->nodes[j];

		nh.id = drv_node_id(id, j);
		if (src->nodes[j]->child)
			report_embedded(c, src->nodes[j]->child, (*next)++, next);
		report_clone(c, &gh, &nh, src, src->nodes[j]);
	}
}

STUB_API CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					   const CUgraphNode *dependencies,
					   size_t numDependencies, CUgraph childGraph)
{
	struct CUgraphNode_st tmpl = { 0 }, *node = NULL;
	struct CUgraph_st *copy = NULL;
	uint32_t next;
	CUresult r;

	API_BEGIN(cuGraphAddChildGraphNode);
	r = drv_check_ctx();
	if (r != CUDA_SUCCESS)
		API_END(r);
	if (!phGraphNode || (numDependencies && !dependencies))
		API_END(CUDA_ERROR_INVALID_VALUE);
	pthread_mutex_lock(&g_drv.mu);
	if (!graph_live(hGraph) || !graph_live(childGraph) || hGraph == childGraph) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (!(copy = graph_copy(childGraph)) || !graph_grow(hGraph) ||
		   !(node = malloc(sizeof(*node)))) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		*node = tmpl;
		node->magic = STUB_MAGIC_NODE;
		node->id = drv_node_id(hGraph->id, hGraph->n);
		node->child = copy;
		hGraph->nodes[hGraph->n++] = node;
	}
	pthread_mutex_unlock(&g_drv.mu);
	if (r != CUDA_SUCCESS) {
		graph_free(copy);
		API_END(r);
	}
	next = copy->id + 1;
	report_embedded(&call_, childGraph, copy->id, &next);
	if (call_.cupti) {
		const struct stub_cupti_ops *ops = call_.cupti;
		struct stub_graph_event ev = {
			.context = &g_drv.primary, .graph = hGraph, .node = node,
			.node_type = CU_GRAPH_NODE_TYPE_GRAPH,
		};

		ops->graph_node_created(&ev);
	}
	*phGraphNode = node;
	API_END(CUDA_SUCCESS);
}

/* No driver lock held: the clones of instantiation as the real driver
 * reports them, per node GRAPHNODE_CREATED then GRAPHNODE_CLONED (graphExec
 * NULL, as measured), a child node after its embedded copies; then
 * GRAPHEXEC_CREATED naming the source graph. */
static void report_instantiated(const struct stub_api_call *c,
				struct CUgraph_st *g, struct CUgraphExec_st *e)
{
	const struct stub_cupti_ops *ops = c->cupti;
	struct stub_graph_event ev;
	uint32_t next = e->graph.id + 1;

	if (!ops)
		return;
	for (size_t i = 0; i < g->n; i++) {
		if (g->nodes[i]->child)
			report_embedded(c, g->nodes[i]->child, next++, &next);
		report_clone(c, &e->graph, &e->nodes[i], g, g->nodes[i]);
	}
	ev = (struct stub_graph_event){ .context = &g_drv.primary, .graph = g,
					.graph_exec = e };
	ops->graph_exec_created(&ev);
}

/* The graphs g's child nodes embed, depth first (NULL: count only); how many. */
static size_t embedded_list(const struct CUgraph_st *g, const struct CUgraph_st **out, size_t at)
{
	for (size_t i = 0; i < g->n; i++) {
		if (!g->nodes[i]->child)
			continue;
		if (out)
			out[at] = g->nodes[i]->child;
		at = embedded_list(g->nodes[i]->child, out, at + 1);
	}
	return at;
}

/* Caller holds g_drv.mu; g is live. The exec: g's nodes as E:0.., then
 * each embedded graph's, in order, as E:(g->n + their place). */
static struct CUgraphExec_st *exec_make(const struct CUgraph_st *g)
{
	size_t nemb = embedded_list(g, NULL, 0), total = g->n, at;
	const struct CUgraph_st **emb = calloc(nemb + 1, sizeof(*emb));
	struct CUgraphExec_st *e = NULL;

	if (!emb)
		return NULL;
	embedded_list(g, emb, 0);
	for (size_t k = 0; k < nemb; k++)
		total += emb[k]->n;
	e = calloc(1, sizeof(*e) + total * sizeof(e->nodes[0]));
	if (e) {
		e->magic = STUB_MAGIC_EXEC;
		e->graph.magic = STUB_MAGIC_EXEC_GRAPH;
		e->graph.id = g_drv.next_graph_id;
		e->source = g->id;
		/* its own, its embedded copies', one more: see the top of this file */
		g_drv.next_graph_id += (uint32_t)nemb + 2;
		e->n = total;
		for (at = 0; at < g->n; at++) {
			e->nodes[at] = *g->nodes[at];
			e->nodes[at].id = drv_node_id(e->graph.id, at);
		}
		for (size_t k = 0; k < nemb; k++) {
			for (size_t j = 0; j < emb[k]->n; j++, at++) {
				e->nodes[at] = *emb[k]->nodes[j];
				e->nodes[at].id = drv_node_id(e->graph.id, at);
			}
		}
	}
	free(emb);
	return e;
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
	e = exec_make(g);
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

/* No driver lock held: exec e's node n given new parameters (orig: its source node, or NULL). */
static void report_set_params(const struct stub_api_call *c, struct CUgraphExec_st *e,
			      struct CUgraphNode_st *n, struct CUgraphNode_st *orig)
{
	const struct stub_cupti_ops *ops = c->cupti;
	struct stub_graph_event ev = {
		.context = &g_drv.primary, .node = n, .node_type = CU_GRAPH_NODE_TYPE_KERNEL,
		.original_node = orig, .graph_exec = e,
	};

	if (ops)
		ops->graph_node_set_params(&ev);
}

/* No driver lock held: an exec's node updated from node `from`, then given its parameters. */
static void report_updated(const struct stub_api_call *c, struct CUgraph_st *g,
			   struct CUgraphNode_st *from, struct CUgraphExec_st *e,
			   struct CUgraphNode_st *n)
{
	const struct stub_cupti_ops *ops = c->cupti;
	struct stub_graph_event ev = {
		.context = &g_drv.primary, .graph = g, .node = from,
		.node_type = CU_GRAPH_NODE_TYPE_KERNEL, .original_node = n, .graph_exec = e,
	};

	if (!ops)
		return;
	ops->graph_node_updated(&ev);
	report_set_params(c, e, n, NULL);
}

/* Caller holds g_drv.mu. An exec the stub can update from g: kernel nodes
 * only on both sides, as many. */
static bool same_shape(const struct CUgraphExec_st *e, const struct CUgraph_st *g)
{
	if (e->n != g->n)
		return false;
	for (size_t i = 0; i < g->n; i++)
		if (e->nodes[i].child || g->nodes[i]->child)
			return false;
	return true;
}

STUB_API CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
	CUresult r = CUDA_SUCCESS;

	API_BEGIN(cuGraphGetNodes);
	if (!numNodes)
		API_END(CUDA_ERROR_INVALID_VALUE);
	pthread_mutex_lock(&g_drv.mu);
	if (!graph_live(hGraph)) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (!nodes) {
		*numNodes = hGraph->n;
	} else {
		size_t n = *numNodes < hGraph->n ? *numNodes : hGraph->n;

		for (size_t i = 0; i < n; i++)
			nodes[i] = hGraph->nodes[i];
		for (size_t i = n; i < *numNodes; i++)
			nodes[i] = NULL;
		*numNodes = n;
	}
	pthread_mutex_unlock(&g_drv.mu);
	API_END(r);
}

/* Each kernel node of e runs what g's node at its place holds (ids kept). */
STUB_API CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
				       CUgraphExecUpdateResultInfo *resultInfo)
{
	CUresult r = CUDA_SUCCESS;
	size_t n = 0;

	API_BEGIN(cuGraphExecUpdate_v2);
	if (!resultInfo)
		API_END(CUDA_ERROR_INVALID_VALUE);
	memset(resultInfo, 0, sizeof(*resultInfo));
	pthread_mutex_lock(&g_drv.mu);
	if (!hGraphExec || hGraphExec->magic != STUB_MAGIC_EXEC || !graph_live(hGraph)) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (!same_shape(hGraphExec, hGraph)) {
		resultInfo->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
		r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
	} else {
		n = hGraph->n;
		for (size_t i = 0; i < n; i++) {
			uint64_t id = hGraphExec->nodes[i].id;

			hGraphExec->nodes[i] = *hGraph->nodes[i];
			hGraphExec->nodes[i].id = id;
		}
		resultInfo->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
	}
	pthread_mutex_unlock(&g_drv.mu);
	for (size_t i = 0; i < n; i++)
		report_updated(&call_, hGraph, hGraph->nodes[i], hGraphExec, &hGraphExec->nodes[i]);
	API_END(r);
}

/* hNode: the source graph's node; the exec's copy of it runs p from now on. */
STUB_API CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
						    const CUDA_KERNEL_NODE_PARAMS *p)
{
	struct CUgraphNode_st *n = NULL;
	struct CUfunc_st *f;
	CUresult r = CUDA_SUCCESS;

	API_BEGIN(cuGraphExecKernelNodeSetParams_v2);
	if (!p)
		API_END(CUDA_ERROR_INVALID_VALUE);
	pthread_mutex_lock(&g_drv.mu);
	f = drv_func(p->func ? p->func : (CUfunction)p->kern);
	if (!hGraphExec || hGraphExec->magic != STUB_MAGIC_EXEC || !hNode ||
	    hNode->magic != STUB_MAGIC_NODE || !f) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else {
		size_t i = (uint32_t)hNode->id;

		if ((uint32_t)(hNode->id >> 32) != hGraphExec->source || i >= hGraphExec->n ||
		    hGraphExec->nodes[i].child || hNode->child)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			n = &hGraphExec->nodes[i];
	}
	if (n) {
		struct CUgraphNode_st tmpl = NODE_TMPL(p);

		if (!drv_dims_ok(tmpl.grid) || !drv_dims_ok(tmpl.block)) {
			r = CUDA_ERROR_INVALID_VALUE;
			n = NULL;
		} else {
			n->func = f;
			memcpy(n->grid, tmpl.grid, sizeof(n->grid));
			memcpy(n->block, tmpl.block, sizeof(n->block));
			n->smem = tmpl.smem;
		}
	}
	pthread_mutex_unlock(&g_drv.mu);
	if (n)
		report_set_params(&call_, hGraphExec, n, hNode);
	API_END(r);
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
