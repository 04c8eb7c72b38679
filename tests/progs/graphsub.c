/* SPDX-License-Identifier: MIT */
/*
 * graphsub: what CUPTI says about CUDA graphs, on the stub vendor: the
 * scenario of tools/gpu/graph_nodes.cu (run on a real GPU) in C with the
 * driver API, printing the same lines, so the two outputs compare:
 *   api      tid corr cbid name             (launch APIs, at enter)
 *   created  tid node graph type in_corr    (GRAPHNODE_CREATED; in_corr: the
 *                                            launch API it came inside, 0: none)
 *   cloned   tid node orig graph orig_graph exec (GRAPHNODE_CLONED)
 *   exec     tid exec graph                 (GRAPHEXEC_CREATED)
 *   kernel   corr graph_id node_id name     (kernel activity records)
 * Two graphs are captured from a stream (layer_a, layer_b, layer_a; then
 * layer_b), g1 is instantiated twice and g2 once, each exec replayed, then
 * one eager launch. Then it checks what a client relies on and prints
 * "graphsub: ok" (exit 0) or the first broken rule (exit 1):
 *   - a node id is (its graph's id << 32) | index;
 *   - a captured node is created inside its launch API (on its thread: the
 *     API a thread is inside is thread-local here), a clone outside any;
 *   - each replayed kernel names a node announced by GRAPHNODE_CLONED, in
 *     the graph the record names, cloned from a captured node;
 *   - an eager kernel has graph 0, node 0.
 *
 *   graphsub [REPLAYS]      (default 2; needs libcupti.so: LD_LIBRARY_PATH,
 *                            else build/stub/ next to this program's dir)
 */
#include <cuda.h>
#include <cupti.h>

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tests/progs/cubin.h"

#define CHECK(call) \
	do { \
		int r_ = (int)(call); \
		if (r_ != 0) { \
			fprintf(stderr, "graphsub: %s failed: %d\n", #call, r_); \
			exit(1); \
		} \
	} while (0)

#define API(f) __typeof__(&f) f
static struct {
	API(cuptiSubscribe); API(cuptiEnableDomain); API(cuptiEnableCallback);
	API(cuptiActivityEnable); API(cuptiActivityRegisterCallbacks);
	API(cuptiActivityFlushAll); API(cuptiActivityGetNextRecord);
	API(cuptiGetGraphNodeId); API(cuptiGetGraphId); API(cuptiGetGraphExecId);
} P;

#define MAX_NODES 256

struct node { uint64_t id, orig; uint32_t graph, tid; uint64_t in_corr; };

static struct {
	pthread_mutex_t mu;
	struct node created[MAX_NODES], cloned[MAX_NODES];
	size_t ncreated, ncloned, nkernels;
	bool capturing;           /* set by main between Begin and EndCapture */
	const char *fail;
} S = { .mu = PTHREAD_MUTEX_INITIALIZER };

static __thread uint64_t in_corr; /* the launch API this thread is inside */

static uint32_t tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static void fail(const char *why)
{
	if (!S.fail)
		S.fail = why;
}

static void on_graph(CUpti_CallbackId cbid, const CUpti_GraphData *g)
{
	struct node n = { .tid = tid(), .in_corr = in_corr };
	uint32_t ograph = 0, exec = 0;

	if (cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED) {
		CHECK(P.cuptiGetGraphExecId(g->graphExec, &exec));
		CHECK(P.cuptiGetGraphId(g->graph, &n.graph));
		printf("exec %u %u %u\n", n.tid, exec, n.graph);
		return;
	}
	CHECK(P.cuptiGetGraphNodeId(g->node, &n.id));
	CHECK(P.cuptiGetGraphId(g->graph, &n.graph));
	if (n.id >> 32 != n.graph)
		fail("a node id is not (graph id << 32) | index");
	pthread_mutex_lock(&S.mu);
	if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
		printf("created %u %llu %u %d %llu\n", n.tid, (unsigned long long)n.id,
		       n.graph, (int)g->nodeType, (unsigned long long)n.in_corr);
		if (S.capturing != (n.in_corr != 0))
			fail("a node is created outside its launch API, or a clone inside one");
		if (S.ncreated < MAX_NODES)
			S.created[S.ncreated++] = n;
	} else {
		CHECK(P.cuptiGetGraphNodeId(g->originalNode, &n.orig));
		if (g->originalGraph)
			CHECK(P.cuptiGetGraphId(g->originalGraph, &ograph));
		if (g->graphExec)
			CHECK(P.cuptiGetGraphExecId(g->graphExec, &exec));
		printf("cloned %u %llu %llu %u %u %u\n", n.tid, (unsigned long long)n.id,
		       (unsigned long long)n.orig, n.graph, ograph, exec);
		if (n.orig >> 32 != ograph)
			fail("a clone's original node is not in its original graph");
		if (S.ncloned < MAX_NODES)
			S.cloned[S.ncloned++] = n;
	}
	pthread_mutex_unlock(&S.mu);
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom,
				 CUpti_CallbackId cbid, const void *data)
{
	(void)ud;
	if (dom == CUPTI_CB_DOMAIN_DRIVER_API) {
		const CUpti_CallbackData *d = data;

		if (d->callbackSite == CUPTI_API_ENTER) {
			in_corr = d->correlationId;
			printf("api %u %u %u %s\n", tid(), d->correlationId, cbid,
			       d->functionName);
		} else {
			in_corr = 0;
		}
	} else if (dom == CUPTI_CB_DOMAIN_RESOURCE &&
		   (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED ||
		    cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED ||
		    cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED)) {
		on_graph(cbid, ((const CUpti_ResourceData *)data)->resourceDescriptor);
	}
}

static const struct node *find(const struct node *v, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].id == id)
			return &v[i];
	return NULL;
}

/* Caller holds S.mu. */
static void check_kernel(const CUpti_ActivityKernel10 *k)
{
	const struct node *c, *o;

	if (!k->graphId) {
		if (k->graphNodeId)
			fail("an eager kernel has a graph node id");
		return;
	}
	c = find(S.cloned, S.ncloned, k->graphNodeId);
	if (!c || c->graph != k->graphId)
		fail("a replayed kernel's node was not cloned into its graph");
	else if (!(o = find(S.created, S.ncreated, c->orig)) || !o->in_corr)
		fail("a replayed kernel's node is not a clone of a captured node");
}

static void CUPTIAPI buf_req(uint8_t **buf, size_t *size, size_t *max)
{
	*size = 1 << 20;
	*buf = aligned_alloc(8, *size);
	*max = 0;
}

static void CUPTIAPI buf_done(CUcontext c, uint32_t s, uint8_t *buf, size_t size,
			      size_t valid)
{
	CUpti_Activity *rec = NULL;

	(void)c, (void)s, (void)size;
	pthread_mutex_lock(&S.mu);
	while (P.cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
		const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;

		if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			continue;
		printf("kernel %u %u %llu %s\n", k->correlationId, k->graphId,
		       (unsigned long long)k->graphNodeId, k->name);
		S.nkernels++;
		check_kernel(k);
	}
	pthread_mutex_unlock(&S.mu);
	free(buf);
}

static void *open_cupti(void)
{
	char path[PATH_MAX], exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	void *h = dlopen("libcupti.so", RTLD_NOW | RTLD_GLOBAL);

	if (h || n <= 0)
		return h;
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	snprintf(path, sizeof(path), "%s/../../stub/libcupti.so", exe);
	return dlopen(path, RTLD_NOW | RTLD_GLOBAL);
}

#define LOAD(h, f) (*(void **)&P.f = dlsym((h), #f))

static void subscribe(void *h)
{
	static const CUpti_CallbackId launches[] = {
		CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
		CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
		CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	};
	CUpti_SubscriberHandle sub;

	LOAD(h, cuptiSubscribe); LOAD(h, cuptiEnableDomain);
	LOAD(h, cuptiEnableCallback); LOAD(h, cuptiActivityEnable);
	LOAD(h, cuptiActivityRegisterCallbacks); LOAD(h, cuptiActivityFlushAll);
	LOAD(h, cuptiActivityGetNextRecord); LOAD(h, cuptiGetGraphNodeId);
	LOAD(h, cuptiGetGraphId); LOAD(h, cuptiGetGraphExecId);
	for (size_t i = 0; i < sizeof(P) / sizeof(void *); i++) {
		if (!((void **)&P)[i]) {
			fprintf(stderr, "graphsub: libcupti.so lacks a function\n");
			exit(1);
		}
	}
	CHECK(P.cuptiSubscribe(&sub, on_callback, NULL));
	CHECK(P.cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE));
	for (size_t i = 0; i < sizeof(launches) / sizeof(launches[0]); i++)
		CHECK(P.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
					    launches[i]));
	CHECK(P.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	CHECK(P.cuptiActivityRegisterCallbacks(buf_req, buf_done));
}

static CUfunction layer_a, layer_b;

__attribute__((noinline)) static void site_a(CUstream s)
{
	CHECK(cuLaunchKernel(layer_a, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
}

__attribute__((noinline)) static void site_b(CUstream s)
{
	CHECK(cuLaunchKernel(layer_b, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
}

int main(int argc, char **argv)
{
	static const char *const kernels[] = { "_Z7layer_aPf", "_Z7layer_bPf" };
	int replays = argc > 1 ? atoi(argv[1]) : 2;
	void *h = open_cupti();
	CUgraphExec e1, e2, e1b;
	uint8_t img[2048];
	CUgraph g1, g2;
	CUcontext ctx;
	CUmodule mod;
	CUstream s;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!h) {
		fprintf(stderr, "graphsub: no libcupti.so: %s\n", dlerror());
		return 1;
	}
	subscribe(h);
	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	if (!cubin_build(img, sizeof(img), "graphsub", kernels, 2))
		return 1;
	CHECK(cuModuleLoadData(&mod, img));
	CHECK(cuModuleGetFunction(&layer_a, mod, kernels[0]));
	CHECK(cuModuleGetFunction(&layer_b, mod, kernels[1]));
	CHECK(cuStreamCreate(&s, 0));
	printf("phase capture1\n");
	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	S.capturing = true;
	site_a(s);
	site_b(s);
	site_a(s);
	S.capturing = false;
	CHECK(cuStreamEndCapture(s, &g1));
	printf("phase capture2\n");
	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	S.capturing = true;
	site_b(s);
	S.capturing = false;
	CHECK(cuStreamEndCapture(s, &g2));
	printf("phase instantiate\n");
	CHECK(cuGraphInstantiate(&e1, g1, 0));
	CHECK(cuGraphInstantiate(&e2, g2, 0));
	CHECK(cuGraphInstantiate(&e1b, g1, 0));
	printf("phase replay\n");
	for (int i = 0; i < replays; i++) {
		CHECK(cuGraphLaunch(e1, s));
		CHECK(cuGraphLaunch(e2, s));
	}
	CHECK(cuGraphLaunch(e1b, s));
	printf("phase eager\n");
	site_a(s);
	CHECK(cuStreamSynchronize(s));
	CHECK(P.cuptiActivityFlushAll(1));
	printf("done\n");
	CHECK(cuGraphExecDestroy(e1));
	CHECK(cuGraphExecDestroy(e2));
	CHECK(cuGraphExecDestroy(e1b));
	CHECK(cuGraphDestroy(g1));
	CHECK(cuGraphDestroy(g2));
	CHECK(cuModuleUnload(mod));
	pthread_mutex_lock(&S.mu);
	if (S.ncloned != 7 || S.ncreated != 4 + 7)
		fail("not 4 captured nodes and 7 clones");
	if (S.nkernels != (size_t)replays * 4 + 3 + 1)
		fail("not one kernel record per replayed node and one eager");
	pthread_mutex_unlock(&S.mu);
	if (S.fail) {
		printf("graphsub: FAIL: %s\n", S.fail);
		return 1;
	}
	printf("graphsub: ok\n");
	return 0;
}
