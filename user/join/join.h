/* SPDX-License-Identifier: MIT */
/*
 * The join of the two streams (DESIGN.md, Correlation): launch events from
 * the BPF uprobes and launch API records from CUPTI describe the same calls
 * on the same thread in the same order. They are merged per (process,
 * thread, class), each pair checked against time; the API record's
 * correlation id then names the activity records (kernels, copies) whose
 * GPU time belongs to the launch's stack.
 *
 * Either side may arrive first or late. Unmatched entries wait in bounded
 * tables and are resolved when the other side has provably been read (the
 * BPF watermark), or evicted after a horizon. Nothing is dropped silently:
 * every activity is emitted exactly once, joined or with the reason it
 * could not be; every launch event whose call left no API record (none
 * came, the process had no shim, or the thread's queue was at its bound
 * and the event was the oldest) is handed to the unrecorded callback once.
 */
#ifndef GP_JOIN_H
#define GP_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

enum join_class {
	JOIN_CLASS_LAUNCH = 0, /* kernel launches and graph launches */
	JOIN_CLASS_COPY = 1,   /* memcpy and memset calls */
	JOIN_CLASS_NODE = 2,   /* graph nodes added by the explicit API: no activity of their own */
	JOIN_CLASS_MAX,
};

enum join_domain {
	JOIN_DOMAIN_DRIVER = 1,  /* record stamped inside the probed call */
	JOIN_DOMAIN_RUNTIME = 2, /* record brackets the probed driver call */
};

enum join_reason {
	JOIN_OK = 0,
	JOIN_NO_LAUNCH_EVENT,  /* API record with no uprobe event */
	JOIN_NO_API_RECORD,    /* activity whose API record never came */
	JOIN_BEFORE_ATTACH,    /* launched before the loader attached */
	JOIN_AT_ATTACH,        /* entered before the attach, or its event lost: see join.c */
	JOIN_TABLE_FULL,       /* a bounded table overflowed */
	JOIN_OUTSIDE,          /* launched outside the profile's windows: never emitted */
	JOIN_REASON_MAX,
};

/* A uprobe event; `site` is the caller's handle for its stack. */
struct join_launch {
	__u32 pid, tid;        /* host ids */
	__u64 ts;              /* CLOCK_MONOTONIC */
	__u32 probe;           /* enum gp_probe */
	__u32 cls;             /* enum join_class */
	__u64 site;
	bool single;           /* at most one activity is due: a kernel launch (not a graph's), a
				  copy or memset (not a batch) */
	__u64 shape;           /* a kernel launch's threads: grid << 32 | block (join__shape); 0: none */
};

/* An API record, its tid already translated to the host's. */
struct join_api {
	__u32 pid, tid;
	__u64 start, end;      /* CLOCK_MONOTONIC */
	__u64 corr;            /* epoch-widened correlation id */
	__u32 domain;          /* enum join_domain */
	__u32 cls;             /* enum join_class */
	bool failed;           /* the call returned an error: no activity is due */
};

/* What ran: tells which of the calls sharing one correlation id it is of (join_chain.c). */
enum join_act_kind {
	JOIN_ACT_KERNEL = 0,   /* a kernel of a kernel launch */
	JOIN_ACT_COPY,         /* a copy or memset of a copy call */
	JOIN_ACT_GRAPH,        /* anything a graph ran (its record names a graph) */
};

/* An activity (kernel, copy) record; the payload is the caller's. */
struct join_activity {
	__u32 pid;
	__u64 corr;
	__u64 start, end;
	__u32 aux[5];          /* caller data, carried as is to the sample */
	__u32 kind;            /* enum join_act_kind */
	__u64 shape;           /* a kernel's threads, as join_launch's; 0: unknown */
};

/* A kernel's shape from its grid's and block's thread counts (each saturated at 32 bits); 0: unknown. */
static inline __u64 join__shape(__u32 grid, __u32 block)
{
	return grid && block ? (__u64)grid << 32 | block : 0;
}

struct join_sample {
	const struct join_activity *act;
	__u32 pid, tid;        /* tid 0 when unknown */
	__u64 site;            /* valid when reason == JOIN_OK */
	__u32 probe;           /* valid when reason == JOIN_OK */
	__u64 call_ts;         /* the paired launch event's time; 0: none */
	enum join_reason reason;
};

typedef void (*join_emit_fn)(void *ctx, const struct join_sample *s);

/* A launch event no API record matched. */
struct join_unrecorded {
	__u32 pid, tid;
	__u64 site;
	__u32 probe;
	bool before_recording; /* made before the shim recorded (join__recording) */
	bool no_activity;      /* its API record came, and no activity while the shim recorded */
};

typedef void (*join_unrecorded_fn)(void *ctx, const struct join_unrecorded *u);

/* A launch event paired with its API record. */
struct join_matched {
	__u32 pid, tid;
	__u64 start, end;      /* the API record's, CLOCK_MONOTONIC */
	__u64 site;
	__u32 probe;
	__u64 corr;            /* the API record's: its activities carry it */
};
/* Returns true when the call made a CUDA-graph node (stream capture): no activity is due. */
typedef bool (*join_matched_fn)(void *ctx, const struct join_matched *m);

struct join_opts {
	__u64 horizon_ns;      /* how long an unmatched entry may wait */
	size_t max_queue;      /* launch events or API records per thread */
	size_t max_corr;       /* correlation entries per process */
	size_t max_pending;    /* activities waiting for their API record, per process */
	size_t max_procs;
	size_t max_threads;    /* thread queues (tid and class) per process */
	size_t max_proc_apis;  /* API records queued per process, all its threads */
	size_t max_proc_launches; /* launch events queued per process, all its threads */
	size_t max_disorder;   /* steps taken putting a process's out-of-order API records in
				  place, per join__advance: past it, a record goes in where it came */
	/*
	 * Bytes the queues and tables may take, all processes together (0:
	 * JOIN_BYTES_DEFAULT). Past it, a process holding more than its share
	 * (max_bytes over the processes held) takes no more memory: what it
	 * sends then is refused as at its other bounds (budget_refused), and
	 * the others keep theirs. The join holds at most about twice this.
	 */
	size_t max_bytes;
};

#define JOIN_BYTES_DEFAULT (512ull << 20)

struct join_counters {
	__u64 launches_matched;
	__u64 launches_without_record; /* events whose API record never came */
	__u64 launches_before_recording; /* events made before the shim recorded: no record was due */
	__u64 launches_without_activity; /* paired calls, made while the shim recorded, that made no
					    graph node, did not fail, and whose activity never came:
					    CUPTI lost it */
	__u64 launches_outside;        /* events, and API records, of calls outside the windows: left out */
	__u64 activities_outside;      /* their activities, left out */
	__u64 api_without_launch;      /* records whose event never came */
	__u64 api_before_attach;
	__u64 api_at_attach;           /* records under JOIN_AT_ATTACH */
	__u64 activities_joined;
	__u64 activities_unattributed[JOIN_REASON_MAX];
	__u64 queue_full;              /* events or records refused: no thread slot (at most max_threads a
					  process), or records at a queue's or the process's bound */
	__u64 api_disordered;          /* API records left where they came: the process's budget of
					  steps to order them was spent (a hostile ring) */
	__u64 corr_evicted;
	__u64 corr_reused;             /* calls (matched, or records left out) whose correlation id
					  a held call already had: its activity goes to one of them,
					  the other is left without (CUPTI gives each call its own id) */
	__u64 activities_on_reused;    /* activities that went to such a call: their id is the
					  reused one too, so which call was theirs is a guess */
	__u64 activities_waited;       /* activities that came before their call was matched, and
					  waited for it (not a loss: a cost, a few more lookups) */
	__u64 budget_refused;          /* allocations refused: the join past max_bytes, the process past
					  its share (what they were for counted at its own bound too) */
};

/*
 * The first JOIN_REUSES_KEPT correlation ids two held calls had
 * (corr_reused): both calls, for the loader's -v log.
 */
#define JOIN_REUSES_KEPT 8
struct join_reuse {
	__u64 corr;
	__u64 ts[2];      /* the launch events' times (0: a call without one), held first */
	__u32 tid[2], reason[2], domain[2];
	bool seen;        /* the held call had its activity already */
};

struct join;

int join__new(const struct join_opts *opts, join_emit_fn emit, void *ctx, struct join **ret_j);
void join__destroy(struct join *j);
/* Where launch events without an API record go (default: only counted). */
void join__on_unrecorded(struct join *j, join_unrecorded_fn fn, void *ctx);
/*
 * Called at each pairing of a launch event with its API record (default:
 * none): what the call did besides its activities (a node made by stream
 * capture) can take its site.
 */
void join__on_matched(struct join *j, join_matched_fn fn, void *ctx);
/* Records when the loader attached to pid: earlier calls cannot be matched. */
int join__attach(struct join *j, __u32 pid, __u64 attach_ts);
/*
 * pid's shim recorded its calls' activity from on_ns to off_ns (shim/gp_abi.h,
 * "no reader, no records"; off_ns 0: it records now): a launch made while it
 * did not that no record takes is counted launches_before_recording and
 * labelled so, not lost. The last JOIN_RECORD_SPANS spans are kept (the duty
 * cycle switches it at each window). on_ns UINT64_MAX: never on yet; 0 and 0
 * (the default): always on. Told at each look (now_ns: when it was taken),
 * so that a span whose end came unseen (the shim went off and on again
 * between two looks) is known only up to the last look that saw it on: a
 * launch after that is labelled, not called lost.
 */
#define JOIN_RECORD_SPANS 16
int join__recording(struct join *j, __u32 pid, __u64 on_ns, __u64 off_ns, __u64 now_ns);
/*
 * The windows the profile covers (the duty cycle; a stop ends the last):
 * join__pause ends the open window at ts, join__resume opens another from
 * ts (by default one window covers all time). Launch events and API records
 * of calls made outside every window are left out, and so are their
 * activities (counted launches_outside, activities_outside); what was
 * launched inside one still joins its records as they arrive, after it
 * closed. A call at an edge (its API record and its event on either side,
 * or an event within JOIN_EDGE_NS of a close whose record never came, or a
 * record within JOIN_EDGE_NS of an opening whose event never came) is left
 * out the same way, not counted lost. The last JOIN_WINDOWS_MAX windows are
 * kept: anything older is outside.
 */
void join__pause(struct join *j, __u64 ts);
void join__resume(struct join *j, __u64 ts);
/* The profile ends at stop_ns: join__pause, for good. */
void join__stop(struct join *j, __u64 stop_ns);
#define JOIN_WINDOWS_MAX 32
/*
 * How far from an edge a one-sided call may still be the edge's: a thread
 * that entered the driver just before the probes were in place can be held
 * (the probes' own page faults, the scheduler) before CUPTI stamps its API
 * record: 1.1 to 1.5 ms after the opening, seen on a loaded 2-core machine
 * with windows opening five times a second (tests/bpf/e2e_duty_many.sh).
 * Only calls missing one side are judged by it; a paired call is joined.
 */
#define JOIN_EDGE_NS 20000000ull
void join__add_launch(struct join *j, const struct join_launch *l);
void join__add_api(struct join *j, const struct join_api *a);
void join__add_activity(struct join *j, const struct join_activity *act);
/*
 * Matches what can be matched. bpf_watermark: every launch event with a
 * timestamp below it has been handed over; now: the loader's clock, for the
 * horizon.
 */
void join__advance(struct join *j, __u64 bpf_watermark, __u64 now);
/*
 * Matches what can be matched of pid only, as join__advance does, and
 * expires nothing: called between a read's API records and its
 * activities, it lets each activity find its call already matched (one
 * lookup) rather than wait for it (activities_waited: several). Spends
 * pid's budget of steps left for this tick (max_disorder), not a new one.
 * A graph launch, and the calls of its thread after it, are left for
 * join__advance: another thread's capture of its nodes pairs first there.
 */
void join__advance_pid(struct join *j, __u32 pid, __u64 bpf_watermark, __u64 now);
/* Resolves everything of pid (it exited, or the run ends). */
void join__finish_pid(struct join *j, __u32 pid);
void join__finish_all(struct join *j);
void join__counters(const struct join *j, struct join_counters *ret);
/* The correlation ids kept of those two held calls had, and how many (at most JOIN_REUSES_KEPT). */
size_t join__reuses(const struct join *j, const struct join_reuse **ret);
/* Bytes the queues and tables of every process take now (the budget's ledger). */
size_t join__bytes(const struct join *j);
/*
 * Calls fn on the site of every launch the join still holds (queued, or in
 * a correlation entry) and stores what it returns: the caller's stack table
 * can be renumbered under the join.
 */
void join__visit_sites(struct join *j, __u64 (*fn)(void *ctx, __u64 site), void *ctx);

const char *join__reason_name(enum join_reason r);

#endif
