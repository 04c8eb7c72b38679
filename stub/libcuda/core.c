/* SPDX-License-Identifier: MIT */
/*
 * Core of the stub driver: the driver lock, the CUPTI registration hook,
 * cuInit with CUDA_INJECTION64_PATH, the device and its primary context,
 * streams and the deterministic per-stream clock, and error strings.
 */
#include "stub/libcuda/internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct stub_driver g_drv = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.next_module_id = 1,
	.next_stream_id = 13,
	.next_graph_id = 1,
	.primary = { .id = STUB_CONTEXT_ID },
	.legacy = { .magic = STUB_MAGIC_STREAM, .id = STUB_LEGACY_STREAM_ID },
};

static __thread CUcontext tls_ctx;
static __thread struct CUstream_st *tls_ptds;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* ------------------------------------------------------------ CUPTI hook */

/* Lock-free, so a client may ask from inside a module callback (driver lock
 * held): stream ids never change after creation. A per-thread default stream
 * this thread has not used yet has no id (0). */
static uint32_t info_stream_id(void *ctx, void *stream, int per_thread)
{
	const struct CUstream_st *s = stream;

	(void)ctx;
	if (stream == CU_STREAM_LEGACY || (!stream && !per_thread))
		return STUB_LEGACY_STREAM_ID;
	if (stream == CU_STREAM_PER_THREAD || !stream)
		return tls_ptds ? tls_ptds->id : 0;
	return s->magic == STUB_MAGIC_STREAM ? s->id : 0;
}

static uint32_t info_context_id(void *ctx)
{
	return ctx == &g_drv.primary ? STUB_CONTEXT_ID : 0;
}

/* The stub CUPTI's buffer thread passes through here before each delivery,
 * as a real CUPTI worker may need the driver's locks. */
static void info_sync_point(void)
{
	pthread_mutex_lock(&g_drv.mu);
	pthread_mutex_unlock(&g_drv.mu);
}

/* Lock-free like info_stream_id: a graph's, node's or exec's id is set
 * before its handle is handed to anyone and never changes. */
static uint32_t info_graph_id(void *graph)
{
	const struct CUgraph_st *g = graph;

	if (!g || (g->magic != STUB_MAGIC_GRAPH && g->magic != STUB_MAGIC_EXEC_GRAPH))
		return 0;
	return g->id;
}

static uint64_t info_graph_node_id(void *node)
{
	const struct CUgraphNode_st *n = node;

	return n && n->magic == STUB_MAGIC_NODE ? n->id : 0;
}

static uint32_t info_graph_exec_id(void *exec)
{
	const struct CUgraphExec_st *e = exec;

	return e && e->magic == STUB_MAGIC_EXEC ? e->graph.id : 0;
}

static const struct stub_cuda_info drv_info = {
	.version = STUB_HOOKS_VERSION,
	.size = sizeof(struct stub_cuda_info),
	.stream_id = info_stream_id,
	.context_id = info_context_id,
	.driver_sync_point = info_sync_point,
	.graph_id = info_graph_id,
	.graph_node_id = info_graph_node_id,
	.graph_exec_id = info_graph_exec_id,
};

__attribute__((visibility("default")))
int stubcuda_register_cupti(const struct stub_cupti_ops *ops,
			    const struct stub_cuda_info **ret_info)
{
	if (ops && (ops->version != STUB_HOOKS_VERSION ||
		    ops->size != sizeof(*ops)))
		return -EINVAL;
	atomic_store(&g_drv.cupti, ops);
	if (ret_info)
		*ret_info = &drv_info;
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void drv_api_enter(struct stub_api_call *c, uint32_t cbid, const char *name)
{
	const struct stub_cupti_ops *ops = atomic_load(&g_drv.cupti);

	memset(c, 0, sizeof(*c));
	c->cbid = cbid;
	c->func_name = name;
	c->cupti = ops;
	if (ops)
		ops->api_enter(c);
	else
		c->start_ns = mono_ns();
}

CUresult drv_api_exit(struct stub_api_call *c, CUresult r)
{
	const struct stub_cupti_ops *ops = c->cupti;

	c->result = (int)r;
	if (ops)
		ops->api_exit(c);
	return r;
}

/* ------------------------------------------------------------ init */

/* Like the real driver: dlopen the injection library and run its
 * InitializeInjection synchronously, once, on the first cuInit caller.
 * Failures are reported and ignored: the application must not notice. */
static void run_injection(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	int (*init)(void);
	void *h;

	if (!path || !*path)
		return;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "stub libcuda: CUDA_INJECTION64_PATH: %s\n", dlerror());
		return;
	}
	*(void **)&init = dlsym(h, "InitializeInjection");
	if (!init) {
		fprintf(stderr, "stub libcuda: %s: no InitializeInjection\n", path);
		return;
	}
	init();
}

static void init_once_fn(void)
{
	run_injection();
	atomic_store(&g_drv.initialized, true);
}

bool drv_is_initialized(void)
{
	return atomic_load(&g_drv.initialized);
}

CUcontext drv_current_ctx(void)
{
	return tls_ctx;
}

CUresult drv_check_ctx(void)
{
	if (!drv_is_initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	return tls_ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

STUB_API CUresult cuInit(unsigned int Flags)
{
	API_BEGIN(cuInit);
	if (Flags != 0)
		API_END(CUDA_ERROR_INVALID_VALUE);
	pthread_once(&init_once, init_once_fn);
	API_END(CUDA_SUCCESS);
}

STUB_API CUresult cuDriverGetVersion(int *driverVersion)
{
	API_BEGIN(cuDriverGetVersion);
	if (!driverVersion)
		API_END(CUDA_ERROR_INVALID_VALUE);
	*driverVersion = CUDA_VERSION;
	API_END(CUDA_SUCCESS);
}

STUB_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	API_BEGIN(cuDeviceGet);
	if (!drv_is_initialized())
		API_END(CUDA_ERROR_NOT_INITIALIZED);
	if (!device)
		API_END(CUDA_ERROR_INVALID_VALUE);
	if (ordinal != 0)
		API_END(CUDA_ERROR_INVALID_DEVICE);
	*device = 0;
	API_END(CUDA_SUCCESS);
}

STUB_API CUresult cuDeviceGetCount(int *count)
{
	API_BEGIN(cuDeviceGetCount);
	if (!drv_is_initialized())
		API_END(CUDA_ERROR_NOT_INITIALIZED);
	if (!count)
		API_END(CUDA_ERROR_INVALID_VALUE);
	*count = 1;
	API_END(CUDA_SUCCESS);
}

/* ------------------------------------------------------------ contexts */

STUB_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	API_BEGIN(cuDevicePrimaryCtxRetain);
	if (!drv_is_initialized())
		API_END(CUDA_ERROR_NOT_INITIALIZED);
	if (!pctx)
		API_END(CUDA_ERROR_INVALID_VALUE);
	if (dev != 0)
		API_END(CUDA_ERROR_INVALID_DEVICE);
	pthread_mutex_lock(&g_drv.mu);
	g_drv.primary.refs++;
	pthread_mutex_unlock(&g_drv.mu);
	*pctx = &g_drv.primary;
	API_END(CUDA_SUCCESS);
}

static CUresult primary_release(CUdevice dev)
{
	CUresult r = CUDA_SUCCESS;

	if (!drv_is_initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&g_drv.mu);
	if (g_drv.primary.refs > 0)
		g_drv.primary.refs--;
	else
		r = CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_unlock(&g_drv.mu);
	return r;
}

STUB_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	API_BEGIN(cuDevicePrimaryCtxRelease);
	API_END(primary_release(dev));
}

STUB_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	API_BEGIN(cuDevicePrimaryCtxRelease_v2);
	API_END(primary_release(dev));
}

STUB_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
	API_BEGIN(cuCtxSetCurrent);
	if (!drv_is_initialized())
		API_END(CUDA_ERROR_NOT_INITIALIZED);
	if (ctx && ctx != &g_drv.primary)
		API_END(CUDA_ERROR_INVALID_CONTEXT);
	tls_ctx = ctx;
	API_END(CUDA_SUCCESS);
}

STUB_API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	API_BEGIN(cuCtxGetCurrent);
	if (!drv_is_initialized())
		API_END(CUDA_ERROR_NOT_INITIALIZED);
	if (!pctx)
		API_END(CUDA_ERROR_INVALID_VALUE);
	*pctx = tls_ctx;
	API_END(CUDA_SUCCESS);
}

/* Nothing really runs, so there is nothing to wait for. */
STUB_API CUresult cuCtxSynchronize(void)
{
	API_BEGIN(cuCtxSynchronize);
	API_END(drv_check_ctx());
}

/* ------------------------------------------------------------ streams */

static struct CUstream_st *stream_new(void)
{
	struct CUstream_st *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->magic = STUB_MAGIC_STREAM;
	s->id = g_drv.next_stream_id++;
	s->next = g_drv.streams;
	g_drv.streams = s;
	return s;
}

/* Caller holds g_drv.mu. NULL: a bad handle (or no memory for the
 * per-thread default stream). */
struct CUstream_st *drv_stream(CUstream h, bool per_thread)
{
	struct CUstream_st *s = (struct CUstream_st *)h;

	if (h == CU_STREAM_LEGACY || (!h && !per_thread))
		return &g_drv.legacy;
	if (h == CU_STREAM_PER_THREAD || !h) {
		if (!tls_ptds)
			tls_ptds = stream_new();
		return tls_ptds;
	}
	return s->magic == STUB_MAGIC_STREAM ? s : NULL;
}

/* Work on one stream runs back to back: it starts when it is launched or
 * when the stream's previous work ends, whichever is later. */
void drv_schedule(struct CUstream_st *s, uint64_t launch_ns, uint64_t dur_ns,
		  uint64_t *ret_start, uint64_t *ret_end)
{
	uint64_t start = launch_ns > s->busy_until ? launch_ns : s->busy_until;

	s->busy_until = start + dur_ns;
	*ret_start = start;
	*ret_end = start + dur_ns;
}

/* The launch time is the API record's start: CUPTI's clock, so kernel and
 * API timestamps compare directly. */
uint64_t drv_launch_time(const struct stub_api_call *c)
{
	return c->start_ns;
}

STUB_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	CUresult r;

	API_BEGIN(cuStreamCreate);
	r = drv_check_ctx();
	if (r != CUDA_SUCCESS)
		API_END(r);
	if (!phStream)
		API_END(CUDA_ERROR_INVALID_VALUE);
	pthread_mutex_lock(&g_drv.mu);
	*phStream = stream_new();
	pthread_mutex_unlock(&g_drv.mu);
	API_END(*phStream ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY);
}

/* Synchronizing a capturing stream is refused, as by the real driver. */
static CUresult stream_sync(CUstream h, bool per_thread)
{
	struct CUstream_st *s;
	CUresult r = drv_check_ctx();

	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&g_drv.mu);
	s = drv_stream(h, per_thread);
	r = s ? drv_capture_unsupported(s) : CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_unlock(&g_drv.mu);
	return r;
}

STUB_API CUresult cuStreamSynchronize(CUstream hStream)
{
	API_BEGIN(cuStreamSynchronize);
	API_END(stream_sync(hStream, false));
}

STUB_API CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
	API_BEGIN(cuStreamSynchronize_ptsz);
	API_END(stream_sync(hStream, true));
}

/* ------------------------------------------------------------ errors */

#define STUB_ERRORS(X) \
	X(CUDA_SUCCESS, "no error") \
	X(CUDA_ERROR_INVALID_VALUE, "invalid argument") \
	X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory") \
	X(CUDA_ERROR_NOT_INITIALIZED, "initialization error") \
	X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported") \
	X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal") \
	X(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid") \
	X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context") \
	X(CUDA_ERROR_FILE_NOT_FOUND, "file not found") \
	X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle") \
	X(CUDA_ERROR_NOT_FOUND, "named symbol not found") \
	X(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state") \
	X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing") \
	X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture") \
	X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "attempt to terminate a thread-local capture sequence from another thread") \
	X(CUDA_ERROR_UNKNOWN, "unknown error")

static bool error_lookup(CUresult e, const char **ret_name, const char **ret_str)
{
#define STUB_ERR_CASE(code, text) \
	case code: *ret_name = #code; *ret_str = text; return true;
	switch (e) {
	STUB_ERRORS(STUB_ERR_CASE)
	default:
		return false;
	}
#undef STUB_ERR_CASE
}

STUB_API CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	const char *name, *str;

	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	if (!error_lookup(error, &name, &str)) {
		*pStr = NULL;
		return CUDA_ERROR_INVALID_VALUE;
	}
	*pStr = str;
	return CUDA_SUCCESS;
}

STUB_API CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	const char *name, *str;

	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	if (!error_lookup(error, &name, &str)) {
		*pStr = NULL;
		return CUDA_ERROR_INVALID_VALUE;
	}
	*pStr = name;
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------ cuGetProcAddress */

/* CUDA 13's libcudart finds every entry point through here. Resolve to our
 * own exports, newest version suffix first, per-thread variants when the
 * caller asks for them: enough for the names this stub implements. */
static void *self_h;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void self_open(void)
{
	Dl_info di;

	if (dladdr((void *)self_open, &di) && di.dli_fname)
		self_h = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
}

static void *self_handle(void)
{
	pthread_once(&self_once, self_open);
	return self_h;
}

static void *proc_lookup(const char *symbol, bool per_thread)
{
	static const char *const vers[] = { "_v4", "_v3", "_v2", "" };
	static const char *const pts[] = { "_ptsz", "_ptds", "" };
	void *h = self_handle();
	char name[256];

	if (!h)
		return NULL;
	for (size_t v = 0; v < sizeof(vers) / sizeof(vers[0]); v++) {
		for (size_t p = per_thread ? 0 : 2; p < 3; p++) {
			void *fn;

			if (snprintf(name, sizeof(name), "%s%s%s", symbol, vers[v],
				     pts[p]) >= (int)sizeof(name))
				return NULL;
			fn = dlsym(h, name);
			if (fn)
				return fn;
		}
	}
	return NULL;
}

STUB_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
				      int cudaVersion, cuuint64_t flags,
				      CUdriverProcAddressQueryResult *symbolStatus)
{
	bool per_thread = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	void *fn;

	API_BEGIN(cuGetProcAddress_v2);
	(void)cudaVersion;
	if (!symbol || !pfn)
		API_END(CUDA_ERROR_INVALID_VALUE);
	fn = proc_lookup(symbol, per_thread);
	*pfn = fn;
	if (symbolStatus)
		*symbolStatus = fn ? CU_GET_PROC_ADDRESS_SUCCESS :
				     CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	API_END(fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND);
}
