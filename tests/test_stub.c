/* SPDX-License-Identifier: MIT */
/*
 * Tests of the stub vendor itself (build/stub/libcuda.so.1 + libcupti.so,
 * loaded from $GP_BUILD/stub with dlopen, the way a CUPTI client meets them):
 * the ELF size rule, deterministic kernel timestamps, lazy vs eager module
 * callbacks, correlation ids shared by API and kernel records, per-cbid API
 * records, and CUPTI's threading (one subscriber, buffers on its own thread).
 *
 * One process, one CUPTI: the group setup subscribes and enables once, as a
 * client does; each test starts from a flushed, emptied record store.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tests/progs/cubin.h"

#define XSTR(x) STR(x)
#define STR(x) #x

/* cuda.h's macros map cuMemcpyHtoD to cuMemcpyHtoD_v2 etc.: XSTR resolves
 * the symbol the way a compiled program would. */
#define API(f) __typeof__(&f) f
static struct {
	API(cuInit); API(cuDevicePrimaryCtxRetain); API(cuCtxSetCurrent);
	API(cuStreamCreate); API(cuStreamSynchronize); API(cuModuleLoadData);
	API(cuModuleLoad); API(cuModuleUnload); API(cuModuleGetFunction);
	API(cuLaunchKernel); API(cuMemAlloc); API(cuMemcpyHtoD); API(cuMemFree);
	API(cuGraphCreate); API(cuGraphAddKernelNode); API(cuGraphInstantiate);
	API(cuGraphLaunch); API(cuGraphExecDestroy); API(cuGraphDestroy);
	API(cuptiSubscribe); API(cuptiEnableDomain); API(cuptiEnableCallback);
	API(cuptiActivityEnable); API(cuptiActivityDisable);
	API(cuptiActivityEnableDriverApi); API(cuptiActivityRegisterCallbacks);
	API(cuptiActivityFlushAll); API(cuptiActivityGetNextRecord);
	API(cuptiActivityGetNumDroppedRecords);
	API(cuptiActivityRegisterTimestampCallback); API(cuptiSetThreadIdType);
	API(cuptiGetCubinCrc);
} A;

#define LOAD(h, f) (*(void **)&A.f = dlsym((h), XSTR(f)))

/* ------------------------------------------------------------ record store */

#define MAX_RECS 4096
#define MAX_EVENTS 64

enum ev_kind { EV_API_ENTER, EV_API_EXIT, EV_MODULE_LOADED, EV_MODULE_UNLOADING };

struct event {
	enum ev_kind kind;
	uint32_t cbid;
	uint32_t module_id;
	size_t cubin_size;
	uint32_t tid;
};

static struct {
	pthread_mutex_t mu;
	CUpti_ActivityKernel10 kernels[MAX_RECS];
	size_t nkernels;
	CUpti_ActivityAPI apis[MAX_RECS];
	size_t napis;
	CUpti_ActivityMemcpy6 copies[64];
	size_t ncopies;
	uint32_t completed_tid;
	bool refuse_buffers;
	/* callbacks run on the test's own thread: no lock needed */
	struct event events[MAX_EVENTS];
	size_t nevents;
} S = { .mu = PTHREAD_MUTEX_INITIALIZER };

static CUcontext ctx;

static uint32_t gettid_u32(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max)
{
	bool refuse;

	pthread_mutex_lock(&S.mu);
	refuse = S.refuse_buffers;
	pthread_mutex_unlock(&S.mu);
	*max = 0;
	*size = refuse ? 0 : 64 * 1024;
	*buf = refuse ? NULL : aligned_alloc(8, 64 * 1024);
}

static void store(const CUpti_Activity *r)
{
	if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && S.nkernels < MAX_RECS)
		memcpy(&S.kernels[S.nkernels++], r, sizeof(S.kernels[0]));
	else if (r->kind == CUPTI_ACTIVITY_KIND_DRIVER && S.napis < MAX_RECS)
		memcpy(&S.apis[S.napis++], r, sizeof(S.apis[0]));
	else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY && S.ncopies < 64)
		memcpy(&S.copies[S.ncopies++], r, sizeof(S.copies[0]));
}

static void CUPTIAPI buffer_completed(CUcontext c, uint32_t stream, uint8_t *buf,
				      size_t size, size_t valid)
{
	CUpti_Activity *r = NULL;

	(void)c, (void)stream, (void)size;
	pthread_mutex_lock(&S.mu);
	S.completed_tid = gettid_u32();
	while (A.cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
		store(r);
	pthread_mutex_unlock(&S.mu);
	free(buf);
}

static void add_event(enum ev_kind kind, uint32_t cbid, uint32_t mod, size_t size)
{
	if (S.nevents < MAX_EVENTS)
		S.events[S.nevents++] = (struct event){ kind, cbid, mod, size,
							gettid_u32() };
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain d,
				 CUpti_CallbackId cbid, const void *data)
{
	(void)ud;
	if (d == CUPTI_CB_DOMAIN_RESOURCE) {
		const CUpti_ResourceData *rd = data;
		const CUpti_ModuleResourceData *m = rd->resourceDescriptor;

		add_event(cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED ? EV_MODULE_LOADED :
			  EV_MODULE_UNLOADING, cbid, m->moduleId, m->cubinSize);
	} else if (d == CUPTI_CB_DOMAIN_DRIVER_API) {
		const CUpti_CallbackData *cd = data;

		add_event(cd->callbackSite == CUPTI_API_ENTER ? EV_API_ENTER :
			  EV_API_EXIT, cbid, 0, 0);
	}
}

/* Flushes, then empties the store. */
static void reset(void)
{
	assert_int_equal(A.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	pthread_mutex_lock(&S.mu);
	S.nkernels = S.napis = S.ncopies = 0;
	pthread_mutex_unlock(&S.mu);
	S.nevents = 0;
}

static void flush(void)
{
	assert_int_equal(A.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED),
			 CUPTI_SUCCESS);
}

static size_t count_events(enum ev_kind kind)
{
	size_t n = 0;

	for (size_t i = 0; i < S.nevents; i++)
		n += S.events[i].kind == kind;
	return n;
}

static CUmodule load_image(const char *tag, const char *kernel, size_t *ret_size)
{
	const char *const k[] = { kernel };
	uint8_t img[2048];
	size_t size = cubin_build(img, sizeof(img), tag, k, 1);
	CUmodule m;

	assert_true(size > 0);
	assert_int_equal(A.cuModuleLoadData(&m, img), CUDA_SUCCESS);
	if (ret_size)
		*ret_size = size;
	return m;
}

static CUfunction get_fn(CUmodule m, const char *name)
{
	CUfunction f;

	assert_int_equal(A.cuModuleGetFunction(&f, m, name), CUDA_SUCCESS);
	return f;
}

static void launch(CUfunction f, unsigned int gx, unsigned int gy, CUstream s)
{
	assert_int_equal(A.cuLaunchKernel(f, gx, gy, 1, 32, 1, 1, 0, s, NULL, NULL),
			 CUDA_SUCCESS);
}

/* ------------------------------------------------------------ setup */

static uint64_t CUPTIAPI monotonic_ts(void)
{
	return mono_ns();
}

static void *open_stub(const char *name, int flags)
{
	const char *dir = getenv("GP_BUILD");
	char path[4096];
	void *h;

	snprintf(path, sizeof(path), "%s/stub/%s", dir ? dir : "build", name);
	h = dlopen(path, flags);
	if (!h)
		fprintf(stderr, "test_stub: %s\n", dlerror());
	return h;
}

static int load_all(void *cuda, void *cupti)
{
	void **p = (void **)&A;

	LOAD(cuda, cuInit); LOAD(cuda, cuDevicePrimaryCtxRetain);
	LOAD(cuda, cuCtxSetCurrent); LOAD(cuda, cuStreamCreate);
	LOAD(cuda, cuStreamSynchronize); LOAD(cuda, cuModuleLoadData);
	LOAD(cuda, cuModuleLoad); LOAD(cuda, cuModuleUnload);
	LOAD(cuda, cuModuleGetFunction); LOAD(cuda, cuLaunchKernel);
	LOAD(cuda, cuMemAlloc); LOAD(cuda, cuMemcpyHtoD); LOAD(cuda, cuMemFree);
	LOAD(cuda, cuGraphCreate); LOAD(cuda, cuGraphAddKernelNode);
	LOAD(cuda, cuGraphInstantiate); LOAD(cuda, cuGraphLaunch);
	LOAD(cuda, cuGraphExecDestroy); LOAD(cuda, cuGraphDestroy);
	LOAD(cupti, cuptiSubscribe); LOAD(cupti, cuptiEnableDomain);
	LOAD(cupti, cuptiEnableCallback); LOAD(cupti, cuptiActivityEnable);
	LOAD(cupti, cuptiActivityDisable); LOAD(cupti, cuptiActivityEnableDriverApi);
	LOAD(cupti, cuptiActivityRegisterCallbacks);
	LOAD(cupti, cuptiActivityFlushAll); LOAD(cupti, cuptiActivityGetNextRecord);
	LOAD(cupti, cuptiActivityGetNumDroppedRecords);
	LOAD(cupti, cuptiActivityRegisterTimestampCallback);
	LOAD(cupti, cuptiSetThreadIdType); LOAD(cupti, cuptiGetCubinCrc);
	for (size_t i = 0; i < sizeof(A) / sizeof(void *); i++)
		if (!p[i])
			return -1;
	return 0;
}

static CUpti_SubscriberHandle sub;

static int enable_cupti(void)
{
	static const CUpti_CallbackId launch_cbids[] = {
		CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
		CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	};

	if (A.cuptiActivityRegisterTimestampCallback(monotonic_ts) ||
	    A.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) ||
	    A.cuptiSubscribe(&sub, on_callback, NULL) ||
	    A.cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE) ||
	    A.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
				  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) ||
	    A.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed))
		return -1;
	for (size_t i = 0; i < 2; i++)
		if (A.cuptiActivityEnableDriverApi(launch_cbids[i], 1))
			return -1;
	if (A.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ||
	    A.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY))
		return -1;
	return 0;
}

static int group_setup(void **state)
{
	void *cuda, *cupti;

	(void)state;
	/* Start near the top: setup takes 3 ids, the first test 2 more, then
	 * its 20 launches cross the u32 wrap. */
	setenv("GPUPROBE_STUB_CORR_START", "4294967280", 1);
	/* A missing injection library is reported and ignored. */
	setenv("CUDA_INJECTION64_PATH", "/nonexistent/libinject.so", 1);
	unsetenv("CUDA_MODULE_LOADING");
	cuda = open_stub("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	cupti = cuda ? open_stub("libcupti.so", RTLD_NOW) : NULL;
	if (!cupti || load_all(cuda, cupti) || enable_cupti())
		return -1;
	if (A.cuInit(0) || A.cuDevicePrimaryCtxRetain(&ctx, 0) ||
	    A.cuCtxSetCurrent(ctx))
		return -1;
	return 0;
}

/* ------------------------------------------------------------ tests */

static void test_cubin_size_comes_from_the_elf_header(void **state)
{
	const char *const k[] = { "sized" };
	uint8_t img[4096];
	size_t size;
	CUmodule m;

	(void)state;
	reset();
	size = cubin_build(img, sizeof(img), "sz", k, 1);
	memset(img + size, 0x5a, 512); /* trailing bytes are not the cubin's */
	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	assert_int_equal(A.cuModuleLoadData(&m, img), CUDA_SUCCESS);
	unsetenv("CUDA_MODULE_LOADING");
	assert_int_equal(count_events(EV_MODULE_LOADED), 1);
	assert_int_equal(S.events[0].cubin_size, size);
	assert_int_equal(size, ((Elf64_Ehdr *)img)->e_shoff + 5 * sizeof(Elf64_Shdr));
	assert_int_equal(A.cuModuleUnload(m), CUDA_SUCCESS);
}

static void test_non_elf_images_are_rejected(void **state)
{
	const char *const k[] = { "k" };
	uint8_t img[2048] = "this is not an ELF image";
	CUmodule m;

	(void)state;
	assert_int_equal(A.cuModuleLoadData(&m, img), CUDA_ERROR_INVALID_IMAGE);
	cubin_build(img, sizeof(img), "e32", k, 1);
	img[EI_CLASS] = ELFCLASS32;
	assert_int_equal(A.cuModuleLoadData(&m, img), CUDA_ERROR_INVALID_IMAGE);
}

static void test_truncated_cubin_file_is_rejected(void **state)
{
	const char *const k[] = { "k" };
	char path[] = "/tmp/gp-test-stub-XXXXXX";
	uint8_t img[2048];
	size_t size = cubin_build(img, sizeof(img), "trunc", k, 1);
	int fd = mkstemp(path);
	CUmodule m;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, img, size - 1), (ssize_t)(size - 1));
	close(fd);
	assert_int_equal(A.cuModuleLoad(&m, path), CUDA_ERROR_INVALID_IMAGE);
	unlink(path);
	assert_int_equal(A.cuModuleLoad(&m, path), CUDA_ERROR_FILE_NOT_FOUND);
}

static void test_kernels_run_grid_microseconds_back_to_back(void **state)
{
	CUmodule m = load_image("time", "tk", NULL);
	CUfunction f = get_fn(m, "tk");
	CUstream s;

	(void)state;
	reset();
	assert_int_equal(A.cuStreamCreate(&s, 0), CUDA_SUCCESS);
	launch(f, 1000, 1000, s); /* 1 s: the next launch surely queues behind */
	launch(f, 5, 1, s);
	launch(f, 2, 3, s);
	flush();
	assert_int_equal(S.nkernels, 3);
	assert_int_equal(S.napis, 3);
	assert_int_equal(S.kernels[0].end - S.kernels[0].start, 1000000000ull);
	assert_int_equal(S.kernels[1].start, S.kernels[0].end);
	assert_int_equal(S.kernels[1].end - S.kernels[1].start, 5000);
	assert_int_equal(S.kernels[2].start, S.kernels[1].end);
	assert_int_equal(S.kernels[2].end - S.kernels[2].start, 6000);
	/* the first kernel starts when launched: at its API record's start */
	assert_int_equal(S.kernels[0].start, S.apis[0].start);
	assert_true(S.apis[0].start <= S.apis[0].end);
	assert_int_equal(S.apis[0].threadId, gettid_u32());
	assert_int_equal(A.cuModuleUnload(m), CUDA_SUCCESS);
}

static void test_copies_take_one_ns_per_kib_rounded_up(void **state)
{
	static uint8_t host[3000];
	CUdeviceptr d;

	(void)state;
	reset();
	assert_int_equal(A.cuMemAlloc(&d, sizeof(host)), CUDA_SUCCESS);
	assert_int_equal(A.cuMemcpyHtoD(d, host, 2049), CUDA_SUCCESS);
	assert_int_equal(A.cuMemcpyHtoD(d, host, 1024), CUDA_SUCCESS);
	assert_int_equal(A.cuMemFree(d), CUDA_SUCCESS);
	flush();
	assert_int_equal(S.ncopies, 2);
	assert_int_equal(S.copies[0].end - S.copies[0].start, 3);
	assert_int_equal(S.copies[1].end - S.copies[1].start, 1);
	assert_int_equal(S.copies[0].copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
	assert_int_equal(S.copies[0].bytes, 2049);
}

static void test_lazy_module_loads_inside_the_first_launch(void **state)
{
	size_t size;
	CUmodule m;
	CUfunction f;

	(void)state;
	reset();
	m = load_image("lazy", "lk", &size);
	f = get_fn(m, "lk");
	assert_int_equal(count_events(EV_MODULE_LOADED), 0);
	launch(f, 1, 1, NULL);
	launch(f, 1, 1, NULL);
	/* enter(launch), loaded, exit(launch), enter, exit */
	assert_int_equal(S.nevents, 5);
	assert_int_equal(S.events[0].kind, EV_API_ENTER);
	assert_int_equal(S.events[1].kind, EV_MODULE_LOADED);
	assert_int_equal(S.events[1].cubin_size, size);
	assert_int_equal(S.events[1].tid, gettid_u32());
	assert_int_equal(S.events[2].kind, EV_API_EXIT);
	assert_int_equal(count_events(EV_MODULE_LOADED), 1);
	assert_int_equal(A.cuModuleUnload(m), CUDA_SUCCESS);
	assert_int_equal(count_events(EV_MODULE_UNLOADING), 1);
	assert_int_equal(S.events[5].module_id, S.events[1].module_id);
}

static void test_eager_module_loads_inside_the_load_call(void **state)
{
	CUmodule m1, m2;

	(void)state;
	reset();
	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	m1 = load_image("eager1", "ek", NULL);
	m2 = load_image("eager2", "ek", NULL);
	unsetenv("CUDA_MODULE_LOADING");
	assert_int_equal(count_events(EV_MODULE_LOADED), 2);
	assert_int_equal(S.events[1].module_id, S.events[0].module_id + 1);
	launch(get_fn(m1, "ek"), 1, 1, NULL);
	assert_int_equal(count_events(EV_MODULE_LOADED), 2);
	assert_int_equal(A.cuModuleUnload(m1), CUDA_SUCCESS);
	assert_int_equal(A.cuModuleUnload(m2), CUDA_SUCCESS);
}

static void test_kernel_records_carry_their_launch_correlation_id(void **state)
{
	CUmodule m = load_image("corr", "ck", NULL);
	CUfunction f = get_fn(m, "ck");
	bool wrapped = false;

	(void)state;
	reset();
	for (int i = 0; i < 20; i++) /* crosses the u32 wrap: see group_setup */
		launch(f, 1, 1, NULL);
	flush();
	assert_int_equal(S.nkernels, 20);
	assert_int_equal(S.napis, 20);
	for (size_t i = 0; i < 20; i++) {
		assert_int_not_equal(S.apis[i].correlationId, 0);
		assert_int_equal(S.kernels[i].correlationId, S.apis[i].correlationId);
		assert_int_equal(S.apis[i].cbid, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
		assert_string_equal(S.kernels[i].name, "ck");
		wrapped |= i && S.apis[i].correlationId < S.apis[i - 1].correlationId;
	}
	assert_true(wrapped);
	assert_int_equal(A.cuModuleUnload(m), CUDA_SUCCESS);
}

static void test_graph_launch_gives_one_api_record_and_a_kernel_per_node(void **state)
{
	CUmodule m = load_image("graph", "gk", NULL);
	CUDA_KERNEL_NODE_PARAMS p = {
		.func = get_fn(m, "gk"), .gridDimX = 2, .gridDimY = 1, .gridDimZ = 1,
		.blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
	};
	CUgraphNode n1, n2;
	CUgraphExec e;
	CUgraph g;

	(void)state;
	reset();
	assert_int_equal(A.cuGraphCreate(&g, 0), CUDA_SUCCESS);
	assert_int_equal(A.cuGraphAddKernelNode(&n1, g, NULL, 0, &p), CUDA_SUCCESS);
	assert_int_equal(A.cuGraphAddKernelNode(&n2, g, &n1, 1, &p), CUDA_SUCCESS);
	assert_int_equal(A.cuGraphInstantiate(&e, g, 0), CUDA_SUCCESS);
	assert_int_equal(A.cuGraphLaunch(e, NULL), CUDA_SUCCESS);
	flush();
	assert_int_equal(S.napis, 1);
	assert_int_equal(S.apis[0].cbid, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch);
	assert_int_equal(S.nkernels, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(S.kernels[i].correlationId, S.apis[0].correlationId);
		assert_int_not_equal(S.kernels[i].graphId, 0);
	}
	assert_int_equal(S.kernels[1].start, S.kernels[0].end);
	assert_int_not_equal(S.kernels[0].graphNodeId, S.kernels[1].graphNodeId);
	assert_int_equal(A.cuGraphExecDestroy(e), CUDA_SUCCESS);
	assert_int_equal(A.cuGraphDestroy(g), CUDA_SUCCESS);
	assert_int_equal(A.cuModuleUnload(m), CUDA_SUCCESS);
}

static void test_only_enabled_driver_cbids_produce_api_records(void **state)
{
	static uint8_t host[64];
	CUdeviceptr d;

	(void)state;
	reset();
	assert_int_equal(A.cuMemAlloc(&d, sizeof(host)), CUDA_SUCCESS);
	assert_int_equal(A.cuMemcpyHtoD(d, host, sizeof(host)), CUDA_SUCCESS);
	assert_int_equal(A.cuStreamSynchronize(NULL), CUDA_SUCCESS);
	flush();
	assert_int_equal(S.napis, 0); /* only launch cbids are enabled */
	assert_int_equal(S.ncopies, 1); /* the copy itself is still traced */

	reset();
	assert_int_equal(A.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), CUPTI_SUCCESS);
	assert_int_equal(A.cuMemcpyHtoD(d, host, sizeof(host)), CUDA_SUCCESS);
	assert_int_equal(A.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER), CUPTI_SUCCESS);
	flush();
	assert_int_equal(S.napis, 1);
	assert_int_equal(S.apis[0].cbid, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2);
	assert_int_equal(S.apis[0].correlationId, S.copies[0].correlationId);
	assert_int_equal(A.cuMemFree(d), CUDA_SUCCESS);
}

static void test_second_subscriber_is_refused(void **state)
{
	CUpti_SubscriberHandle other;

	(void)state;
	assert_int_equal(A.cuptiSubscribe(&other, on_callback, NULL),
			 CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
}

static void test_buffers_complete_on_a_cupti_thread(void **state)
{
	CUmodule m = load_image("thr", "tk2", NULL);

	(void)state;
	reset();
	launch(get_fn(m, "tk2"), 1, 1, NULL);
	flush();
	pthread_mutex_lock(&S.mu);
	assert_int_not_equal(S.completed_tid, 0);
	assert_int_not_equal(S.completed_tid, gettid_u32());
	pthread_mutex_unlock(&S.mu);
	assert_int_equal(A.cuModuleUnload(m), CUDA_SUCCESS);
}

static void test_records_without_a_buffer_are_counted_dropped(void **state)
{
	CUmodule m = load_image("drop", "dk", NULL);
	size_t dropped = 0;

	(void)state;
	reset();
	assert_int_equal(A.cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped),
			 CUPTI_SUCCESS);
	pthread_mutex_lock(&S.mu);
	S.refuse_buffers = true;
	pthread_mutex_unlock(&S.mu);
	launch(get_fn(m, "dk"), 1, 1, NULL); /* a kernel and an API record */
	flush();
	pthread_mutex_lock(&S.mu);
	S.refuse_buffers = false;
	pthread_mutex_unlock(&S.mu);
	assert_int_equal(A.cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped),
			 CUPTI_SUCCESS);
	assert_int_equal(dropped, 2);
	assert_int_equal(A.cuModuleUnload(m), CUDA_SUCCESS);
}

static void test_cubin_crc_is_crc32c_of_the_bytes(void **state)
{
	CUpti_GetCubinCrcParams p = {
		.size = CUpti_GetCubinCrcParamsSize,
		.cubinSize = 9,
		.cubin = "123456789",
	};

	(void)state;
	assert_int_equal(A.cuptiGetCubinCrc(&p), CUPTI_SUCCESS);
	assert_int_equal(p.cubinCrc, 0xE3069283u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	/* first: the correlation ids cross the u32 wrap in it */
		cmocka_unit_test(test_kernel_records_carry_their_launch_correlation_id),
		cmocka_unit_test(test_cubin_size_comes_from_the_elf_header),
		cmocka_unit_test(test_non_elf_images_are_rejected),
		cmocka_unit_test(test_truncated_cubin_file_is_rejected),
		cmocka_unit_test(test_kernels_run_grid_microseconds_back_to_back),
		cmocka_unit_test(test_copies_take_one_ns_per_kib_rounded_up),
		cmocka_unit_test(test_lazy_module_loads_inside_the_first_launch),
		cmocka_unit_test(test_eager_module_loads_inside_the_load_call),
		cmocka_unit_test(test_graph_launch_gives_one_api_record_and_a_kernel_per_node),
		cmocka_unit_test(test_only_enabled_driver_cbids_produce_api_records),
		cmocka_unit_test(test_second_subscriber_is_refused),
		cmocka_unit_test(test_buffers_complete_on_a_cupti_thread),
		cmocka_unit_test(test_records_without_a_buffer_are_counted_dropped),
		cmocka_unit_test(test_cubin_crc_is_crc32c_of_the_bytes),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
