/* SPDX-License-Identifier: MIT */
/*
 * CubinQueue: how a loaded cubin travels from the application thread that
 * loaded it to the loader, in three steps (DESIGN.md invariants 1 and 4).
 *
 *   capture()  application thread, inside the vendor's module-loaded
 *              callback: copy the bytes into the bounded cubin ring and
 *              publish them with the callback's module id, load time and tid.
 *              It takes no CRC function (the compile-fail check in
 *              tools/check-cubin-defer keeps it so) and waits on nothing but
 *              the queue's private leaf lock, held only across
 *              reserve + memcpy + publish.
 *   settle()   the loader's tick: copy each pending entry out (hostile bytes),
 *              validate it, compute its CRC through the function it is given,
 *              de-duplicate by CRC, emit one gpu_module_load_v1 record for
 *              EVERY module and offer the first copy of each CRC to drain().
 *              No lock is held across the CRC or the record callback.
 *   drain()    hand the offered cubins (bytes + record) to a consumer.
 *
 * Two separate bounds: the cubin ring (pending, written by capture) and the
 * offer queue (settled bytes retained for drain). A full offer queue drops
 * bytes (counted), never records, and never blocks capture.
 *
 * The ring is described by a struct cubin_ring: in the shim, over its own
 * memfd; in the loader, over its mapping of another process's memfd (the same
 * code); in tests, over plain memory.
 */
#ifndef GP_SHIM_CUBIN_QUEUE_H
#define GP_SHIM_CUBIN_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include "shim/gp_abi.h"

/* Where a cubin ring lives. All pointers into (possibly shared) memory. */
struct cubin_ring {
	__u8 *data;       /* size bytes */
	__u64 size;       /* power of two, >= 2 * sizeof(struct gp_cubin_entry) */
	__u64 max;        /* largest payload accepted, <= size - entry header */
	__u64 *head;      /* producer position, free-running bytes */
	__u64 *tail;      /* consumer position, free-running bytes */
	__u64 *counters;  /* GP_CTR_MAX counters (enum gp_counter) */
	/*
	 * The settler's other way to the payloads: when set, read with pread
	 * from fd at fd_off + position. A mapping of another process's memfd
	 * faults its pages in one at a time as they are copied, and keeps them
	 * in the reader's RSS; the file hands them over from the page cache
	 * (docs/BENCHMARKS.md, 2026-12-04: on the H200 about 19 MB less peak
	 * RSS on (b), no CPU saved; on the development machine 24 against 95
	 * ms for 54 MB). The headers are still read through data.
	 */
	bool read_fd;
	int fd;
	__u64 fd_off;     /* data's offset in fd's file */
};

/* What the module-loaded callback saw. Deliberately no CRC here. */
struct cubin_capture {
	__u64 module_id;
	__u64 load_ns;    /* CLOCK_MONOTONIC at the callback */
	__u32 tid;
	__u32 reserved0;
	const void *data;
	__u64 size;
};

/* One per loaded module, duplicates included: module id -> CRC. */
struct gpu_module_load_v1 {
	__u64 crc;        /* 0: CRC unknown (the CRC function failed) */
	__u64 module_id;  /* 8: as the load callback gave it */
	__u64 size;       /* 16: cubin bytes */
	__u64 load_ns;    /* 24: CLOCK_MONOTONIC of the load callback */
};
_Static_assert(sizeof(struct gpu_module_load_v1) == 32, "gpu_module_load_v1 ABI");

/* 0 or -errno. Runs with no queue lock held. */
typedef int (*cubin_crc_fn)(void *ctx, const void *cubin, size_t size, __u64 *ret_crc);
typedef void (*cubin_record_fn)(void *ctx, const struct gpu_module_load_v1 *rec);
typedef void (*cubin_drain_fn)(void *ctx, const struct gpu_module_load_v1 *rec,
			       const void *cubin, size_t size);

struct cubin_queue_opts {
	__u32 offer_max_entries; /* 0: CUBIN_OFFER_ENTRIES_DEFAULT */
	__u64 offer_max_bytes;   /* 0: CUBIN_OFFER_BYTES_DEFAULT */
	__u32 dedup_max;         /* distinct CRCs remembered; 0: default */
	__u32 settle_max;        /* entries per settle() call; 0: no limit */
	/*
	 * The settler's own bounds (DESIGN.md invariants 4 and 8), for a ring
	 * another process writes: payload bytes copied out per settle() call
	 * (the entry that crosses it is the last), time per call (checked
	 * between entries), and the largest cubin it copies out at all: a
	 * bigger entry, however the ring's layout allows it, is skipped unread
	 * (counted cubin_over_limit; its record has crc 0). 0: no bound.
	 */
	__u64 settle_max_bytes;
	__u64 settle_max_ns;
	__u64 size_max;
	/* The settler's clock in ns (tests set their own); NULL: CLOCK_MONOTONIC. */
	__u64 (*clock_ns)(void);
};

#define CUBIN_OFFER_ENTRIES_DEFAULT 256u
#define CUBIN_OFFER_BYTES_DEFAULT   (256ull << 20)
#define CUBIN_DEDUP_DEFAULT         65536u

/* Loader-side counters (the shim-side ones live in the ring's counters). */
struct cubin_queue_stats {
	__u64 modules_captured;   /* GP_CTR_MODULES_CAPTURED */
	__u64 cubin_too_large;    /* GP_CTR_CUBIN_TOO_LARGE */
	__u64 cubin_pending_full; /* GP_CTR_CUBIN_PENDING_FULL */
	__u64 cubin_pending_depth;/* bytes published, not yet settled */
	__u64 ring_dropped;       /* GP_CTR_RING_DROPPED */
	__u64 cupti_dropped;      /* GP_CTR_CUPTI_DROPPED */
	__u64 modules_settled;    /* records emitted */
	__u64 cubin_duplicates;   /* settled modules whose CRC was seen before */
	__u64 cubin_offer_full;   /* first copies dropped: offer queue full */
	__u64 cubin_dedup_full;   /* CRCs not remembered: dedup table full */
	__u64 cubin_garbage;      /* resyncs over invalid ring contents */
	__u64 cubin_crc_failed;   /* CRC function errors (record has crc 0) */
	__u64 cubin_nomem;        /* copies lost to allocation failure */
	__u64 modules_drained;
	__u64 cubin_over_limit;   /* entries over opts.size_max: skipped unread */
	__u64 settle_cut;         /* settle() calls that stopped at a bound, entries left */
	__u64 settle_deferred;    /* settle() calls that settled nothing: paying back an overrun */
};

struct cubin_queue;

/* ring is copied; its memory must outlive the queue. */
int cubin_queue__new(const struct cubin_ring *ring, const struct cubin_queue_opts *opts,
		     struct cubin_queue **ret_q);
void cubin_queue__destroy(struct cubin_queue *q);
/* fork() child: never touch the ring or the (possibly held) lock again. */
void cubin_queue__detach(struct cubin_queue *q);

/*
 * Application thread. 0; -EFBIG over the per-cubin limit (counted
 * cubin_too_large); -ENOSPC pending ring full (counted cubin_pending_full,
 * nothing written); -ENODEV detached; -EINVAL bad arguments.
 */
int cubin_queue__capture(struct cubin_queue *q, const struct cubin_capture *cap);

/*
 * Loader tick (one settler at a time). Returns the number of modules
 * settled (records emitted) or -errno. crc must not be NULL; on_record may be.
 * It stops at the opts' bounds (entries, bytes, time); what is left waits
 * for the next call. The time bound holds on average over calls: a call
 * always takes one entry, and the time one took past the bound (a large
 * cubin) is paid back by the calls after it, each settling nothing and
 * paying one bound's worth until it is paid (settle_deferred).
 */
int cubin_queue__settle(struct cubin_queue *q, cubin_crc_fn crc, void *crc_ctx,
			cubin_record_fn on_record, void *rec_ctx);

/* Delivers up to max (0: all) offered cubins; returns how many. */
int cubin_queue__drain(struct cubin_queue *q, unsigned max, cubin_drain_fn fn, void *ctx);

void cubin_queue__stats(const struct cubin_queue *q, struct cubin_queue_stats *ret_stats);
/*
 * One report line, no newline: "modules_captured=N cubin_too_large=N
 * cubin_pending_depth=N cubin_pending_full=N ring_dropped=N cupti_dropped=N
 * ...". Returns snprintf's length or -EINVAL.
 */
int cubin_queue__format_counters(const struct cubin_queue *q, char *buf, size_t len);

#endif /* GP_SHIM_CUBIN_QUEUE_H */
