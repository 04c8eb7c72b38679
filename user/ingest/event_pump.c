/* SPDX-License-Identifier: MIT */
/* The thread moving launch events out of the BPF ring (event_pump.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "user/ingest/event_pump.h"
#include "user/util/clock.h"
#include "user/util/thread.h"

#define PUMP_POLL_MS 5       /* while events come */
#define PUMP_IDLE_POLL_MS 25 /* after a pass that found none */
#define SYNC_MAX_NS 1000000000ll
/*
 * The pump's nice: when events come it runs before the threads that make
 * them, so the ring stays empty. At the loader's own nice, make demo's
 * burst (4 threads launching on 2 cores) left the ring past half full in 8
 * of 20 runs on an idle machine, stack copies skipped; at -10, in 0 of 20.
 * It only copies, so what it takes is what the launches bring, never more.
 * Refused (not root): it runs at the loader's own.
 */
#define PUMP_NICE (-10)

static struct timespec deadline_in(long long ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns += ts.tv_nsec;
	ts.tv_sec += ns / 1000000000ll;
	ts.tv_nsec = ns % 1000000000ll;
	return ts;
}

/*
 * Copies the event in under the lock (the main thread may take the block it
 * lands in). At the bound, or without memory for a block, it waits for room
 * (the main thread's next drain): returning an error would let libbpf step
 * past the event and lose it uncounted. Meanwhile the BPF ring fills, and
 * the probes count what they cannot send.
 */
static int pump_event(void *ctx, const struct gp_launch_event *e, size_t size)
{
	struct event_pump *p = ctx;
	int err;

	pthread_mutex_lock(&p->lock);
	while (((err = event_queue__push(&p->q, e, size)) == -ENOSPC || err == -ENOMEM) &&
	       !__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		struct timespec until = deadline_in(10 * 1000000ll); /* ENOMEM, empty queue */

		p->full = true;
		pthread_cond_broadcast(&p->cond);
		pthread_cond_timedwait(&p->cond, &p->lock, &until);
	}
	/*
	 * No wakeup per event: the main thread hears of them at the end of the
	 * pass (pump_main), a few ms later at most, and takes them together. A
	 * wakeup each let it take them one or two at a time, a futex round trip
	 * per launch for both threads.
	 */
	if (p->full) {
		p->full = false;
		pthread_cond_broadcast(&p->cond);
	}
	p->pushed = true;
	pthread_mutex_unlock(&p->lock);
	return err;
}

static void *pump_main(void *arg)
{
	struct event_pump *p = arg;
	int timeout_ms = PUMP_POLL_MS;

	(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), PUMP_NICE);

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		bool pushed;

		launch_probe__poll(p->lp, timeout_ms, pump_event, p);
		/*
		 * A pass ends with the ring empty: whoever waits for events or a
		 * mark may look. Nobody is woken for a pass that found nothing:
		 * an idle loader woke 200 times a second for it.
		 */
		pthread_mutex_lock(&p->lock);
		pushed = p->pushed;
		p->pushed = false;
		if (pushed || p->mark_waiters)
			pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		/*
		 * Idle, it looks less often: the probes wake it anyway once a
		 * quarter of the ring is waiting, and a mark waiter waits at most
		 * one idle pass.
		 */
		timeout_ms = pushed ? PUMP_POLL_MS : PUMP_IDLE_POLL_MS;
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

__u64 event_pump__cpu_ns(const struct event_pump *p)
{
	clockid_t cid;

	if (!p->lp || !p->running || pthread_getcpuclockid(p->thread, &cid))
		return 0;
	return clock_ns(cid);
}

void event_pump__stop(struct event_pump *p)
{
	if (!p->lp)
		return;
	if (p->running) {
		pthread_mutex_lock(&p->lock);
		__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&p->cond); /* a pump waiting for room */
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
		p->running = false;
	}
	event_queue__destroy(&p->q, event_queue__take(&p->q));
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	p->lp = NULL;
}

__u64 event_pump__mark(struct event_pump *p)
{
	__u64 consumed, reserved;

	launch_probe__ring_positions(p->lp, &consumed, &reserved);
	return reserved;
}

static bool consumed_to(struct event_pump *p, __u64 mark)
{
	__u64 consumed, reserved;

	launch_probe__ring_positions(p->lp, &consumed, &reserved);
	return consumed >= mark;
}

bool event_pump__reached(struct event_pump *p, __u64 mark)
{
	struct timespec until = deadline_in(SYNC_MAX_NS);
	bool reached;

	pthread_mutex_lock(&p->lock);
	p->mark_waiters++;
	/* A pump waiting for room waits for the caller: hand the queue back to it. */
	while (!(reached = consumed_to(p, mark)) && p->running &&
	       !(p->full && !event_queue__empty(&p->q)) &&
	       pthread_cond_timedwait(&p->cond, &p->lock, &until) != ETIMEDOUT)
		;
	p->mark_waiters--;
	pthread_mutex_unlock(&p->lock);
	return reached;
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

bool event_pump__wait(struct event_pump *p, int timeout_ms)
{
	struct timespec until = deadline_in((long long)timeout_ms * 1000000ll);
	bool some;

	pthread_mutex_lock(&p->lock);
	while (timeout_ms > 0 && event_queue__empty(&p->q) && p->running &&
	       pthread_cond_timedwait(&p->cond, &p->lock, &until) != ETIMEDOUT)
		;
	some = !event_queue__empty(&p->q);
	pthread_mutex_unlock(&p->lock);
	return some;
}

int event_pump__drain(struct event_pump *p, launch_event_fn fn, void *ctx)
{
	struct drain_ctx d = { .fn = fn, .ctx = ctx };
	struct eq_block *list;

	pthread_mutex_lock(&p->lock);
	list = event_queue__take(&p->q);
	if (p->full)
		pthread_cond_broadcast(&p->cond); /* room for the waiting pump */
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

size_t event_pump__resident_peak(struct event_pump *p)
{
	return event_queue__resident_peak(&p->q);
}
