/* SPDX-License-Identifier: MIT */
/*
 * The stub CUPTI: what a CUPTI client like our shim calls, driven by the stub
 * driver through stub/stub_hooks.h.
 *
 * - One subscriber; a second cuptiSubscribe gets
 *   CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, as on the measured driver.
 * - Correlation ids: one per driver API call (recorded or not), a wrapping
 *   u32 that skips 0 (0 means "none" in CUPTI records). The first id is 1,
 *   or GPUPROBE_STUB_CORR_START (read once, when this library loads).
 * - API records (CUpti_ActivityAPI, kind DRIVER) start just after the call's
 *   entry and end just before its return; only cbids enabled with
 *   cuptiActivityEnableDriverApi produce them, or all when the DRIVER kind is
 *   enabled wholesale.
 * - Kernel records (CUpti_ActivityKernel10) carry the launch's correlation
 *   id; kind CONCURRENT_KERNEL if enabled, else KERNEL. As measured on the
 *   real driver, enabling GRAPH_TRACE suppresses the per-node kernel records
 *   of graph launches (and the stub writes no graph-trace records).
 * - Timestamps: the registered timestamp callback, else CLOCK_REALTIME.
 * - threadId: gettid() after cuptiSetThreadIdType(SYSTEM), else the low 32
 *   bits of pthread_self(), like CUPTI's default.
 * - Callbacks: RESOURCE MODULE_LOADED / MODULE_UNLOAD_STARTING (CUDA 13 has
 *   no _UNLOADED), on the application thread inside the driver call (driver
 *   lock held); RESOURCE GRAPHNODE_CREATED, GRAPHNODE_CLONED and
 *   GRAPHEXEC_CREATED (a CUpti_GraphData), on the application thread inside
 *   the launch being captured, cuGraphAddKernelNode or cuGraphInstantiate
 *   (no driver lock held); and DRIVER_API enter/exit with functionParams ==
 *   NULL (the stub has no parameter structs: a client must not read them).
 * - cuptiGetGraphId, cuptiGetGraphNodeId, cuptiGetGraphExecId answer from
 *   the driver's handles (stub_hooks.h's queries): node ids are
 *   (graph id << 32) | index, an exec's id is its own graph's id. With
 *   GPUPROBE_STUB_NO_GRAPH_IDS set, cuptiGetGraphNodeId answers
 *   CUPTI_ERROR_NOT_SUPPORTED.
 * - As measured on the real driver (tools/gpu/cupti_switch.cu), per-call API
 *   records (cuptiActivityEnableDriverApi/RuntimeApi) are taken only when
 *   asked before CUDA starts: once a driver call has been seen, those calls
 *   answer CUPTI_SUCCESS and change nothing.
 * - With GPUPROBE_STUB_TOGGLE_LOG=FILE, every activity switch (a kind, an
 *   API cbid's records, or a driver or runtime API callback: cb_driver,
 *   cb_runtime; on or off) appends "tid app what id on|off" to FILE, app 1 when
 *   the switching thread has made driver calls (an application thread), so a
 *   test can tell which thread switched activity.
 * - With GPUPROBE_STUB_ENABLE_DELAY_MS=N (read once, when this library
 *   loads), cuptiActivityEnable takes N ms before its kind records, as a
 *   slow switch or a starved caller would: a loader must not count on it
 *   being quick.
 * - With GPUPROBE_STUB_NO_TS_CALLBACK=1, cuptiActivityRegisterTimestampCallback
 *   is refused (CUPTI_ERROR_NOT_SUPPORTED): records keep CLOCK_REALTIME, as
 *   on a CUPTI without the callback, and the shim must give the offset.
 * - With GPUPROBE_STUB_LOSE_KERNELS=N (read once, when this library loads),
 *   every Nth kernel record (of those due) is not written and not counted
 *   as dropped: a record CUPTI lost without saying so, as the H200 showed
 *   with four processes profiled at once (docs/BENCHMARKS.md).
 * - PC sampling (cupti_pcsampling.h): pcsampling.c says what it samples.
 * Other activity kinds are accepted and produce nothing.
 */
#include "stub/cupti/internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct cupti_state g_cupti;

struct CUpti_Subscriber_st {
	_Atomic(CUpti_CallbackFunc) callback;
	_Atomic(void *) userdata;
	atomic_uchar resource[CUPTI_CBID_RESOURCE_SIZE];
	atomic_uchar driver_api[CUPTI_DRIVER_TRACE_CBID_SIZE];
};

static struct CUpti_Subscriber_st the_subscriber;
static atomic_bool subscribed;
static _Atomic uint32_t next_corr = 1;
static _Atomic int64_t next_grid_id = 1;

/* ------------------------------------------------------------ clock, ids */

uint64_t cupti_now(void)
{
	CUpti_TimestampCallbackFunc cb = atomic_load(&g_cupti.ts_cb);
	struct timespec ts;

	if (cb)
		return cb();
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t thread_id(void)
{
	if (atomic_load(&g_cupti.system_tid))
		return (uint32_t)syscall(SYS_gettid);
	return (uint32_t)(uintptr_t)pthread_self();
}

/*
 * Test hook: GPUPROBE_STUB_STUCK_CORR=N: the thread that takes id N keeps
 * it for all its later calls and their records, as CUPTI 13.0 did on the
 * H200 under switched callbacks (docs/BENCHMARKS.md).
 */
static uint32_t stuck_at;
static _Thread_local uint32_t stuck_id;

static uint32_t take_correlation_id(void)
{
	uint32_t id;

	if (stuck_id)
		return stuck_id;
	id = atomic_fetch_add(&next_corr, 1);
	if (id == 0) /* wrapped: 0 names nothing */
		id = atomic_fetch_add(&next_corr, 1);
	if (stuck_at && id == stuck_at)
		stuck_id = id;
	return id;
}

/* ------------------------------------------------------------ callbacks */

static bool callback_on(CUpti_CallbackDomain domain, uint32_t cbid)
{
	struct CUpti_Subscriber_st *s = &the_subscriber;

	if (!atomic_load(&subscribed))
		return false;
	if (domain == CUPTI_CB_DOMAIN_RESOURCE)
		return cbid < CUPTI_CBID_RESOURCE_SIZE && atomic_load(&s->resource[cbid]);
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
		return cbid < CUPTI_DRIVER_TRACE_CBID_SIZE &&
		       atomic_load(&s->driver_api[cbid]);
	return false;
}

static void callback_call(CUpti_CallbackDomain domain, uint32_t cbid,
			  const void *data)
{
	CUpti_CallbackFunc fn = atomic_load(&the_subscriber.callback);

	if (fn)
		fn(atomic_load(&the_subscriber.userdata), domain, cbid, data);
}

static void api_callback(struct stub_api_call *c, CUpti_ApiCallbackSite site)
{
	CUresult ret = (CUresult)c->result;
	CUpti_CallbackData d = {
		.callbackSite = site,
		.functionName = c->func_name,
		.functionParams = NULL,
		.functionReturnValue = site == CUPTI_API_EXIT ? &ret : NULL,
		.contextUid = 1,
		.correlationData = &c->correlation_data,
		.correlationId = c->correlation_id,
	};

	if (callback_on(CUPTI_CB_DOMAIN_DRIVER_API, c->cbid))
		callback_call(CUPTI_CB_DOMAIN_DRIVER_API, c->cbid, &d);
}

static void module_callback(CUpti_CallbackIdResource cbid,
			    const struct stub_module_event *m)
{
	CUpti_ModuleResourceData mod = {
		.moduleId = m->module_id,
		.cubinSize = m->size,
		.pCubin = m->image,
	};
	CUpti_ResourceData d = {
		.context = m->context,
		.resourceDescriptor = &mod,
	};

	if (callback_on(CUPTI_CB_DOMAIN_RESOURCE, cbid))
		callback_call(CUPTI_CB_DOMAIN_RESOURCE, cbid, &d);
}

static void graph_callback(CUpti_CallbackIdResource cbid,
			   const struct stub_graph_event *g)
{
	CUpti_GraphData gd = {
		.graph = g->graph,
		.originalGraph = g->original_graph,
		.node = g->node,
		.originalNode = g->original_node,
		.nodeType = (CUgraphNodeType)g->node_type,
		.graphExec = g->graph_exec,
	};
	CUpti_ResourceData d = {
		.context = g->context,
		.resourceDescriptor = &gd,
	};

	if (callback_on(CUPTI_CB_DOMAIN_RESOURCE, cbid))
		callback_call(CUPTI_CB_DOMAIN_RESOURCE, cbid, &d);
}

/* ------------------------------------------------------------ driver ops */

static bool kind_on(CUpti_ActivityKind k)
{
	return atomic_load(&g_cupti.kind[k]);
}

/* Set on a thread once it makes a driver call: an application thread. */
static __thread bool tls_app;

bool stub_thread_is_app(void)
{
	return tls_app;
}

static void toggle_note(const char *what, unsigned id, bool on)
{
	const char *path = getenv("GPUPROBE_STUB_TOGGLE_LOG");
	char line[96];
	int fd, n;

	if (!path || !*path)
		return;
	n = snprintf(line, sizeof(line), "%ld %d %s %u %s\n", (long)syscall(SYS_gettid),
		     tls_app, what, id, on ? "on" : "off");
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) < 0)
		(void)0; /* a test's log: nothing to do about it */
	close(fd);
}

/* A driver call was seen: per-call API record settings are fixed from now on. */
static atomic_bool cuda_started;

static void op_api_enter(struct stub_api_call *c)
{
	tls_app = true;
	atomic_store(&cuda_started, true);
	c->correlation_id = take_correlation_id();
	c->thread_id = thread_id();
	api_callback(c, CUPTI_API_ENTER);
	c->start_ns = cupti_now();
}

static bool driver_record_on(uint32_t cbid)
{
	if (!kind_on(CUPTI_ACTIVITY_KIND_DRIVER) &&
	    !(cbid < CUPTI_DRIVER_TRACE_CBID_SIZE &&
	      atomic_load(&g_cupti.driver_cbid[cbid])))
		return false;
	return true;
}

static void op_api_exit(struct stub_api_call *c)
{
	CUpti_ActivityAPI rec;

	c->end_ns = cupti_now();
	if (driver_record_on(c->cbid)) {
		memset(&rec, 0, sizeof(rec));
		rec.kind = CUPTI_ACTIVITY_KIND_DRIVER;
		rec.cbid = c->cbid;
		rec.start = c->start_ns;
		rec.end = c->end_ns;
		rec.processId = (uint32_t)getpid();
		rec.threadId = c->thread_id;
		rec.correlationId = c->correlation_id;
		rec.returnValue = (uint32_t)c->result;
		buf_emit(&rec, sizeof(rec));
	}
	api_callback(c, CUPTI_API_EXIT);
}

static void kernel_fill(CUpti_ActivityKernel10 *r, const struct stub_api_call *c,
			const struct stub_kernel_exec *k)
{
	r->start = k->start_ns;
	r->end = k->end_ns;
	r->completed = k->end_ns;
	r->contextId = k->context_id;
	r->streamId = k->stream_id;
	r->gridX = (int32_t)k->grid[0];
	r->gridY = (int32_t)k->grid[1];
	r->gridZ = (int32_t)k->grid[2];
	r->blockX = (int32_t)k->block[0];
	r->blockY = (int32_t)k->block[1];
	r->blockZ = (int32_t)k->block[2];
	r->dynamicSharedMemory = (int32_t)k->dynamic_smem;
	r->correlationId = c->correlation_id;
	r->gridId = atomic_fetch_add(&next_grid_id, 1);
	r->name = k->name;
	r->launchType = k->cooperative ? CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE
				       : CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
	r->graphNodeId = k->graph_node_id;
	r->graphId = k->graph_id;
	r->clusterX = k->cluster[0];
	r->clusterY = k->cluster[1];
	r->clusterZ = k->cluster[2];
}

static unsigned lose_kernels; /* GPUPROBE_STUB_LOSE_KERNELS: 0 none, else every Nth */
static atomic_uint kernels_due;

static void op_kernel(const struct stub_api_call *c,
		      const struct stub_kernel_exec *k)
{
	CUpti_ActivityKernel10 rec;
	CUpti_ActivityKind kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;

	stub_pc_kernel_ran(k); /* PC sampling, if enabled: whatever the activity kinds */
	if (!kind_on(kind))
		kind = CUPTI_ACTIVITY_KIND_KERNEL;
	if (!kind_on(kind))
		return;
	if (k->graph_id && kind_on(CUPTI_ACTIVITY_KIND_GRAPH_TRACE))
		return;
	if (lose_kernels && atomic_fetch_add(&kernels_due, 1) % lose_kernels == lose_kernels - 1)
		return;
	memset(&rec, 0, sizeof(rec));
	rec.kind = kind;
	kernel_fill(&rec, c, k);
	buf_emit(&rec, sizeof(rec));
}

static void memcpy_emit(const struct stub_api_call *c,
			const struct stub_copy_exec *ce)
{
	CUpti_ActivityMemcpy6 rec;

	memset(&rec, 0, sizeof(rec));
	rec.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	rec.copyKind = ce->copy_kind;
	rec.srcKind = ce->src_kind;
	rec.dstKind = ce->dst_kind;
	rec.bytes = ce->bytes;
	rec.start = ce->start_ns;
	rec.end = ce->end_ns;
	rec.contextId = ce->context_id;
	rec.streamId = ce->stream_id;
	rec.correlationId = c->correlation_id;
	rec.copyCount = 1;
	buf_emit(&rec, sizeof(rec));
}

static void memset_emit(const struct stub_api_call *c,
			const struct stub_copy_exec *ce)
{
	CUpti_ActivityMemset4 rec;

	memset(&rec, 0, sizeof(rec));
	rec.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	rec.value = ce->value;
	rec.bytes = ce->bytes;
	rec.start = ce->start_ns;
	rec.end = ce->end_ns;
	rec.contextId = ce->context_id;
	rec.streamId = ce->stream_id;
	rec.correlationId = c->correlation_id;
	rec.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	buf_emit(&rec, sizeof(rec));
}

static void op_copy(const struct stub_api_call *c, const struct stub_copy_exec *ce)
{
	if (ce->is_memset && kind_on(CUPTI_ACTIVITY_KIND_MEMSET))
		memset_emit(c, ce);
	else if (!ce->is_memset && kind_on(CUPTI_ACTIVITY_KIND_MEMCPY))
		memcpy_emit(c, ce);
}

static void op_module_loaded(const struct stub_module_event *m)
{
	stub_pc_module_loaded(m->module_id, m->image, m->size);
	module_callback(CUPTI_CBID_RESOURCE_MODULE_LOADED, m);
}

/* The client is told first; then the module goes, with its uncollected PC samples. */
static void op_module_unloading(const struct stub_module_event *m)
{
	stub_pc_unload_starting();
	module_callback(CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, m);
	stub_pc_module_gone(m->module_id);
}

static void op_graph_node_created(const struct stub_graph_event *g)
{
	graph_callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, g);
}

static void op_graph_node_cloned(const struct stub_graph_event *g)
{
	graph_callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, g);
}

static void op_graph_exec_created(const struct stub_graph_event *g)
{
	graph_callback(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, g);
}

static void op_graph_node_updated(const struct stub_graph_event *g)
{
	graph_callback(CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED, g);
}

static void op_graph_node_set_params(const struct stub_graph_event *g)
{
	graph_callback(CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS, g);
}

static const struct stub_cupti_ops ops = {
	.version = STUB_HOOKS_VERSION,
	.size = sizeof(struct stub_cupti_ops),
	.now = cupti_now,
	.api_enter = op_api_enter,
	.api_exit = op_api_exit,
	.kernel = op_kernel,
	.copy = op_copy,
	.module_loaded = op_module_loaded,
	.module_unloading = op_module_unloading,
	.graph_node_created = op_graph_node_created,
	.graph_node_cloned = op_graph_node_cloned,
	.graph_exec_created = op_graph_exec_created,
	.graph_node_updated = op_graph_node_updated,
	.graph_node_set_params = op_graph_node_set_params,
};

/* ------------------------------------------------------------ attach */

typedef int (*register_fn)(const struct stub_cupti_ops *,
			   const struct stub_cuda_info **);

static register_fn find_register(void)
{
	register_fn fn;
	void *h;

	*(void **)&fn = dlsym(RTLD_DEFAULT, STUBCUDA_REGISTER_SYM);
	if (fn)
		return fn;
	/* A driver dlopen'ed RTLD_LOCAL (as libcudart does) is not in the
	 * global scope: ask for it by soname. */
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return NULL;
	*(void **)&fn = dlsym(h, STUBCUDA_REGISTER_SYM);
	dlclose(h);
	return fn;
}

/* Idempotent; retried from the entry points a client calls first, for a
 * CUPTI loaded before the driver. */
static void attach_driver(void)
{
	const struct stub_cuda_info *info = NULL;
	register_fn fn;

	if (atomic_load(&g_cupti.driver))
		return;
	fn = find_register();
	if (fn && fn(&ops, &info) == 0 && info &&
	    info->version == STUB_HOOKS_VERSION && info->size == sizeof(*info))
		atomic_store(&g_cupti.driver, info);
}

static unsigned enable_delay_ms;

/* *ret = the decimal value of env var name, when set and at most max; else left as it is. */
static void unsigned_from_env(const char *name, unsigned long max, unsigned *ret)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (!errno && !*end && n <= max)
		*ret = (unsigned)n;
}

static void corr_start_from_env(void)
{
	const char *v = getenv("GPUPROBE_STUB_CORR_START");
	unsigned long long n;
	char *end;

	if (!v || !*v)
		return;
	errno = 0;
	n = strtoull(v, &end, 0);
	if (errno || *end || n > UINT32_MAX)
		return;
	atomic_store(&next_corr, (uint32_t)n);
}

static void corr_stuck_from_env(void)
{
	const char *v = getenv("GPUPROBE_STUB_STUCK_CORR");
	unsigned long n;
	char *end;

	if (!v || !*v)
		return;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (!errno && !*end && n && n <= UINT32_MAX)
		stuck_at = (uint32_t)n;
}

/*
 * Test hook (tests/test_crc_helper.c): with GPUPROBE_STUB_CTOR_THREAD set,
 * the constructor starts a thread, as a real libcupti's may, that waits on
 * a futex for the life of the process: the CRC helper's sandbox must cover
 * it too. The constructor returns once the thread runs its own code (its
 * start-up done, as a library's threads are by the time it is loaded).
 */
static pthread_mutex_t ctor_thread_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ctor_thread_never = PTHREAD_COND_INITIALIZER;
static pthread_cond_t ctor_thread_up = PTHREAD_COND_INITIALIZER;
static bool ctor_thread_running;

static void *ctor_thread_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&ctor_thread_lock);
	ctor_thread_running = true;
	pthread_cond_signal(&ctor_thread_up);
	for (;;)
		pthread_cond_wait(&ctor_thread_never, &ctor_thread_lock);
	return NULL;
}

static void ctor_thread_from_env(void)
{
	pthread_t t;

	if (!getenv("GPUPROBE_STUB_CTOR_THREAD") || pthread_create(&t, NULL, ctor_thread_main, NULL))
		return;
	pthread_detach(t);
	pthread_mutex_lock(&ctor_thread_lock);
	while (!ctor_thread_running)
		pthread_cond_wait(&ctor_thread_up, &ctor_thread_lock);
	pthread_mutex_unlock(&ctor_thread_lock);
}

__attribute__((constructor)) static void stub_cupti_init(void)
{
	corr_start_from_env();
	corr_stuck_from_env();
	unsigned_from_env("GPUPROBE_STUB_ENABLE_DELAY_MS", 60000, &enable_delay_ms);
	unsigned_from_env("GPUPROBE_STUB_LOSE_KERNELS", 1000000, &lose_kernels);
	ctor_thread_from_env();
	attach_driver();
}

__attribute__((destructor)) static void stub_cupti_fini(void)
{
	register_fn fn;

	if (!atomic_load(&g_cupti.driver))
		return;
	fn = find_register();
	if (fn)
		fn(NULL, NULL);
}

/* ------------------------------------------------------------ callback API */

static CUptiResult subscribe(CUpti_SubscriberHandle *subscriber,
			     CUpti_CallbackFunc callback, void *userdata)
{
	bool expected = false;

	if (!subscriber)
		return CUPTI_ERROR_INVALID_PARAMETER;
	attach_driver();
	if (!atomic_compare_exchange_strong(&subscribed, &expected, true))
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	atomic_store(&the_subscriber.userdata, userdata);
	atomic_store(&the_subscriber.callback, callback);
	*subscriber = &the_subscriber;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
				    CUpti_CallbackFunc callback, void *userdata)
{
	return subscribe(subscriber, callback, userdata);
}

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
				       CUpti_CallbackFunc callback, void *userdata,
				       CUpti_SubscriberParams *pParams)
{
	CUptiResult r = subscribe(subscriber, callback, userdata);

	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && pParams &&
	    pParams->oldSubscriberName && pParams->oldSubscriberSize)
		snprintf(pParams->oldSubscriberName, pParams->oldSubscriberSize,
			 "CUPTI for stub subscriber");
	return r;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	if (subscriber != &the_subscriber || !atomic_load(&subscribed))
		return CUPTI_ERROR_INVALID_PARAMETER;
	atomic_store(&the_subscriber.callback, NULL);
	for (size_t i = 0; i < CUPTI_CBID_RESOURCE_SIZE; i++)
		atomic_store(&the_subscriber.resource[i], 0);
	for (size_t i = 0; i < CUPTI_DRIVER_TRACE_CBID_SIZE; i++)
		atomic_store(&the_subscriber.driver_api[i], 0);
	atomic_store(&subscribed, false);
	return CUPTI_SUCCESS;
}

/* domain/cbid must name a callback this stub can make. */
static atomic_uchar *callback_slot(CUpti_SubscriberHandle s,
				   CUpti_CallbackDomain domain, uint32_t cbid)
{
	if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid < CUPTI_CBID_RESOURCE_SIZE)
		return &s->resource[cbid];
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
		return &s->driver_api[cbid];
	return NULL;
}

static bool known_domain(CUpti_CallbackDomain d)
{
	return d > CUPTI_CB_DOMAIN_INVALID && d < CUPTI_CB_DOMAIN_SIZE;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable,
					 CUpti_SubscriberHandle subscriber,
					 CUpti_CallbackDomain domain,
					 CUpti_CallbackId cbid)
{
	atomic_uchar *slot;

	if (subscriber != &the_subscriber || !known_domain(domain))
		return CUPTI_ERROR_INVALID_PARAMETER;
	slot = callback_slot(subscriber, domain, cbid);
	if (slot)
		atomic_store(slot, enable ? 1 : 0);
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API || domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		toggle_note(domain == CUPTI_CB_DOMAIN_DRIVER_API ? "cb_driver" : "cb_runtime", cbid,
			    enable);
	return CUPTI_SUCCESS; /* other domains: accepted, never called */
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable,
				       CUpti_SubscriberHandle subscriber,
				       CUpti_CallbackDomain domain)
{
	uint32_t n = domain == CUPTI_CB_DOMAIN_RESOURCE ? CUPTI_CBID_RESOURCE_SIZE :
		     domain == CUPTI_CB_DOMAIN_DRIVER_API ? CUPTI_DRIVER_TRACE_CBID_SIZE : 0;

	if (subscriber != &the_subscriber || !known_domain(domain))
		return CUPTI_ERROR_INVALID_PARAMETER;
	for (uint32_t i = 0; i < n; i++)
		atomic_store(callback_slot(subscriber, domain, i), enable ? 1 : 0);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain,
					  uint32_t cbid, const char **name)
{
	(void)domain, (void)cbid;
	if (!name)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*name = NULL;
	return CUPTI_ERROR_NOT_SUPPORTED;
}

/* ------------------------------------------------------------ activity API */

static bool kind_valid(CUpti_ActivityKind kind)
{
	return kind > CUPTI_ACTIVITY_KIND_INVALID && kind < CUPTI_ACTIVITY_KIND_COUNT;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if (!kind_valid(kind))
		return CUPTI_ERROR_INVALID_KIND;
	attach_driver();
	if (enable_delay_ms)
		nanosleep(&(struct timespec){ .tv_sec = enable_delay_ms / 1000,
					      .tv_nsec = enable_delay_ms % 1000 * 1000000L }, NULL);
	atomic_store(&g_cupti.kind[kind], true);
	toggle_note("kind", kind, true);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableAndDump(CUpti_ActivityKind kind)
{
	return cuptiActivityEnable(kind);
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
	if (!kind_valid(kind))
		return CUPTI_ERROR_INVALID_KIND;
	atomic_store(&g_cupti.kind[kind], false);
	toggle_note("kind", kind, false);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableContext(CUcontext context,
						CUpti_ActivityKind kind)
{
	(void)context;
	return cuptiActivityEnable(kind);
}

CUptiResult CUPTIAPI cuptiActivityDisableContext(CUcontext context,
						 CUpti_ActivityKind kind)
{
	(void)context;
	return cuptiActivityDisable(kind);
}

CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid,
						  uint8_t enable)
{
	if (cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	attach_driver();
	toggle_note("driver", cbid, enable);
	if (atomic_load(&cuda_started))
		return CUPTI_SUCCESS; /* too late, as on the real driver */
	atomic_store(&g_cupti.driver_cbid[cbid], enable ? 1 : 0);
	return CUPTI_SUCCESS;
}

/* Recorded but unused: the stub has no runtime to trace. */
CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid,
						   uint8_t enable)
{
	if (cbid >= CUPTI_RUNTIME_TRACE_CBID_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	toggle_note("runtime", cbid, enable);
	if (atomic_load(&cuda_started))
		return CUPTI_SUCCESS; /* too late, as on the real driver */
	atomic_store(&g_cupti.runtime_cbid[cbid], enable ? 1 : 0);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp)
{
	const char *no = getenv("GPUPROBE_STUB_NO_TS_CALLBACK");

	if (!funcTimestamp)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (no && *no && strcmp(no, "0"))
		return CUPTI_ERROR_NOT_SUPPORTED; /* a CUPTI that keeps its own clock */
	atomic_store(&g_cupti.ts_cb, funcTimestamp);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableLatencyTimestamps(uint8_t enable)
{
	(void)enable;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableLaunchAttributes(uint8_t enable)
{
	(void)enable;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
	if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT &&
	    type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
		return CUPTI_ERROR_INVALID_PARAMETER;
	atomic_store(&g_cupti.system_tid, type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetThreadIdType(CUpti_ActivityThreadIdType *type)
{
	if (!type)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*type = atomic_load(&g_cupti.system_tid) ? CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM :
						   CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
	return CUPTI_SUCCESS;
}

/* ------------------------------------------------------------ misc API */

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp)
{
	if (!timestamp)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*timestamp = cupti_now();
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version)
{
	if (!version)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*version = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetLastError(void)
{
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetContextId(CUcontext context, uint32_t *contextId)
{
	const struct stub_cuda_info *drv = atomic_load(&g_cupti.driver);

	if (!contextId || !context)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (!drv || !drv->context_id(context))
		return CUPTI_ERROR_INVALID_CONTEXT;
	*contextId = drv->context_id(context);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext context, CUstream stream,
					uint8_t perThreadStream, uint32_t *streamId)
{
	const struct stub_cuda_info *drv = atomic_load(&g_cupti.driver);
	uint32_t id;

	if (!streamId)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (!drv)
		return CUPTI_ERROR_NOT_INITIALIZED;
	id = drv->stream_id(context, stream, perThreadStream);
	if (!id)
		return CUPTI_ERROR_INVALID_STREAM;
	*streamId = id;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetStreamId(CUcontext context, CUstream stream,
				      uint32_t *streamId)
{
	return cuptiGetStreamIdEx(context, stream, 0, streamId);
}

CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t *deviceId)
{
	(void)context;
	if (!deviceId)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*deviceId = 0;
	return CUPTI_SUCCESS;
}

/*
 * A graph id getter's answer: id (the driver's, 0 for a handle it does not
 * know) stored in *ret of size bytes; NOT_INITIALIZED before the driver
 * registered.
 */
static CUptiResult graph_id_answer(const struct stub_cuda_info *drv, uint64_t id, void *ret,
				   size_t size)
{
	uint32_t id32 = (uint32_t)id;

	if (!drv)
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (!id)
		return CUPTI_ERROR_INVALID_PARAMETER;
	memcpy(ret, size == sizeof(id32) ? (const void *)&id32 : (const void *)&id, size);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetGraphId(CUgraph graph, uint32_t *pId)
{
	const struct stub_cuda_info *drv = atomic_load(&g_cupti.driver);

	if (!graph || !pId)
		return CUPTI_ERROR_INVALID_PARAMETER;
	return graph_id_answer(drv, drv ? drv->graph_id(graph) : 0, pId, sizeof(*pId));
}

CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode node, uint64_t *nodeId)
{
	const struct stub_cuda_info *drv = atomic_load(&g_cupti.driver);

	if (!node || !nodeId)
		return CUPTI_ERROR_INVALID_PARAMETER;
	/* Test hook (tests/bpf/e2e_graphs.sh): a CUPTI that cannot name nodes. */
	if (drv && getenv("GPUPROBE_STUB_NO_GRAPH_IDS"))
		return CUPTI_ERROR_NOT_SUPPORTED;
	return graph_id_answer(drv, drv ? drv->graph_node_id(node) : 0, nodeId, sizeof(*nodeId));
}

CUptiResult CUPTIAPI cuptiGetGraphExecId(CUgraphExec graphExec, uint32_t *pId)
{
	const struct stub_cuda_info *drv = atomic_load(&g_cupti.driver);

	if (!graphExec || !pId)
		return CUPTI_ERROR_INVALID_PARAMETER;
	return graph_id_answer(drv, drv ? drv->graph_exec_id(graphExec) : 0, pId, sizeof(*pId));
}

/* Detach like real CUPTI: deliver what is queued, stop the buffer thread,
 * drop every enable and the subscriber. */
CUptiResult CUPTIAPI cuptiFinalize(void)
{
	for (size_t i = 0; i < CUPTI_ACTIVITY_KIND_COUNT; i++)
		atomic_store(&g_cupti.kind[i], false);
	for (size_t i = 0; i < CUPTI_DRIVER_TRACE_CBID_SIZE; i++)
		atomic_store(&g_cupti.driver_cbid[i], 0);
	buf_shutdown();
	if (atomic_load(&subscribed))
		cuptiUnsubscribe(&the_subscriber);
	return CUPTI_SUCCESS;
}
