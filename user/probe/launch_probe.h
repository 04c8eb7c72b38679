/* SPDX-License-Identifier: MIT */
/*
 * The launch probe family's lifecycle: open the BPF skeleton, size it, load
 * it, attach the uprobes to each distinct libcuda file, follow pids, read the
 * events. Nothing else in user/ sees struct launch_bpf.
 */
#ifndef GP_LAUNCH_PROBE_H
#define GP_LAUNCH_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "bpf/launch.h"
#include "bpf/python.h"

struct launch_probe;

struct launch_probe_opts {
	bool filter_pids;        /* only pids added with launch_probe__follow */
	bool verbose;            /* -v: its own lines and libbpf's debug log */
	__u32 ringbuf_bytes;     /* power of two, >= 4096 */
	__u64 wakeup_bytes;      /* wake the reader once this much is waiting */
	__u32 stack_copy;        /* bytes of stack copied per event (CFI); 0: frame pointers */
	__u32 cache_entries;     /* the stack cache's size in keys; 0: no cache */
	__u32 audit_every;       /* about one cache hit in this many is sent whole; 0: none */
	__u32 audit_max;         /* at most this many audits a second per CPU */
};

/* Called for each event; its memory is valid only during the call. */
typedef int (*launch_event_fn)(void *ctx, const struct gp_launch_event *e, size_t size);

struct launch_attach_result {
	unsigned attached;       /* probes attached to this file */
	unsigned missing;        /* entry points the file does not export */
	bool already;            /* the file (dev, inode) was attached before */
};

/* Files met as libcuda that were not attached, and slots freed (attach_driver, sweep). */
struct launch_file_stats {
	__u64 refused;  /* distinct files without the driver's own exports */
	__u64 no_slot;  /* attaches refused: every slot taken (-E2BIG) */
	__u64 detached; /* files whose slot was freed: no target mapped them */
};

int launch_probe__open(const struct launch_probe_opts *opts, struct launch_probe **ret_lp);
/*
 * Attaches every probe to the ELF file at path (for every process mapping
 * it), if it exports a launch entry point (-ENOENT: none). A file attached
 * so stays attached (a path the user or the system gave).
 */
int launch_probe__attach_file(struct launch_probe *lp, const char *path,
			      struct launch_attach_result *ret_res);
/*
 * The same for a file a target maps (hostile: a look-alike named
 * libcuda.so.1 must not take one of the few attach slots): only if it is a
 * CUDA driver, exporting the driver's own functions beside its entry
 * points (-ENOEXEC, remembered: never read again); -E2BIG when every slot is
 * taken. Its slot is freed by launch_probe__sweep_files once no target maps
 * it.
 */
int launch_probe__attach_driver(struct launch_probe *lp, const char *path,
				struct launch_attach_result *ret_res);
/*
 * libtorch_cpu.so's autograd engine at path (a file a target maps, opened
 * in its root): its two points (entry_points.h's autograd_points) or none,
 * -ENOENT when it does not export both. It stays attached, like a file
 * given (no sweep): it holds no driver slot's worth of probes.
 */
int launch_probe__attach_autograd(struct launch_probe *lp, const char *path,
				  struct launch_attach_result *ret_res);
/*
 * A scan found a target mapping the file (dev, ino): 1 when it is attached
 * (noted for the sweep), -ENOEXEC when it was refused, 0 when unknown.
 */
int launch_probe__file_seen(struct launch_probe *lp, dev_t dev, ino_t ino);
/*
 * A target's libcuda that may not be opened (on a FUSE mount): refused and
 * counted, not asked again.
 */
void launch_probe__refuse_file(struct launch_probe *lp, dev_t dev, ino_t ino);
/*
 * After a scan of every target's maps: frees the slots of files attached by
 * attach_driver that no scan saw mapped twice in a row. Returns how many.
 */
unsigned launch_probe__sweep_files(struct launch_probe *lp);
void launch_probe__file_stats(const struct launch_probe *lp, struct launch_file_stats *ret_stats);
/*
 * Between the duty cycle's windows (paused): launches, copies and graph-node
 * calls send nothing (their links detached where they are uprobe_multi
 * links, the rest told by a flag); module loads and the autograd engine's
 * points stay. Returns how many files' links could not be made again on
 * resuming (their probes still answer to the flag).
 */
unsigned launch_probe__pause(struct launch_probe *lp, bool paused);
/*
 * The autograd engines' node probe (a trap a node) taken away (quiet) or
 * put back, where it is a uprobe_multi link of its own (elsewhere it stays:
 * returns 0 and changes nothing; launch_probe__uses_multi). A link wanted
 * back that could not be made is tried again at the next call. A thread's launches read their node's
 * pass from where its last node's caller keeps the task, so an engine
 * thread that takes every node at one known call needs the probe no more
 * (bpf/launch.bpf.c: node_pass; the loader's policy: node_watch.h). The
 * windows' pause keeps it away too. Returns how many files' links could not
 * be made again.
 */
unsigned launch_probe__quiet_nodes(struct launch_probe *lp, bool quiet);
bool launch_probe__nodes_quiet(const struct launch_probe *lp);
/*
 * At a stop: launches, copies and graph-node calls send nothing from now on
 * (the flag only; links stay): what comes after the stop is left out, and
 * the stop's read-on need not carry it.
 */
void launch_probe__mute(struct launch_probe *lp);
/* Windowed links that could not be made again, so far. */
__u64 launch_probe__pause_errors(const struct launch_probe *lp);
/* Whether each file's probes are one uprobe_multi link (else a perf uprobe each). */
bool launch_probe__uses_multi(const struct launch_probe *lp);
int launch_probe__follow(struct launch_probe *lp, __u32 tgid);
int launch_probe__unfollow(struct launch_probe *lp, __u32 tgid);
/* Bytes of stack copied for tid's launches from now on (CFI mode). */
int launch_probe__set_copy_hint(struct launch_probe *lp, __u32 tid, __u32 bytes);
/* Lets the probes walk tgid's Python frames (cfg NULL: stop, forget). */
int launch_probe__set_python(struct launch_probe *lp, __u32 tgid, const struct gp_py_config *cfg);
/*
 * The stack cache (bpf/launch.h's gp_stack_key): whether the probes consult
 * it (a cache was asked for and the probes that keep each process's mapping
 * generation were attached); its size in keys; and the entries themselves.
 */
bool launch_probe__cache_on(const struct launch_probe *lp);
__u32 launch_probe__cache_entries(const struct launch_probe *lp);
int launch_probe__cache_put(struct launch_probe *lp, const struct gp_stack_key *k,
			    const struct gp_stack_val *v);
int launch_probe__cache_del(struct launch_probe *lp, const struct gp_stack_key *k);
/* Forgets tgid's mapping generation (it exited). */
int launch_probe__forget_maps_gen(struct launch_probe *lp, __u32 tgid);
/* Waits up to timeout_ms for events, then consumes all that are waiting. */
int launch_probe__poll(struct launch_probe *lp, int timeout_ms, launch_event_fn fn, void *ctx);
/*
 * The launch-event ring's positions (bytes, free-running): reserved by the
 * probes so far, and consumed (handed to a poll's fn) so far. An event
 * reserved before `reserved` was read is consumed once `consumed` reaches it.
 */
void launch_probe__ring_positions(const struct launch_probe *lp, __u64 *ret_consumed,
				  __u64 *ret_reserved);
/* A shim ring made (gp_ring_event); called on the thread polling for them. */
typedef void (*ring_event_fn)(void *ctx, const struct gp_ring_event *e);
/* Whether rings made are watched (the memfd_create tracepoints attached). */
bool launch_probe__watches_rings(const struct launch_probe *lp);
/*
 * Waits up to timeout_ms for rings made. Only this touches the rings' ring
 * buffer: one thread may call it while another polls launch events.
 */
int launch_probe__poll_rings(struct launch_probe *lp, int timeout_ms, ring_event_fn fn, void *ctx);
/* One counter (idx < GP_BPF_COUNTER_MAX), summed over CPUs: 0 or -errno. */
int launch_probe__counter(struct launch_probe *lp, __u32 idx, __u64 *ret);
/* Sums every per-CPU counter (enum gp_bpf_counter). */
int launch_probe__counters(struct launch_probe *lp, __u64 ret_counters[GP_BPF_COUNTER_MAX]);
unsigned launch_probe__nr_files(const struct launch_probe *lp);
void launch_probe__destroy(struct launch_probe *lp);

#endif
