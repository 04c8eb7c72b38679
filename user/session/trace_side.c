/* SPDX-License-Identifier: MIT */
/*
 * The timeline's side of a session (--trace; user/output/trace.h): each
 * launch call the join pairs with its API record, and each GPU activity it
 * hands over, kept; at the end the file is written with the names the
 * profile gave the stacks and processes. The stacks are the threads' own,
 * as the calls were made (a graph replay's kernels and an autograd thread's
 * launches are not recomposed here, as the profile does).
 */
#include <errno.h>
#include <string.h>
#include "user/session/session_internal.h"
#include "user/output/trace.h"
#include "user/probe/entry_points.h"
#include "user/util/log.h"

void session__trace_launch(struct session *s, const struct join_matched *m)
{
	if (s->trace && !entry_point__is_node(m->probe))
		trace__launch(s->trace, m->pid, m->tid, m->start, m->end, site__stack(m->site), m->probe,
			      m->corr);
}

void session__trace_activity(struct session *s, const struct join_sample *js)
{
	const struct join_activity *a = js->act;

	if (s->trace)
		trace__activity(s->trace, a->pid, a->start, a->end, a->aux[0], a->aux[1], a->aux[2],
				a->corr, js->reason == JOIN_OK);
}

static const char *activity_name(void *ctx, __u32 id)
{
	struct session *s = ctx;

	return blobtab__get(s->names, id, NULL);
}

static const char *api_name(void *ctx, __u32 probe)
{
	(void)ctx;
	return entry_point__name(probe);
}

static __u32 stack_names(void *ctx, __u32 stack, const char **names, __u32 max)
{
	struct session *s = ctx;

	return profile__stack_names(s->prof, stack, names, max);
}

static const char *process_name(void *ctx, __u32 pid)
{
	struct session *s = ctx;

	return profile__proc_comm(s->prof, pid);
}

int session__write_trace(struct session *s)
{
	struct trace_names names = { .ctx = s, .activity = activity_name, .api = api_name,
				     .frames = stack_names, .process = process_name };
	struct trace_stats st;
	int err;

	if (!s->trace)
		return 0;
	trace__stats(s->trace, &st);
	TIMED(s, STAGE_WRITE, err = trace__write(s->trace, s->o->trace, &names));
	if (err) {
		log_error("cannot write %s: %s (nothing was written there)", s->o->trace, strerror(-err));
		return err;
	}
	log_info("wrote %s: %llu launch calls, %llu GPU activities%s (open it in ui.perfetto.dev, "
		 "chrome://tracing or speedscope)", s->o->trace, (unsigned long long)st.launches,
		 (unsigned long long)st.activities,
		 st.launches_dropped || st.activities_dropped ? "; later ones not kept, over its limits" : "");
	if (st.launches_dropped || st.activities_dropped)
		log_warn("the timeline holds the first %u launch calls and %u GPU activities: %llu and %llu "
			 "more are in the profile only", TRACE_MAX_LAUNCHES, TRACE_MAX_ACTIVITIES,
			 (unsigned long long)st.launches_dropped, (unsigned long long)st.activities_dropped);
	return 0;
}
