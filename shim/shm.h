/* SPDX-License-Identifier: MIT */
/*
 * The shim's side of the shared memory (shim/gp_abi.h): creates the memfd
 * inside the profiled process, lays it out, and is its only producer.
 *
 * Everything here runs inside programs we do not own, partly on application
 * threads inside vendor callbacks (DESIGN.md invariant 1): writers take only
 * the shim's own private leaf mutex, never wait for the loader, and drop the
 * newest record when a ring is full (counted). Positions the loader writes
 * are read only to compute free space, and clamped (invariant 3).
 */
#ifndef GP_SHIM_SHM_H
#define GP_SHIM_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include "shim/gp_abi.h"

struct cubin_ring;

/* Sizes, from the environment (GPUPROBE_*) or defaults; see shm_config__from_env. */
struct shm_config {
	__u64 ring_records; /* record slots; rounded up to a power of two */
	__u64 strtab_bytes; /* string table bytes; rounded up to a page */
	__u64 cubin_bytes;  /* cubin ring bytes; rounded up to a power of two */
	__u64 cubin_max;    /* largest cubin accepted (bytes) */
};

#define SHM_RING_RECORDS_DEFAULT 65536ull
#define SHM_RING_RECORDS_MIN     64ull
#define SHM_RING_RECORDS_MAX     (1ull << 24)
#define SHM_STRTAB_KB_DEFAULT    1024ull
#define SHM_STRTAB_KB_MIN        16ull
#define SHM_STRTAB_KB_MAX        (64ull * 1024)
#define SHM_CUBIN_MB_DEFAULT     128ull
#define SHM_CUBIN_MB_MIN         1ull
#define SHM_CUBIN_MB_MAX         4096ull
#define SHM_CUBIN_MAX_MB_DEFAULT 64ull
/* Names longer than this are interned truncated (mangled C++ rarely is). */
#define SHM_NAME_MAX             4096u

void shm_config__defaults(struct shm_config *cfg);
/*
 * Fills cfg from GPUPROBE_RING_RECORDS, GPUPROBE_STRTAB_KB, GPUPROBE_CUBIN_MB
 * and GPUPROBE_CUBIN_MAX_MB, clamping each into its range. cfg is always
 * filled; returns -EINVAL when some variable was garbage (its default kept).
 */
int shm_config__from_env(struct shm_config *cfg);
/* Rounds and clamps cfg in place to what shm__create will lay out. */
void shm_config__normalize(struct shm_config *cfg);

struct shm;

/* Creates, sizes, seals and maps the memfd GP_SHM_NAME and writes its layout. */
int shm__create(const struct shm_config *cfg, struct shm **ret_shm);
void shm__destroy(struct shm *shm);
/*
 * In a fork() child (single-threaded at that point): stop touching the
 * parent's memory for good, without taking any lock a vanished parent
 * thread may hold. The mapping itself is MADV_DONTFORK.
 */
void shm__detach(struct shm *shm);
bool shm__detached(const struct shm *shm);

/* The memfd (MFD_CLOEXEC), for tests and same-process readers. */
int shm__fd(const struct shm *shm);
struct gp_shm_header *shm__header(const struct shm *shm);
__u64 shm__size(const struct shm *shm);

/* 0; -ENOSPC when the ring is full (counted GP_CTR_RING_DROPPED); -ENODEV detached. */
int shm__write_record(struct shm *shm, const struct gp_record *rec);
/*
 * Interns name, giving its string table offset (0 is the empty name).
 * -ENOSPC when the table (or its index) is full: counted GP_CTR_STRINGS_FULL,
 * *ret_off is then 0 so the record still goes out, nameless.
 */
int shm__intern(struct shm *shm, const char *name, __u32 *ret_off);

void shm__count(struct shm *shm, enum gp_counter ctr, __u64 n);
__u64 shm__counter(const struct shm *shm, enum gp_counter ctr);
void shm__set_flags(struct shm *shm, __u32 set, __u32 clear);
void shm__set_clock_offset(struct shm *shm, __s64 offset_ns);

/*
 * True while a loader reads this ring (gp_abi.h, "no reader, no records"):
 * the memfd is the loader's own, or its heartbeat is fresh at now (CLOCK_MONOTONIC).
 */
bool shm__reader_live(const struct shm *shm, __u64 now);
/* True while the reader asks for no records (gp_abi.h: record_pause). */
bool shm__reader_paused(const struct shm *shm);
/* Publishes that activity went on (or off) at now, and counts the switch. */
void shm__set_recording(struct shm *shm, bool on, __u64 now);
__u64 shm__now_ns(void); /* CLOCK_MONOTONIC */

/* At exit: lets a live loader read the last records, waiting one tick at most. */
void shm__exit_handshake(struct shm *shm);
/* Describes this memfd's cubin ring for cubin_queue__new. */
void shm__cubin_ring(const struct shm *shm, struct cubin_ring *ret_ring);

#endif /* GP_SHIM_SHM_H */
