/* SPDX-License-Identifier: MIT */
/*
 * Shared by the PC sampling files of the shim: the collector
 * (pc_sampling.c, the shim's thread) and the callbacks (pc_callbacks.c,
 * application threads).
 */
#ifndef GP_NVIDIA_PC_INTERNAL_H
#define GP_NVIDIA_PC_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nvidia/pc_sampling.h"

#define PC_CTX_MAX 8
#define PC_BATCH 512        /* instructions one GetData hands over */
#define PC_STALLS_MAX 64    /* stall reasons taken from CUPTI's list */
#define PC_GETDATA_MAX 64   /* GetData calls per context per collection */

enum pc_state { PC_FREE = 0, PC_SEEN, PC_ENABLED, PC_FAILED, PC_GONE };

struct pc_buf {
	CUpti_PCSamplingData data;
	CUpti_PCSamplingPCData *pcs;         /* PC_BATCH */
	CUpti_PCSamplingStallReason *stalls; /* PC_BATCH * nstall */
};

struct pc_ctx {
	CUcontext ctx;        /* atomic: claimed from NULL by the first callback that saw it */
	int state;            /* atomic: enum pc_state */
	pthread_mutex_t lock; /* leaf: held across GetData */
	size_t nstall;
	uint32_t *stall_index;
	char **stall_name;
	bool names_sent;      /* the stall names are in the ring since keeping began */
	struct pc_buf cfg;    /* what CUPTI flushes on its own (unload, disable) */
	struct pc_buf out;    /* GetData's */
	char *names[PC_BATCH]; /* one GetData's function names, to free once each */
};

struct pc_shim {
	struct pc_api api;
	struct shm *shm;
	unsigned period;
	bool on;
	int keep;             /* atomic: records are kept (a reader reads) */
	struct pc_ctx ctx[PC_CTX_MAX];
};

extern struct pc_shim pc;

/*
 * pc_sampling.c, for the callbacks: with c's lock held (taken by the
 * caller, with a try-lock on an application thread), PC sampling enabled
 * and configured for c's context; what CUPTI holds for it collected (kept
 * in the ring or not). Neither takes a lock of ours.
 */
void pc_ctx__enable(struct pc_ctx *c);
void pc_ctx__drain(struct pc_ctx *c, bool keep);

#endif /* GP_NVIDIA_PC_INTERNAL_H */
