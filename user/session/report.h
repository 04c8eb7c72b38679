/* SPDX-License-Identifier: MIT */
/*
 * The loader's report lines, formatted from snapshots of its figures (the
 * session takes them: snapshot.c), never from the session itself:
 *   "counters:" every loss and what was joined (user/util/counters.h), at
 *               the end and, with -v, every tick;
 *   "loader:"   what the loader itself cost, for benchmarks without an
 *               outside tool (tools/gpu/loader_line.py reads it);
 *   "tables:"   -v, after each --interval window: what its tables hold.
 * Tests and tools parse these lines by name: a name, once printed, stays.
 */
#ifndef GP_SESSION_REPORT_H
#define GP_SESSION_REPORT_H

#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "user/util/counters.h"

/* The loader's stages, timed so that benchmarks can say where its time goes. */
enum stage {
	STAGE_START,  /* BPF programs loaded (verified) and attached, threads and targets set up */
	STAGE_EVENTS, /* launch events: stacks unwound and interned, launches queued to join */
	STAGE_SHIM,   /* the shim's rings read: records, names, cubins taken in */
	STAGE_SETTLE, /* cubins settled: CRCs, symbols */
	STAGE_JOIN, STAGE_SCAN, STAGE_NAME, STAGE_WRITE, STAGE_MAX
};

/* The stack cache's part of the loader line. */
struct cache_costs {
	__u64 hits, misses, audits, audits_skipped, unusable_launches; /* the BPF side's counts */
	size_t keys, capacity, split_keys;
	__u64 installs, confirmed, splits, young_caught, audits_short, unreadable, evicted,
		forgotten, full, map_errors;
	__u64 other_state; /* misses not learnt: made with the shim off (key_state.h) */
	__u64 maps_changed, py_checks, py_replaced, py_kept, py_kept_stale;
};

/* The "loader:" line's figures. */
struct loader_costs {
	double cpu_s, wall_s, max_rss_mb, cpu_user_s, cpu_sys_s;
	double stage_ms[STAGE_MAX];
	double copy_kib_mean;
	__u64 copy_sizes_grown, copy_sizes_shrunk;
	double queue_peak_mb, queue_mb, syms_mb, cfi_mb, memo_hit_pct;
	__u64 maps_reread, py_looks;
	double start_cpu_s, pump_cpu_s, unwind_ms;
	__u64 lookups;
	double lookup_ms, settle_cpu_ms;
	double helper_cpu_s, helper_rss_mb; /* the CRC helper's (0: none runs) */
	struct cache_costs cache;
};

/* The "tables:" line's figures. */
struct table_sizes {
	unsigned window;
	size_t raw_stacks, targets;
	__u64 stacks, frames, strings, procs, cubins;
};

void report__loader_line(const struct loader_costs *c, FILE *f);
/*
 * "verdict:" first at the end, for a person: what was captured (launch
 * events, GPU activities and how many were attributed, the profile's GPU
 * time), then "losses: none" or each loss counter that moved; or, when
 * nothing was captured, that it was not and the likely reason. c: the
 * counters registry (names as the counters line prints them); gpu_ns: the
 * written profile's GPU time.
 */
void report__verdict(const struct counters *c, __u64 gpu_ns, FILE *f);
void report__tables_line(const struct table_sizes *t, FILE *f);

#endif /* GP_SESSION_REPORT_H */
