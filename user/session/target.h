/* SPDX-License-Identifier: MIT */
/*
 * A profiled process as the loader sees it: its shared ring (once found),
 * names, address space (user/space/space.h: its mappings by generation,
 * the files mapped, their symbols and CFI) and lifecycle. Thread ids need
 * no translation: BPF reports each launch's tid in the process's own pid
 * namespace.
 */
#ifndef GP_TARGET_H
#define GP_TARGET_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>
#include "user/session/duty.h"
#include "user/session/key_state.h"
#include "user/space/space.h"
#include "user/cubin/crc.h"
#include "user/util/mem_share.h"
#include "user/util/u64map.h"

struct shm_reader;
struct pycode_cache;
struct bounded;

struct graph_nodes;
struct autograd_callers;

struct target {
	pid_t pid;                 /* host pid */
	pid_t ns_pid;              /* its own view of its pid */
	struct shm_reader *shm;    /* NULL until the shim's memfd is found */
	int shm_fd;                /* its ring, held before it is read, or -1: the memfd we
				      made (-- COMMAND), or one it made (ring_watch.h) */
	bool shm_fd_its_own;       /* shm_fd: made by this process (memfd_create seen) */
	struct u64map names;       /* string-table offset -> profile-independent name id */
	struct u64map pc_stalls;   /* PC sampling: CUPTI's stall reason index -> name id (s->names) */
	struct space *space;       /* its address space, by mapping generation; its stack epoch */
	__u64 py_checked_ns;       /* its code objects were last checked against reuse then */
	__u64 py_old_until_ns;     /* launches until then ran the code of before the last replacement */
	struct pycode_cache *py;   /* its CPython's code objects, once detected */
	struct graph_nodes *graphs; /* its CUDA-graph nodes, from its first one */
	struct mem_hold *names_hold; /* its tenant's, where its new kernel names count (s->name_holds) */
	struct crc_source crc;      /* its cubins' CRCs: the helper's, until one was lost on them */
	struct autograd_callers *autograd; /* its backward passes' callers, from its first */
	unsigned autograd_tries;   /* looks for its autograd engine (libtorch.h) */
	bool autograd_done;        /* its engine is probed, or will not be */
	bool autograd_probed;      /* its engine is probed (marked mapped on each scan) */
	bool autograd_no_slot;     /* refused for want of a slot: counted once */
	bool autograd_refused;     /* the looks ended on a libtorch refused (not looked at again) */
	bool autograd_launched;    /* it launched since the last scan (autograd.c) */
	unsigned autograd_launch_scans; /* scans it launched in since, once the looks ended */
	bool autograd_looked_again; /* looked at again after the looks ended with none (said once) */
	__u32 py_entry_kind;       /* enum gp_py_entry_kind of that CPython */
	__u64 py_next_try_ns;      /* detection retried until then (0: try now) */
	__u64 py_wait_ns;          /* the wait before the next look for one not yet found */
	unsigned py_tries;         /* detections that found a half-started interpreter */
	bool py_done;              /* detected, or known not to be (or not usable) */
	bool comm_declared;        /* its name (after exec) given to the profile */
	char comm[32];
	char cgroup[256];
	__u64 attach_ns;
	__u64 first_launch_ns;     /* 0 until its first launch event */
	bool driver_seen;          /* an event of its driver calls came (a module load, a launch) */
	__u64 exit_acked;          /* the shim's exit_seq we answered */
	__u64 exit_answer_ns;      /* when an exit of it was last answered between ticks */
	__u64 next_shm_try_ns;
	bool libcuda_probed_for_ring; /* its maps scanned for a libcuda since its ring was found */
	bool gone;
	bool warned_no_shim;
	bool warned_busy;          /* its ring is read by another loader: said once */
	bool shm_inert_reported;
	struct key_state keys;     /* the recording state its stack-cache keys were learnt in */
	struct duty_wait duty_wait; /* whether windows wait for its shim to record (duty.h) */
	__u64 record_forgot_ns;    /* when its keys last went at a switch of its recording */
	unsigned dead_visits;      /* ticks it was read after it exited (its ring had more) */
	__u64 flushes_at_stop;     /* its shim's flushes begun when the profile stopped */
	__u64 flushed_pos;         /* its ring's head once a flush begun after the stop was seen (0: not yet) */
};

/*
 * Processes followed at once, at most (the join's bound too): under
 * --all-cgroups any process that loads libcuda or makes a ring becomes a
 * target, and each holds tables of its own; one that forks thousands more
 * is refused past it, counted (targets_full) and said once.
 */
#define TARGET_TABLE_MAX 4096

struct target_table {
	struct target **t;
	size_t n, cap;
	size_t max;                /* TARGET_TABLE_MAX (tests set less) */
	struct u64map by_pid;
	struct space_stats gone;   /* of the targets removed */
	struct space_caches *caches; /* the symbol and CFI tables every target's space shares */
	struct bounded *bounded;   /* the bounded calls their spaces open files through */
};

/*
 * Makes the table and the caches its targets' address spaces share; the
 * spaces and the caches open files as bounded calls through b (the
 * session's: user/util/bounded.h).
 */
int target_table__init(struct target_table *tt, struct bounded *b);
void target_table__fini(struct target_table *tt);
struct target *target_table__find(struct target_table *tt, pid_t pid);
/* Creates the entry (reading comm, cgroup, namespace) or returns the existing one; -ENOSPC: full. */
int target_table__add(struct target_table *tt, pid_t pid, __u64 now, struct target **ret_t);
void target_table__remove(struct target_table *tt, pid_t pid);
/* What the stack walks cost (the loader: line's figures), over every target, removed ones too. */
void target_table__stats(const struct target_table *tt, struct space_stats *ret);
/* Bytes the targets' shared symbol and CFI tables hold now. */
void target_table__table_bytes(const struct target_table *tt, size_t *ret_sym_bytes,
			       size_t *ret_cfi_bytes);

/*
 * Its address space's current generation (space__now), opened on first
 * use: the maps and root are read while the process lives, and its name
 * again (after an exec). NULL when it cannot be opened.
 */
struct space_gen *target__symbolizer(struct target *t);
/* Forgets its earlier generations: nothing of their time waits any more. */
void target__drop_old_spaces(struct target *t);

#endif
