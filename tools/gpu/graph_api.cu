// CUDA graphs made both ways on the real driver, for the whose-launch check
// of issue 22: graph 1 by stream capture in capture_site (k_cap), graph 2 by
// the explicit node API in api_site (cudaGraphAddKernelNode: k_api, then
// cudaGraphAddMemsetNode), each replayed R times from replay_site. Under
// gpuprobe-bpf, every replayed kernel should sit under its own site, then
// "[graph captured at]", then replay_site (tests/bpf/stack_check.py graph).
// Build and run (GPU machine): nvcc -O2 -o build/graph_api tools/gpu/graph_api.cu
//   then build/graph_api [R]   (prints "graph_api: replays=2R kernels=2R")
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void k_cap(float *p) { p[threadIdx.x] += 1.0f; }
__global__ void k_api(float *p) { p[threadIdx.x] *= 2.0f; }

__attribute__((noinline)) static cudaGraph_t capture_site(cudaStream_t s, float *buf)
{
	cudaGraph_t g;

	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	k_cap<<<1, 32, 0, s>>>(buf);
	CK(cudaStreamEndCapture(s, &g));
	return g;
}

__attribute__((noinline)) static cudaGraph_t api_site(float *buf)
{
	cudaGraph_t g;
	cudaGraphNode_t kn, mn;
	void *args[] = { &buf };
	cudaKernelNodeParams kp = {};
	cudaMemsetParams mp = {};

	CK(cudaGraphCreate(&g, 0));
	kp.func = (void *)k_api;
	kp.gridDim = dim3(1);
	kp.blockDim = dim3(32);
	kp.kernelParams = args;
	CK(cudaGraphAddKernelNode(&kn, g, NULL, 0, &kp));
	mp.dst = buf + 64;
	mp.value = 0;
	mp.elementSize = 4;
	mp.width = 32;
	mp.height = 1;
	CK(cudaGraphAddMemsetNode(&mn, g, &kn, 1, &mp));
	return g;
}

__attribute__((noinline)) static void replay_site(cudaGraphExec_t a, cudaGraphExec_t b, cudaStream_t s, int r)
{
	for (int i = 0; i < r; i++) {
		CK(cudaGraphLaunch(a, s));
		CK(cudaGraphLaunch(b, s));
	}
	CK(cudaStreamSynchronize(s));
}

int main(int argc, char **argv)
{
	int r = argc > 1 ? atoi(argv[1]) : 100;
	cudaGraphExec_t ea, eb;
	cudaGraph_t ga, gb;
	cudaStream_t s;
	float *buf;

	CK(cudaMalloc(&buf, 4096));
	CK(cudaStreamCreate(&s));
	ga = capture_site(s, buf);
	gb = api_site(buf);
	CK(cudaGraphInstantiate(&ea, ga, 0));
	CK(cudaGraphInstantiate(&eb, gb, 0));
	replay_site(ea, eb, s, r);
	printf("graph_api: replays=%d kernels=%d\n", 2 * r, 2 * r);
	return 0;
}
