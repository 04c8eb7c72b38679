/* SPDX-License-Identifier: MIT */
/* The outer level (see nofp.h), in a library of its own. */
#include <pthread.h>
#include "nofp.h"

extern volatile long nofp_sink;

__attribute__((noinline)) int nofp_level1(CUfunction f, int n, int depth_pad)
{
	volatile int scratch[24];
	int r;

	scratch[5] = depth_pad;
	__asm__ volatile("mov $0x1234, %%rbp" ::: "rbp");
	r = nofp_level2(f, n, scratch[5]);
	nofp_sink += scratch[5];
	return r;
}

struct spawn_arg {
	CUcontext ctx;
	CUfunction f;
	int n, rc;
};

static void *spawn_main(void *p)
{
	struct spawn_arg *a = p;

	a->rc = cuCtxSetCurrent(a->ctx) ? -1 : nofp_level1(a->f, a->n, 3);
	return NULL;
}

/*
 * n launches from a thread of our own, the caller waiting for it: how
 * PyTorch's autograd runs backward() on its device threads.
 */
int nofp_spawn(CUcontext ctx, CUfunction f, int n)
{
	struct spawn_arg a = { ctx, f, n, 0 };
	pthread_t th;

	if (pthread_create(&th, NULL, spawn_main, &a))
		return -1;
	pthread_join(th, NULL);
	return a.rc;
}

/* The one thread behind nofp_worker_run: a job is n launches of f; 0: none. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	CUfunction f;
	int todo, rc;
	int started;
} worker = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0 };

static void *worker_main(void *ctx)
{
	int set = cuCtxSetCurrent(ctx) ? -1 : 0;

	pthread_mutex_lock(&worker.mu);
	for (;;) {
		CUfunction f;
		int n, rc;

		while (!worker.todo)
			pthread_cond_wait(&worker.cv, &worker.mu);
		f = worker.f;
		n = worker.todo;
		pthread_mutex_unlock(&worker.mu);
		rc = set ? set : nofp_level1(f, n, 3);
		pthread_mutex_lock(&worker.mu);
		worker.rc = rc;
		worker.todo = 0;
		pthread_cond_broadcast(&worker.cv);
	}
	return NULL;
}

/*
 * n launches from a thread of our own that lives on between calls, the
 * caller waiting: PyTorch's autograd device threads, which launch every
 * backward() of a run while the Python caller waits in it.
 */
int nofp_worker_run(CUcontext ctx, CUfunction f, int n)
{
	pthread_t th;
	int rc;

	pthread_mutex_lock(&worker.mu);
	if (!worker.started) {
		if (pthread_create(&th, NULL, worker_main, ctx)) {
			pthread_mutex_unlock(&worker.mu);
			return -1;
		}
		pthread_detach(th);
		worker.started = 1;
	}
	while (worker.todo) /* another caller's job first */
		pthread_cond_wait(&worker.cv, &worker.mu);
	worker.f = f;
	worker.todo = n;
	pthread_cond_broadcast(&worker.cv);
	while (worker.todo)
		pthread_cond_wait(&worker.cv, &worker.mu);
	rc = worker.rc;
	pthread_mutex_unlock(&worker.mu);
	return rc;
}
