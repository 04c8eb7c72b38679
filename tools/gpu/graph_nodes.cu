// What CUPTI says about CUDA graphs, on the real driver: the facts the
// capture-time stacks of issue #22 rest on. Captures two graphs by stream
// capture from two call sites (and one built with explicit nodes), instantiates
// them, replays each, and prints one line per event:
//   api      tid corr cbid                 (driver launch APIs, enter)
//   created  tid node graph type in_corr   (GRAPHNODE_CREATED, and the launch
//                                           API it happened inside, 0: none)
//   cloned   tid node orig graph orig_graph exec_graph (GRAPHNODE_CLONED)
//   exec     tid exec graph                (GRAPHEXEC_CREATED)
//   kernel   corr graph_id node_id name    (kernel activity records)
//   memset   corr graph_id node_id         (memset activity records)
// Build and run (GPU machine): nvcc -O2 -o build/graph_nodes tools/gpu/graph_nodes.cu
//   -I$CUDA/extras/CUPTI/include -lcuda -lcupti (or the wheel's libcupti), then
//   build/graph_nodes [REPLAYS]
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CK(x) do { if (getenv("GN_TRACE")) fprintf(stderr, "> %s\n", #x); if ((x) != 0) { fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #x); exit(1); } } while (0)

static __thread unsigned long long in_corr; // the launch API this thread is inside
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;

static unsigned tid(void) { return (unsigned)syscall(SYS_gettid); }

static void CUPTIAPI on_cb(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data)
{
	(void)ud;
	if (dom == CUPTI_CB_DOMAIN_DRIVER_API) {
		const CUpti_CallbackData *d = (const CUpti_CallbackData *)data;

		if (!d)
			return;
		if (d->callbackSite == CUPTI_API_ENTER) {
			in_corr = d->correlationId;
			pthread_mutex_lock(&out);
			printf("api %u %u %u %s\n", tid(), d->correlationId, cbid, d->functionName);
			pthread_mutex_unlock(&out);
		} else {
			in_corr = 0;
		}
		return;
	}
	if (dom != CUPTI_CB_DOMAIN_RESOURCE || !data ||
	    (cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED && cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED &&
	     cbid != CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED && cbid != CUPTI_CBID_RESOURCE_GRAPH_CLONED))
		return;
	const CUpti_ResourceData *r = (const CUpti_ResourceData *)data;
	const CUpti_GraphData *g = (const CUpti_GraphData *)r->resourceDescriptor;
	uint64_t node = 0, orig = 0;
	uint32_t graph = 0, ograph = 0, exec = 0;

	if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
		cuptiGetGraphNodeId(g->node, &node);
		cuptiGetGraphId(g->graph, &graph);
		printf("created %u %llu %u %d %llu\n", tid(), (unsigned long long)node, graph,
		       (int)g->nodeType, in_corr);
	} else if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
		cuptiGetGraphNodeId(g->node, &node);
		cuptiGetGraphNodeId(g->originalNode, &orig);
		cuptiGetGraphId(g->graph, &graph);
		if (g->originalGraph)
			cuptiGetGraphId(g->originalGraph, &ograph);
		if (g->graphExec)
			cuptiGetGraphExecId(g->graphExec, &exec);
		printf("cloned %u %llu %llu %u %u %u\n", tid(), (unsigned long long)node,
		       (unsigned long long)orig, graph, ograph, exec);
	} else if (cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED) {
		cuptiGetGraphExecId(g->graphExec, &exec);
		cuptiGetGraphId(g->graph, &graph);
		printf("exec %u %u %u\n", tid(), exec, graph);
	} else if (cbid == CUPTI_CBID_RESOURCE_GRAPH_CLONED) {
		cuptiGetGraphId(g->graph, &graph);
		cuptiGetGraphId(g->originalGraph, &ograph);
		printf("graph_cloned %u %u %u\n", tid(), graph, ograph);
	}
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
		if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
			CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)rec;
			printf("memset %u %u %llu\n", m->correlationId, m->graphId,
			       (unsigned long long)m->graphNodeId);
		}
		if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
			CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)rec;
			printf("kernel %u %u %llu %s\n", k->correlationId, k->graphId,
			       (unsigned long long)k->graphNodeId, k->name);
		}
	}
	free(buf);
}

__global__ void layer_a(float *x) { x[threadIdx.x] += 1.0f; }
__global__ void layer_b(float *x) { x[threadIdx.x] *= 2.0f; }

// Two call sites, each a "layer".
__attribute__((noinline)) static void site_a(cudaStream_t s, float *x) { layer_a<<<1, 32, 0, s>>>(x); }
__attribute__((noinline)) static void site_b(cudaStream_t s, float *x) { layer_b<<<1, 32, 0, s>>>(x); }

int main(int argc, char **argv)
{
	int replays = argc > 1 ? atoi(argv[1]) : 2;
	CUpti_SubscriberHandle sub;
	cudaStream_t s;
	cudaGraph_t g1, g2;
	cudaGraphExec_t e1, e2, e1b;
	float *x;

	setvbuf(stdout, NULL, _IOLBF, 0);
	CK(cuptiSubscribe(&sub, on_cb, NULL));
	CK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE));
	CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
	CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx));
	CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch));
	CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async));
	CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async));
	CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz));
	CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz));
	CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync));
	CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2));
	CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
	CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	CK(cuptiActivityRegisterCallbacks(buf_req, buf_done));
	CK(cudaMalloc(&x, 32 * sizeof(float)));
	CK(cudaStreamCreate(&s));
	printf("phase capture1\n");
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	site_a(s, x);
	site_b(s, x);
	CK(cudaMemsetAsync(x, 0, 32 * sizeof(float), s)); // a memset node: made inside its call?
	site_a(s, x);
	CK(cudaStreamEndCapture(s, &g1));
	printf("phase capture2\n");
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	site_b(s, x);
	CK(cudaStreamEndCapture(s, &g2));
	printf("phase instantiate\n");
	CK(cudaGraphInstantiate(&e1, g1, 0));
	CK(cudaGraphInstantiate(&e2, g2, 0));
	CK(cudaGraphInstantiate(&e1b, g1, 0)); // a second exec of the same graph
	printf("phase replay\n");
	for (int i = 0; i < replays; i++) {
		CK(cudaGraphLaunch(e1, s));
		CK(cudaGraphLaunch(e2, s));
	}
	CK(cudaGraphLaunch(e1b, s));
	printf("phase eager\n");
	site_a(s, x);
	CK(cudaStreamSynchronize(s));
	CK(cuptiActivityFlushAll(1));
	printf("done\n");
	return 0;
}
