// What CUPTI's callback API gives for launches when its launch callbacks are
// switched on and off while CUDA runs, from a thread of their own, as the
// shim's flush thread would: the main thread launches an empty kernel without
// pause; the switching thread turns on the launch callbacks (runtime
// cudaLaunchKernel and driver cuLaunchKernel, enter and exit) and then the
// kernel records, waits ON_MS, turns the records off and then the callbacks,
// waits OFF_MS, CYCLES times. Counted:
//   - driver callbacks inside a runtime call with that call's correlation id
//     (nested enter, nested exit), not counted further;
//   - the other enter and exit callbacks by domain; exits whose enter was not
//     seen (the thread's own stack of open calls); enters whose
//     correlationData was not 0 on arrival (whether CUPTI clears it);
//   - kernel records; kernel records whose correlation id no exit callback
//     had (GPU time with no call), exit callbacks whose id no kernel record
//     had (a call at an edge: the loader labels those).
// Then, in the same process, the cost: batches of BATCH launches with nothing
// on, with the callbacks alone, with the kernel records alone, and with both,
// interleaved ROUNDS times; the median ns per launch of each.
//   [CYCLES=50] [ON_MS=20] [OFF_MS=20] [BATCH=20000] [ROUNDS=15] ./cupti_cb_switch
// Build and run: tools/gpu/cb_facts.sh OUTDIR
#include <cupti.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <vector>

__global__ void empty_kernel() {}

static CUpti_SubscriberHandle sub;
static std::mutex lock;
static std::set<unsigned> kcorr, xcorr;
static unsigned long long kernels;
static std::atomic<unsigned long long> enters[2], exits[2], exit_unseen, data_dirty, nested[2];
static std::atomic<bool> stop_launching, counting{true};
static __thread unsigned open_calls[8];
static __thread int nopen;
static __thread unsigned runtime_open; /* the runtime call under way on this thread */

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

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

static void CUPTIAPI done(CUcontext c, uint32_t s, uint8_t *buf, size_t size, size_t valid)
{
	CUpti_Activity *r = NULL;
	std::lock_guard<std::mutex> g(lock);

	while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
		if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && counting) {
			kernels++;
			kcorr.insert(((CUpti_ActivityKernel10 *)r)->correlationId);
		}
	free(buf);
}

static void CUPTIAPI on_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p)
{
	const CUpti_CallbackData *cb = (const CUpti_CallbackData *)p;
	int dom = d == CUPTI_CB_DOMAIN_DRIVER_API;

	if (!counting)
		return;
	if (dom && runtime_open && cb->correlationId == runtime_open) {
		nested[cb->callbackSite == CUPTI_API_EXIT]++;
		return;
	}
	if (!dom)
		runtime_open = cb->callbackSite == CUPTI_API_ENTER ? cb->correlationId : 0;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		enters[dom]++;
		if (cb->correlationData && *cb->correlationData)
			data_dirty++;
		if (cb->correlationData)
			*cb->correlationData = 1;
		if (nopen < 8)
			open_calls[nopen++] = cb->correlationId;
		return;
	}
	exits[dom]++;
	if (nopen && open_calls[nopen - 1] == cb->correlationId)
		nopen--;
	else
		exit_unseen++;
	std::lock_guard<std::mutex> g(lock);
	xcorr.insert(cb->correlationId);
}

static void callbacks(int on)
{
	cuptiEnableCallback(on, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
	cuptiEnableCallback(on, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
}

static void kinds(int on)
{
	if (on)
		cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	else
		cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

static void *switcher(void *arg)
{
	unsigned cycles = env("CYCLES", 50), on_ms = env("ON_MS", 20), off_ms = env("OFF_MS", 20);

	for (unsigned i = 0; i < cycles; i++) {
		callbacks(1);
		kinds(1);
		usleep(on_ms * 1000);
		kinds(0);
		callbacks(0);
		usleep(off_ms * 1000);
	}
	stop_launching = true;
	return arg;
}

static double batch(unsigned n)
{
	double t0 = now_ns();

	for (unsigned i = 0; i < n; i++)
		empty_kernel<<<1, 1>>>();
	cudaDeviceSynchronize();
	return (now_ns() - t0) / n;
}

static void cost(void)
{
	static const char *names[] = { "off", "callbacks", "records", "both" };
	unsigned n = env("BATCH", 20000), rounds = env("ROUNDS", 15);
	std::vector<double> t[4];

	counting = false;
	for (unsigned r = 0; r < rounds; r++)
		for (int m = 0; m < 4; m++) {
			callbacks(m & 1);
			kinds(m >> 1 & 1);
			batch(200);
			t[m].push_back(batch(n));
			kinds(0);
			callbacks(0);
			cuptiActivityFlushAll(1);
		}
	for (int m = 0; m < 4; m++) {
		std::sort(t[m].begin(), t[m].end());
		printf("cost %-9s median %.0f ns per launch (min %.0f, max %.0f; %u batches of %u)\n", names[m],
		       t[m][t[m].size() / 2], t[m].front(), t[m].back(), rounds, n);
	}
}

int main()
{
	pthread_t th;
	unsigned long long launched = 0;
	size_t k_only = 0, x_only = 0;

	cuptiActivityRegisterCallbacks(req, done);
	cuptiSubscribe(&sub, on_cb, NULL);
	cudaFree(0);
	empty_kernel<<<1, 1>>>();
	cudaDeviceSynchronize();
	pthread_create(&th, NULL, switcher, NULL);
	while (!stop_launching) {
		empty_kernel<<<1, 1>>>();
		launched++;
	}
	pthread_join(th, NULL);
	cudaDeviceSynchronize();
	cuptiActivityFlushAll(1);
	for (unsigned c : kcorr)
		k_only += !xcorr.count(c);
	for (unsigned c : xcorr)
		x_only += !kcorr.count(c);
	printf("launched=%llu nested driver enter=%llu exit=%llu; runtime enter=%llu exit=%llu driver enter=%llu "
	       "exit=%llu exit_unseen=%llu data_dirty=%llu kernels=%llu kernel_without_exit=%zu "
	       "exit_without_kernel=%zu\n",
	       launched, nested[0].load(), nested[1].load(), enters[0].load(), exits[0].load(),
	       enters[1].load(), exits[1].load(),
	       exit_unseen.load(), data_dirty.load(), kernels, k_only, x_only);
	cost();
	return 0;
}
