/* SPDX-License-Identifier: MIT */
/* The thread moving launch events out of the BPF ring (event_pump.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "user/session/event_pump.h"
#include "user/util/thread.h"

#define PUMP_POLL_MS 5
#define SYNC_MAX_NS 1000000000ll

/* Copies the event in under the lock: the main thread may take the block it lands in. */
static int pump_event(void *ctx, const struct gp_launch_event *e, size_t size)
{
	struct event_pump *p = ctx;
	int err;

	pthread_mutex_lock(&p->lock);
	err = event_queue__push(&p->q, e, size);
	if (err == -ENOSPC)
		p->full = true; /* left in the BPF ring: taken on a later pass */
	else if (!err)
		pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return err;
}

static void *pump_main(void *arg)
{
	struct event_pump *p = arg;

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		__u64 gen;
		bool full;

		pthread_mutex_lock(&p->lock);
		gen = p->req;
		p->full = false;
		pthread_mutex_unlock(&p->lock);
		launch_probe__poll(p->lp, PUMP_POLL_MS, pump_event, p);
		pthread_mutex_lock(&p->lock);
		p->done = gen;
		full = p->full;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		if (full)
			usleep(1000); /* the main thread is behind: let it catch up */
	}
	return NULL;
}

int event_pump__start(struct event_pump *p, struct launch_probe *lp, size_t max_bytes)
{
	pthread_condattr_t ca;
	int err;

	memset(p, 0, sizeof(*p));
	p->lp = lp;
	event_queue__init(&p->q, max_bytes);
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	err = thread__start_quiet(&p->thread, pump_main, p);
	if (err)
		return err;
	p->running = true;
	return 0;
}

void event_pump__stop(struct event_pump *p)
{
	if (!p->lp)
		return;
	if (p->running) {
		__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
		pthread_join(p->thread, NULL);
		p->running = false;
	}
	event_queue__consume(&p->q, event_queue__take(&p->q), NULL, NULL);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	p->lp = NULL;
}

static struct timespec deadline_in(long long ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns += ts.tv_nsec;
	ts.tv_sec += ns / 1000000000ll;
	ts.tv_nsec = ns % 1000000000ll;
	return ts;
}

bool event_pump__sync(struct event_pump *p)
{
	struct timespec until = deadline_in(SYNC_MAX_NS);
	bool complete;
	__u64 gen;

	pthread_mutex_lock(&p->lock);
	gen = ++p->req;
	while (p->running && p->done < gen &&
	       pthread_cond_timedwait(&p->cond, &p->lock, &until) != ETIMEDOUT)
		;
	complete = p->done >= gen && !p->full;
	pthread_mutex_unlock(&p->lock);
	return complete;
}

struct drain_ctx {
	launch_event_fn fn;
	void *ctx;
};

static int drain_one(void *ctx, const void *data, size_t len)
{
	struct drain_ctx *d = ctx;

	return d->fn(d->ctx, data, len);
}

int event_pump__drain(struct event_pump *p, int timeout_ms, launch_event_fn fn, void *ctx)
{
	struct timespec until = deadline_in((long long)timeout_ms * 1000000ll);
	struct drain_ctx d = { .fn = fn, .ctx = ctx };
	struct eq_block *list;

	pthread_mutex_lock(&p->lock);
	while (timeout_ms > 0 && event_queue__empty(&p->q) && p->running &&
	       pthread_cond_timedwait(&p->cond, &p->lock, &until) != ETIMEDOUT)
		;
	list = event_queue__take(&p->q);
	pthread_mutex_unlock(&p->lock);
	return event_queue__consume(&p->q, list, drain_one, &d);
}

size_t event_pump__peak_bytes(struct event_pump *p)
{
	size_t b;

	pthread_mutex_lock(&p->lock);
	b = p->q.peak_bytes;
	pthread_mutex_unlock(&p->lock);
	return b;
}

size_t event_pump__resident_bytes(struct event_pump *p)
{
	return event_queue__resident(&p->q);
}
