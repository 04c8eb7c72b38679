/* SPDX-License-Identifier: MIT */
/*
 * The shim <-> loader ABI: the layout of the shared memory the shim creates
 * inside the profiled process (a memfd named GP_SHM_NAME) and the loader maps
 * read-write from /proc/<pid>/map_files.
 *
 * Plain data only. Every field written by the shim is hostile to the loader
 * (DESIGN.md invariant 5): the loader validates offsets, sizes and string
 * indices against its own snapshot of the header before following them.
 *
 * Concurrency (DESIGN.md invariant 3: no lock is shared between processes):
 *   - the record ring and the cubin ring are single-producer (the shim,
 *     serialised by a lock private to the shim process) single-consumer (the
 *     loader); positions are free-running u64 byte/slot counters published
 *     with release stores and read with acquire loads;
 *   - the producer area is written only by the shim, the consumer area only by
 *     the loader. The shim reads the consumer positions only to compute free
 *     space and clamps them, so a dead or lying loader cannot make it block or
 *     write out of bounds: at worst its rings report full and it counts drops.
 *   - exit handshake (DESIGN.md invariant 6): at exit the shim flushes, bumps
 *     exit_seq and waits until exit_ack reaches it, but only while the loader's
 *     heartbeat is fresh and never longer than one loader tick (at most 1 s),
 *     so the loader reads the last records and symbolizes stacks while the
 *     process still has its memory maps. A dead loader costs nothing.
 *   - no reader, no records: the costly activity (kernels, copies, memsets,
 *     launch and copy API records) is on only while a loader reads the ring
 *     (the launch and copy callbacks that make the API records go on at the
 *     first reader and stay on, dropping calls by time: switching them
 *     while threads launch can leave a thread's correlation id stuck):
 *     a memfd the loader made (-- COMMAND), or a heartbeat fresh within
 *     GP_RECORD_STALE_TICKS of the loader's ticks (GP_RECORD_STALE_MIN_NS at
 *     least). A node-wide loader stamps the heartbeat of a ring the moment
 *     it is made (before any claim, maybe before the shim sized it), so a
 *     program's first launches are recorded; a loader that leaves zeroes it.
 *     A reader may pause the recording (record_pause: between the windows
 *     of a duty cycle) without leaving.
 *     The shim's own thread switches activity and stamps record_on_ns /
 *     record_off_ns (its init thread decides the first state, inside
 *     cuInit); launches made before record_on_ns have no record.
 *     Module, cubin and graph-node capture never stop.
 */
#ifndef GP_ABI_H
#define GP_ABI_H

#include <linux/types.h>

#define GP_SHM_MAGIC 0x42525047u /* "GPRB" */
#define GP_SHM_VERSION 1u
#define GP_SHM_NAME "gpuprobe-shm" /* maps shows "/memfd:gpuprobe-shm (deleted)" */

/* Loss and activity counters, written by the shim, printed by the loader. */
enum gp_counter {
	GP_CTR_MODULES_CAPTURED = 0, /* cubins copied into the cubin ring */
	GP_CTR_CUBIN_TOO_LARGE,      /* cubin over the per-cubin limit: lost */
	GP_CTR_CUBIN_PENDING_FULL,   /* cubin ring full: module lost whole */
	GP_CTR_RECORDS_WRITTEN,      /* records published in the record ring */
	GP_CTR_RING_DROPPED,         /* record ring full: record lost */
	GP_CTR_CUPTI_DROPPED,        /* records CUPTI itself reported dropped */
	GP_CTR_STRINGS_FULL,         /* string table full: name lost */
	GP_CTR_BUFFERS_EXHAUSTED,    /* CUPTI asked for a buffer beyond the bound */
	GP_CTR_UNKNOWN_ACTIVITY,     /* activity records of kinds we do not copy */
	GP_CTR_MODULES_UNLOADED,     /* module unload records written */
	GP_CTR_CUPTI_ERRORS,         /* CUPTI calls that failed after init */
	GP_CTR_RECORDING_ON,         /* activity switched on (a reader came) */
	GP_CTR_RECORDING_OFF,        /* activity switched off (no reader) */
	GP_CTR_FLUSHES_BEGUN,        /* CUPTI flushes the shim's thread began ... */
	GP_CTR_FLUSHES,              /* ... and finished: a stopping loader waits for one begun after it */
	GP_CTR_PC_UNLOAD_BUSY,       /* PC samples not collected at a module unload, a context's
				      * end or exit: the shim's thread was collecting (never waited for) */
	GP_CTR_MAX = 16,
};

/* Header flags (gp_shm_producer.flags). */
#define GP_SHM_F_CLOCK_MONOTONIC (1u << 0) /* timestamps are CLOCK_MONOTONIC */
#define GP_SHM_F_INERT           (1u << 1) /* shim gave up (no CUPTI, subscriber) */
#define GP_SHM_F_TID_SYSTEM      (1u << 2) /* record tids are Linux tids */
#define GP_SHM_F_RECORDING       (1u << 3) /* kernel, copy and API activity is on */

#define GP_RECORD_STALE_TICKS 10ull
#define GP_RECORD_STALE_MIN_NS 2000000000ull
#define GP_RECORD_MAX_TICK_MS 1000u

/* Written once by the shim before the memfd is mapped by anyone else. */
struct gp_shm_layout {
	__u32 magic;       /* 0 */
	__u32 version;     /* 4 */
	__u32 header_size; /* 8: sizeof(struct gp_shm_header) */
	__u32 record_size; /* 12: sizeof(struct gp_record) */
	__u64 total_size;  /* 16: bytes of the whole memfd */
	__u32 pid;         /* 24: getpid() of the writer, in its pid namespace */
	__u32 owner_pid;   /* 28: host pid of the loader that made this memfd for the
			    * process (-- COMMAND, GPUPROBE_SHM_OWNER), 0 if the shim made it */
	__u64 create_ns;   /* 32: CLOCK_MONOTONIC at creation */
	__u64 rec_off;     /* 40: offset of the record ring */
	__u64 rec_slots;   /* 48: slots in the record ring, a power of two */
	__u64 str_off;     /* 56: offset of the string table */
	__u64 str_size;    /* 64: bytes of the string table */
	__u64 cubin_off;   /* 72: offset of the cubin ring */
	__u64 cubin_size;  /* 80: bytes of the cubin ring, a power of two */
	__u64 cubin_max;   /* 88: largest cubin payload accepted */
	__u64 reserved[4]; /* 96 */
};
_Static_assert(sizeof(struct gp_shm_layout) == 128, "gp_shm_layout ABI");

/* Written only by the shim. */
struct gp_shm_producer {
	__u64 rec_head;    /* 0: records published (free-running) */
	__u64 str_used;    /* 8: bytes of the string table published */
	__u64 cubin_head;  /* 16: cubin ring bytes published (free-running) */
	__u32 flags;       /* 24: GP_SHM_F_* */
	__u32 reserved0;   /* 28 */
	__u64 clock_offset_ns; /* 32: add to a CUPTI timestamp to get CLOCK_MONOTONIC, when !F_CLOCK_MONOTONIC (two's complement) */
	__u64 exit_seq;    /* 40: bumped when the process starts exiting (see exit_ack) */
	__u64 record_on_ns;  /* 48: CLOCK_MONOTONIC when activity was last switched on (0: never) */
	__u64 record_off_ns; /* 56: CLOCK_MONOTONIC when it was last switched off (0: never) */
	__u64 counters[GP_CTR_MAX]; /* 64 */
};
_Static_assert(sizeof(struct gp_shm_producer) == 192, "gp_shm_producer ABI");

/* Written only by the loader. */
struct gp_shm_consumer {
	__u64 rec_tail;     /* 0: records consumed (free-running) */
	__u64 cubin_tail;   /* 8: cubin ring bytes consumed (free-running) */
	__u32 reader_pid;   /* 16: host pid of the loader reading, 0 if none */
	__u32 tick_ms;      /* 20: the loader's tick: the longest the shim waits at exit */
	__u64 heartbeat_ns; /* 24: CLOCK_MONOTONIC of the loader's last visit */
	__u64 exit_ack;     /* 32: the exit_seq the loader has read everything up to */
	__u32 record_pause; /* 40: nonzero: the reader asks for no records now (between windows) */
	__u32 reserved0;    /* 44 */
	__u64 reserved[2];  /* 48 */
};
_Static_assert(sizeof(struct gp_shm_consumer) == 64, "gp_shm_consumer ABI");

/* The whole header; rings follow at the offsets the layout gives. */
struct gp_shm_header {
	struct gp_shm_layout layout;     /* 0 */
	struct gp_shm_producer producer; /* 128 */
	struct gp_shm_consumer consumer; /* 320 */
	__u8 pad[4096 - 384];            /* 384: rings start page aligned */
};
_Static_assert(sizeof(struct gp_shm_header) == 4096, "gp_shm_header ABI");

/* Record types in the record ring. */
enum gp_record_type {
	GP_REC_KERNEL = 1,  /* a kernel ran on the GPU */
	GP_REC_MEMCPY = 2,  /* a copy ran */
	GP_REC_MEMSET = 3,  /* a memset ran */
	GP_REC_API = 4,     /* a launch/copy API call (runtime or driver) */
	GP_REC_MODULE = 5,  /* a module was unloaded (loads go via the cubin ring) */
	GP_REC_GRAPH_NODE = 6, /* a CUDA-graph node was made, or cloned from another */
	GP_REC_PC = 7,      /* PC sampling: one instruction's samples of one stall reason */
	GP_REC_PC_STALL = 8, /* PC sampling: a stall reason's name */
	GP_REC_PC_TOTALS = 9, /* PC sampling: what one collection reported */
	GP_REC_MAX,
};

/* gp_record.api.domain */
enum gp_api_domain {
	GP_API_DRIVER = 1,
	GP_API_RUNTIME = 2,
};

/* gp_record.flags */
#define GP_REC_F_COPY (1u << 0) /* API record of a copy/memset call, not a launch */
#define GP_REC_F_NODE (1u << 1) /* API record of a call adding a graph node, not a launch */
/* API record of a call that returned an error: no activity is due */
#define GP_REC_F_FAILED (1u << 2)

/* gp_record.copy.kind: CUPTI's CUpti_ActivityMemcpyKind values, copied. */

struct gp_record_kernel {
	__u32 name_off;     /* 32: offset in the string table, NUL terminated */
	__u32 device;       /* 36 */
	__u32 stream;       /* 40 */
	__u32 graph_id;     /* 44: 0 when not launched by a graph */
	__u64 graph_node;   /* 48 */
	__u32 grid;         /* 56: gridX*gridY*gridZ, saturated */
	__u32 block;        /* 60: blockX*blockY*blockZ */
};

struct gp_record_api {
	__u32 cbid;         /* 32: CUPTI callback id of the call */
	__u32 domain;       /* 36: enum gp_api_domain */
	__u32 pid;          /* 40: process id CUPTI reported */
	__u32 reserved0;    /* 44 */
	__u64 reserved[2];  /* 48 */
};

struct gp_record_copy {
	__u64 bytes;        /* 32 */
	__u32 kind;         /* 40: copy kind (memcpy) or 0 (memset) */
	__u32 device;       /* 44 */
	__u32 stream;       /* 48 */
	__u32 graph_id;     /* 52 */
	__u64 graph_node;   /* 56: 0 when not run by a graph */
};

struct gp_record_module {
	__u64 module_id;    /* 32 */
	__u32 event;        /* 40: 1 = unloaded */
	__u32 reserved0;    /* 44 */
	__u64 reserved[2];  /* 48 */
};

/*
 * A graph node made (CUPTI's GRAPHNODE_CREATED; orig_node 0) or cloned
 * (GRAPHNODE_CLONED: instantiation copies each node of a graph into the
 * executable one, whose kernels' records name the copy). gp_record.tid is
 * the calling thread and start_ns = end_ns the time, in the records' clock:
 * a node made by a launch during stream capture is made inside that launch's
 * API call, so the time tells which call on that thread made it.
 * event says which: GP_GRAPH_NODE_MADE (made, or cloned from orig_node);
 * GP_GRAPH_NODE_UPDATED (GRAPH_NODE_UPDATED: cuGraphExecUpdate made the
 * executable graph's node orig_node run what node, of the graph it was
 * updated from, holds); GP_GRAPH_NODE_SET_PARAMS (GRAPH_NODE_SET_PARAMS:
 * the executable graph's node node was given new parameters; orig_node is
 * the node it was instantiated from).
 */
enum gp_graph_node_event {
	GP_GRAPH_NODE_MADE = 0,
	GP_GRAPH_NODE_UPDATED = 1,
	GP_GRAPH_NODE_SET_PARAMS = 2,
};

struct gp_record_graph_node {
	__u64 node;         /* 32: CUPTI's id of the node */
	__u64 orig_node;    /* 40: the node it was cloned from; 0: made */
	__u32 graph_id;     /* 48: the graph it is in */
	__u32 node_type;    /* 52: CUgraphNodeType */
	__u32 event;        /* 56: enum gp_graph_node_event */
	__u32 reserved0;    /* 60 */
};

/*
 * PC sampling (--pc-sampling): CUPTI's samples of warps' program counters,
 * as one collection by the shim's own thread handed them over (gp_record
 * start_ns = end_ns: when, CLOCK_MONOTONIC). pc_offset is from the start
 * of the function name_off names, in the cubin whose CUPTI CRC is
 * cubin_crc; stall is CUPTI's index of the reason (GP_REC_PC_STALL names
 * it).
 */
struct gp_record_pc {
	__u64 cubin_crc;    /* 32 */
	__u64 pc_offset;    /* 40 */
	__u32 name_off;     /* 48: the function's (mangled) name in the string table */
	__u32 stall;        /* 52 */
	__u32 samples;      /* 56 */
	__u32 reserved0;    /* 60 */
};

struct gp_record_pc_stall {
	__u32 stall;        /* 32: CUPTI's index */
	__u32 name_off;     /* 36: its name in the string table */
	__u64 reserved[3];  /* 40 */
};

/* CUPTI's own figures for one collection: every sample, and those it lost. */
struct gp_record_pc_totals {
	__u64 total;        /* 32: samples taken (non-user kernels' and dropped ones included) */
	__u64 dropped;      /* 40: samples CUPTI dropped */
	__u64 non_user;     /* 48: samples in kernels that are not the user's */
	__u32 hw_full;      /* 56: CUPTI's hardware buffer filled */
	__u32 pcs_lost;     /* 60: instructions the shim could not hand over (ring or strings full) */
};

/* One fixed-size record; 64 bytes so a slot is one cache line. */
struct gp_record {
	__u16 type;     /* 0: enum gp_record_type */
	__u16 flags;    /* 2 */
	__u32 tid;      /* 4: thread of the API call (API records) */
	__u64 corr;     /* 8: correlation id, widened with an epoch */
	__u64 start_ns; /* 16 */
	__u64 end_ns;   /* 24 */
	union {         /* 32 */
		struct gp_record_kernel kernel;
		struct gp_record_api api;
		struct gp_record_copy copy;
		struct gp_record_module module;
		struct gp_record_graph_node graph;
		struct gp_record_pc pc;
		struct gp_record_pc_stall pc_stall;
		struct gp_record_pc_totals pc_totals;
		__u8 raw[32];
	};
};
_Static_assert(sizeof(struct gp_record) == 64, "gp_record ABI");

/*
 * The cubin ring: a byte ring of entries, each a header and a payload padded
 * to 8 bytes. An entry never wraps: when it does not fit before the end, the
 * producer writes a GP_CUBIN_PAD entry (header only, size = bytes to the end)
 * and starts again at offset 0. When fewer than sizeof(struct gp_cubin_entry)
 * bytes remain before the end (no PAD header fits), both sides skip them to
 * offset 0 without an entry.
 */
#define GP_CUBIN_MAGIC 0x4e425543u /* "CUBN" */
#define GP_CUBIN_PAD   0x44415043u /* "CPAD" */

struct gp_cubin_entry {
	__u32 magic;     /* 0: GP_CUBIN_MAGIC or GP_CUBIN_PAD */
	__u32 reserved0; /* 4 */
	__u64 size;      /* 8: payload bytes (PAD: bytes skipped incl. header) */
	__u64 module_id; /* 16: the module id the load callback gave */
	__u64 load_ns;   /* 24: CLOCK_MONOTONIC of the load callback */
	__u32 tid;       /* 32: thread the callback ran on */
	__u32 reserved1; /* 36 */
	__u64 reserved[3]; /* 40 */
};
_Static_assert(sizeof(struct gp_cubin_entry) == 64, "gp_cubin_entry ABI");

#endif /* GP_ABI_H */
