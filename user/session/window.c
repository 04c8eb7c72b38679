/* SPDX-License-Identifier: MIT */
/*
 * A window's profile (session_internal.h): the join's samples and its
 * launches without a record go into it; it is written (named first) at the
 * end, or at each --interval; and in continuous mode what no later window
 * needs is forgotten, so memory follows what runs now.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "user/session/session_internal.h"
#include "user/probe/entry_points.h"
#include "user/util/log.h"

/*
 * A graph replay's kernel of node `node` (graph_nodes__find's), its replay
 * launched at ts: under the launch that captured that node's origin then.
 */
static void graph_capture(struct session *s, __u32 pid, __u32 node, __u64 ts,
			  struct profile_activity *pa)
{
	struct target *t = target_table__find(&s->tt, (pid_t)pid);
	__u64 site;
	__u32 probe;

	if (!t || !t->graphs ||
	    !graph_nodes__site(t->graphs, graph_nodes__origin(t->graphs, node, ts), &site, &probe)) {
		s->graph_capture_unknown++;
		return;
	}
	pa->under[0] = (struct profile_under){ .stack = site__stack(site),
					       .api = entry_point__name(probe),
					       .marker = "[graph captured at]" };
	s->graph_under_capture++;
}

/*
 * A launch paired with its API record: a graph node its call made takes its
 * site. True when it made one (a launch captured: no activity is due).
 */
bool session__on_matched(void *ctx, const struct join_matched *m)
{
	struct session *s = ctx;
	struct target *t;

	session__trace_launch(s, m);
	if (!s->graph_targets)
		return false;
	t = target_table__find(&s->tt, (pid_t)m->pid);
	return t && t->graphs &&
	       graph_nodes__on_call(t->graphs, m->tid, m->start, m->end, m->site, m->probe) > 0;
}

void session__on_sample(void *ctx, const struct join_sample *js)
{
	struct session *s = ctx;
	const struct join_activity *a = js->act;
	const char *name = blobtab__get(s->names, a->aux[0], NULL);
	struct profile_activity pa = {
		.name = name ? name : "[unknown]", .name_id = name ? a->aux[0] : 0,
		.ns = a->end > a->start ? a->end - a->start : 0,
		.device = a->aux[1], .stream = a->aux[2], .graph_id = a->aux[3],
	};

	__u32 stack = site__stack(js->site);
	const char *api = entry_point__name(js->probe);

	session__trace_activity(s, js);

	if (a->aux[4] && js->reason == JOIN_OK && stack)
		graph_capture(s, js->pid, a->aux[4], js->call_ts ? js->call_ts : a->start, &pa);
	else if (a->aux[4])
		s->graph_replay_unattributed++;
	/*
	 * An autograd thread's launch: under the caller of its pass; a graph
	 * it replayed: capture, then that replay, then the caller.
	 */
	if (js->reason == JOIN_OK && stack) {
		struct profile_under *u = &pa.under[pa.under[0].stack ? 1 : 0];

		if (session__autograd_under(s, js->pid, js->site, &stack, u)) {
			u->api = api;
			api = entry_point__name(GP_PROBE_AUTOGRAD_EXECUTE);
		}
	}
	if (js->reason == JOIN_OK && stack)
		profile__add(s->prof, js->pid, stack, api, NULL, &pa);
	else
		profile__add(s->prof, js->pid, 0, NULL,
			     js->reason == JOIN_OK ? "stack table full" : join__reason_name(js->reason), &pa);
}

/* A launch no GPU record came for: its stack still counts under launches. */
void session__on_unrecorded(void *ctx, const struct join_unrecorded *u)
{
	struct session *s = ctx;
	struct profile_under under = { 0 };
	__u32 stack = site__stack(u->site);
	const char *api = entry_point__name(u->probe);

	if (entry_point__is_node(u->probe))
		return; /* a node added, no launch */
	if (session__autograd_under(s, u->pid, u->site, &stack, &under)) {
		under.api = api;
		api = entry_point__name(GP_PROBE_AUTOGRAD_EXECUTE);
	}
	profile__add_launch(s->prof, u->pid, stack, api, &under,
			    u->before_recording ? GP_PROFILE_BEFORE_RECORDING :
			    u->no_activity      ? GP_PROFILE_NO_ACTIVITY : NULL);
}

static __u64 site_keep(void *ctx, __u64 site)
{
	stack_table__keep(ctx, site__stack(site));
	return site;
}

/* The stack renumbered; the caller a launch ran for stays (its own table's handle). */
static __u64 site_remap(void *ctx, __u64 site)
{
	const struct stack_compaction *c = ctx;
	__u32 stack = site__stack(site);

	stack = stack && stack <= c->n ? c->remap[stack] : 0;
	return stack ? site__make(stack, site__caller(site)) : 0;
}

/* The capture sites every target's graph nodes hold, and its backward passes' callers. */
static void target_sites(struct session *s, __u64 (*fn)(void *ctx, __u64 site), void *ctx)
{
	for (size_t i = 0; i < s->tt.n; i++) {
		if (s->graph_targets && s->tt.t[i]->graphs)
			graph_nodes__visit_sites(s->tt.t[i]->graphs, fn, ctx);
		if (s->tt.t[i]->autograd)
			autograd_callers__visit_sites(s->tt.t[i]->autograd, fn, ctx);
	}
}

static bool pid_followed(void *ctx, __u32 pid)
{
	struct session *s = ctx;

	return target_table__find(&s->tt, (pid_t)pid) != NULL;
}

/*
 * Continuous mode, once a window's profile is written: forgets the stacks
 * no launch of the window had and the processes that are gone, with their
 * frames, names and cubins, so memory stays flat however many processes
 * come and go. What the join still holds is kept, renumbered.
 */
void session__forget_window(struct session *s)
{
	struct stack_compaction c = { 0 };
	size_t keep = 0;
	int err;

	join__visit_sites(s->join, site_keep, &s->stacks);
	if (s->cache)
		stack_cache__visit_stacks(s->cache, site_keep, &s->stacks);
	target_sites(s, site_keep, &s->stacks);
	for (size_t i = 0; i < s->npending; i++)
		stack_table__keep(&s->stacks, s->pending[i]);
	if ((err = stack_table__compact_begin(&s->stacks, &c)) ||
	    (err = profile__compact(s->prof, c.remap, c.n, pid_followed, s))) {
		log_warn("cannot compact the stack tables (%s): they keep growing", strerror(-err));
		stack_compaction__free(&c);
		return;
	}
	stack_table__compact_commit(&s->stacks, &c);
	join__visit_sites(s->join, site_remap, &c);
	if (s->cache)
		stack_cache__visit_stacks(s->cache, site_remap, &c);
	target_sites(s, site_remap, &c);
	for (size_t i = 0; i < s->npending; i++)
		if ((s->pending[keep] = (__u32)site_remap(&c, s->pending[i])))
			keep++;
	s->npending = keep;
	stack_compaction__free(&c);
	if (s->o->verbose)
		session__tables_line(s, stderr);
}

/*
 * Two windows can end in the same second (a sub-second --interval, or the
 * last window just after the one before it): the later one gets "-N" after
 * the stamp rather than the same name, which would replace the earlier file.
 */
static void interval_path(struct session *s, __u64 realtime, char *buf, size_t len)
{
	time_t secs = (time_t)(realtime / NS_PER_S);
	const char *out = s->o->output, *dot = strstr(out, ".pb.gz");
	struct tm tm;
	char stamp[48];
	size_t n;

	s->same_stamp = (__u64)secs == s->last_stamp_s ? s->same_stamp + 1 : 0;
	s->last_stamp_s = (__u64)secs;
	gmtime_r(&secs, &tm);
	n = strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	if (s->same_stamp)
		snprintf(stamp + n, sizeof(stamp) - n, "-%u", s->same_stamp);
	if (!dot)
		dot = out + strlen(out);
	snprintf(buf, len, "%.*s-%s%s", (int)(dot - out), out, stamp, dot);
}

static int write_profile(struct session *s, const char *path, __u64 now)
{
	char text[PROFILE_WINDOWS_MAX + 2][96];
	const char *comments[PROFILE_WINDOWS_MAX + 2];
	size_t n = session__duty_comments(s, s->last_write_ns, now, text, PROFILE_WINDOWS_MAX + 2);
	int err;

	for (size_t i = 0; i < n; i++)
		comments[i] = text[i];
	TIMED(s, STAGE_NAME, session__resolve_pending(s, 0));
	TIMED(s, STAGE_WRITE, err = profile__write_pprof(s->prof, path,
							 s->start_realtime_ns + (s->last_write_ns - s->start_ns),
							 now - s->last_write_ns, comments, n));

	if (err) {
		log_error("cannot write %s: %s (nothing was written there)", path, strerror(-err));
		return err;
	}
	return 0;
}

void session__write_window(struct session *s, __u64 now)
{
	struct profile_totals pt;
	char path[PATH_MAX];

	interval_path(s, s->start_realtime_ns + (now - s->start_ns), path, sizeof(path));
	write_profile(s, path, now);
	s->last_write_ns = now;
	session__duty_profile_done(s, now);
	profile__totals(s->prof, &pt);
	s->unattributed_written += pt.unattributed; /* the counters line covers the run */
	profile__reset_samples(s->prof);
	TIMED(s, STAGE_WRITE, session__forget_window(s));
}

int session__write_last(struct session *s, char *path, size_t len)
{
	if (s->o->interval_s)
		interval_path(s, s->start_realtime_ns + (now_ns() - s->start_ns), path, len);
	else
		snprintf(path, len, "%s", s->o->output);
	return write_profile(s, path, now_ns());
}
