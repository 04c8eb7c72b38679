/* SPDX-License-Identifier: MIT */
/*
 * Activity buffers of the stub CUPTI, with real CUPTI's threading:
 *
 *   app thread (inside a driver call)    buffer thread (ours)
 *   buf_emit: copy the record into a     takes the queue, passes the driver
 *   bounded queue, under a leaf lock     sync point, then fills client buffers
 *   (never calls the client)             (bufferRequested), hands full ones
 *                                        and, on flush, the partial one to
 *                                        bufferCompleted
 *
 * So bufferRequested/bufferCompleted run only on the buffer thread, never
 * with a stub lock held. cuptiActivityFlushAll is blocking (as documented):
 * it waits for the buffer thread to deliver everything queued before it.
 * Called on the buffer thread itself (inside bufferCompleted), real CUPTI
 * hangs; this stub prints why and fails instead. A flush that the buffer
 * thread cannot finish in STUB_FLUSH_TIMEOUT_S (e.g. a client waiting inside
 * a module callback, holding up the driver lock) also fails loudly rather
 * than hanging CI forever.
 *
 * Records that find no room are counted for cuptiActivityGetNumDroppedRecords:
 * the queue is full (STUB_QUEUE_BYTES), or the client gave no buffer.
 */
#include "stub/cupti/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STUB_QUEUE_BYTES (8u << 20)
#define STUB_FLUSH_TIMEOUT_S 10

struct queue {
	uint8_t *data;
	size_t used;
};

/* The buffer thread's own: the client buffer being filled. */
struct client_buf {
	uint8_t *data;
	size_t size;
	size_t valid;
	size_t max_records; /* 0: as many as fit */
	size_t records;
};

static struct {
	pthread_mutex_t mu;       /* leaf lock: nothing is called under it */
	pthread_cond_t work_cv;
	pthread_cond_t done_cv;
	CUpti_BuffersCallbackRequestFunc requested;
	CUpti_BuffersCallbackCompleteFunc completed;
	struct queue q;
	bool started;
	bool stop;
	pthread_t thread;
	uint64_t flush_req;
	uint64_t flush_done;
	uint32_t period_ms;
	size_t dropped;
} B = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.work_cv = PTHREAD_COND_INITIALIZER,
	.done_cv = PTHREAD_COND_INITIALIZER,
};

/* No _Thread_local here: a TLS block in a dlopen'ed library trips
 * LeakSanitizer's thread scan at exit (LLVM 14). */
static bool on_buffer_thread(void)
{
	bool r;

	pthread_mutex_lock(&B.mu);
	r = B.started && pthread_equal(B.thread, pthread_self());
	pthread_mutex_unlock(&B.mu);
	return r;
}

size_t buf_record_size(CUpti_ActivityKind kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_DRIVER:
	case CUPTI_ACTIVITY_KIND_RUNTIME:
		return sizeof(CUpti_ActivityAPI);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return sizeof(CUpti_ActivityMemset4);
	default:
		return 0;
	}
}

bool buf_callbacks_registered(void)
{
	bool r;

	pthread_mutex_lock(&B.mu);
	r = B.requested != NULL;
	pthread_mutex_unlock(&B.mu);
	return r;
}

void buf_emit(const void *rec, size_t size)
{
	pthread_mutex_lock(&B.mu);
	if (!B.q.data || B.q.used + size > STUB_QUEUE_BYTES) {
		B.dropped++;
	} else {
		bool was_empty = B.q.used == 0;

		memcpy(B.q.data + B.q.used, rec, size);
		B.q.used += size;
		if (was_empty)
			pthread_cond_signal(&B.work_cv);
	}
	pthread_mutex_unlock(&B.mu);
}

/* ------------------------------------------------------------ buffer thread */

static void complete(struct client_buf *cb)
{
	if (!cb->data)
		return;
	B.completed(NULL, 0, cb->data, cb->size, cb->valid);
	memset(cb, 0, sizeof(*cb));
}

static bool fits(const struct client_buf *cb, size_t size)
{
	return cb->data && cb->valid + size <= cb->size &&
	       (!cb->max_records || cb->records < cb->max_records);
}

/* false: the client gave no usable buffer. */
static bool request(struct client_buf *cb, size_t need)
{
	uint8_t *data = NULL;
	size_t size = 0, max = 0;

	B.requested(&data, &size, &max);
	if (!data || size < need) {
		if (data) /* unusable: hand it straight back, empty */
			B.completed(NULL, 0, data, size, 0);
		return false;
	}
	*cb = (struct client_buf){ .data = data, .size = size, .max_records = max };
	return true;
}

/* Returns the number of records dropped for want of a buffer. */
static size_t deliver(struct client_buf *cb, const struct queue *q)
{
	size_t off = 0, dropped = 0;

	while (off < q->used) {
		const CUpti_Activity *rec = (const CUpti_Activity *)(q->data + off);
		size_t size = buf_record_size(rec->kind);

		if (!fits(cb, size)) {
			complete(cb);
			if (!request(cb, size)) {
				dropped++;
				off += size;
				continue;
			}
		}
		memcpy(cb->data + cb->valid, rec, size);
		cb->valid += size;
		cb->records++;
		off += size;
	}
	return dropped;
}

static void deadline_in(struct timespec *ts, uint32_t ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Caller holds B.mu. true: a flush is due (requested or periodic). */
static bool wait_for_work(void)
{
	struct timespec ts;

	while (!B.stop && B.q.used == 0 && B.flush_req == B.flush_done) {
		if (!B.period_ms) {
			pthread_cond_wait(&B.work_cv, &B.mu);
			continue;
		}
		deadline_in(&ts, B.period_ms);
		if (pthread_cond_timedwait(&B.work_cv, &B.mu, &ts) == ETIMEDOUT)
			return true;
	}
	return B.flush_req != B.flush_done || B.stop;
}

static void *buffer_thread(void *arg)
{
	struct queue spare = { .data = arg };
	struct client_buf cb = { 0 };

	pthread_mutex_lock(&B.mu);
	for (;;) {
		bool flush = wait_for_work();
		uint64_t target = B.flush_req;
		bool stop = B.stop;
		struct queue work = B.q;
		const struct stub_cuda_info *drv;
		size_t dropped;

		B.q = spare;
		B.q.used = 0;
		pthread_mutex_unlock(&B.mu);

		drv = atomic_load(&g_cupti.driver);
		if (drv)
			drv->driver_sync_point();
		dropped = deliver(&cb, &work);
		if (flush || stop)
			complete(&cb);

		pthread_mutex_lock(&B.mu);
		spare = work;
		B.dropped += dropped;
		if (target > B.flush_done)
			B.flush_done = target;
		pthread_cond_broadcast(&B.done_cv);
		if (stop)
			break;
	}
	pthread_mutex_unlock(&B.mu);
	free(spare.data);
	return NULL;
}

/* Caller holds B.mu. */
static int start_thread(void)
{
	uint8_t *a, *b;

	if (B.started)
		return 0;
	a = malloc(STUB_QUEUE_BYTES);
	b = malloc(STUB_QUEUE_BYTES);
	if (!a || !b || pthread_create(&B.thread, NULL, buffer_thread, b) != 0) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	B.q = (struct queue){ .data = a };
	B.started = true;
	B.stop = false;
	return 0;
}

/* Stops the buffer thread after a last delivery (cuptiFinalize). */
void buf_shutdown(void)
{
	if (on_buffer_thread())
		return;
	pthread_mutex_lock(&B.mu);
	if (!B.started) {
		pthread_mutex_unlock(&B.mu);
		return;
	}
	B.stop = true;
	pthread_cond_signal(&B.work_cv);
	pthread_mutex_unlock(&B.mu);
	pthread_join(B.thread, NULL);
	pthread_mutex_lock(&B.mu);
	free(B.q.data);
	B.q = (struct queue){ 0 };
	B.started = false;
	B.stop = false;
	B.requested = NULL;
	B.completed = NULL;
	pthread_mutex_unlock(&B.mu);
}

/* ------------------------------------------------------------ CUPTI API */

CUptiResult CUPTIAPI
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
			       CUpti_BuffersCallbackCompleteFunc funcBufferCompleted)
{
	CUptiResult r = CUPTI_SUCCESS;

	if (!funcBufferRequested || !funcBufferCompleted)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&B.mu);
	B.requested = funcBufferRequested;
	B.completed = funcBufferCompleted;
	if (start_thread() != 0)
		r = CUPTI_ERROR_OUT_OF_MEMORY;
	pthread_mutex_unlock(&B.mu);
	return r;
}

static CUptiResult flush_wait(void)
{
	struct timespec ts;
	uint64_t target;
	int err = 0;

	pthread_mutex_lock(&B.mu);
	if (!B.started) {
		pthread_mutex_unlock(&B.mu);
		return CUPTI_ERROR_INVALID_OPERATION;
	}
	target = ++B.flush_req;
	pthread_cond_signal(&B.work_cv);
	deadline_in(&ts, STUB_FLUSH_TIMEOUT_S * 1000);
	while (B.flush_done < target && err != ETIMEDOUT)
		err = pthread_cond_timedwait(&B.done_cv, &B.mu, &ts);
	pthread_mutex_unlock(&B.mu);
	if (err != ETIMEDOUT)
		return CUPTI_SUCCESS;
	fprintf(stderr, "stub cupti: cuptiActivityFlushAll: buffer thread stuck "
		"for %d s (is a callback waiting while the driver lock is held?); "
		"real CUPTI would hang here\n", STUB_FLUSH_TIMEOUT_S);
	return CUPTI_ERROR_UNKNOWN;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag; /* every stub record is complete when queued */
	if (on_buffer_thread()) {
		fprintf(stderr, "stub cupti: cuptiActivityFlushAll called inside "
			"a buffer callback: real CUPTI hangs here\n");
		return CUPTI_ERROR_INVALID_OPERATION;
	}
	return flush_wait();
}

CUptiResult CUPTIAPI cuptiActivityFlush(CUcontext context, uint32_t streamId,
					uint32_t flag)
{
	(void)context, (void)streamId;
	return cuptiActivityFlushAll(flag);
}

CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time)
{
	pthread_mutex_lock(&B.mu);
	B.period_ms = time;
	pthread_cond_signal(&B.work_cv);
	pthread_mutex_unlock(&B.mu);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context,
						       uint32_t streamId,
						       size_t *dropped)
{
	(void)context, (void)streamId;
	if (!dropped)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&B.mu);
	*dropped = B.dropped;
	B.dropped = 0;
	pthread_mutex_unlock(&B.mu);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer,
						size_t validBufferSizeBytes,
						CUpti_Activity **record)
{
	uint8_t *p;
	CUpti_ActivityKind kind;
	size_t size;

	if (!buffer || !record)
		return CUPTI_ERROR_INVALID_PARAMETER;
	p = buffer;
	if (*record) {
		size = buf_record_size((*record)->kind);
		if (!size)
			return CUPTI_ERROR_INVALID_KIND;
		p = (uint8_t *)*record + size;
	}
	if (p < buffer || (size_t)(p - buffer) + sizeof(kind) > validBufferSizeBytes)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	memcpy(&kind, p, sizeof(kind));
	size = buf_record_size(kind);
	if (!size)
		return CUPTI_ERROR_INVALID_KIND;
	if ((size_t)(p - buffer) + size > validBufferSizeBytes)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (CUpti_Activity *)p;
	return CUPTI_SUCCESS;
}
