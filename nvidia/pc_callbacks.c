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
		if (__atomic_load_n(&pc.ctx[i].ctx, __ATOMIC_ACQUIRE) == ctx &&
		    __atomic_load_n(&pc.ctx[i].state, __ATOMIC_ACQUIRE) != PC_CLAIMING)
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

/* A slot in state from, taken for ctx: CLAIMING while its context is set (*ret_old: what it held). */
static struct pc_ctx *claim_from(CUcontext ctx, int from, CUcontext *ret_old)
{
	for (size_t i = 0; i < PC_CTX_MAX; i++) {
		struct pc_ctx *c = &pc.ctx[i];
		int st = from;

		if (!__atomic_compare_exchange_n(&c->state, &st, PC_CLAIMING, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		*ret_old = __atomic_exchange_n(&c->ctx, ctx, __ATOMIC_ACQ_REL);
		return c;
	}
	return NULL;
}

/*
 * A slot for a new context: a free one, else one whose context ended. Two
 * threads meeting the context at once may each claim one: the second to
 * finish finds the first's and gives its own back.
 */
static struct pc_ctx *claim(CUcontext ctx)
{
	CUcontext old = NULL;
	struct pc_ctx *c = claim_from(ctx, PC_FREE, &old), *other;
	int from = PC_FREE;

	if (!c) {
		c = claim_from(ctx, PC_GONE, &old);
		from = PC_GONE;
	}
	if (!c)
		return NULL;
	other = slot_of(ctx);
	if (other) { /* given back as it was */
		__atomic_store_n(&c->ctx, old, __ATOMIC_RELEASE);
		__atomic_store_n(&c->state, from, __ATOMIC_RELEASE);
		return other;
	}
	__atomic_store_n(&c->state, PC_SEEN, __ATOMIC_RELEASE);
	return c;
}

/* Application thread: a slot for the context, and PC sampling enabled there once. */
void pc__context_seen(CUcontext ctx)
{
	struct pc_ctx *c;
	int gone = PC_GONE;

	if (!pc.on || !ctx || __atomic_load_n(&pc.exiting, __ATOMIC_ACQUIRE))
		return;
	c = slot_of(ctx);
	if (c) /* a context made again at the address of one that ended: sampled again */
		__atomic_compare_exchange_n(&c->state, &gone, PC_SEEN, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED);
	else if (!(c = claim(ctx))) {
		shm__count(pc.shm, GP_CTR_CUPTI_ERRORS, 1); /* more live contexts than slots: not sampled */
		return;
	}
	enable_if_idle(c);
}

/* Application thread: the slot's lock if free now; counted when the collector holds it. */
static bool lock_if_idle(struct pc_ctx *c)
{
	if (!pthread_mutex_trylock(&c->lock))
		return true;
	shm__count(pc.shm, GP_CTR_PC_UNLOAD_BUSY, 1);
	return false;
}

/*
 * A module loaded: CUPTI flushes into the configured buffer when a module
 * goes and another comes, so what it put there is taken here, as no
 * unload can be writing it now.
 */
void pc__module_loaded(CUcontext ctx)
{
	struct pc_ctx *c;

	pc__context_seen(ctx);
	c = pc.on && ctx ? slot_of(ctx) : NULL;
	if (!c || __atomic_load_n(&c->state, __ATOMIC_ACQUIRE) != PC_ENABLED ||
	    pthread_mutex_trylock(&c->lock))
		return;
	if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == PC_ENABLED)
		pc_ctx__take_flushed(c, __atomic_load_n(&pc.keep, __ATOMIC_ACQUIRE));
	pthread_mutex_unlock(&c->lock);
}

/* A module going: what CUPTI holds is collected first (continuous collection's rule). */
void pc__module_unloading(CUcontext ctx)
{
	struct pc_ctx *c = pc.on && ctx ? slot_of(ctx) : NULL;

	if (!c || __atomic_load_n(&c->state, __ATOMIC_ACQUIRE) != PC_ENABLED || !lock_if_idle(c))
		return;
	if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == PC_ENABLED)
		pc_ctx__drain(c, __atomic_load_n(&pc.keep, __ATOMIC_ACQUIRE), false);
	pthread_mutex_unlock(&c->lock);
}

/*
 * A context ending: GONE first, whatever it was (the collector, once it
 * holds the lock, asks CUPTI nothing more of it); one that was enabled is
 * collected and disabled here.
 */
void pc__context_ending(CUcontext ctx)
{
	struct pc_ctx *c = pc.on && ctx ? slot_of(ctx) : NULL;
	int st;

	if (!c)
		return;
	st = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
	while ((st == PC_SEEN || st == PC_ENABLED || st == PC_FAILED) &&
	       !__atomic_compare_exchange_n(&c->state, &st, PC_GONE, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE))
		;
	if (st != PC_ENABLED || !lock_if_idle(c))
		return;
	pc_ctx__drain(c, __atomic_load_n(&pc.keep, __ATOMIC_ACQUIRE), false);
	pc_ctx__disable(c, __atomic_load_n(&pc.keep, __ATOMIC_ACQUIRE));
	pthread_mutex_unlock(&c->lock);
}
