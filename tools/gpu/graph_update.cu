// CUDA graphs changed after they were made, on the real driver, for issue
// 22 (graph updates and child graphs). Each kernel comes from its own site:
//   k_one    captured in cap_one; exec e1 made from it, replayed R times
//   k_two    captured in cap_two; cudaGraphExecUpdate(e1, that graph) in
//            update_site, then e1 replayed R times
//   k_three  cudaGraphExecKernelNodeSetParams(e1, ...) in set_site, then e1
//            replayed R times
//   k_child, k_child2  captured in cap_child (two launches), beside a child
//            node (inner_site) holding k_inner, captured in cap_inner; that
//            graph embedded by
//            cudaGraphAddChildGraphNode in child_site into a parent that
//            also has
//   k_parent added by cudaGraphAddKernelNode in child_site, then a second
//            child node holding a graph (nest_site) that holds
//   k_deep   captured in cap_deep, embedded by a child node in nest_site,
//            beside k_nest, added by cudaGraphAddKernelNode in nest_site;
//            the parent replayed R times
// Every replay from replay_site. Under gpuprobe-bpf each kernel should sit
// under the site that decided it, then "[graph captured at]", then
// replay_site.
// Built with -DFACTS, it subscribes to CUPTI itself and prints what CUPTI
// says (resource callbacks with node ids, kernel records' graph ids):
//   cb NAME tid node orig graph orig_graph exec   (a resource callback)
//   kernel corr graph node name                   (kernel records)
//   phase NAME                                    (between the steps)
// Build and run (GPU machine): tools/gpu/graph_update.sh OUTDIR [R]
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#ifdef FACTS
#include <cupti.h>
#endif

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void k_one(float *p) { p[threadIdx.x] += 1.0f; }
__global__ void k_two(float *p) { p[threadIdx.x] += 2.0f; }
__global__ void k_three(float *p) { p[threadIdx.x] += 3.0f; }
__global__ void k_child(float *p) { p[threadIdx.x] *= 2.0f; }
__global__ void k_parent(float *p) { p[threadIdx.x] *= 3.0f; }
__global__ void k_child2(float *p) { p[threadIdx.x] *= 4.0f; }
__global__ void k_deep(float *p) { p[threadIdx.x] *= 5.0f; }
__global__ void k_nest(float *p) { p[threadIdx.x] *= 6.0f; }
__global__ void k_inner(float *p) { p[threadIdx.x] *= 7.0f; }

#ifdef FACTS
static unsigned tid(void) { return (unsigned)syscall(SYS_gettid); }

static void CUPTIAPI on_cb(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data)
{
	const char *name = cbid == 9 ? "graph_created" : cbid == 11 ? "graph_cloned"
			   : cbid == 13 ? "node_created" : cbid == 18 ? "exec_created"
			   : cbid == 20 ? "node_cloned" : cbid == 22 ? "node_updated"
			   : cbid == 23 ? "node_set_params" : NULL;
	const CUpti_ResourceData *r = (const CUpti_ResourceData *)data;
	const CUpti_GraphData *g;
	uint64_t node = 0, orig = 0;
	uint32_t graph = 0, ograph = 0, exec = 0;

	(void)ud;
	if (dom != CUPTI_CB_DOMAIN_RESOURCE || !r || !name)
		return;
	g = (const CUpti_GraphData *)r->resourceDescriptor;
	if (g->node)
		cuptiGetGraphNodeId(g->node, &node);
	if (g->originalNode)
		cuptiGetGraphNodeId(g->originalNode, &orig);
	if (g->graph)
		cuptiGetGraphId(g->graph, &graph);
	if (g->originalGraph)
		cuptiGetGraphId(g->originalGraph, &ograph);
	if (g->graphExec)
		cuptiGetGraphExecId(g->graphExec, &exec);
	printf("cb %s %u %llu %llu %u %u %u type=%d\n", name, tid(), (unsigned long long)node,
	       (unsigned long long)orig, graph, ograph, exec, (int)g->nodeType);
}

static void CUPTIAPI buf_req(uint8_t **buf, size_t *size, size_t *max)
{
	*size = 1 << 20;
	*buf = (uint8_t *)aligned_alloc(8, *size);
	*max = 0;
}

static void CUPTIAPI buf_done(CUcontext c, uint32_t s, uint8_t *buf, size_t size, size_t valid)
{
	CUpti_Activity *rec = NULL;

	(void)c; (void)s; (void)size;
	while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
		if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			continue;
		CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)rec;
		printf("kernel %u %u %llu %s\n", k->correlationId, k->graphId,
		       (unsigned long long)k->graphNodeId, k->name);
	}
	free(buf);
}

static void facts_on(void)
{
	CUpti_SubscriberHandle sub;

	if (cuptiSubscribe(&sub, on_cb, NULL) || cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE) ||
	    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ||
	    cuptiActivityRegisterCallbacks(buf_req, buf_done)) {
		fprintf(stderr, "graph_update: CUPTI refused\n");
		exit(1);
	}
}
#define PHASE(n) printf("phase %s\n", n)
#else
#define PHASE(n) ((void)0)
#endif

static cudaKernelNodeParams kparams(void *func, void **args)
{
	cudaKernelNodeParams kp = {};

	kp.func = func;
	kp.gridDim = dim3(1);
	kp.blockDim = dim3(32);
	kp.kernelParams = args;
	return kp;
}

// One capture site per kernel: a function of its own, so that each has its own frame.
#define CAPTURE_SITE(site, kernel)                                                      \
	__attribute__((noinline)) static cudaGraph_t site(cudaStream_t s, float *buf)    \
	{                                                                               \
		cudaGraph_t g;                                                          \
		CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));             \
		kernel<<<1, 32, 0, s>>>(buf);                                           \
		CK(cudaStreamEndCapture(s, &g));                                        \
		return g;                                                               \
	}

CAPTURE_SITE(cap_one, k_one)
CAPTURE_SITE(cap_two, k_two)
CAPTURE_SITE(cap_deep, k_deep)
CAPTURE_SITE(cap_inner, k_inner)

__attribute__((noinline)) static void inner_site(cudaGraph_t into, cudaGraph_t inner)
{
	cudaGraphNode_t cn;

	CK(cudaGraphAddChildGraphNode(&cn, into, NULL, 0, inner));
}

__attribute__((noinline)) static cudaGraph_t cap_child(cudaStream_t s, float *buf)
{
	cudaGraph_t g;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	k_child<<<1, 32, 0, s>>>(buf);
	k_child2<<<1, 32, 0, s>>>(buf);
	CK(cudaStreamEndCapture(s, &g));
	return g;
}

__attribute__((noinline)) static int update_site(cudaGraphExec_t e, cudaGraph_t g)
{
	cudaGraphExecUpdateResultInfo info;

	memset(&info, 0, sizeof(info));
	return cudaGraphExecUpdate(e, g, &info) == cudaSuccess ? 0 : (int)info.result;
}

__attribute__((noinline)) static void set_site(cudaGraphExec_t e, cudaGraph_t made_from, float **buf)
{
	cudaGraphNode_t node;
	size_t n = 1;
	void *args[] = { buf };
	cudaKernelNodeParams kp = kparams((void *)k_three, args);

	CK(cudaGraphGetNodes(made_from, &node, &n));
	CK(cudaGraphExecKernelNodeSetParams(e, node, &kp));
}

__attribute__((noinline)) static cudaGraph_t nest_site(cudaGraph_t deep, float **buf)
{
	cudaGraph_t g;
	cudaGraphNode_t cn, kn;
	void *args[] = { buf };
	cudaKernelNodeParams kp = kparams((void *)k_nest, args);

	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphAddChildGraphNode(&cn, g, NULL, 0, deep));
	CK(cudaGraphAddKernelNode(&kn, g, &cn, 1, &kp));
	return g;
}

__attribute__((noinline)) static cudaGraph_t child_site(cudaGraph_t child, cudaGraph_t nest, float **buf)
{
	cudaGraph_t g;
	cudaGraphNode_t cn, kn, nn;
	void *args[] = { buf };
	cudaKernelNodeParams kp = kparams((void *)k_parent, args);

	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphAddChildGraphNode(&cn, g, NULL, 0, child));
	CK(cudaGraphAddKernelNode(&kn, g, &cn, 1, &kp));
	CK(cudaGraphAddChildGraphNode(&nn, g, &kn, 1, nest));
	return g;
}

__attribute__((noinline)) static void replay_site(cudaGraphExec_t e, cudaStream_t s, int r)
{
	for (int i = 0; i < r; i++)
		CK(cudaGraphLaunch(e, s));
	CK(cudaStreamSynchronize(s));
}

int main(int argc, char **argv)
{
	int r = argc > 1 ? atoi(argv[1]) : 100, upd;
	cudaGraph_t g1, g2, gc, gd, gn, gp;
	cudaGraphExec_t e1, ep;
	cudaStream_t s;
	float *buf;

	setvbuf(stdout, NULL, _IOLBF, 0);
#ifdef FACTS
	facts_on();
#endif
	CK(cudaMalloc(&buf, 4096));
	CK(cudaStreamCreate(&s));
	PHASE("capture_one");
	g1 = cap_one(s, buf);
	PHASE("instantiate_one");
	CK(cudaGraphInstantiate(&e1, g1, 0));
	PHASE("replay_one");
	replay_site(e1, s, r);
	PHASE("capture_two");
	g2 = cap_two(s, buf);
	PHASE("update");
	upd = update_site(e1, g2);
	PHASE("replay_two");
	replay_site(e1, s, r);
	PHASE("set_params");
	set_site(e1, g1, &buf);
	PHASE("replay_three");
	replay_site(e1, s, r);
	PHASE("capture_child");
	gc = cap_child(s, buf);
	gd = cap_deep(s, buf);
	PHASE("inner_node");
	inner_site(gc, cap_inner(s, buf));
	PHASE("nest_node");
	gn = nest_site(gd, &buf);
	PHASE("child_node");
	gp = child_site(gc, gn, &buf);
	PHASE("instantiate_parent");
	CK(cudaGraphInstantiate(&ep, gp, 0));
	PHASE("replay_parent");
	replay_site(ep, s, r);
#ifdef FACTS
	cuptiActivityFlushAll(1);
#endif
	printf("graph_update: r=%d update=%d (0: updated in place)\n", r, upd);
	return 0;
}
