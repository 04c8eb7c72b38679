/* SPDX-License-Identifier: MIT */
/*
 * What the join's files share (join.c the engine, join_mem.c its memory
 * ledger, join_chain.c the pairing of calls that share a correlation id):
 * its tables and the few functions one file calls in another. Nothing
 * outside user/join/ includes this; join.h is the join's interface.
 */
#ifndef GP_JOIN_INTERNAL_H
#define GP_JOIN_INTERNAL_H

#include <stdbool.h>
#include "user/join/join.h"
#include "user/join/corr_index.h"
#include "user/util/fifo.h"
#include "user/util/mem_share.h"
#include "user/util/u64map.h"

struct jlaunch {
	__u64 ts, site, shape;
	__u32 probe;
	bool single;
};

struct japi {
	__u64 start, end, corr;
	__u32 domain;
	bool failed;
};

struct jthread {
	__u32 tid, cls;
	__u64 attach_seen;    /* the attach_ts after which this queue had a record */
	struct fifo launches; /* struct jlaunch, in ts order */
	struct fifo apis;     /* struct japi, in start order */
};

struct jcorr {
	__u64 corr, site, added;
	__u64 ts;       /* the launch event's, for a matched call (0: none) */
	__u32 tid, probe, reason;
	__u32 domain;   /* its API record's (enum join_domain) */
	bool launch;    /* a matched launch or copy, not a node added */
	bool none_due;  /* the call made a graph node, or failed: no activity is due */
	bool seen;      /* an activity of it came */
	bool reused;    /* its correlation id was a held call's too (corr_reused) */
	__u8 takes;     /* the activities it may take where calls share its id (enum chain_takes) */
	bool done;      /* it took what it may take (jcorr__give): one kernel, one copy */
	__u64 done_ns;  /* when it was done, on the join's clock (corr_spent) */
	__u64 shape;    /* a kernel launch's (join_launch) */
	__u32 first_node; /* in a chain, a graph launch: the node of the first activity it took */
};

/* What a call may take where calls share one id (join_chain.c): by its kind. */
enum chain_takes {
	TAKES_ALL = 0,     /* a record without its launch, or left out: whatever waits on its id */
	TAKES_NOTHING,     /* it adds a graph node */
	TAKES_ONE_KERNEL,  /* a kernel launch */
	TAKES_GRAPH,       /* a graph launch: what the graph ran */
	TAKES_COPIES,      /* a batch of copies */
	TAKES_ONE_COPY,    /* a copy or memset call */
};

/*
 * Calls that share one correlation id, and the activities of it, paired in
 * order: CUPTI 13.0 gave one thread's calls and their kernels one id after
 * a window's switch (docs/BENCHMARKS.md); a stream runs its launches in the
 * order they were made, so the k-th kernel of the id is the k-th kernel
 * launch's, what a graph ran goes to the graph launch before it, and a call
 * is done once an activity of a later call came. At most JOIN_CHAINS ids a
 * process, JOIN_CHAIN_ACTS activities waiting in each (the oldest then
 * leave unattributed).
 */
#define JOIN_CHAINS 8
#define JOIN_CHAIN_ACTS 4096
struct jchain_act {
	struct join_activity act;
	__u64 added;
	bool served;
};
/* Calls a new activity looks through for its own, at most; and the clocks' skew allowed. */
#define JOIN_CHAIN_SCAN 256u
#define JOIN_CHAIN_SKEW_NS 100000ull
struct jchain {
	__u64 corr;
	bool live;
	struct fifo calls; /* __u64: absolute positions in corrs, in the order matched */
	struct fifo acts;  /* struct jchain_act, in the order they came */
};

struct jpending {
	struct join_activity act;
	__u64 added;
	__u32 next;  /* next pending activity of the same corr, or NONE */
	__u32 gen;   /* bumped on reuse, so stale order entries are recognised */
	bool live;
};

struct jorder {
	__u32 node, gen;
};

#define NONE UINT32_MAX

/*
 * A driver record is stamped inside the call, after its entry point (and
 * the uprobe) ran: one that starts this soon after the probes took effect
 * may belong to a call entered before, which no probe saw. Only one call of
 * a thread can have been under way at the attach, and it is the thread's
 * first call to end after it: so only the first record of a thread's queue
 * that starts after the attach, in this slack, can be that call
 * (JOIN_AT_ATTACH; first_after_attach says why per queue).
 * Its launch event may also have been lost: the two cannot be told apart,
 * so such records are counted on their own, never as launched before attach.
 */
#define ATTACH_DRIVER_SLACK_NS 1000000ull

/* How long a call done with its one activity, or due none, stays held (corr_spent, join.c). */
#define JOIN_SPENT_KEEP_NS 1000000000ull

struct jproc {
	__u32 pid;
	__u64 attach_ts;
	struct { __u64 on, off, seen; } rec[JOIN_RECORD_SPANS]; /* join__recording's spans, a ring */
	__u32 nr_rec;               /* spans seen (0: always on) */
	bool rec_never;             /* the shim said it was never on */
	struct u64map thread_idx;   /* tid << 2 | cls -> index in threads */
	struct jthread *threads;
	size_t nr_threads, cap_threads;
	struct corr_index corr_idx; /* corr -> absolute position in corrs */
	struct fifo corrs;          /* struct jcorr, insertion order */
	__u64 corr_base;            /* absolute position of corrs' head */
	struct u64map pending_head; /* corr -> first pending node */
	struct jpending *pending;   /* node pool */
	__u32 nr_pending_nodes, pending_cap, free_head, live_pending;
	struct fifo pending_order;  /* struct jorder, arrival order */
	size_t apis_queued;         /* API records in all its threads' queues */
	size_t launches_queued;     /* launch events in all its threads' queues */
	size_t disorder_left;       /* steps left to order its API records, and to pair what shares
				       an id by kind, until the next advance (its ring chooses both) */
	size_t reclaim_at;          /* where thread_reclaim looks next */
	struct mem_hold hold;       /* what its queues and tables take, counted in the join's share */
	struct jchain chains[JOIN_CHAINS]; /* ids calls share (join_chain.c) */
};

struct join {
	struct join_opts o;
	struct join_reuse reuses[JOIN_REUSES_KEPT]; /* the first correlation ids reused */
	size_t nreuses;
	/* join__pause/__resume: the last windows [from, to), oldest first (none: all time). */
	__u64 win_from[JOIN_WINDOWS_MAX], win_to[JOIN_WINDOWS_MAX];
	unsigned nr_win;
	bool windowed;
	join_emit_fn emit;
	void *ctx;
	join_unrecorded_fn unrecorded;
	void *unrecorded_ctx;
	join_matched_fn matched;
	void *matched_ctx;
	struct u64map proc_idx;     /* pid -> index in procs */
	struct jproc **procs;
	size_t nr_procs;
	struct join_counters c;
	__u64 now;
	bool early;                 /* in join__advance_pid: graph launches wait (graph_launch_waits) */
	struct mem_share share;     /* the memory budget (max_bytes), its processes the holders */
};

/* ------------------------------------------------------------ join.c */

/* act leaves the join: joined to a call, unattributed, or left out (reason). */
void jact__emit(struct join *j, const struct join_activity *act, __u32 tid, __u64 site,
	       __u32 probe, __u64 call_ts, enum join_reason reason);
/* Whether ts is outside, or inside within JOIN_EDGE_NS of its window's close. */
bool jwin__at_close(const struct join *j, __u64 ts);

/*
 * The clock of the horizon, for entries added between ticks: before the
 * first join__advance there is none yet, and an entry stamped 0 would expire
 * at once; its own end time stands in.
 */
static inline __u64 join_now(const struct join *j, __u64 fallback)
{
	return j->now ? j->now : fallback;
}

/* A pending activity's node goes back to p's free list. */
static inline void jproc__release_pending(struct jproc *p, __u32 node)
{
	p->pending[node].live = false;
	p->pending[node].next = p->free_head;
	p->free_head = node;
	p->live_pending--;
}

/* ------------------------------------------------------------ join_mem.c */

/* What a process's queues and tables took (after - before), on its hold and so in the join's share. */
void jproc__ledger(struct jproc *p, size_t before, size_t after);
/* Whether p may take more memory (a refusal is counted budget_refused). */
bool jproc__may_grow(struct join *j, struct jproc *p);
/* item onto f, one of p's: growing only within the budget. 0, -E2BIG, -ENOMEM. */
int jproc__push(struct join *j, struct jproc *p, struct fifo *f, const void *item);
/* op on f, one of p's, which may give memory back (pop, trim): the ledger follows. */
void jproc__shrink(struct join *j, struct jproc *p, struct fifo *f, void (*op)(struct fifo *f));
void jproc__pop(struct join *j, struct jproc *p, struct fifo *f);
/* Whether key may go into m, one of p's: a key it holds, or room without growing, or the budget's. */
bool jproc__map_room(struct join *j, struct jproc *p, const struct u64map *m, __u64 key);
/* corr at pos in p's correlation index: growing only within the budget. 0, -E2BIG, -ENOMEM. */
int jproc__corr_put(struct join *j, struct jproc *p, __u64 corr, __u64 pos);
/* key into m, one of p's: growing only within the budget, unless it must (check false). */
int jproc__put(struct join *j, struct jproc *p, struct u64map *m, __u64 key, __u64 val, bool check);
/* What a burst left in p's queues and tables goes back (each advance). */
void jproc__trim(struct join *j, struct jproc *p);

/* ------------------------------------------------------------ join_chain.c */

/* Whether a call that takes so may take activities of kind k at all. */
bool jcorr__kind_fits(__u8 takes, __u32 k);
/* Whether call c may take activity a (in a chain: chained, with its clocks and shapes). */
bool jcorr__fits(struct jcorr *c, const struct join_activity *a, bool chained);
/* c takes a at now (the join's clock): it has one, and a call that takes one is done. */
void jcorr__give(struct jcorr *c, const struct join_activity *a, __u64 now);
/* p's chain of corr, NULL if none. */
struct jchain *jchain__of(struct jproc *p, __u64 corr);
/* A second call of corr while the call at pos holds it: a chain, NULL when none is free. */
struct jchain *jchain__begin(struct join *j, struct jproc *p, __u64 corr, __u64 pos);
/* act waits in ch (true), the oldest waiting leaving unattributed when it is full. */
bool jchain__put_act(struct join *j, struct jproc *p, struct jchain *ch,
		     const struct join_activity *act, __u64 added);
/* A new activity (ch's last): the oldest call it fits takes it, else it waits. */
void jchain__on_act(struct join *j, struct jproc *p, struct jchain *ch);
/* A new call (ch's last): the waiting activities it fits, in the order they came. */
void jchain__on_call(struct join *j, struct jproc *p, struct jchain *ch);
/* Activities past the horizon leave unattributed; a chain with nothing left ends (all: every one). */
void jchain__expire(struct join *j, struct jproc *p, bool all);

#endif
