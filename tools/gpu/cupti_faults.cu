// Which of CUPTI's switches leaves a thread's launches wrong, found without
// PyTorch: THREADS threads launch empty kernels without pause, each on its own
// stream (thread t's kernels have t+1 blocks), while one more thread switches,
// as the shim's flush thread does, every ON_MS / OFF_MS for CYCLES cycles:
//   SWITCH=both   the launch callbacks and the kernel records (the shim);
//   SWITCH=kinds  the kernel records only (the callbacks on throughout);
//   SWITCH=cbs    the launch callbacks only (the kernel records on throughout);
//   SWITCH=rt     the runtime launch callback only (the driver's and the records on);
//   SWITCH=drv    the driver launch callback only (the runtime's and the records on);
//   ENABLE=context  the kernel records switched for the context, not globally;
//   CBWAY=domain  callbacks switched by domain (cuptiEnableDomain), not by id.
// Also, per thread, what the fault is: enters whose id is the previous
// enter's, exits whose id is not their own enter's, and each of the thread's
// kernel records' ids found among its exits, among its enters only, or in
// neither (the ids are kept per thread and compared at the end).
// Counted per launching thread: runtime launch exits (outside nested driver
// calls), exits whose correlation id is the thread's previous exit's (the
// "stuck id" fault), kernel records of its stream, and windows (cycles with at
// least 20 exits while both were on) in which its kernel records, matched to
// the window of their call, are under half those exits ("kernels that never come"). One line a
// thread, then a total line. Build and run: tools/gpu/fault_facts.sh OUTDIR
#include <cuda.h>
#include <cupti.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#define MAX_THREADS 16
#define MAX_CYCLES 4096

__global__ void empty_kernel() {}

struct per_thread {
	std::atomic<unsigned long long> launched, exits, stuck, kernels;
	std::atomic<int> first_stuck, last_stuck;
	unsigned long long enter_stuck, exit_not_enter; /* written by the thread itself */
	std::vector<unsigned> enter_ids, exit_ids;      /* the thread's own */
	std::atomic<unsigned> exits_in[MAX_CYCLES], kernels_in[MAX_CYCLES];
	cudaStream_t stream;
};

static per_thread th[MAX_THREADS];
static unsigned nthreads;
static CUpti_SubscriberHandle sub;
static CUcontext ctx;
static std::mutex lock;
static std::unordered_map<unsigned, unsigned> call_cycle; /* correlation id -> cycle of its exit */
static std::atomic<int> cycle{0};
static std::atomic<bool> window; /* both switched on: the window's exits count */
static std::atomic<bool> stop_launching;
static std::vector<std::pair<int, unsigned>> kernel_ids; /* (thread, correlation id), under lock */
static __thread int me = -1;
static __thread unsigned runtime_open, last_exit, last_enter;
static int by_context, by_domain;

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

/*
 * The launching thread of a kernel record: its grid (thread t launches t+1
 * blocks). By stream id (cuStreamGetId inside the buffer callback) it
 * counted no kernel for the fourth thread on the H200.
 */
static int thread_of_grid(uint32_t grid_x)
{
	return grid_x >= 1 && grid_x <= nthreads ? (int)grid_x - 1 : -1;
}

static void CUPTIAPI done(CUcontext c, uint32_t s, uint8_t *buf, size_t size, size_t valid)
{
	CUpti_Activity *r = NULL;
	std::lock_guard<std::mutex> g(lock);

	while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
		if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			continue;
		CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)r;
		int t = thread_of_grid(k->gridX);

		if (t < 0)
			continue;
		th[t].kernels++;
		kernel_ids.emplace_back(t, (unsigned)k->correlationId);
		auto it = call_cycle.find(k->correlationId);
		if (it != call_cycle.end() && it->second < MAX_CYCLES)
			th[t].kernels_in[it->second]++;
	}
	free(buf);
}

static void CUPTIAPI on_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p)
{
	const CUpti_CallbackData *cb = (const CUpti_CallbackData *)p;
	bool driver = d == CUPTI_CB_DOMAIN_DRIVER_API;
	int c = cycle.load();

	if (me < 0 || (driver && runtime_open && cb->correlationId == runtime_open))
		return;
	if (driver)
		return; /* a driver call outside a runtime one: not ours */
	if (cb->callbackSite == CUPTI_API_ENTER) {
		runtime_open = cb->correlationId;
		th[me].enter_stuck += cb->correlationId == last_enter;
		last_enter = cb->correlationId;
		th[me].enter_ids.push_back(cb->correlationId);
		return;
	}
	th[me].exit_not_enter += runtime_open && cb->correlationId != runtime_open;
	runtime_open = 0;
	th[me].exits++;
	th[me].exit_ids.push_back(cb->correlationId);
	if (cb->correlationId == last_exit) {
		int none = -1;

		th[me].stuck++;
		th[me].first_stuck.compare_exchange_strong(none, c);
		th[me].last_stuck = c;
	}
	last_exit = cb->correlationId;
	if (!window.load())
		return;
	if (c < MAX_CYCLES)
		th[me].exits_in[c]++;
	std::lock_guard<std::mutex> g(lock);
	call_cycle[cb->correlationId] = (unsigned)c;
}

static void callbacks_of(int on, bool rt, bool drv)
{
	if (by_domain) {
		if (rt)
			cuptiEnableDomain(on, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
		if (drv)
			cuptiEnableDomain(on, sub, CUPTI_CB_DOMAIN_DRIVER_API);
		return;
	}
	if (rt)
		cuptiEnableCallback(on, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
	if (drv)
		cuptiEnableCallback(on, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
}

static bool switch_rt, switch_drv; /* which callbacks the cycles switch */

static void callbacks(int on)
{
	callbacks_of(on, switch_rt, switch_drv);
}

static void callbacks_all(int on)
{
	cuptiEnableCallback(on, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
	cuptiEnableCallback(on, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
}

static void kinds(int on)
{
	CUpti_ActivityKind k = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;

	if (by_context)
		on ? cuptiActivityEnableContext(ctx, k) : cuptiActivityDisableContext(ctx, k);
	else
		on ? cuptiActivityEnable(k) : cuptiActivityDisable(k);
}

static void *switcher(void *arg)
{
	const char *sw = getenv("SWITCH") ? getenv("SWITCH") : "both";
	bool cbs = strcmp(sw, "kinds") != 0;
	bool kds = strcmp(sw, "both") == 0 || strcmp(sw, "kinds") == 0;
	unsigned cycles = env("CYCLES", 200), on_ms = env("ON_MS", 20), off_ms = env("OFF_MS", 20);

	switch_rt = cbs && strcmp(sw, "drv") != 0;
	switch_drv = cbs && strcmp(sw, "rt") != 0;
	callbacks_all(1); /* what the cycles do not switch stays on */
	if (!kds)
		kinds(1);
	for (unsigned i = 0; i < cycles && i < MAX_CYCLES - 1; i++) {
		cycle = (int)i;
		if (cbs)
			callbacks(1);
		if (kds)
			kinds(1);
		window = true;
		usleep(on_ms * 1000);
		window = false;
		if (kds)
			kinds(0);
		if (cbs)
			callbacks(0);
		usleep(off_ms * 1000);
	}
	stop_launching = true;
	return arg;
}

static void *launcher(void *arg)
{
	int t = (int)(long)arg;

	cudaSetDevice(0);
	me = t;
	while (!stop_launching) {
		empty_kernel<<<t + 1, 1, 0, th[t].stream>>>();
		th[t].launched++;
	}
	return NULL;
}

int main()
{
	pthread_t sw, ls[MAX_THREADS];
	unsigned long long all[4] = { 0 };
	unsigned bad_all = 0;

	nthreads = env("THREADS", 4);
	nthreads = nthreads < 1 ? 1 : nthreads > MAX_THREADS ? MAX_THREADS : nthreads;
	by_context = getenv("ENABLE") && !strcmp(getenv("ENABLE"), "context");
	by_domain = getenv("CBWAY") && !strcmp(getenv("CBWAY"), "domain");
	cuptiActivityRegisterCallbacks(req, done);
	cuptiSubscribe(&sub, on_cb, NULL);
	cudaFree(0);
	cuCtxGetCurrent(&ctx);
	for (unsigned t = 0; t < nthreads; t++) {
		th[t].first_stuck = -1;
		th[t].last_stuck = -1;
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
	kinds(0);
	cuptiActivityFlushAll(1);
	for (unsigned t = 0; t < nthreads; t++) {
		unsigned bad = 0;
		int first_bad = -1;

		for (int c = 0; c < MAX_CYCLES; c++)
			if (th[t].exits_in[c] >= 20 && th[t].kernels_in[c] * 2 < th[t].exits_in[c]) {
				bad++;
				if (first_bad < 0)
					first_bad = c;
			}
		std::unordered_set<unsigned> ex(th[t].exit_ids.begin(), th[t].exit_ids.end());
		std::unordered_set<unsigned> en(th[t].enter_ids.begin(), th[t].enter_ids.end());
		unsigned long long k_exit = 0, k_enter = 0, k_none = 0;

		for (auto &k : kernel_ids) {
			if (k.first != (int)t)
				continue;
			if (ex.count(k.second))
				k_exit++;
			else if (en.count(k.second))
				k_enter++;
			else
				k_none++;
		}
		printf("thread %u: launched=%llu exits=%llu stuck=%llu first_stuck_cycle=%d last_stuck_cycle=%d "
		       "enter_stuck=%llu exit_not_enter=%llu distinct_exit_ids=%zu distinct_enter_ids=%zu "
		       "kernels=%llu kernel_id_at_exit=%llu kernel_id_at_enter_only=%llu kernel_id_unseen=%llu "
		       "bad_windows=%u first_bad_cycle=%d\n",
		       t, th[t].launched.load(), th[t].exits.load(), th[t].stuck.load(), th[t].first_stuck.load(),
		       th[t].last_stuck.load(), th[t].enter_stuck, th[t].exit_not_enter, ex.size(), en.size(),
		       th[t].kernels.load(), k_exit, k_enter, k_none, bad, first_bad);
		all[0] += th[t].launched;
		all[1] += th[t].exits;
		all[2] += th[t].stuck;
		all[3] += th[t].kernels;
		bad_all += bad;
	}
	printf("total SWITCH=%s ENABLE=%s CBWAY=%s threads=%u: launched=%llu exits=%llu stuck=%llu kernels=%llu "
	       "bad_windows=%u\n",
	       getenv("SWITCH") ? getenv("SWITCH") : "both", by_context ? "context" : "global",
	       by_domain ? "domain" : "id", nthreads, all[0],
	       all[1], all[2], all[3], bad_all);
	return 0;
}
