/* SPDX-License-Identifier: MIT */
/*
 * PC sampling's side on application threads (pc_sampling.h): what CUPTI's
 * callbacks do, inside the application's CUDA calls. Nothing here may wait
 * for the shim's thread, which holds a context's lock across CUPTI's
 * GetData: the locks are taken with a try-lock only, and the calls that
 * wait are poisoned below, so that a wait cannot be written in this file
 * (tools/check-pc-unload proves it).
 */
#include "shim/glibc_compat.h"
#include "nvidia/pc_internal.h"
#include "shim/shm.h"

#pragma GCC poison pthread_mutex_lock pthread_mutex_timedlock pthread_cond_wait pthread_cond_timedwait
#pragma GCC poison pthread_rwlock_rdlock pthread_rwlock_wrlock pthread_join sem_wait sem_timedwait
#pragma GCC poison pthread_spin_lock usleep nanosleep sleep

static struct pc_ctx *slot_of(CUcontext ctx)
{
	for (size_t i = 0; i < PC_CTX_MAX; i++)
		if (__atomic_load_n(&pc.ctx[i].ctx, __ATOMIC_ACQUIRE) == ctx)
			return &pc.ctx[i];
	return NULL;
}

/* Enabled now, unless the collector holds the slot (it enables it then). */
static void enable_if_idle(struct pc_ctx *c)
{
	if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) != PC_SEEN || pthread_mutex_trylock(&c->lock))
		return;
	if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == PC_SEEN)
		pc_ctx__enable(c);
	pthread_mutex_unlock(&c->lock);
}

/* Application thread: a slot claimed, and PC sampling enabled there once. */
void pc__context_seen(CUcontext ctx)
{
	struct pc_ctx *c = NULL;
	int gone = PC_GONE;

	if (!pc.on || !ctx)
		return;
	c = slot_of(ctx);
	if (c) {
		/* A context made again at the address of one that ended. */
		__atomic_compare_exchange_n(&c->state, &gone, PC_SEEN, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED);
		enable_if_idle(c);
		return;
	}
	for (size_t i = 0; i < PC_CTX_MAX && !c; i++) {
		CUcontext none = NULL;

		if (__atomic_compare_exchange_n(&pc.ctx[i].ctx, &none, ctx, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			c = &pc.ctx[i];
			__atomic_store_n(&c->state, PC_SEEN, __ATOMIC_RELEASE);
		} else if (none == ctx) {
			c = &pc.ctx[i]; /* another thread claimed it for the same context just now */
		}
	}
	if (!c) {
		shm__count(pc.shm, GP_CTR_CUPTI_ERRORS, 1); /* more contexts than slots: not sampled */
		return;
	}
	enable_if_idle(c);
}

/* Application thread: collects c now if its collector is idle; never waits for it. */
static void collect_if_idle(struct pc_ctx *c)
{
	if (pthread_mutex_trylock(&c->lock)) {
		shm__count(pc.shm, GP_CTR_PC_UNLOAD_BUSY, 1);
		return;
	}
	pc_ctx__drain(c, __atomic_load_n(&pc.keep, __ATOMIC_ACQUIRE));
	pthread_mutex_unlock(&c->lock);
}

void pc__module_unloading(CUcontext ctx)
{
	struct pc_ctx *c = pc.on && ctx ? slot_of(ctx) : NULL;

	if (c && __atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == PC_ENABLED)
		collect_if_idle(c);
}

void pc__context_ending(CUcontext ctx)
{
	struct pc_ctx *c = pc.on && ctx ? slot_of(ctx) : NULL;
	int enabled = PC_ENABLED;

	/* Gone first: the collector, once it holds the lock, no longer asks CUPTI about it. */
	if (c && __atomic_compare_exchange_n(&c->state, &enabled, PC_GONE, false, __ATOMIC_ACQ_REL,
					     __ATOMIC_RELAXED))
		collect_if_idle(c);
}
