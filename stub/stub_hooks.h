/* SPDX-License-Identifier: MIT */
/*
 * The private wiring between the two halves of the GPU-free stub vendor: the
 * fake driver (build/stub/libcuda.so.1) and the fake CUPTI
 * (build/stub/libcupti.so). Nothing outside stub/ and tests/ includes this.
 *
 * The driver owns execution (modules, streams, the deterministic GPU clock);
 * CUPTI owns observation (correlation ids, timestamps, activity buffers,
 * callbacks). At load, libcupti.so's constructor finds
 * stubcuda_register_cupti() (dlsym(RTLD_DEFAULT), then the already loaded
 * libcuda.so.1) and hands over its ops; from then on the driver reports every
 * API call, kernel, copy, module and graph event through them. With no CUPTI
 * registered the driver runs the same, silently. Both sides check each
 * other's version and struct size: bump STUB_HOOKS_VERSION with any change
 * to these structs.
 *
 * Locking contract (it mirrors the hazards DESIGN.md lists for a real driver):
 *   - api_enter/api_exit are called with no driver lock held;
 *   - graph_node_created/graph_node_cloned/graph_exec_created are called with
 *     no driver lock held either, on the calling thread, inside the API call
 *     that made the node or exec (between its api_enter and api_exit): a
 *     captured launch, cuGraphAddKernelNode*, cuGraphInstantiate*;
 *   - kernel/copy/module_loaded/module_unloading are called WITH the driver's
 *     lock held, as the real driver holds its own lock when it calls the
 *     module-loaded callback inside cuLaunchKernel under lazy loading;
 *   - driver_sync_point() takes and drops that same lock: the stub CUPTI's
 *     buffer thread calls it before each delivery, as a real CUPTI worker may
 *     need driver locks. A client that waits inside a module callback on
 *     something its flush path holds therefore deadlocks here too.
 * None of the ops may call back into the driver's API. The queries of struct
 * stub_cuda_info are not driver API calls: they take no lock, and any op (or
 * a client callback inside one) may use them.
 */
#ifndef STUB_HOOKS_H
#define STUB_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#define STUB_HOOKS_VERSION 3u

/* One driver API call, bracketed by api_enter/api_exit. */
struct stub_api_call {
	uint32_t cbid;            /* CUPTI_DRIVER_TRACE_CBID_* */
	const char *func_name;    /* "cuLaunchKernel", static storage */
	uint32_t correlation_id;  /* set by api_enter; 0 without CUPTI */
	uint32_t thread_id;       /* set by api_enter */
	uint64_t start_ns;        /* set by api_enter, CUPTI's clock */
	uint64_t end_ns;          /* set by api_exit */
	int result;               /* CUresult, set by the driver before api_exit */
	uint64_t correlation_data; /* CUpti_CallbackData.correlationData storage */
	const void *cupti;        /* the ops seen at enter; NULL: not observed */
};

/* One kernel execution on the fake GPU (a graph launch reports n of them). */
struct stub_kernel_exec {
	const char *name;         /* valid for the process lifetime */
	uint32_t grid[3];
	uint32_t block[3];
	uint32_t cluster[3];      /* 0 when the launch set none */
	uint32_t dynamic_smem;
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t module_id;
	uint32_t graph_id;        /* 0 outside graphs */
	uint64_t graph_node_id;   /* 0 outside graphs */
	uint64_t start_ns;
	uint64_t end_ns;
	uint8_t cooperative;
};

/* One memcpy or memset on the fake GPU. */
struct stub_copy_exec {
	uint8_t is_memset;
	uint8_t copy_kind;        /* CUpti_ActivityMemcpyKind (memcpy only) */
	uint8_t src_kind;         /* CUpti_ActivityMemoryKind (memcpy only) */
	uint8_t dst_kind;         /* CUpti_ActivityMemoryKind (memcpy only) */
	uint32_t value;           /* memset only */
	uint64_t bytes;
	uint32_t context_id;
	uint32_t stream_id;
	uint64_t start_ns;
	uint64_t end_ns;
};

/* A module as the resource callbacks describe it. */
struct stub_module_event {
	uint32_t module_id;
	const void *image;        /* the driver's copy, valid until unloaded */
	size_t size;              /* from the ELF header rule */
	void *context;            /* CUcontext */
};

/* A graph event as the resource callbacks describe it (CUpti_GraphData).
 * The handles are the driver's (CUgraph, CUgraphNode, CUgraphExec); their
 * ids come from struct stub_cuda_info. */
struct stub_graph_event {
	void *context;            /* CUcontext */
	void *graph;              /* the node's graph; for an exec, its source */
	void *node;               /* NULL for an exec */
	int node_type;            /* CUgraphNodeType */
	void *original_graph;     /* cloned: the original node's graph */
	void *original_node;      /* cloned: the node this one is a clone of */
	void *graph_exec;         /* exec created: the exec; else NULL */
};

/* What the stub CUPTI gives the driver. All pointers must be non-NULL. */
struct stub_cupti_ops {
	uint32_t version;         /* STUB_HOOKS_VERSION */
	uint32_t size;            /* sizeof(struct stub_cupti_ops) */
	uint64_t (*now)(void);    /* CUPTI's clock, ns */
	void (*api_enter)(struct stub_api_call *call);
	void (*api_exit)(struct stub_api_call *call);
	void (*kernel)(const struct stub_api_call *call,
		       const struct stub_kernel_exec *k);
	void (*copy)(const struct stub_api_call *call,
		     const struct stub_copy_exec *c);
	void (*module_loaded)(const struct stub_module_event *m);
	void (*module_unloading)(const struct stub_module_event *m);
	/* Graphs: a node made (by capture, explicitly, or as a clone), then, for
	 * a clone, what it was cloned from; an exec made, after its nodes. */
	void (*graph_node_created)(const struct stub_graph_event *g);
	void (*graph_node_cloned)(const struct stub_graph_event *g);
	void (*graph_exec_created)(const struct stub_graph_event *g);
	/* An exec's node updated (cuGraphExecUpdate: node is the new graph's,
	 * original_node the exec's), or given new parameters (node the exec's,
	 * original_node the node it was instantiated from). */
	void (*graph_node_updated)(const struct stub_graph_event *g);
	void (*graph_node_set_params)(const struct stub_graph_event *g);
};

/* What the driver gives back: lock-free queries plus the sync point. */
struct stub_cuda_info {
	uint32_t version;         /* STUB_HOOKS_VERSION */
	uint32_t size;            /* sizeof(struct stub_cuda_info) */
	/* streamId CUPTI reports for (ctx, stream); per_thread: NULL means the
	 * calling thread's per-thread default stream. */
	uint32_t (*stream_id)(void *ctx, void *stream, int per_thread);
	uint32_t (*context_id)(void *ctx);
	void (*driver_sync_point)(void);
	/* Ids of graph handles (fixed at creation, so lock-free); 0: not a
	 * graph, node or exec. */
	uint32_t (*graph_id)(void *graph);
	uint64_t (*graph_node_id)(void *node);
	uint32_t (*graph_exec_id)(void *exec);
};

/*
 * Exported by libcuda.so.1. Registers (or, with ops == NULL, unregisters) the
 * CUPTI side; returns 0 or -EINVAL (version/size mismatch) and, on success,
 * the driver's info in *ret_info. Registration takes effect for API calls
 * that enter afterwards.
 */
int stubcuda_register_cupti(const struct stub_cupti_ops *ops,
			    const struct stub_cuda_info **ret_info);

#define STUBCUDA_REGISTER_SYM "stubcuda_register_cupti"

#endif /* STUB_HOOKS_H */
