/* SPDX-License-Identifier: MIT */
/*
 * Device memory of the stub driver: host memory behind fake device pointers,
 * so HtoD/DtoH round trips really carry data, and every copy is checked
 * against a registered allocation (a bad pointer fails, it never faults).
 *
 * Copies and memsets are synchronous on the legacy default stream (the
 * per-thread one for the _ptds variants) and take 1 ns per 1024 bytes,
 * rounded up, after the stream's previous work. On a capturing per-thread
 * stream they are refused (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, the
 * capture invalidated; see graph.c), not added as nodes.
 *
 * The v1 names (cuMemAlloc, cuMemcpyHtoD, ...) exist for their symbols; their
 * 32-bit device pointers cannot hold our addresses, so cuMemAlloc (v1)
 * returns CUDA_ERROR_NOT_SUPPORTED and the v1 copies fail validation.
 */
#include "stub/libcuda/internal.h"

#include <stdlib.h>
#include <string.h>

struct alloc {
	uint8_t *base;
	size_t size;
	struct alloc *next;
};

static struct alloc *allocs; /* under g_drv.mu */

/* Caller holds g_drv.mu. */
static bool range_ok(CUdeviceptr p, size_t n)
{
	for (struct alloc *a = allocs; a; a = a->next) {
		uintptr_t b = (uintptr_t)a->base;

		if (p >= b && p - b <= a->size && n <= a->size - (p - b))
			return true;
	}
	return false;
}

static CUresult mem_alloc(CUdeviceptr *dptr, size_t bytes)
{
	struct alloc *a;
	CUresult r = drv_check_ctx();

	if (r != CUDA_SUCCESS)
		return r;
	if (!dptr || !bytes)
		return CUDA_ERROR_INVALID_VALUE;
	a = calloc(1, sizeof(*a));
	if (a)
		a->base = calloc(1, bytes);
	if (!a || !a->base) {
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->size = bytes;
	pthread_mutex_lock(&g_drv.mu);
	a->next = allocs;
	allocs = a;
	pthread_mutex_unlock(&g_drv.mu);
	*dptr = (CUdeviceptr)(uintptr_t)a->base;
	return CUDA_SUCCESS;
}

static CUresult mem_free(CUdeviceptr p)
{
	struct alloc **pp, *a = NULL;

	pthread_mutex_lock(&g_drv.mu);
	for (pp = &allocs; *pp; pp = &(*pp)->next) {
		if ((uintptr_t)(*pp)->base == p) {
			a = *pp;
			*pp = a->next;
			break;
		}
	}
	pthread_mutex_unlock(&g_drv.mu);
	if (!a)
		return CUDA_ERROR_INVALID_VALUE;
	free(a->base);
	free(a);
	return CUDA_SUCCESS;
}

STUB_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	API_BEGIN(cuMemAlloc_v2);
	API_END(mem_alloc(dptr, bytesize));
}

STUB_API CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
	API_BEGIN(cuMemAlloc);
	(void)dptr, (void)bytesize;
	API_END(CUDA_ERROR_NOT_SUPPORTED);
}

STUB_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	API_BEGIN(cuMemFree_v2);
	API_END(mem_free(dptr));
}

STUB_API CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
	API_BEGIN(cuMemFree);
	API_END(mem_free(dptr));
}

/* ------------------------------------------------------------ copies */

enum xfer { XFER_HTOD, XFER_DTOH, XFER_MEMSET };

struct xfer_args {
	enum xfer kind;
	CUdeviceptr dev;
	void *host;           /* HtoD: source; DtoH: destination */
	size_t bytes;
	unsigned char value;  /* memset */
	bool per_thread;
};

static void xfer_record(struct stub_copy_exec *ce, const struct xfer_args *a)
{
	ce->bytes = a->bytes;
	ce->context_id = STUB_CONTEXT_ID;
	if (a->kind == XFER_MEMSET) {
		ce->is_memset = 1;
		ce->value = a->value;
	} else if (a->kind == XFER_HTOD) {
		ce->copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
		ce->src_kind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
		ce->dst_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	} else {
		ce->copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
		ce->src_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
		ce->dst_kind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	}
}

static void xfer_data(const struct xfer_args *a)
{
	void *dev = (void *)(uintptr_t)a->dev;

	if (a->kind == XFER_MEMSET)
		memset(dev, a->value, a->bytes);
	else if (a->kind == XFER_HTOD)
		memcpy(dev, a->host, a->bytes);
	else
		memcpy(a->host, dev, a->bytes);
}

static CUresult xfer(const struct stub_api_call *c, const struct xfer_args *a)
{
	struct stub_copy_exec ce = { 0 };
	struct CUstream_st *s;
	CUresult r = drv_check_ctx();

	if (r != CUDA_SUCCESS)
		return r;
	if (a->kind != XFER_MEMSET && !a->host && a->bytes)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_drv.mu);
	s = drv_stream(NULL, a->per_thread);
	if (!s || !range_ok(a->dev, a->bytes)) {
		pthread_mutex_unlock(&g_drv.mu);
		return CUDA_ERROR_INVALID_VALUE;
	}
	r = drv_capture_unsupported(s); /* synchronous: never captured */
	if (r != CUDA_SUCCESS) {
		pthread_mutex_unlock(&g_drv.mu);
		return r;
	}
	xfer_data(a);
	xfer_record(&ce, a);
	ce.stream_id = s->id;
	drv_schedule(s, drv_launch_time(c), (a->bytes + 1023) / 1024,
		     &ce.start_ns, &ce.end_ns);
	if (c->cupti)
		((const struct stub_cupti_ops *)c->cupti)->copy(c, &ce);
	pthread_mutex_unlock(&g_drv.mu);
	return CUDA_SUCCESS;
}

#define HTOD(pt) { .kind = XFER_HTOD, .dev = dstDevice, \
	.host = (void *)srcHost, .bytes = ByteCount, .per_thread = (pt) }
#define DTOH(pt) { .kind = XFER_DTOH, .dev = srcDevice, .host = dstHost, \
	.bytes = ByteCount, .per_thread = (pt) }
#define MEMSET(pt) { .kind = XFER_MEMSET, .dev = dstDevice, .value = uc, \
	.bytes = N, .per_thread = (pt) }

STUB_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost,
				  size_t ByteCount)
{
	struct xfer_args a = HTOD(false);

	API_BEGIN(cuMemcpyHtoD_v2);
	API_END(xfer(&call_, &a));
}

STUB_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice,
				       const void *srcHost, size_t ByteCount)
{
	struct xfer_args a = HTOD(true);

	API_BEGIN(cuMemcpyHtoD_v2_ptds);
	API_END(xfer(&call_, &a));
}

STUB_API CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void *srcHost,
			       unsigned int ByteCount)
{
	struct xfer_args a = HTOD(false);

	API_BEGIN(cuMemcpyHtoD);
	API_END(xfer(&call_, &a));
}

STUB_API CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice,
				  size_t ByteCount)
{
	struct xfer_args a = DTOH(false);

	API_BEGIN(cuMemcpyDtoH_v2);
	API_END(xfer(&call_, &a));
}

STUB_API CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice,
				       size_t ByteCount)
{
	struct xfer_args a = DTOH(true);

	API_BEGIN(cuMemcpyDtoH_v2_ptds);
	API_END(xfer(&call_, &a));
}

STUB_API CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr_v1 srcDevice,
			       unsigned int ByteCount)
{
	struct xfer_args a = DTOH(false);

	API_BEGIN(cuMemcpyDtoH);
	API_END(xfer(&call_, &a));
}

STUB_API CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	struct xfer_args a = MEMSET(false);

	API_BEGIN(cuMemsetD8_v2);
	API_END(xfer(&call_, &a));
}

STUB_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc,
				     size_t N)
{
	struct xfer_args a = MEMSET(true);

	API_BEGIN(cuMemsetD8_v2_ptds);
	API_END(xfer(&call_, &a));
}

STUB_API CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc,
			     unsigned int N)
{
	struct xfer_args a = MEMSET(false);

	API_BEGIN(cuMemsetD8);
	API_END(xfer(&call_, &a));
}
