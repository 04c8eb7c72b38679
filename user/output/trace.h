/* SPDX-License-Identifier: MIT */
/*
 * The timeline (--trace FILE): trace-event JSON, the format Perfetto,
 * chrome://tracing and speedscope open. Each launch call is a slice on its
 * thread's track, inside slices of its stack (root outermost), so a viewer
 * shows it as a flame chart; each kernel, copy and memset is a slice on a
 * track of its own process's GPU (device and stream); a flow arrow goes
 * from each launch call to the activities it made.
 *
 * What a run adds is kept in memory, bounded (TRACE_MAX_LAUNCHES,
 * TRACE_MAX_ACTIVITIES: what comes after is counted, not kept), and
 * written once at the end, whole or not at all. Names and stacks are asked
 * for then, through the callbacks, so what is kept per call is a few words.
 */
#ifndef GP_OUTPUT_TRACE_H
#define GP_OUTPUT_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define TRACE_MAX_LAUNCHES 20000u
#define TRACE_MAX_ACTIVITIES 100000u
/* Frames of a launch's stack drawn, at most (the leaf's side kept). */
#define TRACE_MAX_FRAMES 96u

struct trace;

/* What the writer asks for at the end: every string returned lives until trace__write returns. */
struct trace_names {
	void *ctx;
	/* An activity's name (a kernel's mangled name, "[memcpy HtoD]"...), by the id it was added with. */
	const char *(*activity)(void *ctx, __u32 name_id);
	/* A launch API's name, by the probe id it was added with. */
	const char *(*api)(void *ctx, __u32 probe);
	/* A stack's frames into names[], leaf first, at most max: how many (0: not named). */
	__u32 (*frames)(void *ctx, __u32 stack, const char **names, __u32 max);
	/* A process's name ("python3"), or NULL. */
	const char *(*process)(void *ctx, __u32 pid);
};

struct trace_stats {
	__u64 launches, activities;                 /* kept */
	__u64 launches_dropped, activities_dropped; /* over the bounds */
};

int trace__new(struct trace **ret);
void trace__destroy(struct trace *t);

/* A launch call (its API record's start and end), its stack and the correlation that names its activities. */
void trace__launch(struct trace *t, __u32 pid, __u32 tid, __u64 start, __u64 end, __u32 stack,
		   __u32 probe, __u64 corr);
/* A GPU activity and the correlation of the call that made it (joined: that call is known). */
void trace__activity(struct trace *t, __u32 pid, __u64 start, __u64 end, __u32 name_id,
		     __u32 device, __u32 stream, __u64 corr, bool joined);

/* Writes the timeline to path (a temporary file renamed over it): 0 or -errno. */
int trace__write(const struct trace *t, const char *path, const struct trace_names *names);
void trace__stats(const struct trace *t, struct trace_stats *ret);

#endif /* GP_OUTPUT_TRACE_H */
