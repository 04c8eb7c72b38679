/* SPDX-License-Identifier: MIT */
/*
 * Data shared by bpf/launch.bpf.c and user/probe/launch_probe.c: the events the
 * uprobes on libcuda.so.1 send through the BPF ring buffer. Plain data only.
 */
#ifndef GP_LAUNCH_H
#define GP_LAUNCH_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define GP_MAX_STACK 127
#define GP_PROBE_COPY_FIRST GP_PROBE_MEMCPY

/* Which entry point fired. Keep in step with user/probe/entry_points.c's table. */
enum gp_probe {
	GP_PROBE_LAUNCH_KERNEL = 0,
	GP_PROBE_LAUNCH_KERNEL_PTSZ,
	GP_PROBE_LAUNCH_KERNEL_EX,
	GP_PROBE_LAUNCH_KERNEL_EX_PTSZ,
	GP_PROBE_LAUNCH_COOPERATIVE,
	GP_PROBE_LAUNCH_COOPERATIVE_PTSZ,
	GP_PROBE_GRAPH_LAUNCH,
	GP_PROBE_GRAPH_LAUNCH_PTSZ,
	GP_PROBE_MODULE_LOAD,
	GP_PROBE_MODULE_LOAD_DATA,
	GP_PROBE_MODULE_LOAD_DATA_EX,
	GP_PROBE_MODULE_LOAD_FAT_BINARY,
	GP_PROBE_LIBRARY_LOAD_DATA,
	GP_PROBE_LIBRARY_LOAD_FROM_FILE,
	/* Copies and memsets: one program, told apart by the attach cookie. */
	GP_PROBE_MEMCPY, /* first copy probe */
	GP_PROBE_MEMCPY_PTDS,
	GP_PROBE_MEMCPY_ASYNC,
	GP_PROBE_MEMCPY_ASYNC_PTSZ,
	GP_PROBE_MEMCPY_HTO_D_V2,
	GP_PROBE_MEMCPY_HTO_D_V2_PTDS,
	GP_PROBE_MEMCPY_DTO_H_V2,
	GP_PROBE_MEMCPY_DTO_H_V2_PTDS,
	GP_PROBE_MEMCPY_DTO_D_V2,
	GP_PROBE_MEMCPY_DTO_D_V2_PTDS,
	GP_PROBE_MEMCPY_HTO_D_ASYNC_V2,
	GP_PROBE_MEMCPY_HTO_D_ASYNC_V2_PTSZ,
	GP_PROBE_MEMCPY_DTO_H_ASYNC_V2,
	GP_PROBE_MEMCPY_DTO_H_ASYNC_V2_PTSZ,
	GP_PROBE_MEMCPY_DTO_D_ASYNC_V2,
	GP_PROBE_MEMCPY_DTO_D_ASYNC_V2_PTSZ,
	GP_PROBE_MEMCPY2_D_V2,
	GP_PROBE_MEMCPY2_D_ASYNC_V2,
	GP_PROBE_MEMCPY3_D_V2,
	GP_PROBE_MEMCPY3_D_ASYNC_V2,
	GP_PROBE_MEMCPY_PEER,
	GP_PROBE_MEMCPY_PEER_ASYNC,
	GP_PROBE_MEMCPY_BATCH_ASYNC,
	GP_PROBE_MEMSET_D8_V2,
	GP_PROBE_MEMSET_D8_ASYNC,
	GP_PROBE_MEMSET_D8_ASYNC_PTSZ,
	GP_PROBE_MEMSET_D16_V2,
	GP_PROBE_MEMSET_D16_ASYNC,
	GP_PROBE_MEMSET_D32_V2,
	GP_PROBE_MEMSET_D32_ASYNC,
	GP_PROBE_MEMSET_D32_ASYNC_PTSZ,
	GP_PROBE_MEMSET_D2_D8_V2,
	GP_PROBE_MEMSET_D2_D32_V2,
	/* Graph nodes made by the explicit API: joined to their API records, for the nodes they make. */
	GP_PROBE_GRAPH_ADD_KERNEL_NODE,
	GP_PROBE_GRAPH_ADD_KERNEL_NODE_V2,
	GP_PROBE_GRAPH_ADD_MEMCPY_NODE,
	GP_PROBE_GRAPH_ADD_MEMSET_NODE,
	GP_PROBE_GRAPH_ADD_NODE,
	GP_PROBE_GRAPH_ADD_NODE_V2,
	GP_PROBE_MAX,
};

/*
 * The probes off between the duty cycle's windows: every entry point but the
 * module and library loads (bpf/launch.bpf.c: launches_paused; the links
 * user/probe/probe_files.c detaches). Held against entry_points.c's rows by
 * tests/test_entry_points.c.
 */
#define GP_PROBE_WINDOWED(p) \
	((p) < GP_PROBE_MAX && ((p) < GP_PROBE_MODULE_LOAD || (p) > GP_PROBE_LIBRARY_LOAD_FROM_FILE))

/*
 * A followed process just made its shim ring (memfd_create of
 * GP_SHM_RING_NAME returned fd): sent on the rings ring buffer, so that the
 * loader takes hold of the ring at once and reads it even if the process
 * exits before the loader's next visit.
 */
struct gp_ring_event {
	__u32 pid;        /* host tgid */
	__u32 tid;
	__s32 fd;
	__u32 pad;
};

/*
 * On the launch events' ring, the same news for the loader's main thread
 * (a header only, pid and tid set): the process's maps are read at once.
 */
#define GP_PROBE_SHM_RING 0xffffu

/*
 * Probes on libtorch's autograd engine, outside the driver's table (the same
 * program, told apart by the cookie): where a thread starts a backward pass
 * (Engine::execute_with_graph_task: an event with its stack, the graph task
 * in stream) and where an engine thread takes a node of one (evaluate_function:
 * no event, the thread's graph task kept for its launches).
 */
#define GP_PROBE_AUTOGRAD_EXECUTE 0x100u
#define GP_PROBE_AUTOGRAD_NODE 0x101u
/* autograd_pass of a node whose pass's begin was never seen (no begin event has this ts_ns). */
#define AUTOGRAD_PASS_UNSEEN 1ull

/* The shim's memfd name, GP_SHM_NAME of shim/gp_abi.h (user/probe/launch_probe.c checks). */
#define GP_SHM_RING_NAME "gpuprobe-shm"

/*
 * One event in the ring buffer: a fixed header, then three variable parts,
 * packed in this order:
 *   __u64 fp[nr_frames]          frame-pointer stack, leaf first (--unwind fp)
 *   struct gp_py_frame py[nr_py] the launching thread's Python frames, innermost first
 *   __u8 copy[stack_len]         user memory from sp rounded down to GP_STACK_CHUNK
 *                                (GP_STACK_COPY_BASE), stack_len bytes (--unwind cfi)
 * The loader unwinds the copy with the files' CFI (user/unwind/).
 * A stack-cache hit (GP_EV_F_CACHED) is the header alone: cache_id names the
 * stack the loader installed for this launch's key (struct gp_stack_key).
 */
struct gp_launch_event {
	__u64 ts_ns;      /* 0: bpf_ktime_get_ns() at entry (CLOCK_MONOTONIC) */
	__u64 cgroup_id;  /* 8 */
	__u32 pid;        /* 16: host tgid */
	__u32 tid;        /* 20: host tid */
	__u32 probe;      /* 24: enum gp_probe */
	__u32 nr_frames;  /* 28: entries in fp[] */
	__u64 func;       /* 32: CUfunction / CUkernel / CUgraphExec / image */
	__u64 stream;     /* 40: CUstream, 0 for the null stream */
	__u32 grid[3];    /* 48 */
	__u32 block[3];   /* 60 */
	__u32 ns_tid;     /* 72: the tid in the thread's own pid namespace (gettid()) */
	__u32 ns_pid;     /* 76: the pid in the process's own pid namespace */
	__u64 ip;         /* 80: user registers at the probed entry point */
	__u64 sp;         /* 88 */
	__u64 bp;         /* 96 */
	__u32 stack_len;  /* 104: bytes in copy[] */
	__u16 nr_py;      /* 108: entries in py[] */
	__u16 flags;      /* 110: GP_EV_F_* */
	__u64 ret;        /* 112: the word at sp: the return address into the caller */
	__u64 py_hash;    /* 120: hash of the Python frames' (code, instr), 0 without */
	__u32 cache_id;   /* 128: the stack cache's entry hit (CACHED, AUDIT), else 0 */
	__u32 maps_gen;   /* 132: the process's mapping generation (maps_gens) */
	__u64 autograd_pass; /* 136: the backward pass whose node the thread is inside
				(evaluate_function): its begin event's ts_ns, or
				AUTOGRAD_PASS_UNSEEN; 0: none, or the thread's own */
	__u64 stack[GP_MAX_STACK]; /* 144: fp[], then py[] (the BPF side's scratch layout) */
};
_Static_assert(sizeof(struct gp_launch_event) == 144 + 8 * GP_MAX_STACK,
	       "gp_launch_event ABI");
#define GP_LAUNCH_EVENT_HDR 144u

/*
 * The stack cache's key: what the launch program reads cheaply at the
 * probe and what, in practice, only one stack has (docs/UNWINDING.md says
 * why): the process and its mapping generation, the entry point, the stack
 * pointer, the return address at it, the function launched and a hash of
 * the Python frames. The loader fills the map (stack_cache) after unwinding
 * a launch that missed; a hit sends the entry's id instead of the stack.
 * Where two stacks were found under one key, its entry is split
 * (GP_SC_SPLIT): it names up to GP_SC_SLOTS words of the stack (return
 * addresses, at offsets from sp where the stacks differ), and the key with
 * those words in w[] is looked up again. w[] is 0 in a first lookup.
 */
#define GP_SC_SLOTS 4

struct gp_stack_key {
	__u64 sp;         /* 0 */
	__u64 ret;        /* 8 */
	__u64 func;       /* 16 */
	__u64 py_hash;    /* 24 */
	__u32 pid;        /* 32: host tgid */
	__u32 maps_gen;   /* 36 */
	__u16 probe;      /* 40 */
	__u16 py_flags;   /* 42: the event's GP_EV_F_PY* flags and walk status */
	__u32 pad;        /* 44: 0 */
	__u64 w[GP_SC_SLOTS]; /* 48: a split key's words, in its entry's slot order */
};
_Static_assert(sizeof(struct gp_stack_key) == 80, "gp_stack_key ABI");

struct gp_stack_val {
	__u32 id;         /* 0: the loader's entry id, sent back in cache_id */
	__u32 flags;      /* 4: GP_SC_* */
	__u16 slot[GP_SC_SLOTS]; /* 8: GP_SC_SPLIT: the words' offsets from sp, in 8-byte units */
};
_Static_assert(sizeof(struct gp_stack_val) == 16, "gp_stack_val ABI");

/* The most keys the cache may be given (the loader's ids hold 20 bits of slot). */
#define GP_STACK_CACHE_MAX (1u << 19)

/* Two stacks were seen under this key and no word tells them apart: every launch copies. */
#define GP_SC_UNUSABLE 0x1u
/* Not a stack: look the key up again with the words at slot[] (nslots in bits 8-15). */
#define GP_SC_SPLIT 0x2u
/* A key not yet confirmed: every hit of it is sent whole (an audit), whatever the rate. */
#define GP_SC_YOUNG 0x4u
#define GP_SC_NSLOTS_SHIFT 8

/* The event's flags that belong to its key (the Python walk's outcome). */
#define GP_EV_KEY_FLAGS (GP_EV_F_PY | GP_EV_F_PY_MAIN | (7u << GP_EV_PY_STATUS_SHIFT))

/*
 * Largest stack copy an event carries. The copy starts at the loader's
 * --stack-copy size; the loader then sizes each thread's copies to what its
 * stacks need (the copy_hints map), up to this.
 */
#define GP_STACK_COPY_MAX (256u * 1024)
/* The copy is taken in chunks of this many bytes; stack_len is a multiple. */
#define GP_STACK_CHUNK 512u
/* Where the copy starts: sp rounded down to a chunk (chunks never straddle pages). */
#define GP_STACK_COPY_BASE(sp) ((sp) & ~(__u64)(GP_STACK_CHUNK - 1))

#define GP_EV_F_COPY_PARTIAL 0x1 /* chunks of the copy could not be read: left zero */
#define GP_EV_F_VMA_BUSY 0x2     /* the stack's mapping was not found: copy bounded by one page */
#define GP_EV_F_PY 0x4           /* the process runs CPython: py[] was walked */
#define GP_EV_F_PY_MAIN 0x8      /* the launching thread has no Python: py[] is the main thread's */
#define GP_EV_F_COPY_SKIPPED 0x10 /* the ring was over half full: no stack copy, the rest sent */
#define GP_EV_F_CACHED 0x20      /* a stack-cache hit: header only, cache_id names the stack */
#define GP_EV_F_AUDIT 0x40       /* a hit sent whole (an audit): cache_id is the entry hit */
#define GP_EV_F_KEYED 0x80       /* a miss whose key the loader may install */
#define GP_EV_PY_STATUS_SHIFT 8  /* bits 8-10: enum gp_py_walk_status of that walk */
/* autograd_pass is the pass of the engine thread's last node, which has returned: its post-processing */
#define GP_EV_F_AG_AFTER 0x800

/* Indices into the per-CPU counters map. */
enum gp_bpf_counter {
	GP_BPF_EVENTS = 0,       /* events submitted */
	GP_BPF_RINGBUF_FULL,     /* launch, load and copy events lost: ring buffer full */
	GP_BPF_STACK_ERRORS,     /* bpf_get_stack failed: event sent, no stack */
	GP_BPF_COPY_ERRORS,      /* part of a stack copy unreadable (not resident): left zero */
	GP_BPF_COPY_SKIPPED,     /* ring over half full: event sent without its stack copy */
	GP_BPF_FILTERED,         /* probe fired for a process not followed */
	GP_BPF_NOTICES_LOST,     /* a new shim ring's notice (fd, or the wakeup) lost: ring full */
	GP_BPF_CACHE_HITS,       /* launches sent as a stack-cache hit, no stack */
	GP_BPF_CACHE_MISSES,     /* launches whose key the cache did not hold */
	GP_BPF_CACHE_AUDITS,     /* hits sent whole, for the loader to compare */
	GP_BPF_CACHE_UNUSABLE,   /* launches of a key marked unusable: sent whole */
	GP_BPF_MAPS_CHANGED,     /* a followed process's mappings changed (maps_gens bumped) */
	GP_BPF_PY_KEPT,          /* launches for the main thread that took its kept walk */
	GP_BPF_PY_KEPT_STALE,    /* of those sent whole, frames read then that differed from it */
	GP_BPF_AUDITS_SKIPPED,   /* audits the ring had no room for, sent as hits (counted in both) */
	GP_BPF_AG_NODES,         /* autograd nodes a followed thread took, seen by the node probe */
	GP_BPF_AG_LEARNED,       /* of those, nodes at a call its thread had not taken its last node at */
	GP_BPF_AG_UNLEARNED,     /* engine-thread launches in no node known, passes begun in a node */
	GP_BPF_COUNTER_MAX,
};

#endif /* GP_LAUNCH_H */
