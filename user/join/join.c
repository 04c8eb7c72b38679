/* SPDX-License-Identifier: MIT */
/*
 * The join engine of join.h: per-thread ordered merge of launch events and
 * API records, correlation-id table, and activities waiting for their API
 * record. Everything is bounded and every activity leaves exactly once.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "user/join/join_internal.h"
#include "user/util/grow.h"

const char *join__reason_name(enum join_reason r)
{
	switch (r) {
	case JOIN_OK: return "joined";
	case JOIN_NO_LAUNCH_EVENT: return "no launch event";
	case JOIN_NO_API_RECORD: return "no API record";
	case JOIN_BEFORE_ATTACH: return "launched before attach";
	case JOIN_AT_ATTACH: return "launched at attach";
	case JOIN_TABLE_FULL: return "join table full";
	case JOIN_OUTSIDE: return "launched outside the windows";
	default: return "unknown";
	}
}

int join__new(const struct join_opts *opts, join_emit_fn emit, void *ctx, struct join **ret_j)
{
	struct join *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->o = *opts;
	if (!j->o.horizon_ns)
		j->o.horizon_ns = 10ull * 1000000000;
	if (!j->o.max_queue)
		j->o.max_queue = 1 << 16;
	if (!j->o.max_corr)
		j->o.max_corr = 1 << 20;
	if (!j->o.max_pending)
		j->o.max_pending = 1 << 20;
	if (!j->o.max_procs)
		j->o.max_procs = 4096;
	if (!j->o.max_threads)
		j->o.max_threads = 4096;
	if (!j->o.max_proc_apis)
		j->o.max_proc_apis = 1 << 19;
	if (!j->o.max_proc_launches)
		j->o.max_proc_launches = 1 << 19;
	if (!j->o.max_disorder)
		j->o.max_disorder = 1 << 20;
	if (!j->o.max_bytes)
		j->o.max_bytes = JOIN_BYTES_DEFAULT;
	mem_share__init(&j->share, j->o.max_bytes);
	j->emit = emit;
	j->ctx = ctx;
	if (u64map__init(&j->proc_idx, j->o.max_procs)) {
		free(j);
		return -ENOMEM;
	}
	j->procs = calloc(j->o.max_procs, sizeof(*j->procs));
	if (!j->procs) {
		u64map__fini(&j->proc_idx);
		free(j);
		return -ENOMEM;
	}
	*ret_j = j;
	return 0;
}

static void proc__free(struct jproc *p)
{
	mem_hold__leave(&p->hold);
	for (size_t i = 0; i < p->nr_threads; i++) {
		fifo__free(&p->threads[i].launches);
		fifo__free(&p->threads[i].apis);
	}
	free(p->threads);
	u64map__fini(&p->thread_idx);
	corr_index__fini(&p->corr_idx);
	for (size_t i = 0; i < JOIN_CHAINS; i++) {
		fifo__free(&p->chains[i].calls);
		fifo__free(&p->chains[i].acts);
	}
	fifo__free(&p->corrs);
	u64map__fini(&p->pending_head);
	free(p->pending);
	fifo__free(&p->pending_order);
	free(p);
}

void join__destroy(struct join *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->nr_procs; i++)
		proc__free(j->procs[i]);
	free(j->procs);
	u64map__fini(&j->proc_idx);
	free(j);
}

size_t join__bytes(const struct join *j)
{
	return mem_share__bytes(&j->share);
}

static struct jproc *proc_get(struct join *j, __u32 pid, bool create)
{
	struct jproc *p;
	__u64 idx;

	if (u64map__get(&j->proc_idx, pid, &idx))
		return j->procs[idx];
	if (!create || j->nr_procs == j->o.max_procs)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	mem_hold__join(&p->hold, &j->share);
	p->corrs.item = sizeof(struct jcorr);
	p->corrs.max = j->o.max_corr;
	p->pending_order.item = sizeof(struct jorder);
	p->pending_order.max = 2 * j->o.max_pending;
	p->free_head = NONE;
	p->disorder_left = j->o.max_disorder;
	if (u64map__init(&p->thread_idx, j->o.max_threads) ||
	    corr_index__init(&p->corr_idx, j->o.max_corr) ||
	    u64map__init(&p->pending_head, j->o.max_pending) ||
	    u64map__put(&j->proc_idx, pid, j->nr_procs)) {
		proc__free(p);
		return NULL;
	}
	j->procs[j->nr_procs++] = p;
	jproc__ledger(p, 0, sizeof(*p) + u64map__bytes(&p->thread_idx) + corr_index__bytes(&p->corr_idx) +
		       u64map__bytes(&p->pending_head));
	return p;
}

int join__attach(struct join *j, __u32 pid, __u64 attach_ts)
{
	struct jproc *p = proc_get(j, pid, true);

	if (!p)
		return -ENOMEM;
	p->attach_ts = attach_ts;
	return 0;
}

int join__recording(struct join *j, __u32 pid, __u64 on_ns, __u64 off_ns, __u64 now_ns)
{
	struct jproc *p = proc_get(j, pid, true);
	__u32 last;

	if (!p)
		return -ENOMEM;
	p->rec_never = on_ns == UINT64_MAX;
	if (p->rec_never || (!on_ns && !off_ns)) {
		p->nr_rec = 0;
		return 0;
	}
	last = (p->nr_rec - 1) % JOIN_RECORD_SPANS;
	if (!p->nr_rec || p->rec[last].on != on_ns)
		last = p->nr_rec++ % JOIN_RECORD_SPANS;
	p->rec[last].on = on_ns;
	p->rec[last].off = off_ns;
	if (!off_ns)
		p->rec[last].seen = now_ns;
	return 0;
}

/*
 * Whether the shim recorded when a call was made at ts (join__recording),
 * and, with a margin, not within it before a switch-off it was seen making.
 */
static bool recorded_at(const struct jproc *p, __u64 ts, __u64 margin)
{
	if (p->rec_never)
		return false;
	if (!p->nr_rec)
		return true;
	for (__u32 i = 0; i < p->nr_rec && i < JOIN_RECORD_SPANS; i++) {
		__u32 k = (p->nr_rec - 1 - i) % JOIN_RECORD_SPANS;
		/* Still on (the latest), ended, or ended unseen after its last look. */
		__u64 end = p->rec[k].off ? p->rec[k].off : i ? p->rec[k].seen : UINT64_MAX;

		if (p->rec[k].off)
			end = end > margin ? end - margin : 0;

		if (ts >= p->rec[k].on && ts <= end)
			return true;
	}
	return false;
}

/* Slots looked at for an idle one, at most, per new thread past the bound. */
#define RECLAIM_LOOKS 64

/*
 * At the bound, a thread queue with nothing queued (its thread gone, or
 * idle: it gets a slot again when it comes back) is given to a new thread,
 * looked for round the table a few slots a call: a long run that keeps
 * starting threads keeps profiling them. NULL: none idle among those looked at.
 */
static struct jthread *thread_reclaim(struct jproc *p)
{
	for (unsigned n = 0; n < RECLAIM_LOOKS && p->nr_threads; n++) {
		struct jthread *t = &p->threads[p->reclaim_at++ % p->nr_threads];

		if (t->launches.len || t->apis.len)
			continue;
		u64map__del(&p->thread_idx, (__u64)t->tid << 2 | t->cls, NULL);
		t->attach_seen = 0;
		return t;
	}
	return NULL;
}

static struct jthread *thread_get(struct join *j, struct jproc *p, __u32 tid, __u32 cls)
{
	__u64 key = (__u64)tid << 2 | cls, idx;
	struct jthread *t, *grown;

	if (u64map__get(&p->thread_idx, key, &idx))
		return &p->threads[idx];
	if (p->nr_threads >= j->o.max_threads) {
		/* tids a hostile ring made up would each hold memory for the run: at most max_threads */
		t = thread_reclaim(p);
		if (!t || jproc__put(j, p, &p->thread_idx, key, (__u64)(t - p->threads), true))
			return NULL;
	} else {
		size_t before = p->cap_threads * sizeof(*p->threads);

		if (p->nr_threads == p->cap_threads && !jproc__may_grow(j, p))
			return NULL;
		grown = grow__array(p->threads, &p->cap_threads, p->nr_threads + 1, sizeof(*grown), 8);
		if (!grown)
			return NULL;
		p->threads = grown;
		jproc__ledger(p, before, p->cap_threads * sizeof(*p->threads));
		if (jproc__put(j, p, &p->thread_idx, key, p->nr_threads, true))
			return NULL;
		t = &p->threads[p->nr_threads++];
		memset(t, 0, sizeof(*t));
	}
	t->tid = tid;
	t->cls = cls;
	t->launches.item = sizeof(struct jlaunch);
	t->launches.max = j->o.max_queue;
	t->apis.item = sizeof(struct japi);
	t->apis.max = j->o.max_queue;
	return t;
}

/* ------------------------------------------------------------ windows */

/* The window ts falls in, as its index; -1: outside every window kept. */
static int window_of(const struct join *j, __u64 ts)
{
	for (int i = (int)j->nr_win - 1; i >= 0; i--)
		if (ts >= j->win_from[i])
			return ts < j->win_to[i] ? i : -1;
	return -1;
}

static bool inside(const struct join *j, __u64 ts)
{
	return !j->windowed || window_of(j, ts) >= 0;
}

/* Whether ts is outside, or inside within JOIN_EDGE_NS of its window's close. */
bool jwin__at_close(const struct join *j, __u64 ts)
{
	int w;

	if (!j->windowed)
		return false;
	w = window_of(j, ts);
	return w < 0 || j->win_to[w] - ts < JOIN_EDGE_NS;
}

/* Whether ts is outside, or inside within JOIN_EDGE_NS after its window opened. */
static bool at_open(const struct join *j, __u64 ts)
{
	int w;

	if (!j->windowed)
		return false;
	w = window_of(j, ts);
	return w < 0 || (j->win_from[w] && ts - j->win_from[w] < JOIN_EDGE_NS);
}

void join__pause(struct join *j, __u64 ts)
{
	if (!j->windowed) {
		j->windowed = true;
		j->win_from[0] = 0;
		j->win_to[0] = ts;
		j->nr_win = 1;
		return;
	}
	if (j->nr_win && j->win_to[j->nr_win - 1] == UINT64_MAX)
		j->win_to[j->nr_win - 1] = ts > j->win_from[j->nr_win - 1] ? ts : j->win_from[j->nr_win - 1];
}

void join__resume(struct join *j, __u64 ts)
{
	if (!j->windowed || (j->nr_win && j->win_to[j->nr_win - 1] == UINT64_MAX))
		return; /* open already */
	if (j->nr_win && ts < j->win_to[j->nr_win - 1])
		ts = j->win_to[j->nr_win - 1]; /* windows never overlap */
	if (j->nr_win == JOIN_WINDOWS_MAX) {
		memmove(j->win_from, j->win_from + 1, (JOIN_WINDOWS_MAX - 1) * sizeof(*j->win_from));
		memmove(j->win_to, j->win_to + 1, (JOIN_WINDOWS_MAX - 1) * sizeof(*j->win_to));
		j->nr_win--;
	}
	j->win_from[j->nr_win] = ts;
	j->win_to[j->nr_win++] = UINT64_MAX;
}

void join__stop(struct join *j, __u64 stop_ns)
{
	join__pause(j, stop_ns);
}

/* ------------------------------------------------------------ emission */

void jact__emit(struct join *j, const struct join_activity *act, __u32 tid, __u64 site,
	       __u32 probe, __u64 call_ts, enum join_reason reason)
{
	struct join_sample s = { .act = act, .pid = act->pid, .tid = tid, .site = site,
				 .probe = probe, .call_ts = call_ts, .reason = reason };

	if (reason == JOIN_OUTSIDE) {
		j->c.activities_outside++;
		return;
	}
	if (reason == JOIN_OK)
		j->c.activities_joined++;
	else
		j->c.activities_unattributed[reason]++;
	j->emit(j->ctx, &s);
}

/*
 * What waits on c's id goes to c. Where a call's kind says what it may take
 * (jcorr__fits, without the chain's clocks and shapes), it takes only that:
 * a kernel launch the oldest kernel, a copy the oldest copy, a graph launch
 * what a graph ran, in order, until a node comes again; the rest wait on for
 * the calls that reuse the id (a chain, corr_add). A call with nothing of
 * its kind waiting (a graph launch under a CUPTI without graph ids) takes
 * everything, as a call without a kind does, or a list past
 * PENDING_TYPED_MAX or the process's steps this tick (disorder_left): as
 * before kinds were told apart.
 */
#define PENDING_TYPED_MAX 4096u

static void resolve_pending(struct join *j, struct jproc *p, struct jcorr *c)
{
	__u32 nodes[PENDING_TYPED_MAX];
	__u32 n = 0, head = NONE, node;
	bool typed = c->takes != TAKES_ALL, own = false;
	__u64 first;

	if (c->takes == TAKES_NOTHING || !u64map__get(&p->pending_head, c->corr, &first))
		return; /* a call that adds a graph node runs nothing of its own */
	for (node = (__u32)first; node != NONE && typed; node = p->pending[node].next) {
		if (n == PENDING_TYPED_MAX || !p->disorder_left) {
			typed = false;
			break;
		}
		p->disorder_left--;
		nodes[n++] = node;
		own = own || jcorr__kind_fits(c->takes, p->pending[node].act.kind);
	}
	if (!typed || !own) {
		u64map__del(&p->pending_head, c->corr, NULL);
		for (node = (__u32)first; node != NONE;) {
			__u32 next = p->pending[node].next;

			c->seen = true;
			jact__emit(j, &p->pending[node].act, c->tid, c->site, c->probe, c->ts, c->reason);
			j->c.activities_on_reused += c->reused;
			jproc__release_pending(p, node);
			node = next;
		}
		return;
	}
	for (__u32 i = n; i-- > 0;) { /* oldest first */
		node = nodes[i];
		if (jcorr__fits(c, &p->pending[node].act, false)) {
			jcorr__give(c, &p->pending[node].act, join_now(j, p->pending[node].act.end));
			jact__emit(j, &p->pending[node].act, c->tid, c->site, c->probe, c->ts, c->reason);
			j->c.activities_on_reused += c->reused;
			jproc__release_pending(p, node);
			nodes[i] = NONE;
		}
	}
	for (__u32 i = n; i-- > 0;) { /* the rest, newest first again */
		if (nodes[i] == NONE)
			continue;
		p->pending[nodes[i]].next = head;
		head = nodes[i];
	}
	if (head == NONE)
		u64map__del(&p->pending_head, c->corr, NULL);
	else
		u64map__put(&p->pending_head, c->corr, head); /* no growth */
}

/* ------------------------------------------------------------ corr table */

static void unrecorded(struct join *j, struct jproc *p, __u32 tid, __u64 site, __u32 probe,
		       bool before, bool no_activity);

/*
 * A matched call whose activities never came. Made while the shim did not
 * record or just before it switched off (JOIN_EDGE_NS): at a switch, CUPTI
 * may keep the API record of a call and not its kernel (the shim opens its
 * API window first and closes it last); labelled as made before the shim
 * recorded. A launch captured into a graph (its call made a node), or one
 * whose call returned an error, has no activity and is not counted. Any
 * other was due an activity that never came: counted
 * launches_without_activity, a loss, and labelled so.
 */
static void corr_unseen(struct join *j, struct jproc *p, const struct jcorr *c)
{
	if (c->seen || !c->launch || c->reason != JOIN_OK || !c->ts || c->none_due)
		return;
	if (!recorded_at(p, c->ts, JOIN_EDGE_NS)) {
		j->c.launches_before_recording++;
		unrecorded(j, p, c->tid, c->site, c->probe, true, false);
		return;
	}
	j->c.launches_without_activity++;
	unrecorded(j, p, c->tid, c->site, c->probe, false, true);
}

static void corr_drop_front(struct join *j, struct jproc *p)
{
	struct jcorr *c = fifo__at(&p->corrs, 0);
	__u64 pos;

	corr_unseen(j, p, c);
	if (corr_index__get(&p->corr_idx, c->corr, &pos) && pos == p->corr_base)
		corr_index__del(&p->corr_idx, c->corr);
	jproc__pop(j, p, &p->corrs);
	p->corr_base++;
}

static struct jcorr *corr_find(struct jproc *p, __u64 corr);

/*
 * A call whose correlation id a held call has: counted, the first few kept
 * (join__reuses). True when it is one.
 */
static bool corr_note_reuse(struct join *j, struct jproc *p, const struct jcorr *c)
{
	const struct jcorr *old = corr_find(p, c->corr);
	struct join_reuse *r;

	if (!old)
		return false;
	j->c.corr_reused++;
	if (j->nreuses == JOIN_REUSES_KEPT)
		return true;
	r = &j->reuses[j->nreuses++];
	*r = (struct join_reuse){ .corr = c->corr, .ts = { old->ts, c->ts },
				  .tid = { old->tid, c->tid }, .reason = { old->reason, c->reason },
				  .domain = { old->domain, c->domain }, .seen = old->seen };
	return true;
}

static void corr_add(struct join *j, struct jproc *p, const struct jcorr *c_in)
{
	struct jcorr cc = *c_in, *c = &cc;

	struct jchain *ch = jchain__of(p, cc.corr);
	__u64 held = 0, at;

	cc.reused = corr_note_reuse(j, p, c);
	if (p->corrs.len == p->corrs.max) {
		corr_drop_front(j, p);
		j->c.corr_evicted++;
	}
	if (!ch && cc.reused && corr_index__get(&p->corr_idx, cc.corr, &held))
		ch = jchain__begin(j, p, cc.corr, held);
	if (jproc__push(j, p, &p->corrs, c) == 0) {
		at = p->corr_base + p->corrs.len - 1;
		if (jproc__corr_put(j, p, c->corr, at) != 0) {
			fifo__drop_last(&p->corrs); /* cannot index it: activities will be unattributed */
		} else if (ch) {
			if (jproc__push(j, p, &ch->calls, &at) == 0)
				jchain__on_call(j, p, ch);
			return;
		} else {
			resolve_pending(j, p, fifo__at(&p->corrs, at - p->corr_base));
			return;
		}
	}
	if (!ch)
		resolve_pending(j, p, c);
}

static struct jcorr *corr_find(struct jproc *p, __u64 corr)
{
	__u64 pos;

	if (!corr_index__get(&p->corr_idx, corr, &pos))
		return NULL;
	return fifo__at(&p->corrs, pos - p->corr_base);
}

/* ------------------------------------------------------------ matching */

/*
 * Whether a, a record of t starting after the attach, is the first such of
 * its queue (records come in start order): noted either way. A thread's
 * launches and copies are two queues merged apart, and which of their first
 * records started first may only be known later: so at most one record per
 * queue, two per thread, is counted at attach.
 */
static bool first_after_attach(struct jproc *p, struct jthread *t, const struct japi *a)
{
	if (a->start < p->attach_ts || t->attach_seen == p->attach_ts)
		return false;
	t->attach_seen = p->attach_ts;
	return true;
}

static void api_pop(struct join *j, struct jproc *p, struct jthread *t)
{
	jproc__pop(j, p, &t->apis);
	p->apis_queued--;
}

static void launch_pop(struct join *j, struct jproc *p, struct jthread *t)
{
	jproc__pop(j, p, &t->launches);
	p->launches_queued--;
}

static void match(struct join *j, struct jproc *p, struct jthread *t)
{
	const struct jlaunch *l = fifo__at(&t->launches, 0);
	const struct japi *a = fifo__at(&t->apis, 0);
	struct jcorr c = { .corr = a->corr, .site = l->site, .added = j->now, .tid = t->tid,
			   .probe = l->probe, .reason = JOIN_OK, .ts = l->ts, .domain = a->domain,
			   .launch = t->cls != JOIN_CLASS_NODE,
			   .takes = t->cls == JOIN_CLASS_NODE ? TAKES_NOTHING :
				    t->cls == JOIN_CLASS_COPY ? (l->single ? TAKES_ONE_COPY : TAKES_COPIES) :
				    l->single ? TAKES_ONE_KERNEL : TAKES_GRAPH,
			   .shape = l->shape };

	first_after_attach(p, t, a);
	j->c.launches_matched++;
	if (j->matched) {
		struct join_matched m = { .pid = p->pid, .tid = t->tid, .start = a->start,
					  .end = a->end, .site = l->site,
					  .probe = l->probe, .corr = a->corr };

		c.none_due = j->matched(j->matched_ctx, &m);
	}
	c.none_due = c.none_due || a->failed;
	launch_pop(j, p, t);
	api_pop(j, p, t);
	corr_add(j, p, &c);
}

static void api_orphan(struct join *j, struct jproc *p, struct jthread *t)
{
	const struct japi *a = fifo__at(&t->apis, 0);
	struct jcorr c = { .corr = a->corr, .added = j->now, .tid = t->tid, .domain = a->domain };
	bool first = first_after_attach(p, t, a);

	if (a->start < p->attach_ts) {
		c.reason = JOIN_BEFORE_ATTACH;
		j->c.api_before_attach++;
	} else if (jwin__at_close(j, a->end) || at_open(j, a->start)) {
		c.reason = JOIN_OUTSIDE; /* its event came outside the window, left out */
		j->c.launches_outside++;
	} else if (first && a->domain == JOIN_DOMAIN_DRIVER && p->attach_ts &&
		   a->start - p->attach_ts < ATTACH_DRIVER_SLACK_NS) {
		c.reason = JOIN_AT_ATTACH;
		j->c.api_at_attach++;
	} else {
		c.reason = JOIN_NO_LAUNCH_EVENT;
		j->c.api_without_launch++;
	}
	api_pop(j, p, t);
	corr_add(j, p, &c);
}

/*
 * A launch event no API record took. Made while the shim did not record,
 * or within JOIN_EDGE_NS before it switched off: labelled as made before
 * it recorded. At a switch-off the shim closes its API window, then says
 * it records no more: a call whose probe fired just before the second and
 * whose record (stamped inside the call, after the probe) started after
 * the first has no record, and was not due one (seen on the stub under
 * e2e_windows' 100 windows: a launch 2 us before the off). Else its
 * record was lost.
 */
static void launch_orphan(struct join *j, struct jproc *p, struct jthread *t)
{
	const struct jlaunch *l = fifo__at(&t->launches, 0);
	bool before = !recorded_at(p, l->ts, JOIN_EDGE_NS);

	if (jwin__at_close(j, l->ts)) {
		j->c.launches_outside++; /* its record, stamped after the close, left out */
		launch_pop(j, p, t);
		return;
	}
	if (before)
		j->c.launches_before_recording++;
	else
		j->c.launches_without_record++;
	unrecorded(j, p, t->tid, l->site, l->probe, before, false);
	launch_pop(j, p, t);
}

static void unrecorded(struct join *j, struct jproc *p, __u32 tid, __u64 site, __u32 probe,
		       bool before, bool no_activity)
{
	struct join_unrecorded u = { .pid = p->pid, .tid = tid, .site = site, .probe = probe,
				     .before_recording = before, .no_activity = no_activity };

	if (j->unrecorded)
		j->unrecorded(j->unrecorded_ctx, &u);
}

/*
 * Whether l, the launch event at the head of t, is a graph launch that
 * waits for the tick's advance: a read's early pairing
 * (join__advance_pid) leaves those. Its kernels go under the launch that
 * captured their nodes (the session's matched callback gives the nodes
 * that launch's site), and the capture, on another thread, may be its
 * thread's last call, waiting for the launch events' watermark, while the
 * replay, with a later call behind it, could pair at once: an engine
 * thread's replays paired at the exit's read, before the main thread's
 * capture (e2e_autograd.sh, 3 runs of 4). The tick's advance pairs them as
 * before the early pairing was added.
 */
static bool graph_launch_waits(const struct join *j, const struct jthread *t,
			       const struct jlaunch *l)
{
	return j->early && t->cls == JOIN_CLASS_LAUNCH && !l->single;
}

/*
 * One step of the merge for the oldest API record a and launch event l of
 * a thread. Returns false when nothing can be decided yet.
 */
static bool merge_step(struct join *j, struct jproc *p, struct jthread *t, __u64 watermark)
{
	const struct japi *a = fifo__at(&t->apis, 0);
	const struct jlaunch *l = fifo__at(&t->launches, 0), *l2;

	if (!l) {
		/* Every event before a.end has been read: a has none. */
		if (watermark <= a->end)
			return false;
		api_orphan(j, p, t);
		return true;
	}
	if (a->domain == JOIN_DOMAIN_RUNTIME) {
		if (l->ts < a->start)
			launch_orphan(j, p, t);
		else if (l->ts > a->end)
			api_orphan(j, p, t);
		else if (graph_launch_waits(j, t, l))
			return false;
		else
			match(j, p, t);
		return true;
	}
	/* Driver record: stamped inside the call, after the uprobe fired. */
	if (l->ts > a->start) {
		api_orphan(j, p, t);
		return true;
	}
	l2 = fifo__at(&t->launches, 1);
	if (l2 && l2->ts <= a->start) {
		launch_orphan(j, p, t); /* a belongs to a later call */
		return true;
	}
	/*
	 * A later event, closer to a, may still arrive (l's call left no
	 * record). Not waited for in the node class: the replays of a node's
	 * graph, paired meanwhile in the launch class, would go out before
	 * the node took its site. The price: when CUPTI lost the record of
	 * a node call (counted cupti_dropped) and the next call's event is
	 * not read yet, that call's record pairs with the earlier event, and
	 * its node takes the earlier call's stack.
	 */
	if (!l2 && watermark <= a->end && t->cls != JOIN_CLASS_NODE)
		return false;
	if (graph_launch_waits(j, t, l))
		return false;
	match(j, p, t);
	return true;
}

static void merge_thread(struct join *j, struct jproc *p, struct jthread *t, __u64 watermark)
{
	while (t->apis.len && merge_step(j, p, t, watermark))
		;
	/* Events older than the horizon with no record left to pair with. */
	while (!t->apis.len && t->launches.len) {
		const struct jlaunch *l = fifo__at(&t->launches, 0);

		if (watermark != UINT64_MAX && l->ts + j->o.horizon_ns > j->now)
			break;
		launch_orphan(j, p, t);
	}
}

/* ------------------------------------------------------------ inputs */

void join__add_launch(struct join *j, const struct join_launch *l)
{
	struct jproc *p = proc_get(j, l->pid, true);
	struct jthread *t = p && l->cls < JOIN_CLASS_MAX ? thread_get(j, p, l->tid, l->cls) : NULL;
	struct jlaunch jl = { .ts = l->ts, .site = l->site, .probe = l->probe, .single = l->single,
			      .shape = l->shape };

	if (!inside(j, l->ts)) {
		j->c.launches_outside++;
		return;
	}
	if (!t) {
		/* No queue for its thread: it goes on without a record, still in the profile. */
		j->c.queue_full++;
		if (p)
			unrecorded(j, p, l->tid, l->site, l->probe, false, false);
		return;
	}
	/*
	 * At the bound (a process without the shim, whose events no record
	 * ever takes, or records far behind): the oldest event goes on without
	 * one, so every launch still reaches the profile.
	 */
	if (t->launches.len >= t->launches.max && t->launches.len)
		launch_orphan(j, p, t);
	/*
	 * The same for the process's threads together: a process with
	 * thousands of threads, each launching up to its bound, would hold
	 * max_threads queues of max_queue events. Its own oldest goes, or, with
	 * none of this thread's queued, the event itself goes on without one.
	 */
	if (p->launches_queued >= j->o.max_proc_launches) {
		j->c.queue_full++;
		if (!t->launches.len) {
			unrecorded(j, p, l->tid, l->site, l->probe, false, false);
			return;
		}
		launch_orphan(j, p, t);
	}
	if (jproc__push(j, p, &t->launches, &jl)) {
		j->c.queue_full++; /* past the memory budget, or out of memory: on without a record */
		unrecorded(j, p, l->tid, l->site, l->probe, false, false);
	} else {
		p->launches_queued++;
	}
}

void join__add_api(struct join *j, const struct join_api *a)
{
	struct jproc *p = proc_get(j, a->pid, true);
	struct jthread *t = p && a->cls < JOIN_CLASS_MAX ? thread_get(j, p, a->tid, a->cls) : NULL;
	struct japi ja = { .start = a->start, .end = a->end, .corr = a->corr, .domain = a->domain,
			   .failed = a->failed };
	size_t i;

	if (p && !inside(j, a->start)) {
		struct jcorr c = { .corr = a->corr, .added = join_now(j, a->end), .tid = a->tid,
				   .reason = JOIN_OUTSIDE, .domain = a->domain };

		corr_add(j, p, &c); /* its activities are left out too */
		return;
	}
	if (!t || p->apis_queued >= j->o.max_proc_apis || jproc__push(j, p, &t->apis, &ja)) {
		struct jcorr c = { .corr = a->corr, .added = join_now(j, a->end), .tid = a->tid,
				   .reason = JOIN_TABLE_FULL };

		j->c.queue_full++;
		if (p)
			corr_add(j, p, &c);
		return;
	}
	p->apis_queued++;
	/*
	 * Keep start order: CUPTI buffers may hand records over out of order.
	 * Each step is paid from the process's budget: a ring written to make
	 * every record walk back past a long queue costs the loader a bounded
	 * time a tick, and only that process's pairings.
	 */
	for (i = t->apis.len - 1; i > 0; i--) {
		struct japi *prev = fifo__at(&t->apis, i - 1), *cur = fifo__at(&t->apis, i), tmp;

		if (prev->start <= cur->start)
			break;
		if (!p->disorder_left) {
			j->c.api_disordered++;
			break;
		}
		p->disorder_left--;
		tmp = *prev;
		*prev = *cur;
		*cur = tmp;
	}
}

static bool order_live(const struct jproc *p, const struct jorder *o)
{
	return p->pending[o->node].live && p->pending[o->node].gen == o->gen;
}

/* Drops order entries of resolved activities, keeping arrival order. */
static void order_compact(struct join *j, struct jproc *p)
{
	size_t n = p->pending_order.len, before = fifo__bytes(&p->pending_order);

	for (size_t i = 0; i < n; i++) {
		struct jorder o = *(struct jorder *)fifo__at(&p->pending_order, 0);

		fifo__pop(&p->pending_order);
		if (order_live(p, &o))
			fifo__push(&p->pending_order, &o);
	}
	jproc__ledger(p, before, fifo__bytes(&p->pending_order));
}

static int pending_add(struct join *j, struct jproc *p, const struct join_activity *act)
{
	__u64 first = NONE;
	struct jorder o;
	__u32 node;

	if (p->live_pending >= j->o.max_pending)
		return -E2BIG;
	/* The one allocation that cannot be undone below: decided first. */
	if (!jproc__map_room(j, p, &p->pending_head, act->corr))
		return -E2BIG;
	if (p->free_head != NONE) {
		node = p->free_head;
		p->free_head = p->pending[node].next;
	} else {
		size_t cap = p->pending_cap;
		struct jpending *n;

		if (p->nr_pending_nodes == j->o.max_pending)
			return -E2BIG;
		if (p->nr_pending_nodes == p->pending_cap && !jproc__may_grow(j, p))
			return -E2BIG;
		n = grow__array_max(p->pending, &cap, (size_t)p->nr_pending_nodes + 1, sizeof(*n),
				    64, j->o.max_pending);
		if (!n)
			return -ENOMEM;
		jproc__ledger(p, p->pending_cap * sizeof(*n), cap * sizeof(*n));
		p->pending = n;
		p->pending_cap = (__u32)cap;
		node = p->nr_pending_nodes++;
		p->pending[node].gen = 0;
	}
	if (p->pending_order.len == p->pending_order.max)
		order_compact(j, p);
	o.node = node;
	o.gen = p->pending[node].gen + 1;
	if (jproc__push(j, p, &p->pending_order, &o)) {
		p->pending[node].next = p->free_head;
		p->free_head = node;
		return -E2BIG;
	}
	u64map__get(&p->pending_head, act->corr, &first);
	p->pending[node] = (struct jpending){ .act = *act, .added = join_now(j, act->end),
					      .next = (__u32)first,
					      .gen = o.gen, .live = true };
	jproc__put(j, p, &p->pending_head, act->corr, node, false);
	p->live_pending++;
	j->c.activities_waited++;
	return 0;
}

void join__add_activity(struct join *j, const struct join_activity *act)
{
	struct jproc *p = proc_get(j, act->pid, true);
	struct jchain *ch;
	struct jcorr *c;

	if (!p) {
		jact__emit(j, act, 0, 0, 0, 0, JOIN_TABLE_FULL);
		return;
	}
	ch = jchain__of(p, act->corr);
	if (ch) {
		if (jchain__put_act(j, p, ch, act, join_now(j, act->end)))
			jchain__on_act(j, p, ch);
		return;
	}
	c = corr_find(p, act->corr);
	if (c) {
		if (jcorr__kind_fits(c->takes, act->kind))
			jcorr__give(c, act, join_now(j, act->end)); /* a kernel launch's kernel: done */
		else
			c->seen = true;
		j->c.activities_on_reused += c->reused;
		jact__emit(j, act, c->tid, c->site, c->probe, c->ts, c->reason);
		return;
	}
	if (pending_add(j, p, act))
		jact__emit(j, act, 0, 0, 0, 0, JOIN_TABLE_FULL);
}

/* ------------------------------------------------------------ time */

/*
 * Unlinks node from its corr's list and emits it as unattributed; or as
 * left out when it began outside the windows or within JOIN_EDGE_NS of a
 * close: a call at a stop can have its kernel record flushed and its API
 * record, written at the call's return, not (as a launch event at a close
 * whose record never came is left out, launch_orphan).
 */
static void pending_expire(struct join *j, struct jproc *p, __u32 node)
{
	__u64 corr = p->pending[node].act.corr, first;
	__u32 *link, cur;

	if (!u64map__get(&p->pending_head, corr, &first))
		return;
	if ((__u32)first == node) {
		if (p->pending[node].next == NONE)
			u64map__del(&p->pending_head, corr, NULL);
		else
			u64map__put(&p->pending_head, corr, p->pending[node].next);
	} else {
		for (cur = (__u32)first; cur != NONE; cur = *link) {
			link = &p->pending[cur].next;
			if (*link == node) {
				*link = p->pending[node].next;
				break;
			}
		}
	}
	jact__emit(j, &p->pending[node].act, 0, 0, 0, 0,
	     jwin__at_close(j, p->pending[node].act.start) ? JOIN_OUTSIDE : JOIN_NO_API_RECORD);
	jproc__release_pending(p, node);
}

/*
 * A call done with what it was due (a kernel launch's kernel, a copy's
 * copy: jcorr__give) can take no other: CUPTI gives a call one id and one
 * record. It stays in the table JOIN_SPENT_KEEP_NS after it was done, not
 * the horizon, so that a stuck id's next call still finds it held
 * (corr_note_reuse: a thread's calls come microseconds apart); once gone,
 * a chain of its id (join_chain.c) counts it gone, as it does a call past
 * the horizon. So does a call due nothing (it made a graph node, failed,
 * or added a node) JOIN_SPENT_KEEP_NS after it was matched. Keeping every
 * call the horizon's 10 s held about 114,000 on the bench's small step,
 * and their lookups missed the caches (docs/BENCHMARKS.md). The table is a
 * queue: a spent call leaves from its front, behind any call still
 * waiting (a graph launch, an API record without its launch: the horizon),
 * and at the horizon at the latest.
 */
static bool corr_spent(const struct join *j, const struct jcorr *c)
{
	if (c->done && (c->takes == TAKES_ONE_KERNEL || c->takes == TAKES_ONE_COPY))
		return c->done_ns + JOIN_SPENT_KEEP_NS <= j->now;
	if (c->reason == JOIN_OK && (c->none_due || c->takes == TAKES_NOTHING))
		return c->added + JOIN_SPENT_KEEP_NS <= j->now;
	return false;
}

static void expire_proc(struct join *j, struct jproc *p, bool all)
{
	while (p->pending_order.len) {
		struct jorder *o = fifo__at(&p->pending_order, 0);

		if (order_live(p, o)) {
			if (!all && p->pending[o->node].added + j->o.horizon_ns > j->now)
				break;
			pending_expire(j, p, o->node);
		}
		jproc__pop(j, p, &p->pending_order);
	}
	while (p->corrs.len) {
		const struct jcorr *c = fifo__at(&p->corrs, 0);

		if (!all && c->added + j->o.horizon_ns > j->now && !corr_spent(j, c))
			break;
		corr_drop_front(j, p);
	}
	jchain__expire(j, p, all);
}

/*
 * Every thread's queues. Calls that add graph nodes first: a node must have
 * its site before the replays of its graph (another class's queue) emit.
 */
static void merge_proc(struct join *j, struct jproc *p, __u64 watermark)
{
	for (size_t k = 0; k < p->nr_threads; k++)
		if (p->threads[k].cls == JOIN_CLASS_NODE)
			merge_thread(j, p, &p->threads[k], watermark);
	for (size_t k = 0; k < p->nr_threads; k++)
		if (p->threads[k].cls != JOIN_CLASS_NODE)
			merge_thread(j, p, &p->threads[k], watermark);
}

void join__advance(struct join *j, __u64 bpf_watermark, __u64 now)
{
	j->now = now;
	for (size_t i = 0; i < j->nr_procs; i++) {
		struct jproc *p = j->procs[i];

		p->disorder_left = j->o.max_disorder;
		merge_proc(j, p, bpf_watermark);
		expire_proc(j, p, false);
		jproc__trim(j, p);
	}
}

void join__advance_pid(struct join *j, __u32 pid, __u64 bpf_watermark, __u64 now)
{
	struct jproc *p = proc_get(j, pid, false);

	if (now > j->now)
		j->now = now;
	if (!p)
		return;
	j->early = true;
	merge_proc(j, p, bpf_watermark);
	j->early = false;
}

static void finish_proc(struct join *j, struct jproc *p)
{
	p->disorder_left = j->o.max_disorder;
	merge_proc(j, p, UINT64_MAX);
	expire_proc(j, p, true);
}

void join__finish_pid(struct join *j, __u32 pid)
{
	__u64 idx;

	if (!u64map__get(&j->proc_idx, pid, &idx))
		return;
	finish_proc(j, j->procs[idx]);
	proc__free(j->procs[idx]);
	u64map__del(&j->proc_idx, pid, NULL);
	j->nr_procs--;
	if (idx != j->nr_procs) {
		j->procs[idx] = j->procs[j->nr_procs];
		u64map__put(&j->proc_idx, j->procs[idx]->pid, idx);
	}
}

void join__finish_all(struct join *j)
{
	while (j->nr_procs)
		join__finish_pid(j, j->procs[0]->pid);
}

void join__visit_sites(struct join *j, __u64 (*fn)(void *ctx, __u64 site), void *ctx)
{
	for (size_t i = 0; i < j->nr_procs; i++) {
		struct jproc *p = j->procs[i];

		for (size_t k = 0; k < p->nr_threads; k++) {
			struct fifo *f = &p->threads[k].launches;

			for (size_t n = 0; n < f->len; n++) {
				struct jlaunch *l = fifo__at(f, n);

				l->site = fn(ctx, l->site);
			}
		}
		for (size_t n = 0; n < p->corrs.len; n++) {
			struct jcorr *c = fifo__at(&p->corrs, n);

			c->site = fn(ctx, c->site);
		}
	}
}

void join__on_matched(struct join *j, join_matched_fn fn, void *ctx)
{
	j->matched = fn;
	j->matched_ctx = ctx;
}

void join__on_unrecorded(struct join *j, join_unrecorded_fn fn, void *ctx)
{
	j->unrecorded = fn;
	j->unrecorded_ctx = ctx;
}

void join__counters(const struct join *j, struct join_counters *ret)
{
	*ret = j->c;
}

size_t join__reuses(const struct join *j, const struct join_reuse **ret)
{
	*ret = j->reuses;
	return j->nreuses;
}
