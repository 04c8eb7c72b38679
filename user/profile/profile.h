/* SPDX-License-Identifier: MIT */
/*
 * The profile being built: joined samples aggregated by (process, stack,
 * launch API, activity, labels), the symbolized stacks, the text report,
 * and what writers of other formats read (profile__each_sample: the pprof
 * file is written by user/output/).
 */
#ifndef GP_PROFILE_H
#define GP_PROFILE_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

/*
 * Locations per sample: kernel, API, frames, markers, process root; a graph
 * replay's kernel has two stacks (its capture's takes at most half).
 */
#define GP_PROFILE_MAX_LOCS 320

struct profile;

/* Inner stacks a sample can have (profile_activity's under). */
#define PROFILE_UNDERS 2

/* The inner stack of a sample (profile_activity's under): its stack id, launch API, marker. */
struct profile_under {
	__u32 stack;           /* 0: none */
	const char *api;
	const char *marker;
};

/* What ran on the GPU, as the activity record says. */
struct profile_activity {
	const char *name;      /* kernel name (mangled) or a [memcpy ...] label */
	/*
	 * The caller's lasting id of name (0: none): a name met again by its
	 * id is not hashed and compared again (a kernel's mangled name runs to
	 * hundreds of bytes, an activity's). One id must name one string for
	 * the profile's life.
	 */
	__u32 name_id;
	__u64 ns;              /* duration */
	__u32 device, stream, graph_id;
	/*
	 * Stacks between the kernel and the sample's own, each after a marker
	 * frame, under[0] nearest the kernel: a CUDA-graph replay's kernel goes
	 * under the launch that captured its node ("[graph captured at]", the
	 * sample's stack the replay's); an autograd engine thread's launch goes
	 * under the call that began its backward pass ("[autograd thread for
	 * tid N]", the sample's stack that caller's); both, for a graph an
	 * engine thread replayed: capture, replay, caller. stack 0: none (and
	 * none after it).
	 */
	struct profile_under under[PROFILE_UNDERS];
};

/* One symbolized frame; strings are copied. */
struct profile_frame {
	const char *name;      /* function, or "lib+0xoff" when unknown */
	const char *file;      /* library, or the Python file */
	const char *build_id;  /* hex, may be "" */
	__u64 addr;            /* address inside file (ELF vaddr), 0 if unknown */
	__u32 line;            /* Python line, 0 if unknown */
};

struct profile_proc {
	__u32 pid;
	const char *comm;
	const char *cgroup;    /* NULL unless cgroups are labelled */
};

int profile__new(struct profile **ret_p);
void profile__destroy(struct profile *p);

/* Declares a process; repeated calls update comm/cgroup. */
int profile__set_proc(struct profile *p, const struct profile_proc *proc);
/*
 * Declares the symbolized frames (leaf first, the launch API excluded) of
 * stack_id, a caller-chosen id > 0. Once per id.
 */
int profile__set_stack(struct profile *p, __u32 stack_id, const struct profile_frame *frames,
		       __u32 n, bool truncated);
bool profile__has_stack(const struct profile *p, __u32 stack_id);

/* Adds GPU time. stack_id 0 = unattributed, with reason naming why. */
int profile__add(struct profile *p, __u32 pid, __u32 stack_id, const char *api,
		 const char *reason, const struct profile_activity *act);
/*
 * Adds a launch whose call left no GPU record (the process runs without
 * the shim, or the record was lost): one under launches/count, no GPU
 * time, its leaf `leaf` (NULL: GP_PROFILE_NO_RECORD), no device or stream
 * label. stack_id 0: the stack table was full.
 */
#define GP_PROFILE_NO_RECORD "[no GPU record]"
#define GP_PROFILE_BEFORE_RECORDING "[no GPU record: before the shim recorded]"
#define GP_PROFILE_NO_ACTIVITY "[no GPU record: CUPTI gave none]"
int profile__add_launch(struct profile *p, __u32 pid, __u32 stack_id, const char *api,
			const struct profile_under *under, const char *leaf);

/*
 * Declares that pid loaded the cubin elf (size bytes, hostile: read through
 * user/cubin) whose CRC is crc (nonzero): each kernel it defines by name
 * (a function symbol) gets, in the written profile, a location in a mapping
 * of that cubin, whose build id is the CRC in 16 lowercase hex digits. The
 * names are kept per process, bounded; a name two different cubins of one
 * process define is ambiguous and keeps no cubin. 0 or -errno (-EINVAL for
 * crc 0; the cubin_syms__parse errors, with the names read before the error
 * kept; -E2BIG when a bound dropped names).
 */
int profile__add_cubin(struct profile *p, __u32 pid, __u64 crc, const void *elf, size_t size);

struct profile_cubin_stats {
	__u64 cubins;            /* distinct CRCs held (profile__compact forgets some) */
	__u64 cubins_dropped;    /* CRCs not kept: the cubin table is full, or the process past its share */
	__u64 cubins_over_share; /* of those, refused to a process past its share of the table */
	__u64 cubins_bad;        /* cubins whose symbol tables could not be read in full */
	__u64 kernels;           /* (process, kernel name) pairs held */
	__u64 kernels_ambiguous; /* of those, names two cubins of one process define */
	__u64 kernels_dropped;   /* names not kept: a bound was hit */
};
void profile__cubin_stats(const struct profile *p, struct profile_cubin_stats *ret);

/*
 * What a writer of the profile (user/output/) reads: each sample with what
 * it names. Ids are keys a writer may cache by, stable while the profile
 * is unchanged; strings are the profile's, valid as long.
 */
struct profile_sample {
	__u32 pid;
	const char *comm;          /* NULL when unknown */
	const char *cgroup;        /* NULL unless labelled */
	__u32 kernel_id;           /* string id of the kernel name, or of a copy's label */
	const char *kernel;
	bool in_cubin;             /* exactly one cubin of the process defines the kernel: */
	__u32 cubin;               /* its index among the profile's cubins (a key), */
	__u64 cubin_crc;           /* its CRC, */
	__u32 cubin_sym;           /* the kernel's symbol index in it */
	__u32 api_id;              /* string id of the launch API */
	const char *api;
	__u32 reason_id;           /* string id of why it is unattributed (stack_id 0) */
	const char *reason;
	__u32 stack_id;            /* 0: unattributed */
	const __u32 *frames;       /* frame ids, leaf first; NULL when no stack is known */
	__u32 nframes;
	bool truncated;
	/*
	 * The inner stacks (profile_activity's under): each stack (leaf first)
	 * and its launch API go between the kernel and the sample's own
	 * frames, under[0] first, each followed by its marker.
	 */
	struct profile_sample_under {
		__u32 stack;           /* 0: none (and none after it) */
		__u32 api_id;          /* string id of its launch API */
		const char *api;
		__u32 marker_id;       /* string id of the marker */
		const char *marker;
		const __u32 *frames;   /* NULL when that stack is not named */
		__u32 nframes;
		bool truncated;
	} under[PROFILE_UNDERS];
	bool has_device;           /* false for a launch without a GPU record */
	__u32 device, stream, graph_id;
	__u64 ns, count;
};
/* fn for each sample with a count, in the order they were first added; stops at fn's error. */
int profile__each_sample(const struct profile *p,
			 int (*fn)(void *ctx, const struct profile_sample *s), void *ctx);
/* A frame id's frame (its strings the profile's, "" for none) and its file's string id. */
void profile__frame_of(const struct profile *p, __u32 frame_id, struct profile_frame *ret,
		       __u32 *ret_file_id);

/* A named stack's frame names into names[] (leaf first, at most max, the profile's strings): how many, 0 if unnamed. */
__u32 profile__stack_names(const struct profile *p, __u32 stack_id, const char **names, __u32 max);
/* A declared process's name, or NULL. */
const char *profile__proc_comm(const struct profile *p, __u32 pid);

/*
 * PC sampling (--pc-sampling; user/profile/pc.c): samples of warps'
 * program counters, by process, function (as CUPTI names it: mangled),
 * stall reason, cubin CRC and offset in the function. They are not per
 * launch: the writer shares a kernel's samples among its launch stacks by
 * their GPU time of that kernel (user/output/profile_pprof.c).
 */
struct profile_pc {
	__u32 pid;
	__u32 kernel_id;           /* string id of the function's name */
	const char *kernel;
	const char *stall;
	__u64 cubin_crc, offset, samples;
	bool in_cubin;             /* one cubin of the process defines the function: */
	__u32 cubin;               /* its index (profile_sample's), */
	__u64 crc;                 /* that cubin's CRC (the record's may differ), */
	__u32 cubin_sym;           /* and the function's symbol index in it */
	const char *file;          /* its source file (-lineinfo), NULL when unknown, */
	__u32 line;                /* and line */
};
/* The instruction is in its kernel's cubin: one defines it, and of the record's CRC. */
static inline bool profile_pc__placed(const struct profile_pc *pc)
{
	return pc->in_cubin && pc->crc == pc->cubin_crc;
}
/* The written profile has pc_samples (0 where none came). */
void profile__want_pc(struct profile *p);
bool profile__has_pc(const struct profile *p);
/* -E2BIG: past the table's bound, counted (profile__pc_dropped). */
int profile__add_pc(struct profile *p, __u32 pid, __u64 crc, const char *kernel, __u64 offset,
		    const char *stall, __u64 samples);
__u64 profile__pc_dropped(const struct profile *p);
/* Samples of instructions in no cubin the profile holds for their process (or of another CRC). */
__u64 profile__pc_unplaced(const struct profile *p);
/*
 * A cubin's source lines (-lineinfo), read once per CRC when PC sampling is
 * wanted (a no-op otherwise), bounded (profile_internal.h): a cubin not read
 * whole is counted (profile__lines_cut) and keeps only whole sequences; one
 * that the adding process's own bound stops is not kept at all, so that
 * another process may read it. Returns 0, or -ENOMEM.
 */
int profile__add_cubin_lines(struct profile *p, __u32 pid, __u64 crc, const void *elf, size_t size);
/* The file and line of the instruction at offset of the cubin's symbol sym; false when unknown. */
bool profile__line_of(const struct profile *p, __u64 crc, __u32 sym, __u64 offset,
		      const char **ret_file, __u32 *ret_line);
/* Cubins whose lines were not all kept; rows held. */
__u64 profile__lines_cut(const struct profile *p);
size_t profile__lines_held(const struct profile *p);
/* A stall reason's short name: CUPTI's without its smsp__pcsamp_warps_issue_stalled_ prefix. */
const char *profile__stall_short(const char *stall);
/* fn for each (process, function, stall, cubin, offset), in the order first added; stops at fn's error. */
int profile__each_pc(const struct profile *p, int (*fn)(void *ctx, const struct profile_pc *pc),
		     void *ctx);

/*
 * Written by user/output/profile_pprof.c, the room that writes pprof; its
 * comments (pprof's comment field: the duty cycle's windows), if any.
 */
int profile__write_pprof(const struct profile *p, const char *path, __u64 time_ns,
			 __u64 duration_ns, const char *const *comments, size_t nr_comments);
/* The report: top kernels by GPU time with their heaviest launch site. */
void profile__report(const struct profile *p, FILE *f, unsigned top);

struct profile_totals {
	__u64 samples, gpu_ns, activities, unattributed_ns, unattributed;
	__u64 launches_unrecorded; /* profile__add_launch calls */
	__u64 dropped;         /* additions refused by a bound */
};
void profile__totals(const struct profile *p, struct profile_totals *ret);
/* Forgets samples (continuous mode), keeps processes and stacks. */
void profile__reset_samples(struct profile *p);
/*
 * Continuous mode, after profile__reset_samples (-EBUSY before): keeps the
 * stacks remap names, renumbered (stack id i, 1 <= i <= n, becomes
 * remap[i]; 0 drops it), and the processes keep_pid() is true for, with the
 * frames, strings and cubins they use; frees the rest. On an error the
 * profile is unchanged.
 */
int profile__compact(struct profile *p, const __u32 *remap, size_t n,
		     bool (*keep_pid)(void *ctx, __u32 pid), void *ctx);

/* What the profile holds, for the loader's tables line. */
struct profile_sizes {
	__u64 stacks, frames, strings, procs, cubins;
};
void profile__sizes(const struct profile *p, struct profile_sizes *ret);

#endif
