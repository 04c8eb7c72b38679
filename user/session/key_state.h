/* SPDX-License-Identifier: MIT */
/*
 * Which recording state of its shim a process's stack-cache keys were
 * learnt in, and when a switch of that state makes them stale (the runtime's
 * own launch path differs with CUPTI's activity on and off: docs/UNWINDING.md,
 * "What makes keys go"). The loader looks at the shim's recording span at
 * each visit (shm_reader__record_span); between two looks the shim may have
 * switched more than once. An unseen switch makes the keys stale only when a
 * key was learnt from a launch made after it, judged by the shim's stamp of
 * that switch (record_off_ns of an earlier span, kept while a new one is on).
 * Pure: no session, no clock; the caller forgets the keys.
 */
#ifndef GP_SESSION_KEY_STATE_H
#define GP_SESSION_KEY_STATE_H

#include <stdbool.h>
#include <linux/types.h>

/*
 * The shim stamps a switch just after making it: a launch this much before
 * an off stamp may have taken the path of the state after it.
 */
#define KEY_STATE_STAMP_SLACK_NS 10000000ull

struct key_state {
	__u64 on, off;         /* the span at the last look (shm_reader__record_span) */
	bool seen;             /* looked at once */
	bool keys_on, keys_off; /* keys were learnt from launches judged recording / not
				   (before the first look: both) */
	__u64 on_last_ns;      /* the latest launch that taught a key judged recording */
	__u64 off_last_ns;     /* ... judged not recording */
	__u64 first_min_ns, first_max_ns; /* launches that taught keys before the first look */
	bool probes_on;        /* at the last look */
	bool stale;            /* the keys are to go (key_state__forgot once they went) */
};

/*
 * Whether a launch at ts_ns may teach its key now: made recording, while
 * the shim records (or, the probes paused between duty windows, read late
 * after it stopped: for the next window). Keys are never learnt from
 * launches made with the shim off: it is off for a while only (a mid-run
 * attach before its switch on, a window's edge), and keys learnt then
 * would answer the launches made once it records, whose runtime path
 * differs. Such a launch keeps its own stack. Before the first look: yes,
 * judged then (key_state__look).
 */
bool key_state__may_learn(const struct key_state *ks, __u64 ts_ns);

/* A launch at ts_ns taught (or audited) a key. */
void key_state__note(struct key_state *ks, __u64 ts_ns);

/*
 * A look at the span (on, off) and at the raw stamp of the latest switch off
 * (last_off: shm_reader__record_last_off), the launch probes attached or
 * not (paused between duty windows: keys learnt recording wait for the next
 * window). Sets ks->stale when keys of another state could now be met.
 */
void key_state__look(struct key_state *ks, __u64 on, __u64 off, __u64 last_off, bool probes_on);

/* The keys went: none is of any state now. */
void key_state__forgot(struct key_state *ks);

#endif
