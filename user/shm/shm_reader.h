/* SPDX-License-Identifier: MIT */
/*
 * The loader's side of the shim's shared memory (shim/gp_abi.h): find the
 * memfd in a profiled process, map it, validate its layout, and read records,
 * names, counters and cubins out of it.
 *
 * The loader runs as root and the memory is written by an unprivileged
 * process (DESIGN.md invariant 5): every read copies the bytes out first and
 * validates the copy; positions are clamped; nothing outside the mapping is
 * ever touched; every anomaly is counted. The reader writes only the
 * consumer area. It takes no lock the shim could hold (invariant 3).
 */
#ifndef GP_USER_SHM_READER_H
#define GP_USER_SHM_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "shim/gp_abi.h"
#include "shim/cubin_queue.h"

/* Written into a name buffer when a name cannot be read safely. */
#define SHM_READER_BAD_NAME "[bad name]"

/* Errors (negative errno), beyond allocation and open failures:
 *   -ESRCH       the pid is gone
 *   -ENOENT      the pid has no gpuprobe-shm mapping
 *   -EPROTO      wrong magic: not a gpuprobe shm
 *   -EPROTONOSUPPORT  a layout version this loader does not know
 *   -EBADMSG     inconsistent layout (sizes, offsets, overlaps, too small)
 *   -EBADFD      the memfd is not sealed against shrinking (would SIGBUS us)
 *   -EBUSY       another loader reads the ring (alive, heartbeat fresh): one
 *                reader per ring. A dead or silent one's ring is taken over.
 */

struct shm_reader_stats {
	__u64 records_read;    /* valid records returned */
	__u64 records_bad;     /* slots that failed validation, skipped */
	__u64 ring_resyncs;    /* record head went backwards or leapt a ring ahead */
	__u64 names_bad;       /* lookups answered with SHM_READER_BAD_NAME */
	__u64 str_used_bad;    /* published str_used beyond the table, clamped */
};

struct shm_reader;
struct bounded;

/* The ring pid maps, its file opened as a bounded call through b (user/util/bounded.h). */
int shm_reader__open_pid(struct bounded *b, pid_t pid, struct shm_reader **ret_r);
/*
 * shm_reader__open_pid in two steps, for a caller with work between
 * finding a ring and claiming it (a shim records from the claim on): the
 * ring's file (*ret_fd, the caller's to close), then the ring read from
 * it, as pid's.
 */
int shm_reader__find_pid(struct bounded *b, pid_t pid, int *ret_fd);
int shm_reader__open_found(int fd, pid_t pid, struct shm_reader **ret_r);
/* fd is not taken over; the mapping outlives it. Claims the ring: its shim records. */
int shm_reader__open_fd(int fd, struct shm_reader **ret_r);
/* 0 when fd holds a ring its shim has laid out (shm_reader__open_fd would try to claim it). */
int shm_reader__fd_ready(int fd);
/*
 * Opens the ring pid just made as its fd number fd (a hostile claim): 0 and
 * *ret_fd, an fd of the same memfd, for shm_reader__open_fd once the shim
 * has laid it out; -ENOENT when that fd is not a memfd of GP_SHM_NAME;
 * -ESRCH when pid is gone.
 */
int shm_reader__grab_fd(pid_t pid, int fd, int *ret_fd);
/* mem (8-byte aligned, size bytes) must outlive the reader; not freed. */
int shm_reader__open_mem(void *mem, size_t size, struct shm_reader **ret_r);
void shm_reader__destroy(struct shm_reader *r);
/*
 * Says "a loader is here" in a ring just made (fd held by the ring watch,
 * maybe not yet sized by its shim): stamps its heartbeat, so the shim
 * records from its first launch (shim/gp_abi.h, "no reader, no records").
 * Claims nothing. Refuses anything but a memfd (-EINVAL): the fd number
 * came from a hostile process, and a write to a FUSE file could block.
 * paused: between the duty cycle's windows, record_pause is set first, so
 * the shim never sees a reader without it.
 */
int shm_reader__mark_watched(int fd, __u64 now_ns, bool paused);
/* The pid of the loader that last claimed pid's ring (0: none), after -EBUSY; opened as above. */
int shm_reader__holder(struct bounded *b, pid_t pid, pid_t *ret_holder);

/* Checks a layout snapshot against the bytes really available. */
int shm_reader__validate_layout(const struct gp_shm_layout *l, __u64 real_size);
/* The validated snapshot; later changes in shared memory are ignored. */
const struct gp_shm_layout *shm_reader__layout(const struct shm_reader *r);

/*
 * Copies the valid records among the next max slots out; *ret_n set (fewer
 * than max when some were invalid, counted, or the ring ran dry). 0 or -errno.
 */
int shm_reader__read(struct shm_reader *r, struct gp_record *recs, size_t max, size_t *ret_n);
/* Records published and not read yet (a lying head is resynced first). */
__u64 shm_reader__backlog(struct shm_reader *r);
/* Records read so far (free-running): past read_pos + backlog, all of the backlog was read. */
__u64 shm_reader__read_pos(const struct shm_reader *r);

/*
 * Copies the NUL-terminated name at off into buf (len >= 1). On failure buf
 * holds SHM_READER_BAD_NAME (or the truncated name for -ENAMETOOLONG) and
 * the error is -ERANGE (off past the published table) or -EBADMSG (no NUL).
 */
int shm_reader__name(struct shm_reader *r, __u32 off, char *buf, size_t len);

void shm_reader__counters(const struct shm_reader *r, __u64 ret_ctr[GP_CTR_MAX]);
__u32 shm_reader__flags(const struct shm_reader *r);
/*
 * When the shim last recorded its calls' activity (gp_abi.h, "no reader, no
 * records"), for join__recording: from *ret_on (its record_on_ns) to
 * *ret_off (its record_off_ns; 0 while it records now). 0 and 0 for a shim
 * that never switched (inert, or older: always on); *ret_on UINT64_MAX for
 * one never on. Returns whether it records now (or never switched).
 * Hostile: a lie only relabels the target's own launches.
 */
bool shm_reader__record_span(const struct shm_reader *r, __u64 *ret_on, __u64 *ret_off);
/*
 * The shim's stamp of its latest switch off (its record_off_ns, kept while a
 * later span records): 0 if never. Hostile, as the span.
 */
__u64 shm_reader__record_last_off(const struct shm_reader *r);
__s64 shm_reader__clock_offset(const struct shm_reader *r);
/* Asks the shim for no records now (between the duty cycle's windows), or for them again. */
void shm_reader__pause(struct shm_reader *r, bool paused);
void shm_reader__stats(const struct shm_reader *r, struct shm_reader_stats *ret_stats);

/* The cubin ring as a CubinQueue (settle/drain/format_counters). */
struct cubin_queue *shm_reader__cubins(struct shm_reader *r);
int shm_reader__settle(struct shm_reader *r, cubin_crc_fn crc, void *crc_ctx,
		       cubin_record_fn on_record, void *rec_ctx);

/*
 * The exit handshake (shim/gp_abi.h): the loader stamps a heartbeat and its
 * tick each visit; once it has read everything of an exiting process (and
 * symbolized its stacks) it acknowledges the exit_seq it saw, which lets the
 * process finish exiting before its one-tick wait runs out.
 */
void shm_reader__heartbeat(struct shm_reader *r, __u64 now_ns, __u32 tick_ms);
__u64 shm_reader__exit_seq(const struct shm_reader *r);
void shm_reader__ack_exit(struct shm_reader *r, __u64 seq);

/* 0 while the process lives, -ESRCH once gone, -EOPNOTSUPP for fd/mem readers. */
int shm_reader__alive(const struct shm_reader *r);

#endif /* GP_USER_SHM_READER_H */
