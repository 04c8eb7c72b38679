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
#define PC_NAMES_MAX 8192   /* CUPTI's function names a context keeps until exit */

/*
 * A slot's life: FREE, or CLAIMING while a callback takes it for a context;
 * SEEN until enabled; ENABLED or FAILED; GONE when its context ended (or
 * the process is exiting): a context made again at the same address makes
 * it SEEN again, any other may claim it.
 */
enum pc_state { PC_FREE = 0, PC_CLAIMING, PC_SEEN, PC_ENABLED, PC_FAILED, PC_GONE };

struct pc_buf {
	CUpti_PCSamplingData data;
	CUpti_PCSamplingPCData *pcs;         /* PC_BATCH */
	CUpti_PCSamplingStallReason *stalls; /* PC_BATCH * PC_STALLS_MAX */
};

struct pc_ctx {
	CUcontext ctx;        /* atomic: the context, set while CLAIMING */
	int state;            /* atomic: enum pc_state */
	pthread_mutex_t lock; /* leaf: held across every CUPTI call for the context */
	bool room;            /* the buffers and the name set are made */
	size_t nstall;
	uint32_t stall_index[PC_STALLS_MAX];
	char stall_text[PC_STALLS_MAX][CUPTI_STALL_REASON_STRING_SIZE];
	char *stall_name[PC_STALLS_MAX]; /* into stall_text, as CUPTI's call wants */
	unsigned names_gen;   /* pc.keep_gen when its stall names last went whole into the ring */
	struct pc_buf cfg;    /* what CUPTI flushes on its own (unload, disable): read only where
				 it cannot be writing it (a module loaded, the context's end, exit) */
	struct pc_buf out;    /* GetData's */
	/*
	 * CUPTI's function names: one may serve many instructions, in this
	 * hand-over and later ones, so each is kept (once) and freed at exit;
	 * past PC_NAMES_MAX, left to the process.
	 */
	char **names;         /* open addressing, PC_NAMES_MAX * 2 */
	size_t nnames;
};

struct pc_shim {
	struct pc_api api;
	struct shm *shm;
	unsigned period;
	bool on;
	int keep;             /* atomic: records are kept (a reader reads) */
	unsigned keep_gen;    /* atomic: bumped each time keeping begins: the stall names go again */
	int exiting;          /* atomic: no context is enabled from here */
	struct pc_ctx ctx[PC_CTX_MAX];
};

extern struct pc_shim pc;

/*
 * pc_sampling.c, for the callbacks, each with c's lock held (taken by the
 * caller, with a try-lock on an application thread), none taking a lock of
 * ours: PC sampling enabled and configured for c's context; what CUPTI
 * holds for it collected (gone_stops: stop as soon as the context is no
 * longer ENABLED); what CUPTI flushed into the configured buffer taken;
 * PC sampling disabled, then what that flushed taken.
 */
void pc_ctx__enable(struct pc_ctx *c);
void pc_ctx__drain(struct pc_ctx *c, bool keep, bool gone_stops);
void pc_ctx__take_flushed(struct pc_ctx *c, bool keep);
void pc_ctx__disable(struct pc_ctx *c, bool keep);

#endif /* GP_NVIDIA_PC_INTERNAL_H */
