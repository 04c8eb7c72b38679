/* SPDX-License-Identifier: MIT */
/*
 * CUPTI's activity records copied into the ring's own record type
 * (shim/gp_abi.h): the fields the loader needs, nothing computed but a
 * correlation id widened to 64 bits and a launch's grid and block sizes.
 * Called on CUPTI's buffer thread (or the flushing one): copy only.
 */
#ifndef GP_NVIDIA_DECODE_H
#define GP_NVIDIA_DECODE_H

#include <cupti.h>
#include <stdbool.h>
#include "shim/shm.h"

struct decode_ctx {
	struct shm *shm; /* kernel names are interned in its string table */
	__u64 *corr_hw;  /* atomic: the correlation ids' high-water mark (decode__corr) */
	bool api_filter; /* whole API kinds are on: keep only the listed calls (cbids.h) */
};

enum decode_result { DECODE_KEEP, DECODE_SKIP, DECODE_UNKNOWN };

/*
 * CUPTI's correlation ids are u32 and wrap: id widened to the u64 nearest
 * the high-water mark *hw (which it may raise), so the API record and the
 * kernel records of one call, which may arrive in different buffers, land
 * in the same epoch. 0 stays 0.
 */
__u64 decode__corr(__u64 *hw, __u32 id);
/*
 * a into r (zeroed by the caller): DECODE_KEEP, DECODE_SKIP (an API record
 * of a call not listed, under api_filter), or DECODE_UNKNOWN (a kind the
 * shim never enables).
 */
enum decode_result decode__activity(const struct decode_ctx *c, const CUpti_Activity *a,
				    struct gp_record *r);

#endif
