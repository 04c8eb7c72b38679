// Can the join's API records be switched with the windows, with no launch
// callback at all? CUPTI's per-call API records (cuptiActivityEnableRuntimeApi)
// come only when asked before CUDA starts (tools/gpu/cupti_switch.cu), and
// its launch callbacks, switched while threads launch, leave a thread's
// correlation id stuck (tools/gpu/cupti_faults.cu). This asks the same of
// the whole RUNTIME and DRIVER activity kinds, switched as Kineto switches
// them: THREADS threads launch empty kernels without pause, each on its own
// stream (thread t's kernels have t+1 blocks), first PRE_MS with nothing on,
// then CYCLES cycles of ON_MS with the kernel, RUNTIME and DRIVER kinds on
// (ORDER=api-first, as the shim: API kinds before the kernel kind, off
// LINGER_MS after it; else the kernel kind first, off first) and OFF_MS off,
// then POST_MS with nothing on again. Thread ids are the system's (as the
// shim asks), so API records are told apart by the launching thread.
// Per thread: its cudaLaunchKernel API records, their ids repeated (a stuck
// id: the same id as the thread's previous record), kernel records, kernels
// whose id has no API record of the thread, API records with no kernel, and
// launches a second before the first switch and after the last (what the
// kinds leave behind once off). Build and run: tools/gpu/api_kinds_facts.sh OUTDIR
#include <cupti.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#define MAX_THREADS 16

__global__ void empty_kernel() {}

struct api_rec {
	unsigned long long start;
	unsigned corr;
};

struct per_thread {
	std::atomic<unsigned long long> launched, pre, post;
	std::atomic<unsigned> tid;
	std::vector<api_rec> apis;       /* under lock */
	std::vector<unsigned> kernels;   /* correlation ids, under lock */
	cudaStream_t stream;
};

static per_thread th[MAX_THREADS];
static unsigned nthreads;
static std::mutex lock;
static std::atomic<int> phase{0}; /* 0 pre, 1 cycles, 2 post, 3 stop */
static unsigned long long other_api, other_kernels;

static unsigned env(const char *name, unsigned def)
{
	const char *v = getenv(name);

	return v && *v ? (unsigned)atoi(v) : def;
}

static void CUPTIAPI req(uint8_t **buf, size_t *size, size_t *max)
{
	*buf = (uint8_t *)aligned_alloc(8, 8u << 20);
	*size = 8u << 20;
	*max = 0;
}

static int thread_of_tid(unsigned tid)
{
	for (unsigned t = 0; t < nthreads; t++)
		if (th[t].tid == tid)
			return (int)t;
	return -1;
}

static void CUPTIAPI done(CUcontext c, uint32_t s, uint8_t *buf, size_t size, size_t valid)
{
	CUpti_Activity *r = NULL;
	std::lock_guard<std::mutex> g(lock);

	while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
		if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
			CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)r;
			uint32_t gx = k->gridX;

			if (gx >= 1 && gx <= nthreads)
				th[gx - 1].kernels.push_back(k->correlationId);
			else
				other_kernels++;
		} else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
			CUpti_ActivityAPI *a = (CUpti_ActivityAPI *)r;
			int t = thread_of_tid(a->threadId);

			if (a->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 && t >= 0)
				th[t].apis.push_back({ (unsigned long long)a->start, a->correlationId });
			else
				other_api++;
		} else if (r->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
			other_api++;
		}
	}
	free(buf);
}

static unsigned long long switch_errors;

static void api_kinds(int on)
{
	if (on)
		switch_errors += (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS) +
				 (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) != CUPTI_SUCCESS);
	else
		switch_errors += (cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS) +
				 (cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER) != CUPTI_SUCCESS);
}

static void kernel_kind(int on)
{
	switch_errors += (on ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			     : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS;
}

static void *switcher(void *arg)
{
	bool api_first = getenv("ORDER") && !strcmp(getenv("ORDER"), "api-first");
	bool no_api = getenv("ORDER") && !strcmp(getenv("ORDER"), "kernel-only");
	unsigned cycles = env("CYCLES", 150), on_ms = env("ON_MS", 20), off_ms = env("OFF_MS", 20);
	unsigned linger_ms = env("LINGER_MS", 50);

	usleep(env("PRE_MS", 1000) * 1000);
	phase = 1;
	for (unsigned i = 0; i < cycles; i++) {
		if (api_first)
			api_kinds(1);
		kernel_kind(1);
		if (!api_first && !no_api)
			api_kinds(1);
		usleep(on_ms * 1000);
		if (!api_first && !no_api)
			api_kinds(0);
		kernel_kind(0);
		if (api_first) {
			usleep(linger_ms * 1000);
			api_kinds(0);
		}
		usleep(off_ms * 1000);
	}
	phase = 2;
	usleep(env("POST_MS", 1000) * 1000);
	phase = 3;
	return arg;
}

static void *launcher(void *arg)
{
	int t = (int)(long)arg;

	cudaSetDevice(0);
	th[t].tid = (unsigned)syscall(SYS_gettid);
	while (phase.load(std::memory_order_relaxed) != 3) {
		int p = phase.load(std::memory_order_relaxed);

		empty_kernel<<<t + 1, 1, 0, th[t].stream>>>();
		th[t].launched++;
		if (p == 0)
			th[t].pre++;
		else if (p == 2)
			th[t].post++;
	}
	return NULL;
}

int main()
{
	pthread_t sw, ls[MAX_THREADS];
	unsigned long long tot[6] = { 0 };

	nthreads = env("THREADS", 4);
	nthreads = nthreads < 1 ? 1 : nthreads > MAX_THREADS ? MAX_THREADS : nthreads;
	if (cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) != CUPTI_SUCCESS)
		fprintf(stderr, "cupti_api_kinds: system thread ids refused\n");
	cuptiActivityRegisterCallbacks(req, done);
	cudaFree(0);
	for (unsigned t = 0; t < nthreads; t++) {
		cudaStreamCreateWithFlags(&th[t].stream, cudaStreamNonBlocking);
		empty_kernel<<<t + 1, 1, 0, th[t].stream>>>();
	}
	cudaDeviceSynchronize();
	pthread_create(&sw, NULL, switcher, NULL);
	for (unsigned t = 0; t < nthreads; t++)
		pthread_create(&ls[t], NULL, launcher, (void *)(long)t);
	pthread_join(sw, NULL);
	for (unsigned t = 0; t < nthreads; t++)
		pthread_join(ls[t], NULL);
	cudaDeviceSynchronize();
	cuptiActivityFlushAll(1);
	std::lock_guard<std::mutex> g(lock);
	for (unsigned t = 0; t < nthreads; t++) {
		std::vector<api_rec> &a = th[t].apis;
		std::unordered_set<unsigned> aid, kid(th[t].kernels.begin(), th[t].kernels.end());
		unsigned long long stuck = 0, k_no_api = 0, api_no_k = 0;

		std::sort(a.begin(), a.end(), [](const api_rec &x, const api_rec &y) { return x.start < y.start; });
		for (size_t i = 0; i < a.size(); i++) {
			stuck += i && a[i].corr == a[i - 1].corr;
			aid.insert(a[i].corr);
		}
		for (unsigned k : th[t].kernels)
			k_no_api += !aid.count(k);
		for (unsigned x : aid)
			api_no_k += !kid.count(x);
		printf("thread %u: launched=%llu pre=%llu post=%llu api=%zu distinct_api_ids=%zu stuck=%llu kernels=%zu "
		       "distinct_kernel_ids=%zu kernel_without_api=%llu api_without_kernel=%llu\n",
		       t, th[t].launched.load(), th[t].pre.load(), th[t].post.load(), a.size(), aid.size(), stuck,
		       th[t].kernels.size(), kid.size(), k_no_api, api_no_k);
		tot[0] += a.size();
		tot[1] += stuck;
		tot[2] += th[t].kernels.size();
		tot[3] += k_no_api;
		tot[4] += api_no_k;
		tot[5] += th[t].kernels.size() - kid.size();
	}
	printf("total ORDER=%s threads=%u: api=%llu stuck=%llu kernels=%llu kernel_without_api=%llu "
	       "api_without_kernel=%llu kernel_ids_repeated=%llu other_api=%llu other_kernels=%llu switch_errors=%llu\n",
	       getenv("ORDER") ? getenv("ORDER") : "kernel-first", nthreads, tot[0], tot[1], tot[2], tot[3],
	       tot[4], tot[5], other_api, other_kernels, switch_errors);
	return 0;
}
