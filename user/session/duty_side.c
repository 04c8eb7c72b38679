/* SPDX-License-Identifier: MIT */
/*
 * The duty cycle applied (session_internal.h; README, "Duty cycle"): the
 * windows duty.c plans, turned into what each side does at their edges.
 *
 * Opening: the rings are asked for records first (each shim's own thread
 * switches CUPTI on, within a few ms on an idle machine: shim/gp_abi.h,
 * record_pause), and the launch probes are resumed a tick later, once every
 * shim says it records (ARM_WAIT_NS at most), the window starting when they
 * are in place: so the launches of a window find their shims recording.
 * Closing: the window ends, then the probes pause and the rings are asked
 * for no records; what was launched inside still joins its records as they
 * come (join__pause). Module and cubin capture never stop.
 */
#include <stdio.h>
#include <unistd.h>
#include "user/session/session_internal.h"
#include "user/util/log.h"

/* The seed of the windows' offsets: not the workload's to guess. */
static __u64 seed(void)
{
	return now_ns() ^ ((__u64)getpid() << 32) ^ (__u64)(unsigned long)&seed;
}

static void note_window(struct session *s, __u64 from, __u64 to)
{
	if (s->nr_win && !s->win_to[s->nr_win - 1]) {
		s->win_to[s->nr_win - 1] = to;
		return;
	}
	if (s->nr_win == PROFILE_WINDOWS_MAX) {
		s->win_more++;
		return;
	}
	s->win_from[s->nr_win] = from;
	s->win_to[s->nr_win++] = to;
}

void session__duty_setup(struct session *s, __u64 now)
{
	s->duty_state = DUTY_ON;
	s->duty_since = now;
	if (s->o->duty >= 1.0)
		return;
	s->duty_cycled = true;
	duty__init(&s->duty, s->o->duty, (__u64)(s->o->window_s * NS_PER_S),
		   (__u64)(cli__duty_period(s->o) * NS_PER_S), now, seed());
	s->duty_state = DUTY_OFF;
	launch_probe__pause(s->lp, true);
	__atomic_store_n(&s->rw.paused, 1, __ATOMIC_RELEASE);
	join__pause(s->join, now);
	log_info("duty cycle: %.3g%% of each %g s in windows of %g s or more, at random offsets%s",
		 100 * duty__fraction(&s->duty), cli__duty_period(s->o),
		 (double)s->duty.to[0] / NS_PER_S - (double)s->duty.from[0] / NS_PER_S,
		 duty__fraction(&s->duty) > s->o->duty + 1e-9 ? " (more than asked: one --window a period)" : "");
}

bool session__rings_wanted(const struct session *s)
{
	return s->duty_state != DUTY_OFF;
}

/*
 * How long a window's probes wait for the shims to record. A shim whose
 * thread is starved, or a target that never records (hostile, or its CUPTI
 * refused), delays a window by this much at most: the window then opens,
 * counted in duty_unready, and the launches of a shim not yet recording are
 * labelled [no GPU record: before the shim recorded].
 */
#define ARM_WAIT_NS (1000 * NS_PER_MS)

/* Whether this target's shim says it records (or never switches: inert, or older). */
static bool target_recording(const struct target *t)
{
	__u64 on, off;

	return !t->shm || shm_reader__record_span(t->shm, &on, &off);
}

/* Whether every shim waited for says it records. */
static bool rings_recording(const struct session *s)
{
	for (size_t i = 0; i < s->tt.n; i++) {
		const struct target *t = s->tt.t[i];

		if (duty_wait__waited(&t->duty_wait) && !target_recording(t))
			return false;
	}
	return true;
}

/* At a window's opening: a strike for a target waited for and not recording; earning back. */
static void note_strikes(struct session *s, struct target *t)
{
	if (duty_wait__note(&t->duty_wait, target_recording(t)))
		s->duty_unwaited++;
}

static void open_window(struct session *s, bool ready)
{
	__u64 at;

	if (!ready)
		s->duty_unready++;
	for (size_t i = 0; i < s->tt.n; i++)
		note_strikes(s, s->tt.t[i]);

	launch_probe__pause(s->lp, false); /* what fails is counted there */
	at = now_ns();
	join__resume(s->join, at);
	s->duty_state = DUTY_ON;
	s->duty_since = at;
	s->duty_windows++;
	note_window(s, at, 0);
	log_debug(s->o->verbose, "duty: window open at %llu (CLOCK_MONOTONIC ns)", (unsigned long long)at);
}

/*
 * The window ends when its probes go, not at the tick's start: a tick's
 * earlier work can take a while on a loaded machine, and the launches made
 * meanwhile were seen, with their records kept: they are the window's.
 */
static void close_window(struct session *s)
{
	__u64 now = now_ns();

	join__pause(s->join, now);
	launch_probe__pause(s->lp, true);
	__atomic_store_n(&s->rw.paused, 1, __ATOMIC_RELEASE);
	s->duty_on_ns += now - s->duty_since;
	note_window(s, s->duty_since, now);
	s->duty_state = DUTY_OFF;
	s->duty_since = now;
	log_debug(s->o->verbose, "duty: window closed at %llu (CLOCK_MONOTONIC ns)", (unsigned long long)now);
}

void session__duty_tick(struct session *s, __u64 now)
{
	bool want;

	if (!s->duty_cycled || s->stop_ns)
		return;
	want = duty__on(&s->duty, now);
	switch (s->duty_state) {
	case DUTY_OFF:
		/* A tick ahead: the probes follow the rings a tick later, on time. */
		if (duty__on(&s->duty, now + s->o->tick_ms * NS_PER_MS)) {
			__atomic_store_n(&s->rw.paused, 0, __ATOMIC_RELEASE);
			s->duty_state = DUTY_ARMING; /* the rings are told at their visits */
			s->duty_since = now;
			s->duty_due = false;
		}
		break;
	case DUTY_ARMING:
		/* Its plan's start passed, the window waits for the shims a while. */
		s->duty_due = s->duty_due || want;
		if (s->duty_due) {
			bool ready = rings_recording(s);

			if (ready || now - s->duty_since >= ARM_WAIT_NS)
				open_window(s, ready);
		} else if (!duty__on(&s->duty, now + s->o->tick_ms * NS_PER_MS)) {
			__atomic_store_n(&s->rw.paused, 1, __ATOMIC_RELEASE);
			s->duty_state = DUTY_OFF;
		}
		break;
	case DUTY_ON:
		/* Never shorter than --window, however late a tick came. */
		if (!want && now - s->duty_since >= s->duty.window_ns)
			close_window(s);
		break;
	}
}

/* Window i of the current profile within [from, to) (an open one runs to to): its length. */
static __u64 window_in(const struct session *s, unsigned i, __u64 from, __u64 to, __u64 *ret_at)
{
	__u64 a = s->win_from[i] > from ? s->win_from[i] : from;
	__u64 b = s->win_to[i] && s->win_to[i] < to ? s->win_to[i] : to;

	*ret_at = a;
	return b > a ? b - a : 0;
}

__u64 session__duty_on_in(const struct session *s, __u64 from, __u64 to)
{
	__u64 on = 0, at;

	if (!s->duty_cycled)
		return to > from ? to - from : 0;
	for (unsigned i = 0; i < s->nr_win; i++)
		on += window_in(s, i, from, to, &at);
	return on;
}

void session__duty_profile_done(struct session *s, __u64 end)
{
	bool open = s->nr_win && !s->win_to[s->nr_win - 1];

	s->nr_win = 0;
	s->win_more = 0;
	if (open) /* the window goes on in the next profile */
		note_window(s, end, 0);
}

size_t session__duty_comments(const struct session *s, __u64 from, __u64 to, char (*lines)[96],
			      size_t max)
{
	__u64 on = session__duty_on_in(s, from, to);
	size_t n = 0;

	if (!s->duty_cycled || max < 2)
		return 0;
	snprintf(lines[n++], 96, "gpuprobe-bpf duty cycle: %.3g%% asked, %.3f s of %.3f s in windows",
		 100 * s->o->duty, (double)on / NS_PER_S, (double)(to - from) / NS_PER_S);
	snprintf(lines[n++], 96, "values were measured in the windows only: scale by %.4g for the whole",
		 on ? (double)(to - from) / (double)on : 0.0);
	for (unsigned i = 0; i < s->nr_win && n < max; i++) {
		__u64 at, len = window_in(s, i, from, to, &at);

		if (len)
			snprintf(lines[n++], 96, "window: +%.3f s for %.3f s", (double)(at - from) / NS_PER_S,
				 (double)len / NS_PER_S);
	}
	if (s->win_more && n < max)
		snprintf(lines[n++], 96, "windows not listed: %u", s->win_more);
	return n;
}

void session__duty_line(const struct session *s, FILE *f)
{
	__u64 on = s->duty_on_ns, now = s->stop_ns ? s->stop_ns : now_ns(), total = now - s->start_ns;

	if (!s->duty_cycled)
		return;
	if (s->duty_state == DUTY_ON)
		on += now - s->duty_since;
	fprintf(f, "duty: %.3g%% asked, %llu windows, %.1f s of %.1f s recorded (%.3g%%): the profile's "
		   "values are what was measured in them, scale by %.4g for the whole run%s\n",
		100 * s->o->duty, (unsigned long long)s->duty_windows, (double)on / NS_PER_S,
		(double)total / NS_PER_S, total ? 100.0 * (double)on / (double)total : 0.0,
		on ? (double)total / (double)on : 0.0,
		launch_probe__pause_errors(s->lp) ? "; some probes could not be attached again (duty_probe_errors)" : "");
}
