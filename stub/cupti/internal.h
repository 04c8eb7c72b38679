/* SPDX-License-Identifier: MIT */
/*
 * Shared by the translation units of the stub CUPTI (build/stub/libcupti.so):
 * the enable state the driver hooks consult and the record queue they feed.
 */
#ifndef STUB_CUPTI_INTERNAL_H
#define STUB_CUPTI_INTERNAL_H

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stub/stub_hooks.h"

#pragma GCC visibility push(hidden)

/* Enable state, read lock-free by application threads inside driver calls. */
struct cupti_state {
	atomic_bool kind[CUPTI_ACTIVITY_KIND_COUNT];
	atomic_uchar driver_cbid[CUPTI_DRIVER_TRACE_CBID_SIZE];
	atomic_uchar runtime_cbid[CUPTI_RUNTIME_TRACE_CBID_SIZE];
	atomic_bool system_tid;
	_Atomic(CUpti_TimestampCallbackFunc) ts_cb;
	_Atomic(const struct stub_cuda_info *) driver;
};

extern struct cupti_state g_cupti;

uint64_t cupti_now(void);

/* Record queue (buffers.c). buf_emit copies one finished record; it never
 * calls into the client, so it is safe under the driver lock. */
void buf_emit(const void *rec, size_t size);
size_t buf_record_size(CUpti_ActivityKind kind);
bool buf_callbacks_registered(void);
void buf_shutdown(void);

/* cuptiGetCubinCrc's CRC (result.c). */
uint32_t stub_crc32c(const uint8_t *p, size_t n);
/* Whether this thread has made a driver call: an application thread (core.c). */
bool stub_thread_is_app(void);

/* PC sampling (pcsampling.c), fed by the driver's hooks in core.c. */
void stub_pc_module_loaded(uint32_t module_id, const void *image, size_t size);
void stub_pc_unload_starting(void);
void stub_pc_module_gone(uint32_t module_id);
void stub_pc_kernel_ran(const struct stub_kernel_exec *k);

#pragma GCC visibility pop

#endif /* STUB_CUPTI_INTERNAL_H */
