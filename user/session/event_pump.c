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

struct pumped {
	struct pumped *next;
	size_t len;
	__u64 data[];           /* the event, 8-byte aligned */
};

static int pump_event(void *ctx, const struct gp_launch_event *e, size_t size)
{
	struct event_pump *p = ctx;
	struct pumped *n;

	pthread_mutex_lock(&p->lock);
	if (p->bytes + size > p->max_bytes) {
		p->full = true;
		pthread_mutex_unlock(&p->lock);
		return -ENOSPC; /* left in the BPF ring: taken on a later pass */
	}
	pthread_mutex_unlock(&p->lock);
	n = malloc(sizeof(*n) + size);
	if (!n)
		return -ENOMEM;
	n->next = NULL;
	n->len = size;
	memcpy(n->data, e, size);
	pthread_mutex_lock(&p->lock);
	if (p->tail)
		p->tail->next = n;
	else
		p->head = n;
	p->tail = n;
	p->bytes += size;
	if (p->bytes > p->peak_bytes)
		p->peak_bytes = p->bytes;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return 0;
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
	p->max_bytes = max_bytes;
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
	struct pumped *n;

	if (!p->lp)
		return;
	if (p->running) {
		__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
		pthread_join(p->thread, NULL);
		p->running = false;
	}
	while ((n = p->head)) {
		p->head = n->next;
		free(n);
	}
	p->tail = NULL;
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

int event_pump__drain(struct event_pump *p, int timeout_ms, launch_event_fn fn, void *ctx)
{
	struct timespec until = deadline_in((long long)timeout_ms * 1000000ll);
	struct pumped *list, *n;
	int err = 0;

	pthread_mutex_lock(&p->lock);
	while (timeout_ms > 0 && !p->head && p->running &&
	       pthread_cond_timedwait(&p->cond, &p->lock, &until) != ETIMEDOUT)
		;
	list = p->head;
	p->head = p->tail = NULL;
	p->bytes = 0;
	pthread_mutex_unlock(&p->lock);
	while ((n = list)) {
		list = n->next;
		if (!err)
			err = fn(ctx, (const struct gp_launch_event *)n->data, n->len);
		free(n);
	}
	return err;
}

size_t event_pump__peak_bytes(struct event_pump *p)
{
	size_t b;

	pthread_mutex_lock(&p->lock);
	b = p->peak_bytes;
	pthread_mutex_unlock(&p->lock);
	return b;
}
