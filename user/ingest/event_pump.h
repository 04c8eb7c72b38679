/* SPDX-License-Identifier: MIT */
/*
 * Launch events moved out of the BPF ring by a thread of their own. The
 * main thread unwinds, names and joins, and at times stops for a second or
 * more (the CFI tables of libtorch_cuda or cuDNN are built on first use);
 * meanwhile a fast program fills any BPF ring, and the probes then send
 * launches without their stack copies. The pump copies every event into a
 * bounded queue as it arrives, so the ring stays near empty while the main
 * thread is busy; the main thread takes events from the queue instead.
 * At the bound the pump waits for the main thread, the events stay in the
 * BPF ring, and the BPF side's own rules (and counters) apply as before.
 */
#ifndef GP_INGEST_EVENT_PUMP_H
#define GP_INGEST_EVENT_PUMP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "user/probe/launch_probe.h"
#include "user/ingest/event_queue.h"

struct event_pump {
	struct launch_probe *lp;
	pthread_t thread;
	bool running;
	int stop;                  /* atomic */
	pthread_mutex_t lock;      /* leaf: guards everything below */
	pthread_cond_t cond;       /* events queued, or a pass done */
	struct event_queue q;
	bool full;                 /* the pump waits for room */
	bool pushed;               /* events queued in this pass */
	unsigned mark_waiters;     /* threads in event_pump__reached */
};

int event_pump__start(struct event_pump *p, struct launch_probe *lp, size_t max_bytes);
void event_pump__stop(struct event_pump *p);
/* The BPF ring's position now: events reserved before this call lie below it. */
__u64 event_pump__mark(struct event_pump *p);
/*
 * Waits (at most a second) until every event below mark is in the queue;
 * false as soon as the queue is full with the pump waiting for room (drain
 * it, then ask again), or when the second ran out.
 */
bool event_pump__reached(struct event_pump *p, __u64 mark);
/* Waits up to timeout_ms for events, taking none: whether some are queued. */
bool event_pump__wait(struct event_pump *p, int timeout_ms);
/*
 * Hands every event queued now to fn on the calling thread, in order,
 * waiting for none. Returns fn's first error.
 */
int event_pump__drain(struct event_pump *p, launch_event_fn fn, void *ctx);
size_t event_pump__peak_bytes(struct event_pump *p);
/* CPU ns the pump's thread has used (0 when it does not run). */
__u64 event_pump__cpu_ns(const struct event_pump *p);
/* The most memory the queue held (pages written, not yet unmapped) since the last call. */
size_t event_pump__resident_peak(struct event_pump *p);

#endif
