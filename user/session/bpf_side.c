/* SPDX-License-Identifier: MIT */
/*
 * The BPF side of a tick (session_internal.h): launch events, taken from the
 * event pump's queue in order, each turned into a stack id and a launch for
 * the join; a shim ring made is held at once.
 */
#include <errno.h>
#include <unistd.h>
#include "user/session/session_internal.h"
#include "user/probe/entry_points.h"

/* x*y*z, saturated at 32 bits, as the shim records a kernel's grid and block. */
static __u32 mul3(const __u32 v[3])
{
	__u64 r = (__u64)v[0] * v[1];

	if (r > UINT32_MAX)
		return UINT32_MAX;
	r *= v[2];
	return r > UINT32_MAX ? UINT32_MAX : (__u32)r;
}

/*
 * t's first driver call the probes see, and its first launch. A module load
 * comes first, and stays probed between duty windows, where the first
 * launch may not come until a window opens: the engine is probed at the
 * first call (passes begun before it go unseen), and looked for again
 * from the first launch (a libtorch mapped late). A wait for an unseen
 * interpreter ends at each; Python is set up before the engine is probed,
 * so the callers of passes begun from now on keep their Python frames.
 */
static void target_met(struct session *s, struct target *t, const struct gp_launch_event *e,
		       bool launch)
{
	bool first_call = !t->driver_seen, first_launch = launch && !t->first_launch_ns;

	if (!first_call && !first_launch)
		return;
	t->driver_seen = true;
	if (first_launch)
		t->first_launch_ns = e->ts_ns;
	t->py_next_try_ns = 0;
	session__python_setup(s, t, now_ns());
	if (first_call)
		session__autograd_setup(s, t);
	else
		session__autograd_relook(s, t); /* the first launch, after a module load */
}

/*
 * One launch event, on the main thread. Its time is counted by the drains
 * (STAGE_EVENTS around each, session__drain): two clock reads an event
 * were a few percent of the loader's time on the bench's small step.
 */
static int on_launch_event(void *ctx, const struct gp_launch_event *e, size_t size)
{
	struct session *s = ctx;
	struct join_launch jl;
	struct target *t;
	__u32 stack_id;
	bool launch;

	if (e->probe == GP_PROBE_SHM_RING) {
		/* A ring was made: read the maps while the process lives, hold the ring. */
		if (e->pid != (__u32)getpid() && (t = session__target(s, (pid_t)e->pid)))
			target__symbolizer(t);
		session__take_held_rings(s);
		return 0;
	}
	if (e->probe == GP_PROBE_AUTOGRAD_EXECUTE) {
		/* A backward pass begun: its caller's stack, unwound as a launch's. */
		t = session__target(s, e->pid);
		session__autograd_begin(s, t, e, launch_stack__of(s, t, e, size));
		return 0;
	}
	launch = entry_point__is_launch(e->probe) || entry_point__is_copy(e->probe) ||
		 entry_point__is_node(e->probe);
	t = session__target(s, e->pid);
	if (t) {
		t->autograd_launched |= launch;
		target_met(s, t, e, launch);
	}
	if (!launch)
		return 0; /* module loads: handles for the cubin link, not yet used */
	s->events_seen++;
	if (t)
		launch_stack__follow_target(s, t, e);
	stack_id = launch_stack__of(s, t, e, size);
	/* Threads are keyed by their own namespace's tid, as CUPTI numbers them. */
	jl = (struct join_launch){ .pid = e->pid, .tid = e->ns_tid ? e->ns_tid : e->tid,
				   .ts = e->ts_ns, .probe = e->probe,
				   .cls = entry_point__is_copy(e->probe) ? JOIN_CLASS_COPY :
					  entry_point__is_node(e->probe) ? JOIN_CLASS_NODE : JOIN_CLASS_LAUNCH,
				   .site = session__autograd_site(s, t, e, stack_id),
				   .single = entry_point__is_single(e->probe),
				   .shape = entry_point__is_kernel_launch(e->probe) ?
						    join__shape(mul3(e->grid), mul3(e->block)) : 0 };
	join__add_launch(s->join, &jl);
	return 0;
}

/* Every launch event queued now, timed as STAGE_EVENTS. */
int session__drain(struct session *s)
{
	int err;

	TIMED(s, STAGE_EVENTS, err = event_pump__drain(&s->pump, on_launch_event, s));
	return err;
}

/*
 * Every launch event committed to the BPF ring so far, through the pump.
 * Once all of them are handled, the stack cache hears of it: entries taken
 * out of its map before the mark can no longer come back in an event; and
 * the join may pair every API record that ended before the call's start
 * (s->events_watermark, read_records).
 * -EAGAIN when the pump had not caught up with the mark in its bounded
 * wait (a loaded machine): some events committed before the call wait on.
 */
int session__drain_events(struct session *s)
{
	__u64 start = now_ns(), mark = event_pump__mark(&s->pump);
	int err = 0;

	for (int i = 0; i < 64; i++) { /* a full queue leaves some in the ring: take them too */
		bool reached = event_pump__reached(&s->pump, mark);

		err = session__drain(s);
		if (err)
			return err;
		if (reached) {
			if (s->cache)
				stack_cache__drained(s->cache);
			if (start > WATERMARK_SLACK_NS + s->events_watermark)
				s->events_watermark = start - WATERMARK_SLACK_NS;
			return 0;
		}
	}
	return -EAGAIN;
}
