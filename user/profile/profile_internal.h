/* SPDX-License-Identifier: MIT */
/*
 * The profile's tables, shared by the files that build (profile.c) and
 * compact (compact.c) them. Not for use outside user/profile.
 */
#ifndef GP_PROFILE_INTERNAL_H
#define GP_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "user/profile/profile.h"
#include "user/util/blobtab.h"
#include "user/util/mem_share.h"
#include "user/util/u64map.h"

#define MAX_STRINGS (1u << 20)
#define MAX_STRING_BYTES (256u << 20)
#define MAX_KEYS (1u << 21)
/* Activities' names remembered by their caller's id (profile_activity.name_id), at most. */
#define MAX_NAME_IDS (1u << 16)
#define MAX_FRAMES (1u << 21)
/*
 * Kernel -> cubin bounds. A process loading every module eagerly (PyTorch:
 * 2821 cubins, measured) defines on the order of 1e5 kernels; an entry costs
 * a few tens of bytes (the name is kept as a hash, not as bytes).
 */
#define MAX_CUBINS (1u << 16)
#define MAX_KERNELS_PER_PROC (1u << 17)
#define MAX_KERNELS (1u << 20)
/*
 * Of those, what processes take together before each is held to its share
 * (mem_share.h, counting cubins and kernels, not bytes): one that loads
 * cubins without end fills half of each table, not every other's room.
 */
#define CUBINS_SHARED (MAX_CUBINS / 2)
#define KERNELS_SHARED (MAX_KERNELS / 2)
/* Likewise, the strings PC samples' function names add to the profile's (MAX_STRINGS). */
#define PC_NAMES_SHARED (MAX_STRINGS / 4)
/* A proc_info kernels value: the name is defined by two different cubins. */
#define KERNEL_AMBIGUOUS UINT64_MAX

struct agg_key {
	__u32 pid, stack_id, api, reason, name, device, stream, graph_id;
	/* profile_under: the inner stacks, their APIs, markers */
	__u32 under[PROFILE_UNDERS], under_api[PROFILE_UNDERS], under_marker[PROFILE_UNDERS];
};
#define NO_DEVICE UINT32_MAX /* device and stream of a launch without a GPU record */

struct agg_val {
	__u64 ns, count;
};

struct frame_key {
	__u32 name, file, build_id, line;
	__u64 addr;
};

struct stack {
	__u32 *frames; /* frame ids, leaf first */
	__u32 n;
	bool truncated;
};

struct proc_info {
	__u32 comm, cgroup; /* string ids, 0 = none */
	/*
	 * Kernel name hash -> cubin index << 32 | symbol index, or
	 * KERNEL_AMBIGUOUS; allocated with the process's first cubin. Keyed by
	 * a hash, not the name: a collision can only merge names the same
	 * process chose, so a hostile process can only blur its own profile.
	 */
	struct u64map kernels;
	struct mem_hold cubins_held, kernels_held; /* what it added (profile's cubin_share, kernel_share) */
	struct mem_hold pc_names_held; /* function names its PC samples added (pc_name_share) */
};

/* PC sampling's samples (pc.c): (process, function, stall, cubin, offset) -> samples. */
#define MAX_PC_ENTRIES (1u << 20)
/* Of them, one process's: one that makes up instructions cannot take every other's room. */
#define MAX_PC_ENTRIES_PER_PROC (1u << 19)

struct pc_entry {
	__u32 pid, fn, stall; /* fn, stall: string ids */
	__u32 next;           /* index + 1 of the next entry of the same hash, 0: none */
	__u64 crc, offset, samples;
};

/* Source lines of cubins (lines.c), read only when PC sampling is wanted. */
#define MAX_LINE_ROWS (1u << 21)          /* 48 MiB of rows at most */
#define MAX_LINE_ROWS_PER_PROC (1u << 19) /* of them, brought by one process */
#define MAX_LINE_FILES (1u << 16)
#define MAX_LINE_FILE_BYTES (8u << 20)
struct line_store;
void profile__lines_free(struct line_store *s);
/* After compaction: only the lines of cubins p still holds stay (lines.c). */
int profile__lines_prune(struct profile *p);

struct pc_table {
	bool wanted;          /* the written profile has pc_samples, even none */
	struct pc_entry *e;
	size_t n, cap;
	struct u64map head;   /* hash -> index + 1 of its first entry */
	struct u64map per_pid; /* pid -> its entries */
	__u64 dropped;        /* samples of entries past MAX_PC_ENTRIES */
};

struct profile {
	struct blobtab *str, *frames, *keys;
	struct u64map name_ids;      /* profile_activity.name_id -> string id (at most MAX_NAME_IDS) */
	struct agg_val *vals;        /* vals[key id - 1] */
	size_t cap_vals;
	struct u64map stack_idx;     /* stack id -> index in stacks */
	struct stack *stacks;
	size_t nr_stacks, cap_stacks;
	struct u64map procs;         /* pid -> index in proc_infos */
	struct proc_info *proc_infos;
	size_t nr_procs, cap_procs;
	struct u64map cubin_idx;     /* crc -> index in cubin_crcs */
	__u64 *cubin_crcs;
	size_t nr_cubins, cap_cubins;
	struct profile_cubin_stats cs;
	struct mem_share cubin_share, kernel_share; /* CUBINS_SHARED, KERNELS_SHARED */
	struct mem_share pc_name_share; /* PC_NAMES_SHARED */
	struct profile_totals t;
	struct pc_table pc;
	struct line_store *lines;    /* NULL until a cubin's lines are read */
};

void pc_table__reset(struct pc_table *t);
void pc_table__fini(struct pc_table *t);
/* The report's lines of PC samples: the stall reasons of these kernels (string ids). */
void pc_table__report(const struct profile *p, FILE *f, const __u32 *kernels, size_t n);

__u32 profile__intern(struct profile *p, const char *s);
/* The string of id; NULL for id 0. */
const char *profile__str(const struct profile *p, __u32 id);
/* The same, "" for id 0. */
static inline const char *str_of(const struct profile *p, __u32 id)
{
	const char *s = profile__str(p, id);

	return s ? s : "";
}
/* A kernel name's key in proc_info.kernels. */
__u64 profile__kernel_hash(const char *name, size_t len);
int profile__proc(struct profile *p, __u32 pid, struct proc_info **ret_pi);
int profile__cubin_index(struct profile *p, __u64 crc, __u64 *ret_idx);

/* Where one cubin of a process defines a kernel (view.c): false when none, or two do. */
struct kernel_place {
	__u32 cubin;  /* its index among the profile's cubins */
	__u64 crc;
	__u32 sym;    /* the kernel's symbol index in it */
};
bool profile__kernel_place(const struct profile *p, __u32 pid, const char *name,
			   struct kernel_place *ret);

#endif
