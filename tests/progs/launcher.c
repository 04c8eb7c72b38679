/* SPDX-License-Identifier: MIT */
/*
 * launcher: a multi-threaded CUDA driver-API workload with a known call
 * structure, for the integration tests (runs on the stub vendor; exits 0 on
 * success, 1 on a CUDA failure, 2 on bad flags).
 *
 *   launcher [-t THREADS] [-n LAUNCHES_PER_SITE] [-v] [-r]     (defaults 4, 10;
 *   -r: launch once the shim injected here records, wait_recording)
 *
 * Setup, on the main thread, in this order (module ids on the stub = 1..5):
 *   1 "mod_main"  cuModuleLoadData     kernels gemm, softmax
 *   2 "mod_graph" cuModuleLoadDataEx   kernels graph_k1, graph_k2
 *   3 "lib"       cuLibraryLoadData    kernel lib_scale (cuLibraryGetKernel)
 *   4 "mod_dup"   cuModuleLoadData     kernel dup_relu
 *   5 "mod_dup"   cuModuleLoad(file)   the SAME bytes as 4: a duplicated module
 * Each of T threads creates its own stream and graph (graph_k1 then graph_k2),
 * then N times runs, in order (each site a distinct noinline function):
 *   site_a  cuLaunchKernel            gemm      grid 3  on its stream
 *   site_b  cuLaunchKernelEx          softmax   grid 5  on its stream
 *   site_c  cuGraphLaunch             graph_k1  grid 2, then graph_k2 grid 4
 *   site_d  cuLaunchKernel (CUkernel) lib_scale grid 7  on its stream
 *   site_e  cuLaunchKernel_ptsz       dup_relu (module 4) grid 1, NULL stream
 *                                     (= the thread's per-thread stream)
 *   site_f  cuLaunchKernel            dup_relu (module 5) grid 1 on its stream
 * then once: site_copy: cuMemcpyHtoD 4096 B, cuMemsetD8 3000 B,
 * cuMemcpyDtoH 4096 B (legacy stream), and checks the data came back.
 * Blocks are always (128,1,1). Finally all modules are unloaded.
 *
 * Expected values (the stub runs a kernel grid*1000 ns, a copy
 * ceil(bytes/1024) ns), with L = T*N:
 *   (site_a, gemm)      launches L  kernels L  gpu_ns 3000*L
 *   (site_b, softmax)   launches L  kernels L  gpu_ns 5000*L
 *   (site_c, graph_k1)  launches L  kernels L  gpu_ns 2000*L  (one cuGraphLaunch
 *   (site_c, graph_k2)  launches L  kernels L  gpu_ns 4000*L   per pair)
 *   (site_d, lib_scale) launches L  kernels L  gpu_ns 7000*L
 *   (site_e, dup_relu)  launches L  kernels L  gpu_ns 1000*L
 *   (site_f, dup_relu)  launches L  kernels L  gpu_ns 1000*L
 *   launch API calls 6*L, kernel records 7*L, GPU kernel ns 23000*L;
 *   copies: T HtoD (4 ns each), T memset (3 ns), T DtoH (4 ns).
 *   Under lazy loading (default) with N >= 1: 5 module-loaded callbacks
 *   (module 2's inside a cuGraphAddKernelNode, the others inside the first
 *   launch of one of their kernels), and always 5 module loads, 5 unloads.
 * -v prints one "expect ..." line per (site, kernel) with these numbers.
 */
#include <cuda.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/progs/cubin.h"
#include "shim/gp_abi.h"

/* cuda.h declares it only for per-thread-default-stream builds. */
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
				     unsigned int gridDimY, unsigned int gridDimZ,
				     unsigned int blockDimX, unsigned int blockDimY,
				     unsigned int blockDimZ,
				     unsigned int sharedMemBytes, CUstream hStream,
				     void **kernelParams, void **extra);

#define CHECK(call) \
	do { \
		CUresult r_ = (call); \
		if (r_ != CUDA_SUCCESS) { \
			fprintf(stderr, "launcher: %s:%d: %s failed: %d\n", \
				__FILE__, __LINE__, #call, (int)r_); \
			exit(1); \
		} \
	} while (0)

enum { GRID_A = 3, GRID_B = 5, GRID_C1 = 2, GRID_C2 = 4, GRID_D = 7,
       GRID_E = 1, GRID_F = 1, BLOCK = 128 };
enum { COPY_BYTES = 4096, SET_BYTES = 3000 };

static struct {
	int threads;
	int launches;
	bool verbose;
	CUcontext ctx;
	CUmodule mod_main, mod_graph, mod_dup_a, mod_dup_b;
	CUlibrary lib;
	CUfunction gemm, softmax, graph_k1, graph_k2, relu_a, relu_b;
	CUkernel lib_scale;
} G;

/* ------------------------------------------------------------ sites */

__attribute__((noinline)) static void site_a(CUstream s)
{
	CHECK(cuLaunchKernel(G.gemm, GRID_A, 1, 1, BLOCK, 1, 1, 0, s, NULL, NULL));
}

__attribute__((noinline)) static void site_b(CUstream s)
{
	CUlaunchConfig cfg = {
		.gridDimX = GRID_B, .gridDimY = 1, .gridDimZ = 1,
		.blockDimX = BLOCK, .blockDimY = 1, .blockDimZ = 1,
		.hStream = s,
	};

	CHECK(cuLaunchKernelEx(&cfg, G.softmax, NULL, NULL));
}

__attribute__((noinline)) static void site_c(CUgraphExec exec, CUstream s)
{
	CHECK(cuGraphLaunch(exec, s));
}

__attribute__((noinline)) static void site_d(CUstream s)
{
	CHECK(cuLaunchKernel((CUfunction)G.lib_scale, GRID_D, 1, 1, BLOCK, 1, 1,
			     0, s, NULL, NULL));
}

__attribute__((noinline)) static void site_e(void)
{
	CHECK(cuLaunchKernel_ptsz(G.relu_a, GRID_E, 1, 1, BLOCK, 1, 1, 0, NULL,
				  NULL, NULL));
}

__attribute__((noinline)) static void site_f(CUstream s)
{
	CHECK(cuLaunchKernel(G.relu_b, GRID_F, 1, 1, BLOCK, 1, 1, 0, s, NULL, NULL));
}

__attribute__((noinline)) static void site_copy(void)
{
	unsigned char in[COPY_BYTES], out[COPY_BYTES];
	CUdeviceptr d;

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 7);
	CHECK(cuMemAlloc(&d, COPY_BYTES));
	CHECK(cuMemcpyHtoD(d, in, COPY_BYTES));
	CHECK(cuMemsetD8(d, 0xab, SET_BYTES));
	CHECK(cuMemcpyDtoH(out, d, COPY_BYTES));
	CHECK(cuMemFree(d));
	for (size_t i = 0; i < sizeof(out); i++) {
		if (out[i] != (i < SET_BYTES ? 0xab : in[i])) {
			fprintf(stderr, "launcher: device data mismatch at %zu\n", i);
			exit(1);
		}
	}
}

/* ------------------------------------------------------------ threads */

static void add_node(CUgraph g, CUfunction f, unsigned int grid,
		     CUgraphNode *dep, CUgraphNode *ret_node)
{
	CUDA_KERNEL_NODE_PARAMS p = {
		.func = f, .gridDimX = grid, .gridDimY = 1, .gridDimZ = 1,
		.blockDimX = BLOCK, .blockDimY = 1, .blockDimZ = 1,
	};

	CHECK(cuGraphAddKernelNode(ret_node, g, dep, dep ? 1 : 0, &p));
}

static void *worker(void *arg)
{
	CUgraphNode n1, n2;
	CUgraphExec exec;
	CUstream s;
	CUgraph g;

	(void)arg;
	CHECK(cuCtxSetCurrent(G.ctx));
	CHECK(cuStreamCreate(&s, 0));
	CHECK(cuGraphCreate(&g, 0));
	add_node(g, G.graph_k1, GRID_C1, NULL, &n1);
	add_node(g, G.graph_k2, GRID_C2, &n1, &n2);
	CHECK(cuGraphInstantiate(&exec, g, 0));
	for (int i = 0; i < G.launches; i++) {
		site_a(s);
		site_b(s);
		site_c(exec, s);
		site_d(s);
		site_e();
		site_f(s);
	}
	site_copy();
	CHECK(cuStreamSynchronize(s));
	CHECK(cuGraphExecDestroy(exec));
	CHECK(cuGraphDestroy(g));
	return NULL;
}

/* ------------------------------------------------------------ setup */

static void load_module(CUmodule *m, const char *tag, const char *const *k,
			size_t n, int how)
{
	uint8_t img[4096];
	size_t size = cubin_build(img, sizeof(img), tag, k, n);

	if (!size) {
		fprintf(stderr, "launcher: cubin too large\n");
		exit(1);
	}
	if (how == 0) {
		CHECK(cuModuleLoadData(m, img));
	} else if (how == 1) {
		CHECK(cuModuleLoadDataEx(m, img, 0, NULL, NULL));
	} else {
		char path[] = "/tmp/gp-launcher-XXXXXX";
		int fd = mkstemp(path);

		if (fd < 0 || write(fd, img, size) != (ssize_t)size) {
			perror("launcher: temp cubin");
			exit(1);
		}
		close(fd);
		CHECK(cuModuleLoad(m, path));
		unlink(path);
	}
}

static void setup(void)
{
	static const char *const main_k[] = { "gemm", "softmax" };
	static const char *const graph_k[] = { "graph_k1", "graph_k2" };
	static const char *const lib_k[] = { "lib_scale" };
	static const char *const dup_k[] = { "dup_relu" };
	uint8_t img[4096];
	CUdevice dev;

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&G.ctx, dev));
	CHECK(cuCtxSetCurrent(G.ctx));
	load_module(&G.mod_main, "main", main_k, 2, 0);
	load_module(&G.mod_graph, "graph", graph_k, 2, 1);
	if (!cubin_build(img, sizeof(img), "lib", lib_k, 1))
		exit(1);
	CHECK(cuLibraryLoadData(&G.lib, img, NULL, NULL, 0, NULL, NULL, 0));
	load_module(&G.mod_dup_a, "dup", dup_k, 1, 0);
	load_module(&G.mod_dup_b, "dup", dup_k, 1, 2);
	CHECK(cuModuleGetFunction(&G.gemm, G.mod_main, "gemm"));
	CHECK(cuModuleGetFunction(&G.softmax, G.mod_main, "softmax"));
	CHECK(cuModuleGetFunction(&G.graph_k1, G.mod_graph, "graph_k1"));
	CHECK(cuModuleGetFunction(&G.graph_k2, G.mod_graph, "graph_k2"));
	CHECK(cuLibraryGetKernel(&G.lib_scale, G.lib, "lib_scale"));
	CHECK(cuModuleGetFunction(&G.relu_a, G.mod_dup_a, "dup_relu"));
	CHECK(cuModuleGetFunction(&G.relu_b, G.mod_dup_b, "dup_relu"));
}

static void teardown(void)
{
	CHECK(cuCtxSynchronize());
	CHECK(cuModuleUnload(G.mod_main));
	CHECK(cuModuleUnload(G.mod_graph));
	CHECK(cuLibraryUnload(G.lib));
	CHECK(cuModuleUnload(G.mod_dup_a));
	CHECK(cuModuleUnload(G.mod_dup_b));
	CHECK(cuDevicePrimaryCtxRelease(0));
}

static void print_expect(void)
{
	static const struct { const char *site, *kernel, *api; int grid; } e[] = {
		{ "site_a", "gemm", "cuLaunchKernel", GRID_A },
		{ "site_b", "softmax", "cuLaunchKernelEx", GRID_B },
		{ "site_c", "graph_k1", "cuGraphLaunch", GRID_C1 },
		{ "site_c", "graph_k2", "cuGraphLaunch", GRID_C2 },
		{ "site_d", "lib_scale", "cuLaunchKernel", GRID_D },
		{ "site_e", "dup_relu", "cuLaunchKernel_ptsz", GRID_E },
		{ "site_f", "dup_relu", "cuLaunchKernel", GRID_F },
	};
	unsigned long long l = (unsigned long long)G.threads * G.launches;

	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
		printf("expect site=%s kernel=%s api=%s launches=%llu gpu_ns=%llu\n",
		       e[i].site, e[i].kernel, e[i].api, l,
		       l * (unsigned long long)e[i].grid * 1000ull);
	printf("expect copies htod=%d memset=%d dtoh=%d htod_ns=4 memset_ns=3 "
	       "dtoh_ns=4\n", G.threads, G.threads, G.threads);
	printf("expect modules=5 threads=%d launches_per_site=%d\n", G.threads,
	       G.launches);
}

/* ------------------------------------------------------------ main */

static int parse_int(const char *s, int lo, int hi, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "launcher: %s: expected an integer in [%d, %d], "
			"got '%s'\n", what, lo, hi, s);
		exit(2);
	}
	return (int)v;
}

/*
 * -r: the first launch waits until the shim injected here records (its
 * ring's header, mapped in this process, says so), at most 10 s: a test of
 * a process that exits at once must not race the loader's claim of its
 * ring (a shim sees a reader at its start only when the loader was quicker).
 */
static void wait_recording(void)
{
	const struct gp_shm_header *h = NULL;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	while (f && !h && fgets(line, sizeof(line), f)) {
		unsigned long long start, off;

		if (strstr(line, "/memfd:gpuprobe-shm") &&
		    sscanf(line, "%llx-%*llx %*s %llx", &start, &off) == 2 && off == 0)
			h = (const struct gp_shm_header *)(uintptr_t)start;
	}
	if (f)
		fclose(f);
	if (!h) {
		fprintf(stderr, "launcher: -r: no shim ring in this process\n");
		return;
	}
	for (int i = 0; i < 10000; i++) {
		if (__atomic_load_n(&h->producer.flags, __ATOMIC_ACQUIRE) & GP_SHM_F_RECORDING)
			return;
		usleep(1000);
	}
	fprintf(stderr, "launcher: -r: the shim did not record within 10 s\n");
}

int main(int argc, char **argv)
{
	pthread_t tids[256];
	bool wait_rec = false;
	int opt;

	G.threads = 4;
	G.launches = 10;
	while ((opt = getopt(argc, argv, "t:n:vr")) != -1) {
		if (opt == 'r')
			wait_rec = true;
		else if (opt == 't')
			G.threads = parse_int(optarg, 1, 256, "-t THREADS");
		else if (opt == 'n')
			G.launches = parse_int(optarg, 0, 10000000, "-n LAUNCHES");
		else if (opt == 'v')
			G.verbose = true;
		else {
			fprintf(stderr, "usage: launcher [-t THREADS] [-n LAUNCHES_PER_SITE] [-v] [-r]\n");
			return 2;
		}
	}
	setup();
	if (wait_rec)
		wait_recording();
	for (int i = 0; i < G.threads; i++) {
		if (pthread_create(&tids[i], NULL, worker, NULL) != 0) {
			fprintf(stderr, "launcher: pthread_create failed\n");
			return 1;
		}
	}
	for (int i = 0; i < G.threads; i++)
		pthread_join(tids[i], NULL);
	teardown();
	if (G.verbose)
		print_expect();
	return 0;
}
