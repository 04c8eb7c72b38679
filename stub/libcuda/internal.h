/* SPDX-License-Identifier: MIT */
/*
 * Shared by the translation units of the stub driver (build/stub/libcuda.so.1):
 * the handle structs behind cuda.h's opaque types, the one driver lock, and
 * the helpers every entry point uses to report itself to the stub CUPTI.
 *
 * __CUDA_API_VERSION_INTERNAL makes cuda.h declare every versioned name the
 * real driver exports (cuMemAlloc with its v1 prototype, cuMemAlloc_v2,
 * cuLaunchKernel_ptsz, cuMemcpyHtoD_v2_ptds, ...), so each of our
 * definitions is checked against the header's own prototype.
 */
#ifndef STUB_LIBCUDA_INTERNAL_H
#define STUB_LIBCUDA_INTERNAL_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cupti_driver_cbid.h>
#include <cupti_activity.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "stub/stub_hooks.h"

/*
 * Every entry point is a real, exported, never-inlined function: BPF uprobes
 * attach to these symbols by name, so an entry point never calls another one
 * (a call would fire two probes for one application call).
 */
#define STUB_API __attribute__((noinline, used, visibility("default")))

#define STUB_LEGACY_STREAM_ID 7u  /* what real CUPTI reports for stream 0 */
#define STUB_CONTEXT_ID 1u
#define STUB_MAX_IMAGE (1ull << 30)

enum stub_magic {
	STUB_MAGIC_STREAM = 0x53545231u,
	STUB_MAGIC_FUNC = 0x46554e31u,
	STUB_MAGIC_MODULE = 0x4d4f4431u,
	STUB_MAGIC_LIBRARY = 0x4c494231u,
	STUB_MAGIC_GRAPH = 0x47524131u,
	STUB_MAGIC_NODE = 0x4e4f4431u,
	STUB_MAGIC_EXEC = 0x45584531u,
	STUB_MAGIC_EXEC_GRAPH = 0x45475231u,
};

struct CUctx_st {
	uint32_t id;
	int refs;
};

struct CUgraph_st;

struct CUstream_st {
	uint32_t magic;
	uint32_t id;
	uint64_t busy_until;      /* end of the last work queued, CUPTI clock */
	/* Stream capture (graph.c), under g_drv.mu. */
	struct CUgraph_st *capture; /* the graph being captured; NULL: none */
	bool capture_invalid;     /* refused work: cuStreamEndCapture fails */
	CUstreamCaptureMode capture_mode;
	pthread_t capture_thread; /* who began it */
	struct CUstream_st *next; /* every stream stays on g_drv.streams */
};

struct CUmod_st;

/* A CUkernel is the same object as its CUfunction, as casts are legal. */
struct CUfunc_st {
	uint32_t magic;
	struct CUmod_st *mod;     /* NULL once the module is unloaded */
	const char *name;         /* interned: valid for the process lifetime */
	struct CUfunc_st *next;   /* the module's list, then the graveyard */
};

struct CUmod_st {
	uint32_t magic;
	uint32_t id;
	uint8_t *image;
	size_t size;
	bool device_loaded;       /* the loaded callback has fired */
	struct CUfunc_st *funcs;
	struct CUmod_st *next;
};

struct CUlib_st {
	uint32_t magic;
	struct CUmod_st *mod;
};

/* Graphs (graph.c); launched by launch.c. */
struct CUgraphNode_st {
	uint32_t magic;
	uint64_t id;              /* drv_node_id(graph id, index) */
	struct CUfunc_st *func;
	uint32_t grid[3];
	uint32_t block[3];
	uint32_t cluster[3];      /* captured launches only; else 0 */
	uint32_t smem;
	bool cooperative;         /* captured launches only */
	struct CUgraph_st *child; /* a child-graph node: its own copy of the graph (no func) */
};

struct CUgraph_st {
	uint32_t magic;           /* STUB_MAGIC_GRAPH, or _EXEC_GRAPH: an exec's */
	uint32_t id;
	size_t n, cap;
	struct CUgraphNode_st **nodes;
};

struct CUgraphExec_st {
	uint32_t magic;
	struct CUgraph_st graph;  /* the exec's own graph (no node list) */
	uint32_t source;          /* the id of the graph it was instantiated from */
	size_t n;
	/* Clones, the source's own nodes first, then each embedded graph's
	 * (graph.c, instantiate): child-graph nodes among them run nothing
	 * (their child pointer only says so: it is never followed). */
	struct CUgraphNode_st nodes[];
};

static inline uint64_t drv_node_id(uint32_t graph_id, size_t index)
{
	return (uint64_t)graph_id << 32 | (uint32_t)index;
}

#pragma GCC visibility push(hidden)

struct stub_driver {
	pthread_mutex_t mu;       /* THE driver lock; see stub_hooks.h */
	atomic_bool initialized;
	_Atomic(const struct stub_cupti_ops *) cupti;
	uint32_t next_module_id;
	uint32_t next_stream_id;
	uint32_t next_graph_id;
	struct CUctx_st primary;
	struct CUstream_st legacy;
	struct CUstream_st *streams;
	struct CUmod_st *modules;
	struct CUfunc_st *graveyard;
};

extern struct stub_driver g_drv;

/* API bracketing: every traced entry point starts with API_BEGIN and leaves
 * through API_END, so CUPTI's record covers the whole call. */
void drv_api_enter(struct stub_api_call *c, uint32_t cbid, const char *name);
CUresult drv_api_exit(struct stub_api_call *c, CUresult r);
#define API_BEGIN(fn) \
	struct stub_api_call call_; \
	drv_api_enter(&call_, CUPTI_DRIVER_TRACE_CBID_##fn, #fn)
#define API_END(r) return drv_api_exit(&call_, (r))

/* Checks shared by everything that needs a current context. */
CUresult drv_check_ctx(void);
CUcontext drv_current_ctx(void);
bool drv_is_initialized(void);

/* Every launch dimension must be at least 1. */
static inline bool drv_dims_ok(const uint32_t d[3])
{
	return d[0] && d[1] && d[2];
}

/* The fake GPU clock. Caller holds g_drv.mu. */
uint64_t drv_launch_time(const struct stub_api_call *c);
struct CUstream_st *drv_stream(CUstream h, bool per_thread);
void drv_schedule(struct CUstream_st *s, uint64_t launch_ns, uint64_t dur_ns,
		  uint64_t *ret_start, uint64_t *ret_end);

/* Modules. Caller holds g_drv.mu. */
struct CUfunc_st *drv_func(CUfunction f);
void drv_module_device_load(struct CUmod_st *m);
int stubelf_image_size(const void *image, size_t avail, size_t *ret_size);

/* Graphs and stream capture. Caller holds g_drv.mu. */
CUresult drv_graph_add(struct CUgraph_st *g, const struct CUgraphNode_st *tmpl,
		       struct CUgraphNode_st **ret_node);
CUresult drv_capture_unsupported(struct CUstream_st *s);

/* Graph events. No driver lock held (stub_hooks.h). */
void drv_report_node_created(const struct stub_api_call *c,
			     struct CUgraph_st *g, struct CUgraphNode_st *n);

#pragma GCC visibility pop

#endif /* STUB_LIBCUDA_INTERNAL_H */
