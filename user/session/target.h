/* SPDX-License-Identifier: MIT */
/*
 * A profiled process as the loader sees it: its shared ring (once found),
 * names, symbolizer and lifecycle. Thread ids need no translation: BPF
 * reports each launch's tid in the process's own pid namespace.
 */
#ifndef GP_TARGET_H
#define GP_TARGET_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>
#include "user/util/u64map.h"

struct shm_reader;
struct symbolizer;
struct unwind_memo;
struct pycode_cache;

/*
 * The process's mappings as they were at an earlier generation (maps_gens
 * in bpf/launch.bpf.c): kept while stacks of that time are still to be
 * named, or events of that time to be unwound, so that a library unloaded
 * and another loaded at its address never name each other's frames.
 */
struct target_space {
	__u32 maps_gen;
	__u32 epoch;               /* the raw stacks' epoch of that time */
	struct symbolizer *sym;
};
#define TARGET_OLD_SPACES 8

struct target {
	pid_t pid;                 /* host pid */
	pid_t ns_pid;              /* its own view of its pid */
	struct shm_reader *shm;    /* NULL until the shim's memfd is found */
	int shm_fd;                /* its ring, held before it is read, or -1: the memfd we
				      made (-- COMMAND), or one it made (ring_watch.h) */
	bool shm_fd_its_own;       /* shm_fd: made by this process (memfd_create seen) */
	struct u64map names;       /* string-table offset -> profile-independent name id */
	struct symbolizer *sym;    /* its mappings now (of maps_gen) */
	__u32 maps_gen;            /* the generation sym reads; 0 until an event said one */
	__u32 stack_epoch;         /* raw stacks carry it: bumped when mappings or code change */
	struct target_space old[TARGET_OLD_SPACES]; /* earlier generations, oldest first */
	unsigned nold;
	unsigned long rereads_gone; /* maps re-reads of symbolizers replaced since */
	__u64 py_checked_ns;       /* its code objects were last checked against reuse then */
	__u64 py_old_until_ns;     /* launches until then ran the code of before the last replacement */
	struct unwind_memo *memo;  /* rules by code address, while symbolizer__moved is memo_gen */
	unsigned long memo_gen;
	__u64 lookups, lookup_ns;  /* the walks' mapping and CFI lookups (memo misses), their time */
	__u64 forced_useless_ns;   /* a forced maps re-read found nothing new then (stacks.c) */
	struct pycode_cache *py;   /* its CPython's code objects, once detected */
	__u32 py_entry_kind;       /* enum gp_py_entry_kind of that CPython */
	__u64 py_next_try_ns;      /* detection retried until then (0: try now) */
	unsigned py_tries;         /* detections that found a half-started interpreter */
	bool py_done;              /* detected, or known not to be (or not usable) */
	bool comm_declared;        /* its name (after exec) given to the profile */
	char comm[32];
	char cgroup[256];
	__u64 attach_ns;
	__u64 first_launch_ns;     /* 0 until its first launch event */
	__u64 exit_acked;          /* the shim's exit_seq we answered */
	__u64 next_shm_try_ns;
	bool gone;
	bool sym_failed;
	bool warned_no_shim;
	bool warned_busy;          /* its ring is read by another loader: said once */
	bool shm_inert_reported;
	unsigned dead_visits;      /* ticks it was read after it exited (its ring had more) */
};

/*
 * Its stack walks' rule memo (created on first use), emptied whenever its
 * maps were read again since and a mapping had gone or changed; NULL
 * without a symbolizer or memory.
 */
struct unwind_memo *target__unwind_memo(struct target *t);

/* What the stack walks of targets cost: the loader: line's figures. */
struct target_stats {
	__u64 memo_hits, memo_misses; /* rule memo lookups answered and not */
	__u64 maps_reread;            /* times a target's maps were read again */
	__u64 maps_reread_limited;    /* re-reads refused by the target's budget (symbolize.h) */
	__u64 lookups, lookup_ns;     /* mapping and CFI lookups (the misses), their time */
};

struct target_table {
	struct target **t;
	size_t n, cap;
	struct u64map by_pid;
	struct target_stats gone;  /* of the targets removed */
};

int target_table__init(struct target_table *tt);
void target_table__fini(struct target_table *tt);
struct target *target_table__find(struct target_table *tt, pid_t pid);
/* Creates the entry (reading comm, cgroup, namespace) or returns the existing one. */
int target_table__add(struct target_table *tt, pid_t pid, __u64 now, struct target **ret_t);
void target_table__remove(struct target_table *tt, pid_t pid);
/* The walks' figures over every target, removed ones too. */
void target_table__stats(const struct target_table *tt, struct target_stats *ret);

struct symbolizer *target__symbolizer(struct target *t);
/* The symbolizer for raw stacks of epoch (an earlier one's while kept, else the current). */
struct symbolizer *target__symbolizer_at(struct target *t, __u32 epoch);
/*
 * The symbolizer for an event of mapping generation maps_gen and the epoch
 * its stack gets; *ret_current: it is the current one (the memo applies).
 */
struct symbolizer *target__symbolizer_gen(struct target *t, __u32 maps_gen, __u32 *ret_epoch,
					  bool *ret_current);
/*
 * The process's mappings changed (generation maps_gen): the current
 * symbolizer is kept as an earlier space when keep_old (stacks of its
 * time are waiting to be named), the next epoch begins, and the maps are
 * read afresh on next use. -EBUSY when every earlier space is in use: the
 * caller names what waits, drops them, and asks again.
 */
int target__new_space(struct target *t, __u32 maps_gen, bool keep_old);
/* A new epoch over the same mappings (the process's Python code changed). */
void target__new_epoch(struct target *t);
/* Forgets the earlier spaces: nothing of their time waits any more. */
void target__drop_old_spaces(struct target *t);

#endif
