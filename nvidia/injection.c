/* SPDX-License-Identifier: MIT */
/*
 * The CUPTI adapter: InitializeInjection (the driver's entry point into the
 * shim through CUDA_INJECTION64_PATH), the CUPTI callbacks, the bounded
 * activity buffer pool, the flush thread, exit and fork handling. The only
 * code that includes <cupti.h>; everything else speaks shim/gp_abi.h.
 *
 * Rules (DESIGN.md): never fatal, never exit()/abort(); application threads
 * in a callback only copy, under the shim's own leaf locks (invariant 1);
 * cuptiActivityFlushAll only from the flush thread or the exiting thread,
 * never inside a CUPTI callback and never under a lock (invariant 2). All
 * CUPTI entry points come from dlsym: the shim links no CUPTI.
 */
#include "shim/glibc_compat.h"

#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nvidia/cbids.h"
#include "nvidia/cupti_find.h"
#include "nvidia/decode.h"
#include "nvidia/pc_sampling.h"
#include "shim/cubin_queue.h"
#include "shim/shm.h"

#define GP_EXPORT __attribute__((visibility("default")))

/* CUPTI functions we need, and those we can live without. */
#define CUPTI_REQUIRED(X) \
	X(cuptiSubscribe) X(cuptiEnableCallback) X(cuptiActivityRegisterCallbacks) \
	X(cuptiActivityEnable) X(cuptiActivityFlushAll) X(cuptiActivityGetNextRecord) \
	X(cuptiActivityGetNumDroppedRecords)
#define CUPTI_OPTIONAL(X) \
	X(cuptiActivityRegisterTimestampCallback) X(cuptiSetThreadIdType) \
	X(cuptiActivityEnableDriverApi) X(cuptiActivityEnableRuntimeApi) X(cuptiGetResultString) \
	X(cuptiGetGraphNodeId) X(cuptiGetGraphId) X(cuptiActivityDisable) \
	X(cuptiPCSamplingEnable) X(cuptiPCSamplingDisable) X(cuptiPCSamplingGetNumStallReasons) \
	X(cuptiPCSamplingGetStallReasons) X(cuptiPCSamplingSetConfigurationAttribute) \
	X(cuptiPCSamplingGetData)

struct cupti_api {
#define DECLARE(fn) __typeof__(&fn) fn;
	CUPTI_REQUIRED(DECLARE)
	CUPTI_OPTIONAL(DECLARE)
#undef DECLARE
};

/* The activity buffer pool: preallocated, so a request never allocates. */
struct buf_pool {
	pthread_mutex_t lock; /* leaf */
	__u8 *mem;
	size_t buf_size;
	unsigned n, nfree;
	__u8 **free_list;
};

static struct {
	pthread_once_t once;
	struct cupti_api api;
	CUpti_SubscriberHandle sub;
	struct shm *shm;
	struct cubin_queue *cubins;
	struct buf_pool pool;
	unsigned flush_ms;
	bool api_filter;      /* whole DRIVER/RUNTIME kinds enabled: filter by cbid */
	bool api_kinds_on;    /* API_BY_KINDS: the two kinds are on (the init thread, then the flush thread) */
	__u64 api_kinds_off_at; /* when to switch them off (g.rec_clock); 0: not due */
	int api_capture;      /* enum api_capture: how API calls reach the ring */
	bool api_cb_on;       /* the launch callbacks are on: the init thread, then the flush thread */
	__u64 api_cb_off_at;  /* when to switch them off (g.rec_clock); 0: not due */
	int api_cb_mode;      /* enum api_cb_mode: when the launch callbacks are on */
	bool api_cb_driver_only; /* the driver's callbacks alone, the runtime's never on */
	__u32 pid;
	clockid_t rec_clock;  /* the clock of CUPTI's timestamps (the loader knows which) */
	int graphs_off;       /* atomic: this CUPTI cannot name graph nodes: asked no more */
	bool record_always;   /* GPUPROBE_RECORD=always: activity on with no reader too */
	bool recording;       /* kernel activity is on: the init thread, then the flush thread only */
	__u64 keep_from;      /* atomic: API records of calls from here (CLOCK_MONOTONIC) are copied */
	__u64 keep_until;     /* atomic: ... up to here; 0 while recording */
	__s64 rec_offset;     /* add to a CUPTI timestamp for CLOCK_MONOTONIC */
	int dead;             /* atomic: inert, fork child, or exited */
	int exiting;          /* atomic */
	__u64 corr_hw;        /* atomic: correlation high-water mark */
	const char *failed_call; /* the CUPTI call that made us give up */
	CUptiResult failed_status;
} g = { .once = PTHREAD_ONCE_INIT };

static bool shim__dead(void)
{
	return __atomic_load_n(&g.dead, __ATOMIC_ACQUIRE) != 0;
}

/* Records the failing call for the one give-up line; prints nothing itself. */
#define CUPTI_CALL(fn, ...)                                                \
	({                                                                 \
		CUptiResult _st = g.api.fn(__VA_ARGS__);                   \
		if (_st != CUPTI_SUCCESS && !g.failed_call) {              \
			g.failed_call = #fn;                               \
			g.failed_status = _st;                             \
		}                                                          \
		_st;                                                       \
	})

/* ------------------------------------------------------------- helpers */

static __u64 clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static uint64_t CUPTIAPI timestamp_monotonic(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static __u32 this_tid(void)
{
	return (__u32)syscall(SYS_gettid);
}

/* The calling thread's id, asked of the kernel once per thread (a launch's callbacks ask every time). */
static __thread __u32 tls_tid;

static __u32 this_tid_cached(void)
{
	if (!tls_tid)
		tls_tid = this_tid();
	return tls_tid;
}

static bool env_is(const char *name, const char *value)
{
	const char *v = getenv(name);

	return v && !strcmp(v, value);
}

static unsigned env_uint(const char *name, unsigned def, unsigned lo, unsigned hi)
{
	const char *s = getenv(name);
	unsigned long v;
	char *end;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || s[0] == '-')
		return def;
	return v < lo ? lo : v > hi ? hi : (unsigned)v;
}

static const char *cupti__strerror(CUptiResult st)
{
	const char *s = NULL;

	if (g.api.cuptiGetResultString && g.api.cuptiGetResultString(st, &s) == CUPTI_SUCCESS && s)
		return s;
	return "unknown CUPTI error";
}

/* The one line nvidia/ ever prints: we are giving up, the program runs on. */
__attribute__((format(printf, 1, 2)))
static void shim__give_up(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpuprobe-shim: %s; profiling off, the program runs on\n", msg);
	if (g.shm)
		shm__set_flags(g.shm, GP_SHM_F_INERT, 0);
	__atomic_store_n(&g.dead, 1, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------ the pool */

static int pool__init(struct buf_pool *p, unsigned n, size_t size)
{
	void *mem;

	/* Reserved, not touched: pages cost only once CUPTI writes them. */
	mem = mmap(NULL, (size_t)n * size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	p->free_list = calloc(n, sizeof(*p->free_list));
	if (!p->free_list) {
		munmap(mem, (size_t)n * size);
		return -ENOMEM;
	}
	p->mem = mem;
	p->buf_size = size;
	p->n = p->nfree = n;
	for (unsigned i = 0; i < n; i++)
		p->free_list[i] = p->mem + (size_t)i * size;
	pthread_mutex_init(&p->lock, NULL);
	return 0;
}

static __u8 *pool__get(struct buf_pool *p)
{
	__u8 *b = NULL;

	pthread_mutex_lock(&p->lock);
	if (p->nfree)
		b = p->free_list[--p->nfree];
	pthread_mutex_unlock(&p->lock);
	return b;
}

static void pool__put(struct buf_pool *p, __u8 *b)
{
	/* Only our own buffers go back, and never more than we have. */
	if (b < p->mem || b >= p->mem + (size_t)p->n * p->buf_size ||
	    (size_t)(b - p->mem) % p->buf_size)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->nfree < p->n)
		p->free_list[p->nfree++] = b;
	pthread_mutex_unlock(&p->lock);
}

/* ------------------------------------------------------ API records */

/* Whether the API record of a call that started at start (CUPTI's clock) is copied. */
static bool api__in_window(__u64 start)
{
	__u64 from = __atomic_load_n(&g.keep_from, __ATOMIC_ACQUIRE);
	__u64 until = __atomic_load_n(&g.keep_until, __ATOMIC_ACQUIRE);
	__u64 t = start + (__u64)g.rec_offset;

	return from && t >= from && (!until || t <= until);
}

/* ---------------------------------------------------------- decoding */

static __u64 corr__widen(__u32 id)
{
	return decode__corr(&g.corr_hw, id);
}

static void activity__copy(const CUpti_Activity *a)
{
	struct decode_ctx c = { .shm = g.shm, .corr_hw = &g.corr_hw, .api_filter = g.api_filter };
	struct gp_record r;

	memset(&r, 0, sizeof(r));
	switch (decode__activity(&c, a, &r)) {
	case DECODE_UNKNOWN:
		shm__count(g.shm, GP_CTR_UNKNOWN_ACTIVITY, 1);
		return;
	case DECODE_SKIP:
		return;
	case DECODE_KEEP:
		break;
	}
	if (r.type == GP_REC_API && !api__in_window(((const CUpti_ActivityAPI *)a)->start))
		return;
	shm__write_record(g.shm, &r);
}

/* ------------------------------------------------ API calls by callback */

/*
 * How API calls reach the ring (GPUPROBE_API_RECORDS): by CUPTI's enter and
 * exit callbacks of the listed calls (the default), switched on and off by
 * the flush thread as a reader comes and goes (enum api_cb_mode), so a shim
 * no loader reads pays nothing per call; by CUPTI's per-call API records
 * ("activity"), which CUPTI takes only when asked before CUDA starts: on
 * for good, copied only while recording; by the whole RUNTIME and DRIVER
 * activity kinds ("kinds"), switched with the windows as Kineto switches
 * them (every API call recorded while on, ours kept; no callback per
 * call, on or off: for measuring whether that is what the duty cycle
 * needs, tools/gpu/cupti_api_kinds.cu); or not at all ("off": for
 * measuring; nothing can be joined).
 */
enum api_capture { API_BY_CALLBACKS, API_BY_ACTIVITY, API_BY_KINDS, API_OFF };

/*
 * When the launch callbacks are on (GPUPROBE_API_CALLBACKS; "once", the
 * default, or any other value: from the first reader on). Measured on
 * the H200 (docs/BENCHMARKS.md, tools/gpu/fault_facts.sh): switching them
 * on and off while threads launch is what leaves a thread's correlation id
 * stuck (every run of the harness; 1 run in 5 of train.py under 1 s
 * windows), switching the activity kinds alone never did; and a stuck id
 * stays stuck for the process's life. So by default they are switched once:
 * on when a loader first reads the ring, never off (a later loader finds
 * them on; calls with no reader, or between windows, are dropped by their
 * time: keep_from, keep_until). A process no loader reads never has them
 * on. "read": on while a loader reads, off with none (switched at every
 * attach and detach: an H100's third attach to one train.py left an id
 * stuck, docs/BENCHMARKS.md). "window": switched with the activity at
 * every window (the way before, for measuring); "always": on from the
 * start, reader or not; "driver": the driver's callbacks alone, switched
 * with the activity at every window, the runtime's never on (a runtime
 * call reaches the driver's callbacks with its own correlation id, and
 * PyTorch joins as exactly; but switched so, they stuck a thread's id in 1
 * run of 4 of train.py on an H100, where the harness had found none: for
 * measuring); "driver-read": the driver's alone, following the reader (what
 * the callbacks cost between windows, with half of them never on).
 */
enum api_cb_mode { API_CB_FROM_READ, API_CB_WHILE_READ, API_CB_PER_WINDOW, API_CB_ALWAYS };

/*
 * A call under way at the switch may have begun up to this long before it
 * and still have its kernel recorded (a lazy module load inside a launch
 * takes long): its API record is kept (activity__switch, api__exit).
 */
#define API_EARLY_NS 1000000000ull

/*
 * Calls whose enter callback came, by correlation id (ids are unique, and
 * far fewer than OPEN_CALLS calls are ever under way at once): the exit
 * finds its call's start here. Fixed, lock-free: an application thread
 * never allocates or waits in a callback.
 */
#define OPEN_CALLS 4096u
static struct open_call {
	__u32 corr;   /* atomic: 0 free */
	__u8 runtime; /* atomic: a runtime call */
	__u64 start;  /* atomic: g.rec_clock */
} open_calls[OPEN_CALLS];

static void api__enter(__u32 corr, bool runtime, __u64 now)
{
	struct open_call *oc = &open_calls[corr % OPEN_CALLS];

	__atomic_store_n(&oc->start, now, __ATOMIC_RELAXED);
	__atomic_store_n(&oc->runtime, runtime, __ATOMIC_RELAXED);
	__atomic_store_n(&oc->corr, corr, __ATOMIC_RELEASE);
}

/*
 * A driver call made by a runtime call under way: measured on the H200
 * (tools/gpu/cb_facts.sh), the runtime's launch reaches the driver's
 * launch callbacks with the runtime call's correlation id (its exit always,
 * its enter about half the time). CUPTI's API records name only the
 * runtime call: so do ours.
 */
static bool api__nested(__u32 corr)
{
	const struct open_call *oc = &open_calls[corr % OPEN_CALLS];

	return __atomic_load_n(&oc->corr, __ATOMIC_ACQUIRE) == corr &&
	       __atomic_load_n(&oc->runtime, __ATOMIC_RELAXED);
}

/*
 * Where a call began: at its enter callback; for a driver call whose enter
 * came before the callbacks went on, at its exit (a driver record is
 * stamped inside the call, after the launch's uprobe). 0: not known, no
 * record. A runtime call with no enter is one under way when the callbacks
 * went on, or one whose exit CUPTI calls twice (up to 121,047 a run on the
 * H200): a record reaching back to guess its start paired the thread's
 * later records with the launch before their own (docs/BENCHMARKS.md,
 * 2026-12-04: 9 of 14 runs under 1 s windows lost launches so, 1 of 18
 * without it). Its kernel, if recorded, comes at a window's edge.
 */
static __u64 api__start(__u32 corr, bool driver, __u64 now)
{
	struct open_call *oc = &open_calls[corr % OPEN_CALLS];

	if (__atomic_load_n(&oc->corr, __ATOMIC_ACQUIRE) == corr) {
		__u64 start = __atomic_load_n(&oc->start, __ATOMIC_RELAXED);

		__atomic_store_n(&oc->corr, 0, __ATOMIC_RELAXED);
		return start;
	}
	return driver ? now : 0;
}

/* Application thread, inside the call: copy only (the record ring's leaf lock). */
static void api__exit(const CUpti_CallbackData *cb, bool driver, CUpti_CallbackId cbid, int cls,
		      __u64 now)
{
	__u64 start = api__start(cb->correlationId, driver, now);
	struct gp_record r;

	if (!start || !api__in_window(start))
		return;
	memset(&r, 0, sizeof(r));
	r.type = GP_REC_API;
	r.flags = cls == CBID_COPY ? GP_REC_F_COPY : cls == CBID_NODE ? GP_REC_F_NODE : 0;
	/* CUresult and cudaError_t alike: 0 is success. */
	if (cb->functionReturnValue && *(const int *)cb->functionReturnValue)
		r.flags |= GP_REC_F_FAILED;
	r.tid = this_tid_cached();
	r.corr = corr__widen(cb->correlationId);
	r.start_ns = start;
	r.end_ns = now;
	r.api.cbid = cbid;
	r.api.domain = driver ? GP_API_DRIVER : GP_API_RUNTIME;
	r.api.pid = g.pid;
	shm__write_record(g.shm, &r);
}

static void api__callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			  const CUpti_CallbackData *cb)
{
	bool driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
	int cls = cbids__class(driver, cbid);
	__u64 now;

	if (cls < 0 || !cb->correlationId)
		return;
	if (driver && api__nested(cb->correlationId))
		return;
	now = clock_ns(g.rec_clock);
	if (cb->callbackSite == CUPTI_API_ENTER)
		api__enter(cb->correlationId, !driver, now);
	else if (cb->callbackSite == CUPTI_API_EXIT)
		api__exit(cb, driver, cbid, cls, now);
}

/* Whether a list's callbacks are ever on: "driver" leaves the runtime's off. */
static bool api__list_used(const struct cbid_list *l)
{
	return !g.api_cb_driver_only || l->domain == CUPTI_CB_DOMAIN_DRIVER_API;
}

/* The listed calls' callbacks on or off: the init thread, then the flush thread only. */
static void api__callbacks(bool on)
{
	const struct cbid_list *lists;
	size_t nlists = cbids__lists(&lists);
	unsigned errors = 0;

	for (size_t l = 0; l < nlists; l++) {
		if (!api__list_used(&lists[l]))
			continue;
		for (size_t i = 0; i < lists[l].n; i++)
			errors += g.api.cuptiEnableCallback(on, g.sub, lists[l].domain,
							    lists[l].ids[i]) != CUPTI_SUCCESS;
	}
	if (errors)
		shm__count(g.shm, GP_CTR_CUPTI_ERRORS, errors);
	g.api_cb_on = on;
	g.api_cb_off_at = 0;
}

/*
 * The whole RUNTIME and DRIVER kinds on or off (API_BY_KINDS): the init
 * thread, then the flush thread only. Switched on only when both went on
 * (else what went on goes off again, and the window waits: its kernels
 * would have no API record); CUPTI_SUCCESS or the first refusal.
 */
static CUptiResult api__kinds(bool on)
{
	static const CUpti_ActivityKind kinds[] = { CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER };
	CUptiResult st = CUPTI_SUCCESS;

	for (size_t i = 0; i < ARRAY_LEN(kinds); i++) {
		CUptiResult k = on ? CUPTI_CALL(cuptiActivityEnable, kinds[i])
				   : CUPTI_CALL(cuptiActivityDisable, kinds[i]);

		if (k && !st)
			st = k;
	}
	g.api_kinds_off_at = 0;
	if (on && st) {
		for (size_t i = 0; g.api.cuptiActivityDisable && i < ARRAY_LEN(kinds); i++)
			g.api.cuptiActivityDisable(kinds[i]);
		g.api_kinds_on = false;
		return st;
	}
	if (st)
		shm__count(g.shm, GP_CTR_CUPTI_ERRORS, 1);
	g.api_kinds_on = on;
	return st;
}

/* --------------------------------------------------- CUPTI callbacks */

static void CUPTIAPI on_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	__u8 *b = shim__dead() ? NULL : pool__get(&g.pool);

	*max_records = 0;
	*buffer = b;
	*size = b ? g.pool.buf_size : 0;
	/* No buffer: CUPTI drops the records and counts them for us too. */
	if (!b && !shim__dead())
		shm__count(g.shm, GP_CTR_BUFFERS_EXHAUSTED, 1);
}

/* CUPTI's thread (or the flushing one). Never flushes from in here. */
static void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
					 size_t size, size_t valid)
{
	CUpti_Activity *a = NULL;
	size_t dropped = 0;

	if (shim__dead())
		return; /* a fork child: the pool lock may be held by a vanished thread */
	while (valid && g.api.cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS)
		activity__copy(a);
	if (g.api.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS &&
	    dropped)
		shm__count(g.shm, GP_CTR_CUPTI_DROPPED, dropped);
	pool__put(&g.pool, buffer);
}

/* Application thread, possibly inside cuLaunchKernel: copy only. */
static void module__loaded(const CUpti_ModuleResourceData *m)
{
	struct cubin_capture cap = {
		.module_id = m->moduleId,
		.load_ns = clock_ns(CLOCK_MONOTONIC),
		.tid = this_tid(),
		.data = m->pCubin,
		.size = m->pCubin ? m->cubinSize : 0,
	};

	cubin_queue__capture(g.cubins, &cap);
}

static void module__unloading(const CUpti_ModuleResourceData *m)
{
	struct gp_record r;

	memset(&r, 0, sizeof(r));
	r.type = GP_REC_MODULE;
	r.tid = this_tid();
	r.start_ns = r.end_ns = clock_ns(CLOCK_MONOTONIC);
	r.module.module_id = m->moduleId;
	r.module.event = 1;
	if (!shm__write_record(g.shm, &r))
		shm__count(g.shm, GP_CTR_MODULES_UNLOADED, 1);
}

/* The gp_graph_node_event a graph resource callback reports. */
static __u32 graph__event(CUpti_CallbackId cbid)
{
	if (cbid == CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED)
		return GP_GRAPH_NODE_UPDATED;
	if (cbid == CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS)
		return GP_GRAPH_NODE_SET_PARAMS;
	return GP_GRAPH_NODE_MADE;
}

/*
 * A graph node made, cloned, updated or given new parameters (gp_abi.h,
 * gp_record_graph_node): its ids, copied, and when and on which thread (a
 * node made by a launch during stream capture is made inside that launch's
 * call: the loader finds the call, and its stack, by that). CUPTI names the
 * node a made one is cloned from, the executable graph's node an update
 * changes, and the node a parameter change's executable node was
 * instantiated from, all as originalNode. Once per node at capture, at
 * instantiation and at a change; nothing per replay.
 */
static void graph__node(CUpti_CallbackId cbid, const CUpti_GraphData *gd)
{
	struct gp_record r;
	uint64_t node = 0, orig = 0;
	uint32_t graph = 0;
	__u32 event = graph__event(cbid);
	bool cloned = cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED || event == GP_GRAPH_NODE_UPDATED;
	CUptiResult st;

	if (__atomic_load_n(&g.graphs_off, __ATOMIC_RELAXED) || !gd->node)
		return;
	st = g.api.cuptiGetGraphNodeId(gd->node, &node);
	if (st == CUPTI_SUCCESS && cloned)
		st = gd->originalNode ? g.api.cuptiGetGraphNodeId(gd->originalNode, &orig)
				      : CUPTI_ERROR_INVALID_PARAMETER;
	else if (st == CUPTI_SUCCESS && event == GP_GRAPH_NODE_SET_PARAMS && gd->originalNode &&
		 g.api.cuptiGetGraphNodeId(gd->originalNode, &orig) != CUPTI_SUCCESS)
		orig = 0;
	if (st != CUPTI_SUCCESS) {
		/* Counted once when this CUPTI cannot name nodes at all: each node would fail. */
		if (st != CUPTI_ERROR_NOT_SUPPORTED ||
		    !__atomic_exchange_n(&g.graphs_off, 1, __ATOMIC_RELAXED))
			shm__count(g.shm, GP_CTR_CUPTI_ERRORS, 1);
		return;
	}
	if (gd->graph && g.api.cuptiGetGraphId(gd->graph, &graph) != CUPTI_SUCCESS)
		graph = 0;
	memset(&r, 0, sizeof(r));
	r.type = GP_REC_GRAPH_NODE;
	r.tid = this_tid();
	r.start_ns = r.end_ns = clock_ns(g.rec_clock);
	r.graph.node = node;
	r.graph.orig_node = orig;
	r.graph.graph_id = graph;
	r.graph.node_type = (__u32)gd->nodeType;
	r.graph.event = event;
	shm__write_record(g.shm, &r);
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain,
				 CUpti_CallbackId cbid, const void *data)
{
	const CUpti_ResourceData *rd = data;

	if (shim__dead() || !data)
		return;
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API || domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
		api__callback(domain, cbid, data);
		return;
	}
	if (domain != CUPTI_CB_DOMAIN_RESOURCE)
		return;
	if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
		pc__context_seen(rd->context);
		return;
	}
	if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
		pc__context_ending(rd->context);
		return;
	}
	if (!rd->resourceDescriptor)
		return;
	if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
		module__loaded(rd->resourceDescriptor);
		pc__module_loaded(rd->context);
	} else if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) {
		pc__module_unloading(rd->context); /* collected before it goes, when idle */
		module__unloading(rd->resourceDescriptor);
	} else if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED ||
		 cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED ||
		 cbid == CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED ||
		 cbid == CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS)
		graph__node(cbid, rd->resourceDescriptor);
}

/* --------------------------------------------------- flush, exit, fork */

static void recording__follow(void);

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Holds no lock while flushing, and takes none a callback takes. Flushes
 * every flush_ms; follows the reader at each flush, and every
 * READER_POLL_MS while not recording, in the first READER_POLL_START_MS or
 * under a live reader that paused it: a loader already running
 * (--all-cgroups) claims a new ring within a tick, and the program's first
 * launches should find the activity on; a window should open when asked.
 */
#define READER_POLL_MS 5u
#define READER_POLL_START_MS 3000u

static void *flush__main(void *arg)
{
	unsigned since_flush = 0, elapsed = 0;

	while (!__atomic_load_n(&g.exiting, __ATOMIC_ACQUIRE) && !shim__dead()) {
		bool poll = !g.recording && READER_POLL_MS < g.flush_ms &&
			    (elapsed < READER_POLL_START_MS || g.api_cb_off_at || g.api_kinds_off_at ||
			     shm__reader_live(g.shm, shm__now_ns()));
		unsigned step = poll ? READER_POLL_MS : g.flush_ms - since_flush;

		sleep_ms(step);
		elapsed += elapsed < READER_POLL_START_MS ? step : 0;
		since_flush += step;
		if (__atomic_load_n(&g.exiting, __ATOMIC_ACQUIRE) || shim__dead())
			break;
		recording__follow();
		if (since_flush < g.flush_ms)
			continue;
		since_flush = 0;
		shm__count(g.shm, GP_CTR_FLUSHES_BEGUN, 1);
		if (g.api.cuptiActivityFlushAll(0) != CUPTI_SUCCESS)
			shm__count(g.shm, GP_CTR_CUPTI_ERRORS, 1);
		pc__collect(); /* --pc-sampling */
		/* What CUPTI held is in the ring now: a stopping loader reads on until here. */
		shm__count(g.shm, GP_CTR_FLUSHES, 1);
	}
	return NULL;
}

static int flush__start(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t t;
	int err;

	/* The flush thread must never run the application's signal handlers. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = -pthread_create(&t, &attr, flush__main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

/* One final flush from the exiting thread; the flush thread is not waited for. */
static void shim__at_exit(void)
{
	__atomic_store_n(&g.exiting, 1, __ATOMIC_RELEASE);
	if (shim__dead())
		return;
	g.api.cuptiActivityFlushAll(0);
	pc__at_exit();
	shm__exit_handshake(g.shm);
}

/* The child of fork() must not write into its parent's rings. */
static void shim__at_fork_child(void)
{
	__atomic_store_n(&g.dead, 1, __ATOMIC_RELEASE);
	shm__detach(g.shm);
	cubin_queue__detach(g.cubins);
}

/* dlclose would unmap the code our atexit/atfork handlers point into. */
static void shim__pin(void)
{
	Dl_info info;

	if (dladdr((void *)shim__pin, &info) && info.dli_fname)
		dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

/* ----------------------------------------------------------- setup */

static int cupti__resolve(void *h, const char **ret_missing)
{
#define RESOLVE_REQ(fn)                                        \
	g.api.fn = (__typeof__(g.api.fn))dlsym(h, #fn);        \
	if (!g.api.fn) {                                       \
		*ret_missing = #fn;                            \
		return -ENOENT;                                \
	}
#define RESOLVE_OPT(fn) g.api.fn = (__typeof__(g.api.fn))dlsym(h, #fn);
	CUPTI_REQUIRED(RESOLVE_REQ)
	CUPTI_OPTIONAL(RESOLVE_OPT)
#undef RESOLVE_REQ
#undef RESOLVE_OPT
	return 0;
}

/* Readings of CLOCK_REALTIME against CLOCK_MONOTONIC taken for the offset: the tightest counts. */
#define CLOCK_SAMPLES 32

static void clock__setup(void)
{
	__u64 m1, m2, rt, best = 0;

	if (g.api.cuptiActivityRegisterTimestampCallback &&
	    g.api.cuptiActivityRegisterTimestampCallback(timestamp_monotonic) == CUPTI_SUCCESS) {
		g.rec_clock = CLOCK_MONOTONIC;
		shm__set_flags(g.shm, GP_SHM_F_CLOCK_MONOTONIC, 0);
		return;
	}
	g.rec_clock = CLOCK_REALTIME;
	/*
	 * CUPTI keeps its default clock (CLOCK_REALTIME): give the loader the
	 * offset, from the tightest of a few readings between two monotonic
	 * ones (a reading the thread was preempted in is off by as long as it
	 * waited: on a loaded machine, milliseconds, and every call then pairs
	 * with the wrong launch).
	 */
	for (int i = 0; i < CLOCK_SAMPLES; i++) {
		m1 = clock_ns(CLOCK_MONOTONIC);
		rt = clock_ns(CLOCK_REALTIME);
		m2 = clock_ns(CLOCK_MONOTONIC);
		if (!i || m2 - m1 < best) {
			best = m2 - m1;
			g.rec_offset = (__s64)(m1 + (m2 - m1) / 2 - rt);
		}
	}
	shm__set_clock_offset(g.shm, g.rec_offset);
	shm__set_flags(g.shm, 0, GP_SHM_F_CLOCK_MONOTONIC);
}

/*
 * Per-call API records, on from init for good: CUPTI takes them only when
 * asked before CUDA starts (measured: enabled later, none came, in any
 * order; tools/gpu/cupti_switch.cu). Outside a recording window the shim
 * does not copy them (api__in_window). An older CUPTI without per-call
 * control: all API records, ours kept.
 */
static void api__enable(void)
{
	bool ok = g.api.cuptiActivityEnableDriverApi && g.api.cuptiActivityEnableRuntimeApi;
	const struct cbid_list *lists;
	size_t nlists = cbids__lists(&lists);

	for (size_t l = 0; ok && l < nlists; l++)
		for (size_t i = 0; ok && i < lists[l].n; i++)
			ok = (lists[l].domain == CUPTI_CB_DOMAIN_DRIVER_API ?
				      g.api.cuptiActivityEnableDriverApi(lists[l].ids[i], 1) :
				      g.api.cuptiActivityEnableRuntimeApi(lists[l].ids[i], 1)) == CUPTI_SUCCESS;
	if (ok)
		return;
	g.api_filter = true;
	if (CUPTI_CALL(cuptiActivityEnable, CUPTI_ACTIVITY_KIND_DRIVER) ||
	    CUPTI_CALL(cuptiActivityEnable, CUPTI_ACTIVITY_KIND_RUNTIME))
		shm__count(g.shm, GP_CTR_CUPTI_ERRORS, 1);
}

/*
 * What costs per launch and can be switched while CUDA runs: kernel, copy
 * and memset records (gp_abi.h, "no reader, no records"). Not GRAPH_TRACE:
 * it suppresses the per-node kernel records. The API records' window opens
 * before the kinds go on, reaching API_EARLY_NS back (a call under way at
 * the switch, begun before it, may still have its kernel recorded: a lazy
 * module load inside a launch takes long), and closes after they went off
 * (the launch callbacks go on before the kinds, and go off, where they do,
 * API_LINGER_NS after):
 * a call at an edge may leave an API record with no kernel record (the
 * loader labels it), never a kernel record with no API record (GPU time
 * with no launch). CUPTI_SUCCESS, or the status of the kernel kind's switch.
 */
#define API_LINGER_NS 50000000ull

static CUptiResult activity__switch(bool on)
{
	static const CUpti_ActivityKind kinds[] = { CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
						    CUPTI_ACTIVITY_KIND_MEMCPY,
						    CUPTI_ACTIVITY_KIND_MEMSET };
	CUptiResult st = CUPTI_SUCCESS;

	if (on) {
		__u64 now = shm__now_ns();

		__atomic_store_n(&g.keep_until, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&g.keep_from, now > API_EARLY_NS ? now - API_EARLY_NS : 1,
				 __ATOMIC_RELEASE);
		g.api_cb_off_at = 0;
		if (g.api_capture == API_BY_CALLBACKS && !g.api_cb_on)
			api__callbacks(true); /* before the kinds: a window's first calls have records */
		if (g.api_capture == API_BY_KINDS && !g.api_kinds_on && (st = api__kinds(true)))
			return st; /* counted by the caller; the next poll tries again */
	}
	for (size_t i = 0; i < ARRAY_LEN(kinds); i++) {
		CUptiResult k = on ? CUPTI_CALL(cuptiActivityEnable, kinds[i])
				   : CUPTI_CALL(cuptiActivityDisable, kinds[i]);

		if (k && i == 0)
			st = k;
		else if (k)
			shm__count(g.shm, GP_CTR_CUPTI_ERRORS, 1);
	}
	if (!on || st)
		__atomic_store_n(&g.keep_until, shm__now_ns(), __ATOMIC_RELEASE);
	if (st && on)
		return st;
	g.recording = on;
	pc__keep(on); /* PC samples too are kept only while recording */
	shm__set_recording(g.shm, on, shm__now_ns());
	return st;
}

/*
 * Whether activity should be on now: a reader is there and has not paused
 * it (or we were told always). Without cuptiActivityDisable nothing could
 * switch it off: always on.
 */
static bool recording__wanted(void)
{
	return g.record_always || !g.api.cuptiActivityDisable ||
	       (shm__reader_live(g.shm, shm__now_ns()) && !shm__reader_paused(g.shm));
}

/*
 * The launch callbacks after the activity (enum api_cb_mode): kept on while
 * recording, by default from the first reader on, or while a reader reads;
 * otherwise switched off API_LINGER_NS later, so that calls under way
 * finish with their exit callbacks. The flush thread only.
 */
static void callbacks__follow(void)
{
	/* "once": on since a reader came (or the shim recorded), never switched off. */
	bool keep = g.api_cb_mode == API_CB_ALWAYS || g.recording ||
		    (g.api_cb_mode == API_CB_FROM_READ && g.api_cb_on) ||
		    ((g.api_cb_mode == API_CB_WHILE_READ || g.api_cb_mode == API_CB_FROM_READ) &&
		     shm__reader_live(g.shm, shm__now_ns()));

	if (keep) {
		g.api_cb_off_at = 0;
		if (!g.api_cb_on)
			api__callbacks(true);
		return;
	}
	if (g.api_cb_on && !g.api_cb_off_at)
		g.api_cb_off_at = clock_ns(g.rec_clock) + API_LINGER_NS;
	if (g.api_cb_off_at && clock_ns(g.rec_clock) >= g.api_cb_off_at)
		api__callbacks(false);
}

/*
 * API_BY_KINDS: the API kinds on while recording, off API_LINGER_NS after
 * the kernel kinds went off (calls under way finish with their records).
 * The flush thread only.
 */
static void api_kinds__follow(void)
{
	if (g.recording) {
		g.api_kinds_off_at = 0;
		return; /* switched on with the kernel kinds (activity__switch) */
	}
	if (g.api_kinds_on && !g.api_kinds_off_at)
		g.api_kinds_off_at = clock_ns(g.rec_clock) + API_LINGER_NS;
	if (g.api_kinds_off_at && clock_ns(g.rec_clock) >= g.api_kinds_off_at)
		api__kinds(false);
}

/* On the flush thread only: follows the reader, never on an application thread. */
static void recording__follow(void)
{
	bool want = recording__wanted();

	if (want != g.recording && activity__switch(want))
		shm__count(g.shm, GP_CTR_CUPTI_ERRORS, 1);
	if (g.api_capture == API_BY_CALLBACKS)
		callbacks__follow();
	else if (g.api_capture == API_BY_KINDS)
		api_kinds__follow();
}

/*
 * GPUPROBE_PC_SAMPLING (the loader sets it for --pc-sampling): PC sampling,
 * enabled per context when it is made or first loads a module, collected
 * by the flush thread (pc_sampling.h).
 */
static void pc__start(void)
{
	struct pc_api api = {
		.enable = g.api.cuptiPCSamplingEnable,
		.disable = g.api.cuptiPCSamplingDisable,
		.num_stalls = g.api.cuptiPCSamplingGetNumStallReasons,
		.stalls = g.api.cuptiPCSamplingGetStallReasons,
		.configure = g.api.cuptiPCSamplingSetConfigurationAttribute,
		.get_data = g.api.cuptiPCSamplingGetData,
	};
	unsigned period = 0;

	if (!pc__wanted(&period))
		return;
	if (!pc__setup(&api, g.shm, period) ||
	    CUPTI_CALL(cuptiEnableCallback, 1, g.sub, CUPTI_CB_DOMAIN_RESOURCE,
		       CUPTI_CBID_RESOURCE_CONTEXT_CREATED) ||
	    CUPTI_CALL(cuptiEnableCallback, 1, g.sub, CUPTI_CB_DOMAIN_RESOURCE,
		       CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING))
		shm__count(g.shm, GP_CTR_CUPTI_ERRORS, 1);
}

/* GPUPROBE_API_RECORDS: activity, kinds, off (for measuring: nothing joins), else callbacks. */
static int api__capture_from_env(void)
{
	if (env_is("GPUPROBE_API_RECORDS", "activity"))
		return API_BY_ACTIVITY;
	if (env_is("GPUPROBE_API_RECORDS", "kinds"))
		return API_BY_KINDS;
	return env_is("GPUPROBE_API_RECORDS", "off") ? API_OFF : API_BY_CALLBACKS;
}

/* 0, or a CUPTI status with g.failed_call set. Order matters: clock first. */
static CUptiResult cupti__start(void)
{
	CUptiResult st;

	st = CUPTI_CALL(cuptiSubscribe, &g.sub, on_callback, NULL);
	if (st)
		return st;
	clock__setup();
	if (g.api.cuptiSetThreadIdType &&
	    g.api.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) == CUPTI_SUCCESS)
		shm__set_flags(g.shm, GP_SHM_F_TID_SYSTEM, 0);
	st = CUPTI_CALL(cuptiActivityRegisterCallbacks, on_buffer_requested,
			on_buffer_completed);
	if (st)
		return st;
	if (CUPTI_CALL(cuptiEnableCallback, 1, g.sub, CUPTI_CB_DOMAIN_RESOURCE,
		       CUPTI_CBID_RESOURCE_MODULE_LOADED) ||
	    CUPTI_CALL(cuptiEnableCallback, 1, g.sub, CUPTI_CB_DOMAIN_RESOURCE,
		       CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING))
		shm__count(g.shm, GP_CTR_CUPTI_ERRORS, 1);
	/* Graph nodes: where a replayed kernel was captured (without the getters: not at all). */
	if (g.api.cuptiGetGraphNodeId && g.api.cuptiGetGraphId &&
	    (CUPTI_CALL(cuptiEnableCallback, 1, g.sub, CUPTI_CB_DOMAIN_RESOURCE,
			CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) ||
	     CUPTI_CALL(cuptiEnableCallback, 1, g.sub, CUPTI_CB_DOMAIN_RESOURCE,
			CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) ||
	     CUPTI_CALL(cuptiEnableCallback, 1, g.sub, CUPTI_CB_DOMAIN_RESOURCE,
			CUPTI_CBID_RESOURCE_GRAPH_NODE_UPDATED) ||
	     CUPTI_CALL(cuptiEnableCallback, 1, g.sub, CUPTI_CB_DOMAIN_RESOURCE,
			CUPTI_CBID_RESOURCE_GRAPH_NODE_SET_PARAMS)))
		shm__count(g.shm, GP_CTR_CUPTI_ERRORS, 1);
	cbids__init();
	g.api_capture = api__capture_from_env();
	if (g.api_capture == API_BY_ACTIVITY)
		api__enable();
	else if (g.api_capture == API_BY_KINDS)
		g.api_filter = true; /* every API call recorded: ours kept */
	else if (g.api_capture == API_BY_CALLBACKS) /* our records carry the kernel's thread ids */
		shm__set_flags(g.shm, GP_SHM_F_TID_SYSTEM, 0);
	g.api_cb_mode = env_is("GPUPROBE_API_CALLBACKS", "always")        ? API_CB_ALWAYS :
			env_is("GPUPROBE_API_CALLBACKS", "window")      ? API_CB_PER_WINDOW :
			env_is("GPUPROBE_API_CALLBACKS", "driver")      ? API_CB_PER_WINDOW :
			env_is("GPUPROBE_API_CALLBACKS", "read")        ? API_CB_WHILE_READ :
			env_is("GPUPROBE_API_CALLBACKS", "driver-read") ? API_CB_WHILE_READ :
									  API_CB_FROM_READ; /* "once" */
	g.api_cb_driver_only = env_is("GPUPROBE_API_CALLBACKS", "driver") ||
			       env_is("GPUPROBE_API_CALLBACKS", "driver-read");
	if (g.api_capture == API_BY_CALLBACKS && g.api_cb_mode == API_CB_ALWAYS)
		api__callbacks(true);
	pc__start();
	/* With no reader yet, the flush thread switches activity on when one comes. */
	if (recording__wanted())
		return activity__switch(true);
	shm__set_recording(g.shm, false, shm__now_ns());
	return CUPTI_SUCCESS;
}

/* GPUPROBE_RECORD=always records with no reader too; anything else: only with one. */
static bool record__always_from_env(void)
{
	return env_is("GPUPROBE_RECORD", "always");
}

static int shim__setup_memory(void)
{
	struct shm_config cfg;
	struct cubin_ring ring;
	unsigned nbuf, kb;
	int err;

	shm_config__from_env(&cfg); /* garbage values fall back to defaults */
	err = shm__create(&cfg, &g.shm);
	if (err)
		return err;
	shm__cubin_ring(g.shm, &ring);
	err = cubin_queue__new(&ring, NULL, &g.cubins);
	if (err)
		return err;
	nbuf = env_uint("GPUPROBE_CUPTI_BUFFERS", 32, 2, 1024);
	kb = env_uint("GPUPROBE_CUPTI_BUFFER_KB", 1024, 64, 65536);
	g.flush_ms = env_uint("GPUPROBE_FLUSH_MS", 100, 1, 60000);
	g.record_always = record__always_from_env();
	return pool__init(&g.pool, nbuf, (size_t)kb * 1024);
}

static void shim__init(void)
{
	const char *missing = NULL;
	char where[512] = "";
	void *h = NULL;
	CUptiResult st;
	int err;

	shim__pin();
	g.pid = (__u32)getpid();
	err = shim__setup_memory();
	if (err) {
		shim__give_up("cannot set up shared memory: %s", strerror(-err));
		return;
	}
	if (cupti_find__open(&h, where, sizeof(where))) {
		shim__give_up("libcupti not found (set GPUPROBE_CUPTI=/path/to/libcupti.so)");
		return;
	}
	if (cupti__resolve(h, &missing)) {
		shim__give_up("%s lacks %s", where, missing);
		return;
	}
	st = cupti__start();
	if (st) {
		shim__give_up("%s failed: %s%s", g.failed_call ? g.failed_call : "CUPTI setup",
			      cupti__strerror(st),
			      st == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
				      ? " (another CUPTI client, e.g. torch.profiler or Nsight, owns this process)"
				      : "");
		return;
	}
	pthread_atfork(NULL, NULL, shim__at_fork_child);
	atexit(shim__at_exit);
	if (flush__start())
		shm__count(g.shm, GP_CTR_CUPTI_ERRORS, 1); /* buffers still flush when full */
}

GP_EXPORT int InitializeInjection(void)
{
	pthread_once(&g.once, shim__init);
	return 1; /* never fatal: the driver carries on either way */
}
