/* SPDX-License-Identifier: MIT */
/*
 * Backward passes (session_internal.h, docs/ARCHITECTURE.md): a target's
 * autograd engine probed once it calls the driver; each pass begun noted with its
 * caller's stack; each engine thread's launch given, in its site, the
 * caller of its pass; each such sample put under that caller's stack.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "user/session/session_internal.h"
#include "user/probe/entry_points.h"
#include "user/probe/libtorch.h"
#include "user/util/log.h"
#include "user/util/test_env.h"

/*
 * Scans (SCAN_NS apart) that look for a target's libtorch after its first
 * driver call, and again after its first launch. GPUPROBE_TEST_AUTOGRAD_TRIES
 * (1 to AUTOGRAD_TRIES) lowers it, for the tests of a libtorch mapped late.
 * Once those looks found none, a target that goes on launching is looked at
 * once more every AUTOGRAD_AGAIN_PER times as many scans it launched in
 * (about a minute of launching):
 * one that maps libtorch much later (CUDA work first, `import torch` after
 * it) is probed from then on, at the cost of a read of its maps a minute.
 */
#define AUTOGRAD_TRIES 15
#define AUTOGRAD_AGAIN_PER 2

static unsigned autograd_tries_max(void)
{
	size_t v = test_env__bytes("GPUPROBE_TEST_AUTOGRAD_TRIES");

	return v >= 1 && v <= AUTOGRAD_TRIES ? (unsigned)v : AUTOGRAD_TRIES;
}

/*
 * At a target's first driver call the probes see (a module load or a
 * launch), then on every scan: its engine probed (the
 * file marked mapped on later scans, so that the sweep keeps it while some
 * target maps it, and attached again if it was swept). A target that maps
 * none is looked at AUTOGRAD_TRIES scans; one refused for want of a slot
 * (files other processes made up took them) is looked at again each scan,
 * and counted once.
 */
void session__autograd_setup(struct session *s, struct target *t)
{
	int r;

	if (t->autograd_done && !t->autograd_probed)
		return;
	r = libtorch__attach_pid(s->lp, s->bounded, t->pid);
	if (r == 1) {
		if (!t->autograd_probed) {
			s->autograd_engines++;
			s->engine_new = true;
			log_debug(s->o->verbose, "pid %d (%s): autograd engine probed", t->pid, t->comm);
		}
		t->autograd_done = t->autograd_probed = true;
		return;
	}
	if (r == -E2BIG) {
		if (!t->autograd_no_slot)
			s->autograd_no_slot++;
		t->autograd_no_slot = true;
		return;
	}
	if (t->autograd_probed)
		return; /* mapped no more (or for now): looked at again next scan */
	if (r < 0 || ++t->autograd_tries >= autograd_tries_max()) {
		t->autograd_done = true;
		t->autograd_refused = r < 0; /* not looked at again now and then */
		if (r < 0)
			log_debug(s->o->verbose, "pid %d (%s): autograd engine not probed: %s", t->pid, t->comm,
				  strerror(-r));
		else if (!t->autograd_looked_again)
			log_debug(s->o->verbose, "pid %d (%s): no autograd engine after %u looks", t->pid,
				  t->comm, t->autograd_tries);
	}
}

/*
 * Each scan: while the looks go on, one more (session__autograd_setup).
 * Once they ended with none (not with a libtorch refused: its file would
 * be read again for nothing), the scans a target launched in are counted,
 * and every AUTOGRAD_AGAIN_PER * AUTOGRAD_TRIES of them it is looked at
 * once more. A target that stopped launching is not looked at; under
 * --duty, launches are seen in windows only, so the looks are as rare
 * as the windows make them. The first look again is said under -v.
 */
void session__autograd_scan(struct session *s, struct target *t)
{
	bool launched = t->autograd_launched;

	t->autograd_launched = false; /* since this scan */
	if (t->autograd_done && !t->autograd_probed) {
		if (t->autograd_refused || !launched ||
		    ++t->autograd_launch_scans < AUTOGRAD_AGAIN_PER * autograd_tries_max())
			return;
		t->autograd_launch_scans = 0;
		if (!t->autograd_looked_again)
			log_debug(s->o->verbose, "pid %d (%s): autograd engine looked for again", t->pid,
				  t->comm);
		t->autograd_looked_again = true;
		t->autograd_tries = autograd_tries_max() - 1; /* one look */
		t->autograd_done = false;
	}
	session__autograd_setup(s, t);
}

/*
 * At t's first launch, when that came after its first driver call (a module
 * load): the looks begin again, so that a process that maps libtorch only
 * later (a wrapper that uses CUDA, then opens the trainer's libraries) is
 * looked at for as long after its first launch as after its first call.
 */
void session__autograd_relook(struct session *s, struct target *t)
{
	if (!t->autograd_probed) {
		t->autograd_tries = 0;
		t->autograd_done = false;
	}
	session__autograd_setup(s, t);
}

/* How often the node probe's counters are looked at. */
#define NODE_LOOK_NS 250000000ull

void session__watch_nodes(struct session *s, __u64 now)
{
	__u64 nodes, learnt, unlearnt;
	bool quiet;

	if (now < s->node_look_ns || !s->autograd_engines || !launch_probe__uses_multi(s->lp))
		return; /* perf links: the probe cannot be taken away */
	s->node_look_ns = now + NODE_LOOK_NS;
	if (launch_probe__counter(s->lp, GP_BPF_AG_NODES, &nodes) ||
	    launch_probe__counter(s->lp, GP_BPF_AG_LEARNED, &learnt) ||
	    launch_probe__counter(s->lp, GP_BPF_AG_UNLEARNED, &unlearnt))
		return;
	quiet = node_watch__look(&s->node_watch, now, nodes, learnt, unlearnt, s->engine_new);
	s->engine_new = false;
	if (quiet != launch_probe__nodes_quiet(s->lp))
		log_debug(s->o->verbose, "autograd node probe %s", quiet ? "away: every node at a known call"
									   : "back: a node at a call not seen");
	launch_probe__quiet_nodes(s->lp, quiet); /* also tries again a link that could not be made */
}

/* The thread as the process numbers it (the marker names it so). */
static __u32 event_tid(const struct gp_launch_event *e)
{
	return e->ns_tid ? e->ns_tid : e->tid;
}

/*
 * The caller of the pass whose node e's thread is inside, when another
 * thread began it (a thread running a node of its own pass launches for
 * itself: its own stack is the caller's).
 */
static __u32 caller_of(const struct target *t, const struct gp_launch_event *e, bool *ret_own)
{
	__u32 h, tid, site;

	*ret_own = false;
	h = t && t->autograd ? autograd_callers__of(t->autograd, e->autograd_pass) : 0;
	if (!h || !autograd_callers__get(t->autograd, h, &tid, &site))
		return 0;
	*ret_own = tid == event_tid(e);
	return *ret_own ? 0 : h;
}

void session__autograd_begin(struct session *s, struct target *t, const struct gp_launch_event *e,
			     __u32 stack_id)
{
	__u32 outer;
	bool own;

	(void)s;
	if (!t || (!t->autograd && autograd_callers__new(&t->autograd)))
		return;
	/*
	 * The pass is named by its begin's time (the BPF program gives its
	 * nodes that name). Begun inside another thread's pass (a reentrant
	 * backward): under that pass's caller.
	 */
	if (e->autograd_pass && (outer = caller_of(t, e, &own))) {
		autograd_callers__nest(t->autograd, e->ts_ns, outer);
		return;
	}
	autograd_callers__begin(t->autograd, e->ts_ns, event_tid(e), stack_id);
}

__u64 session__autograd_site(struct session *s, struct target *t, const struct gp_launch_event *e,
			     __u32 stack_id)
{
	__u32 caller;
	bool own;

	if (!e->autograd_pass)
		return stack_id;
	s->autograd_launches++;
	s->autograd_after_node += (e->flags & GP_EV_F_AG_AFTER) != 0;
	caller = caller_of(t, e, &own);
	if (own) {
		s->autograd_own_thread++;
		return stack_id;
	}
	if (!caller || !stack_id) {
		s->autograd_caller_unknown++;
		return stack_id;
	}
	s->autograd_under_caller++;
	return site__make(stack_id, caller);
}

bool session__autograd_under(struct session *s, __u32 pid, __u64 site, __u32 *ret_stack,
			     struct profile_under *ret_under)
{
	struct target *t;
	__u32 tid, caller_stack;

	if (!site__caller(site) || !site__stack(site))
		return false;
	t = target_table__find(&s->tt, (pid_t)pid);
	if (!t || !t->autograd ||
	    !autograd_callers__get(t->autograd, site__caller(site), &tid, &caller_stack) ||
	    !caller_stack)
		return false;
	snprintf(s->autograd_marker, sizeof(s->autograd_marker), "[autograd thread for tid %u]", tid);
	*ret_under = (struct profile_under){ .stack = site__stack(site), .marker = s->autograd_marker };
	*ret_stack = caller_stack;
	return true;
}
