/* SPDX-License-Identifier: MIT */
/*
 * Which recording state a process's stack-cache keys were learnt in
 * (key_state.h). A launch is judged by the span of the last look: recording
 * from its on stamp until its off stamp.
 */
#include <stdint.h>
#include "user/session/key_state.h"

static bool span_on(__u64 on, __u64 off)
{
	return on != UINT64_MAX && !off;
}

static bool span_records_at(__u64 on, __u64 off, __u64 ts)
{
	return on != UINT64_MAX && ts >= on && (!off || ts < off);
}

bool key_state__may_learn(const struct key_state *ks, __u64 ts_ns)
{
	if (!ks->seen)
		return true; /* judged at the first look */
	if (!span_records_at(ks->on, ks->off, ts_ns))
		return false;
	return span_on(ks->on, ks->off) || !ks->probes_on;
}

void key_state__note(struct key_state *ks, __u64 ts_ns)
{
	if (!ks->seen) {
		/* Judged at the first look, by its span. */
		if (!ks->keys_on || ts_ns < ks->first_min_ns)
			ks->first_min_ns = ts_ns;
		if (!ks->keys_on || ts_ns > ks->first_max_ns)
			ks->first_max_ns = ts_ns;
		ks->keys_on = ks->keys_off = true; /* not known until then */
		return;
	}
	if (span_records_at(ks->on, ks->off, ts_ns)) {
		ks->keys_on = true;
		if (ks->on_last_ns < ts_ns)
			ks->on_last_ns = ts_ns;
	} else {
		ks->keys_off = true;
		if (ks->off_last_ns < ts_ns)
			ks->off_last_ns = ts_ns;
	}
}

/* Whether a key was learnt at or after from (less the stamp's slack), at last_ns the latest. */
static bool learnt_since(bool keys, __u64 last_ns, __u64 from)
{
	return keys && last_ns + KEY_STATE_STAMP_SLACK_NS >= from;
}

/*
 * Recording at the last look and now, in another span: it went off and on
 * unseen. The launches made between were judged recording. With the off's
 * stamp known (after the last span's start, before this one's), the keys
 * are stale only if one was learnt after it; else (a lying or older shim)
 * they are.
 */
static bool off_unseen_stale(const struct key_state *ks, __u64 on, __u64 last_off)
{
	if (last_off <= ks->on || last_off > on)
		return ks->keys_on;
	return learnt_since(ks->keys_on, ks->on_last_ns, last_off);
}

/*
 * The first look: keys learnt before it (a loader attached to a running
 * program learns its first keys at once, maybe before the shim's switch
 * on) are judged by the span it shows, from the first and the last launch
 * that taught one; stale when some were not made in the state it shows.
 */
static void first_look(struct key_state *ks, __u64 on, __u64 off, bool probes_on)
{
	bool had = ks->keys_on, now_on = span_on(on, off);

	ks->on = on;
	ks->off = off;
	ks->seen = true;
	ks->keys_on = ks->keys_off = false;
	ks->on_last_ns = ks->off_last_ns = 0;
	if (!had)
		return;
	if (now_on ? ks->first_min_ns < on :
		     probes_on && on != UINT64_MAX && ks->first_max_ns >= on && ks->first_min_ns < off)
		ks->stale = true;
	key_state__note(ks, ks->first_min_ns);
	key_state__note(ks, ks->first_max_ns);
}

void key_state__look(struct key_state *ks, __u64 on, __u64 off, __u64 last_off, bool probes_on)
{
	bool was_on = span_on(ks->on, ks->off), now_on = span_on(on, off), stale;

	ks->probes_on = probes_on;
	if (ks->seen && on == ks->on && off == ks->off)
		return;
	if (!ks->seen) {
		first_look(ks, on, off, probes_on);
		return;
	}
	if (now_on)
		/* Keys learnt not recording are stale, and those of an unseen off. */
		stale = ks->keys_off || (was_on && off_unseen_stale(ks, on, last_off));
	else
		/*
		 * Keys learnt recording are stale, unless the probes are paused
		 * (between duty windows: the next window's launches are made
		 * recording and meet them again); and those learnt after an
		 * unseen on (judged not recording) are.
		 */
		stale = (ks->keys_on && probes_on) ||
			(!was_on && on != ks->on && learnt_since(ks->keys_off, ks->off_last_ns, on));
	ks->stale = ks->stale || stale;
	ks->on = on;
	ks->off = off;
}

void key_state__forgot(struct key_state *ks)
{
	ks->stale = false;
	ks->keys_on = ks->keys_off = false;
	ks->on_last_ns = ks->off_last_ns = 0;
	ks->first_min_ns = ks->first_max_ns = 0;
}
