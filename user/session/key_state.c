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

void key_state__note(struct key_state *ks, __u64 ts_ns)
{
	if (!ks->seen) {
		ks->keys_on = ks->keys_off = true; /* before the first look: not known */
		ks->on_last_ns = ks->off_last_ns = UINT64_MAX;
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
	return keys && (last_ns == UINT64_MAX || last_ns + KEY_STATE_STAMP_SLACK_NS >= from);
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

void key_state__look(struct key_state *ks, __u64 on, __u64 off, __u64 last_off, bool probes_on)
{
	bool was_on = span_on(ks->on, ks->off), now_on = span_on(on, off), stale;

	if (ks->seen && on == ks->on && off == ks->off)
		return;
	if (!ks->seen) {
		/* Keys learnt before the first look were learnt in the state it shows. */
		ks->on = on;
		ks->off = off;
		ks->seen = true;
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
}
