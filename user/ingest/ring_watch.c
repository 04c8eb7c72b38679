/* SPDX-License-Identifier: MIT */
/* The thread holding shim rings as they are made (ring_watch.h). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "user/ingest/ring_watch.h"
#include "user/util/grow.h"
#include "user/util/thread.h"
#include "user/probe/launch_probe.h"
#include "user/shm/shm_reader.h"

#define WATCH_POLL_MS 100

static __u64 mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}
#define WATCH_QUEUE_MAX 4096

static void push(struct ring_watch *w, struct held_ring h)
{
	struct held_ring *q;

	pthread_mutex_lock(&w->lock);
	q = grow__array_max(w->q, &w->cap, w->n + 1, sizeof(*q), 64, WATCH_QUEUE_MAX);
	if (q)
		w->q = q;
	if (w->n < w->cap) {
		w->q[w->n++] = h;
	} else {
		if (h.fd >= 0)
			close(h.fd);
		w->dropped++;
	}
	pthread_mutex_unlock(&w->lock);
}

static void on_ring(void *ctx, const struct gp_ring_event *e)
{
	struct ring_watch *w = ctx;
	struct held_ring h = { .pid = (pid_t)e->pid, .fd = -EINVAL };
	int fd;

	if (h.pid == w->self || h.pid <= 0)
		return;
	if (e->fd >= 0) {
		int err = shm_reader__grab_fd(h.pid, e->fd, &fd);

		h.fd = err ? err : fd;
		if (!err)
			shm_reader__mark_watched(fd, mono_now(),
						 __atomic_load_n(&w->paused, __ATOMIC_ACQUIRE) != 0);
	}
	push(w, h);
}

/*
 * A process may exit within a millisecond of making its ring: the thread
 * must run the moment the notice arrives, not when the scheduler next gets
 * to it beside busy workloads (on a loaded 2-core machine half of ten
 * short-lived runs lost their rings). It only waits and takes fds, so a
 * real-time priority, the lowest, costs the machine nothing; without the
 * privilege it stays as it was.
 */
static void watch_priority(void)
{
	struct sched_param sp = { .sched_priority = 1 };

	pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

static void *watch_main(void *arg)
{
	struct ring_watch *w = arg;

	watch_priority();
	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE))
		launch_probe__poll_rings(w->lp, WATCH_POLL_MS, on_ring, w);
	return NULL;
}

int ring_watch__start(struct ring_watch *w, struct launch_probe *lp)
{
	int err;

	memset(w, 0, sizeof(*w));
	w->lp = lp;
	w->self = getpid();
	pthread_mutex_init(&w->lock, NULL);
	if (!launch_probe__watches_rings(lp))
		return 0;
	err = thread__start_quiet(&w->thread, watch_main, w);
	if (err)
		return err;
	w->running = true;
	return 0;
}

void ring_watch__stop(struct ring_watch *w)
{
	if (!w->lp)
		return;
	if (w->running) {
		__atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
		pthread_join(w->thread, NULL);
		w->running = false;
	}
	for (size_t i = 0; i < w->n; i++)
		if (w->q[i].fd >= 0)
			close(w->q[i].fd);
	free(w->q);
	w->q = NULL;
	w->n = w->cap = 0;
	pthread_mutex_destroy(&w->lock);
	w->lp = NULL;
}

size_t ring_watch__take(struct ring_watch *w, struct held_ring *out, size_t max)
{
	size_t n;

	pthread_mutex_lock(&w->lock);
	n = w->n < max ? w->n : max;
	memcpy(out, w->q, n * sizeof(*out));
	memmove(w->q, w->q + n, (w->n - n) * sizeof(*out));
	w->n -= n;
	pthread_mutex_unlock(&w->lock);
	return n;
}

__u64 ring_watch__dropped(struct ring_watch *w)
{
	__u64 d;

	pthread_mutex_lock(&w->lock);
	d = w->dropped;
	pthread_mutex_unlock(&w->lock);
	return d;
}
