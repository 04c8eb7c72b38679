/* SPDX-License-Identifier: MIT */
/*
 * The loader's session state, shared by the files of user/session that make
 * up its run loop: session.c and the parts of a tick declared below. Not an
 * interface: session.h is. report.c does not see it: it formats the
 * snapshots that snapshot.c takes (report.h).
 */
#ifndef GP_SESSION_SESSION_INTERNAL_H
#define GP_SESSION_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include "user/util/clock.h"
#include "user/session/session.h"
#include "user/session/launcher.h"
#include "user/session/target.h"
#include "user/cubin/crc.h"
#include "user/session/stacks.h"
#include "user/session/stack_table.h"
#include "user/session/stack_cache.h"
#include "user/ingest/ring_watch.h"
#include "user/probe/copy_hint.h"
#include "user/ingest/event_pump.h"
#include "user/probe/launch_probe.h"
#include "user/join/join.h"
#include "user/join/graph_nodes.h"
#include "user/join/autograd_callers.h"
#include "user/profile/profile.h"
#include "user/shm/shm_reader.h"
#include "user/util/blobtab.h"
#include "user/util/counters.h"
#include "user/util/key_holds.h"
#include "user/util/mem_share.h"
#include "user/session/report.h"
#include "user/session/duty.h"
#include "user/session/node_watch.h"

/*
 * The names and line tables of every process's code objects, together
 * (each process's own bound: PYCODE_CACHE_BYTES): past it, a process over
 * its share reads its objects again rather than hold more (mem_share.h).
 */
#define PY_SHARE_BYTES (256ull << 20)
/*
 * Every process's CUDA-graph nodes, together, as graph_nodes.h counts them
 * (each process's own bounds: about 40 MiB): past it, a process over its
 * share holds no new node.
 */
#define GRAPH_SHARE_BYTES (256ull << 20)
/*
 * The kernel names every process's records name (s->names, kept for the
 * run): NAMES_ENTRIES names and NAMES_BYTES bytes. Each new name counts its
 * bytes and s->name_cost more (the table's bytes over its entries: 256)
 * against half of NAMES_BYTES, shared (mem_share.h) by tenants, the
 * processes of one cgroup together (s->name_holds): past it, a tenant over
 * its share names no new kernel, and the other half is the others'. A
 * tenant's names stay counted for the run, as they stay in the table: its
 * processes started one after another fill one share, not one each.
 */
#define NAMES_ENTRIES (1u << 18)
#define NAMES_BYTES (64ull << 20)
/* A process's PC stall reasons named, at most; its indexes past them share one name. */
#define PC_STALLS_NAMED 256u
/* Code objects checked against reuse at once, at most (pycode_cache__check): a few bounded calls. */
#define PY_CHECK_MAX 1024
/* ... and at most this often per process. */
#define PY_CHECK_NS (100 * 1000 * 1000ull)
#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
/* Shim records read from a ring at once (struct session's recs). */
#define SESSION_READ_BATCH 4096

#define TIMED(s, st, stmt) do {                           \
		__u64 t0_ = now_ns();                     \
		stmt;                                     \
		(s)->stage_ns[st] += now_ns() - t0_;      \
	} while (0)
/* stmt, run while stage outer is timed around it, counted in inner instead. */
#define TIMED_WITHIN(s, outer, inner, stmt) do {          \
		__u64 t0_ = now_ns(), d_;                 \
		stmt;                                     \
		d_ = now_ns() - t0_;                      \
		(s)->stage_ns[inner] += d_;               \
		(s)->stage_ns[outer] -= d_;               \
	} while (0)

/* Events committed after we read the clock may still be in flight. */
#define WATERMARK_SLACK_NS (5 * NS_PER_MS)

/* Windows a profile lists in its comment, at most (the rest counted). */
#define PROFILE_WINDOWS_MAX 64

enum duty_state {
	DUTY_OFF = 0,  /* between windows: probes paused, rings asked for no records */
	DUTY_ARMING,   /* rings asked for records; the probes follow once they record */
	DUTY_ON,       /* in a window */
};

struct session {
	const struct gp_opts *o;
	/* The duty cycle (duty_side.c): always DUTY_ON without one. */
	bool duty_cycled;
	struct duty duty;
	enum duty_state duty_state;
	__u64 duty_since;           /* when duty_state was entered (the window's start, in DUTY_ON) */
	__u64 duty_on_ns;           /* time in windows so far, closed ones */
	__u64 duty_windows;         /* windows opened so far */
	__u64 duty_unready;         /* of them, opened with a shim not yet recording (duty_side.c) */
	__u64 duty_unwaited;        /* targets waited for no more: not recording at 3 openings */
	bool duty_due;              /* DUTY_ARMING: the planned window has started */
	/* The current profile's windows [from, to) (to 0: open), for its comment. */
	__u64 win_from[PROFILE_WINDOWS_MAX], win_to[PROFILE_WINDOWS_MAX];
	unsigned nr_win, win_more;
	__u64 stop_ns;              /* the profile's end, once asked to stop with live rings (0: not yet) */
	struct bounded *bounded;    /* the loader's one: calls a target could hold (bounded.h) */
	struct mem_share py_share;  /* what every process's code-object cache holds, together */
	struct mem_share graph_share; /* what every process's graph nodes hold, together */
	struct mem_share names_share; /* the kernel names every process interned, together */
	struct key_holds name_holds; /* each tenant's (cgroup's) hold of names_share */
	size_t name_cost;           /* what a new name costs there beyond its bytes */
	struct launch_probe *lp;
	struct join *join;
	struct profile *prof;
	struct trace *trace;        /* --trace: the timeline kept (NULL: none) */
	struct stack_table stacks;  /* raw stacks (pid, frames) -> stack id */
	struct stack_cache *cache;  /* launch keys -> stack ids (NULL: no cache) */
	struct ring_watch rw;       /* shim rings held as they are made */
	struct event_pump pump;     /* launch events, out of the BPF ring as they come */
	struct copy_hints hints;    /* per-thread stack copy sizes (cfi) */
	struct blobtab *names;      /* activity names -> id */
	struct target_table tt;
	struct crc_engine *crc;
	struct launcher child;      /* -- COMMAND */
	bool have_child;
	__u64 start_ns, last_write_ns, next_scan_ns;
	__u64 probes_ns;            /* when the initial probes were in place */
	__u64 start_cpu_ns;         /* the process's CPU when the start stage ended */
	__u64 start_realtime_ns;
	__u64 last_stamp_s;         /* --interval: the second in the last name... */
	unsigned int same_stamp;    /* ...and how many names before used it too */
	/* losses the report line prints */
	__u64 stacks_dropped, names_dropped, records_unknown, modules_settled;
	__u64 targets_full;        /* events of processes not followed: the target table was full */
	__u64 py_looks;            /* looks for a target's CPython (each reads its maps) */
	/* PC sampling (--pc-sampling): what the shims' records said */
	__u64 pc_samples;          /* samples in the records read */
	__u64 pc_not_issued;       /* samples of _not_issued reasons: counted again, not added */
	__u64 pc_total, pc_dropped, pc_non_user, pc_hw_full; /* CUPTI's figures */
	__u64 pc_lost;             /* instructions a shim could not hand over (its ring or strings full) */
	__u64 before_window;        /* activities that ended before we attached */
	/* CUDA graphs: replayed kernels under their capture (or not, and why) */
	__u64 graph_activities, graph_under_capture, graph_node_unknown, graph_capture_unknown;
	__u64 graph_replay_unattributed;
	struct graph_nodes_stats graphs_gone; /* of targets removed */
	unsigned graph_targets;     /* targets with graph nodes: calls pair with nodes */
	/* Backward passes: engine threads' launches under their pass's caller (or not) */
	__u64 autograd_launches, autograd_under_caller, autograd_caller_unknown, autograd_own_thread;
	__u64 autograd_after_node; /* of autograd_launches: a pass's post-processing (GP_EV_F_AG_AFTER) */
	__u64 autograd_engines;     /* targets whose autograd engine is probed */
	__u64 autograd_no_slot;     /* targets whose engine found no probe slot */
	struct node_watch node_watch; /* whether the node probe is needed (node_watch.h) */
	__u64 node_look_ns;         /* its next look */
	bool engine_new;            /* a target's engine probed since its last look */
	struct autograd_callers_stats autograd_gone; /* of targets removed */
	char autograd_marker[48];   /* scratch of session__autograd_under */
	__u64 unattributed_written; /* --interval: unattributed in profiles already written */
	__u64 shm_ctr_gone[GP_CTR_MAX]; /* counters of targets already removed */
	struct shm_reader_stats reader_gone;
	struct raw_stack raw;           /* scratch of on_launch_event */
	struct stack_walk_info walk_info; /* and what its walk found besides */
	struct resolved_stack *resolved; /* scratch of resolve_stack (large) */
	struct gp_record *recs;         /* scratch of read_records: SESSION_READ_BATCH of them */
	struct stack_stats stack_stats;
	__u32 *pending;                /* stack ids not named yet (defer_stack) */
	size_t npending, cap_pending;
	__u64 events_bad;              /* BPF events whose parts overran their size */
	__u64 cache_lost;              /* hits whose cache entry was gone (never expected) */
	__u64 maps_changed;            /* a target's mappings changed: new space, new epoch */
	__u64 py_checks;               /* checks of a target's code objects against reuse */
	__u64 py_replaced;             /* Python code objects found replaced at their address */
	__u64 cache_other_state;       /* misses not learnt: made with the shim off (key_state.h) */
	uint64_t *py_codes;            /* the last check's replaced ones, sorted */
	size_t npy_codes;
	__u64 rings_missed;            /* shim rings seen made and gone before we held them */
	__u64 stage_ns[STAGE_MAX];     /* where the loader's time goes (loader: line) */
	__u64 unwind_ns;               /* of STAGE_EVENTS: the stack walks */
	__u64 settle_cpu_ns;           /* of STAGE_SETTLE: CPU (the rest waits on the CRC helper) */
	__u64 copied_bytes, copied_events; /* stack copies received (cfi) */
	__u64 events_seen;             /* launch events handled */
	__u64 events_watermark;        /* every launch event before it is handed to the join (the
					  last full drain's start, less WATERMARK_SLACK_NS); 0: none */
	__u64 quiet_events, quiet_since_ns; /* events_seen when the last quiet spell began */
	bool trimmed;                  /* the heap was trimmed in this quiet spell */
	size_t peak_sym_bytes, peak_cfi_bytes; /* symbol and CFI tables, most held at a tick */
	/* What hostile or overloaded targets cost them (DESIGN.md invariants 4, 5, 8). */
	__u64 shim_visits_cut;         /* ring visits that stopped at a bound, records left */
	__u64 exit_answers;            /* rings read between ticks to answer an exit (answer_exits) */
	__u64 pc_unasked;              /* PC sampling records from a target, without --pc-sampling: left out */
	bool shim_more;                /* this tick, an exited target had records or cubins left */
	__u64 records_left_at_exit;    /* records of exited targets never read: bounds ran out */
	__u64 cubin_bytes_left_at_exit; /* likewise, cubin bytes */
	struct cubin_queue_stats cubins_gone; /* the settler's counters of targets removed */
	bool said_not_driver, said_no_slot, said_remote; /* a libcuda file refused: said once per reason */
};

static inline __u64 now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* CPU ns the loader's process has used, all threads. */
static inline __u64 process_cpu_ns(void)
{
	return clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

/* CPU ns the calling thread has used. */
static inline __u64 thread_cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/*
 * The files of the run loop, each a part of a tick. Calls go one way only,
 * no file calls back into one that calls it: session.c calls them all;
 * bpf_side.c calls follow.c and launch_stack.c, shim_side.c calls
 * follow.c; those and window.c call naming.c; follow.c and window.c call
 * snapshot.c, which calls report.c.
 */

/* follow.c: pid's target, met now if new (NULL: no memory, or the table is full). */
struct target *session__target(struct session *s, pid_t pid);
/* Looks for CPython in t (retried each tick until it is up, or known absent). */
void session__python_setup(struct session *s, struct target *t, __u64 now);
/* Hands the rings the watch thread held to their targets. */
void session__take_held_rings(struct session *s);
/*
 * The libcuda files t maps probed, those no scan has met yet (a file is
 * attached once, for every process mapping it); t's attach time moves on
 * when one was now.
 */
void session__probe_libcuda(struct session *s, struct target *t);
/* A libcuda file a scan refused (ref), said once per reason. */
struct libcuda_refusal;
void session__say_refusal(struct session *s, const struct libcuda_refusal *ref);
/* t is gone: its stacks named, its counters kept, every trace of it dropped. */
void session__retire_target(struct session *s, struct target *t);

/* naming.c: t's name and cgroup, given to the profile. */
int session__declare_proc(struct session *s, struct target *t);
/*
 * Stacks met for the first time are named later (their code objects read
 * now); the deferred ones of pid (0: of every process) named.
 */
void session__defer_stack(struct session *s, struct target *t, __u32 stack_id,
			  const struct raw_stack *raw);
void session__resolve_pending(struct session *s, pid_t pid);

/* bpf_side.c: every launch event queued now, each made a launch for the join, timed as STAGE_EVENTS. */
int session__drain(struct session *s);
/* Every launch event committed to the BPF ring before the call, handled. */
int session__drain_events(struct session *s);

/* shim_side.c: t's ring opened when it can be (0), -errno while not. */
int session__open_shm(struct session *s, struct target *t, __u64 now);
/* One bounded visit to t's ring; true when it left records or cubins for the next. */
bool session__read_target(struct session *s, struct target *t, __u64 now);
/* Cubin bytes t's shim published and the loader has not settled yet. */
__u64 session__cubins_left(struct target *t);

/* window.c: the join's callbacks (ctx the session). */
void session__on_sample(void *ctx, const struct join_sample *js);
void session__on_unrecorded(void *ctx, const struct join_unrecorded *u);
bool session__on_matched(void *ctx, const struct join_matched *m);
/* Launch e taught the stack cache: in which recording state of t's shim (shim_side.c). */
void session__note_key_state(struct target *t, const struct gp_launch_event *e);
/*
 * Whether e's key may be learnt in its process's recording state now
 * (key_state.h); the state looked at first, where it was never seen.
 */
bool session__may_learn_key(struct session *s, struct target *t, const struct gp_launch_event *e);
/* The timeline (trace_side.c): a paired launch call, an activity, and the file at the end. */
void session__trace_launch(struct session *s, const struct join_matched *m);
void session__trace_activity(struct session *s, const struct join_sample *js);
int session__write_trace(struct session *s);
/* --interval: after a window is written, forgets what no later one needs. */
void session__forget_window(struct session *s);
/*
 * --interval: the window ending now written (what waits named first) to
 * the output's name stamped with the time; its samples then forgotten.
 */
void session__write_window(struct session *s, __u64 now);
/*
 * The last profile (the run's, or its last window's), its path in path;
 * -errno (said) when it could not be written.
 */
int session__write_last(struct session *s, char *path, size_t len);

/*
 * A launch's site, the join's handle for whose launch it was: its stack id,
 * and in the high half the autograd caller it ran for (its target's
 * autograd_callers handle; 0: none).
 */
static inline __u64 site__make(__u32 stack, __u32 caller)
{
	return (__u64)caller << 32 | stack;
}

static inline __u32 site__stack(__u64 site)
{
	return (__u32)site;
}

static inline __u32 site__caller(__u64 site)
{
	return (__u32)(site >> 32);
}

/*
 * duty_side.c: the duty cycle (duty.h) applied: probes paused and resumed,
 * rings asked for records or not, the join's windows. Set up after the
 * probes are open and before any file is attached; stepped at each tick.
 */
void session__duty_setup(struct session *s, __u64 now);
void session__duty_tick(struct session *s, __u64 now);
/* Whether the rings are to record now (a window, or one about to open). */
bool session__rings_wanted(const struct session *s);
/* The windows a profile ending at end covered, then its list restarted (--interval). */
void session__duty_profile_done(struct session *s, __u64 end);
/* Time in windows within [from, to) of the current profile's. */
__u64 session__duty_on_in(const struct session *s, __u64 from, __u64 to);
/*
 * The comments of a profile covering [from, to): the duty cycle and each
 * window, up to max lines of 96 bytes; how many (0 without a duty cycle).
 */
size_t session__duty_comments(const struct session *s, __u64 from, __u64 to, char (*lines)[96],
			      size_t max);
/* The report's duty line: windows, time in them, how to scale (nothing without a duty cycle). */
void session__duty_line(const struct session *s, FILE *f);

/* autograd.c: backward passes' callers (docs/ARCHITECTURE.md, Backward passes). */
void session__autograd_setup(struct session *s, struct target *t);
/* At a first launch that came after the first driver call: the looks for libtorch begin again. */
void session__autograd_relook(struct session *s, struct target *t);
/* Each scan, for a target that called the driver: the looks, and one now and then after them. */
void session__autograd_scan(struct session *s, struct target *t);
/* The node probe taken away once threads take nodes at known calls only, or put back (node_watch.h). */
void session__watch_nodes(struct session *s, __u64 now);
void session__autograd_begin(struct session *s, struct target *t, const struct gp_launch_event *e,
			     __u32 stack_id);
__u64 session__autograd_site(struct session *s, struct target *t, const struct gp_launch_event *e,
			     __u32 stack_id);
bool session__autograd_under(struct session *s, __u32 pid, __u64 site, __u32 *ret_stack,
			     struct profile_under *ret_under);

/* launch_stack.c: what a launch says of its target; its stack id (0: none could be kept). */
void launch_stack__follow_target(struct session *s, struct target *t, const struct gp_launch_event *e);
__u32 launch_stack__of(struct session *s, struct target *t, const struct gp_launch_event *e,
		       size_t size);

/*
 * snapshot.c: the session's figures at one moment, for the report: every
 * counter in the registry, in the order the counters: line prints them...
 */
void session__counters(struct session *s, struct counters *ret);
/* ...what the loader cost (-errno: its own usage could not be read)... */
int session__loader_costs(struct session *s, struct loader_costs *ret);
/* ...and what its tables hold (--interval). */
void session__table_sizes(struct session *s, struct table_sizes *ret);
/* Each taken and printed as its report line (report.h). */
/* all: every counter (-v, GPUPROBE_COUNTERS=all); else those that moved. */
void session__counters_line(struct session *s, FILE *f, bool all);
void session__verdict_line(struct session *s, FILE *f);
void session__loader_line(struct session *s, FILE *f);
void session__tables_line(struct session *s, FILE *f);
/* Notes what the symbol and CFI tables hold now, for the loader line's peaks. */
void session__note_tables(struct session *s);
/* t is about to go: what its shim and its ring's reader counted is kept. */
void session__keep_counters_of(struct session *s, struct target *t);

#endif /* GP_SESSION_SESSION_INTERNAL_H */
