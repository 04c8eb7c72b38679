/* SPDX-License-Identifier: MIT */
/*
 * PC sampling in the shim (--pc-sampling; gp_abi.h's GP_REC_PC records):
 * CUPTI samples warps' program counters with their stall reasons; the
 * shim's own thread enables it per context and collects it, and copies
 * what CUPTI hands over into the ring.
 *
 * Who may call what (DESIGN.md invariant 2, the shim never blocks the
 * application):
 *   - application threads (CUPTI's callbacks): pc__context_seen claims a
 *     slot for a context and, once per context, enables and configures PC
 *     sampling there (CUPTI calls and the slot's buffers, as NVIDIA's
 *     samples do at context creation, so its first kernels are sampled);
 *     pc__module_unloading and pc__context_ending collect (continuous
 *     collection's rule: a module's samples are collected before it goes).
 *     Each takes the slot's lock only with a try-lock, never waiting for
 *     the collector: a collection blocked inside CUPTI while the
 *     application unloads a module must not hang the application (what was
 *     not collected is then lost, counted: GP_CTR_PC_UNLOAD_BUSY, and
 *     CUPTI's dropped samples; a context not enabled is left to the
 *     shim's thread);
 *   - the shim's thread: pc__collect, and pc__at_exit from the exiting one.
 * Each context's collection lock is a leaf: nothing else is taken under it
 * but CUPTI's own and the ring's.
 */
#ifndef GP_NVIDIA_PC_SAMPLING_H
#define GP_NVIDIA_PC_SAMPLING_H

#include <stdbool.h>
#include <cupti.h>
#include <cupti_pcsampling.h>

struct shm;

/* The PC sampling calls, resolved from libcupti (NULL: missing). */
struct pc_api {
	__typeof__(&cuptiPCSamplingEnable) enable;
	__typeof__(&cuptiPCSamplingDisable) disable;
	__typeof__(&cuptiPCSamplingGetNumStallReasons) num_stalls;
	__typeof__(&cuptiPCSamplingGetStallReasons) stalls;
	__typeof__(&cuptiPCSamplingSetConfigurationAttribute) configure;
	__typeof__(&cuptiPCSamplingGetData) get_data;
};

/*
 * GPUPROBE_PC_SAMPLING: unset or empty, off; "0", CUPTI's default period;
 * 5..31, a sample every 2^N cycles per SM. false: off (or a bad value).
 */
bool pc__wanted(unsigned *ret_period);
/* At init, once: on with these calls (all present) into shm. false: off. */
bool pc__setup(const struct pc_api *api, struct shm *shm, unsigned period);
bool pc__on(void);

/* Application threads, inside CUPTI callbacks: a context made, a module loaded or going, a context ending. */
void pc__context_seen(CUcontext ctx);
void pc__module_loaded(CUcontext ctx);
void pc__module_unloading(CUcontext ctx);
void pc__context_ending(CUcontext ctx);

/* Whether what is collected goes into the ring (activity is recording): set where it switches. */
void pc__keep(bool keep);
/* The shim's thread: contexts not yet enabled are; each is collected. */
void pc__collect(void);
/* The exiting thread: a last collection of each context, if idle. */
void pc__at_exit(void);

#endif /* GP_NVIDIA_PC_SAMPLING_H */
