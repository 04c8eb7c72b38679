/* SPDX-License-Identifier: MIT */
/*
 * Calls that a profiled process can make block in the kernel for as long as
 * it likes, run where they cannot hold the loader (DESIGN.md invariant 8): a
 * path walk or an open through a FUSE mount whose daemon it runs, a read of
 * its memory that faults on a page it serves (FUSE, userfaultfd), a ptrace
 * stop of one of its threads. Each call runs in a worker process (a fork of
 * the loader, every other fd closed) and the caller waits for its answer at
 * most BOUNDED_TIMEOUT_MS (and, for a call that starts a worker, that start:
 * BOUNDED_START_MS at most). A call that misses it is abandoned with its
 * worker: killed, left to the kernel (a process in an uninterruptible FUSE
 * wait dies when the daemon lets go), never waited for, so that nothing it
 * holds can delay the loader, not even its exit. The next call starts a
 * fresh worker.
 *
 * The process that made a call miss its deadline (the key the caller gives:
 * its pid; its start time tells a reused pid apart) has its later calls
 * refused at once, for the rest of the run: one stuck worker per hostile
 * process, not one per call. Processes of one cgroup are one tenant
 * (tenants.h), known before each call: one whose processes hold
 * TENANT_STUCK_MAX stuck workers, or whose calls (every one) owe more than
 * TENANT_BUDGET_NS (paid back at a tenth of the time that passes),
 * has all its calls refused, so that a container starting stallers by the
 * dozen holds a few workers, not all of them. At most BOUNDED_MAX_STUCK workers may be stuck
 * at a time; past that, every call is refused until one is gone.
 *
 * Both bounds belong to a struct bounded, as its worker does: the processes
 * it remembers stalling and its stuck workers; another struct bounded
 * neither sees nor counts them. The loader makes exactly one, owned by its
 * session and handed to everything that makes bounded calls (the in-root
 * opens, the remote reads, the ptrace stops), so the bounds are still the
 * loader's, whoever made the call: a stuck worker is a resource of the
 * loader's process.
 */
#ifndef GP_UTIL_BOUNDED_H
#define GP_UTIL_BOUNDED_H

#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

/* How long a caller waits for one call. */
#define BOUNDED_TIMEOUT_MS 250u
/*
 * How long a new worker may take to start: not counted in a call's wait, but
 * a caller whose call starts a worker (the first, or one after a worker was
 * given up) may wait this much more. A worker is a fork of the loader that
 * reads nothing of a target's before it says it is ready: only a starved
 * machine makes it slow. A call whose worker did not start fails -EAGAIN.
 */
#define BOUNDED_START_MS 10000u
/* Workers stuck in abandoned calls, at most. */
#define BOUNDED_MAX_STUCK 64u
/* Processes remembered as stalling (the oldest forgotten past this). */
#define BOUNDED_MAX_STALLED 1024u
/* The largest job. */
#define BOUNDED_JOB_MAX (128u << 10)

/*
 * What runs in the worker: job is its copy of the caller's (plain data, no
 * pointers into the caller's memory); in_fd its copy of the fd the caller
 * passed (-1: none; closed after fn). An fd it stores in *ret_fd (left -1:
 * none) is sent back, and its copy closed.
 */
typedef void (*bounded_fn)(void *job, int in_fd, int *ret_fd);

struct bounded;

/* No worker yet: the first call starts one. NULL without memory. */
struct bounded *bounded__new(void);
/*
 * The tenant of a process (a caller's, as proc__tenant: never 0;
 * TENANT_UNKNOWN for one it cannot read). Once b is given one, each call's
 * key is counted against its tenant as well (tenants.h); without one, only
 * against the process itself.
 */
typedef __u64 (*bounded_tenant_fn)(pid_t pid);
void bounded__set_tenants(struct bounded *b, bounded_tenant_fn tenant_of);
/* For tests: a tenant's debt paid back at 1 ns per refill ns (TENANT_REFILL by default). */
void bounded__set_refill(struct bounded *b, unsigned refill);
/*
 * Its worker killed and its socket closed, its stuck workers left to the
 * kernel, none waited for, as the loader's exit would. No call may be in
 * progress. NULL-safe.
 */
void bounded__free(struct bounded *b);

/*
 * Runs fn(job) in b's worker and copies the job back when it answers in
 * time. key: the process the call touches (0: none). Returns 0 once fn ran
 * (its own status is in job) and *ret_fd (may be NULL when fn sends none)
 * is the fd it sent, or -1; -ETIMEDOUT when it missed the deadline;
 * -EDEADLK when it was refused without running (key stalled before in b, or
 * too many of b's workers stuck); -EIO when the worker died in the call;
 * -EINVAL, -ENOMEM, -errno of starting a worker. Calls through one b run
 * one at a time.
 */
int bounded__call(struct bounded *b, pid_t key, bounded_fn fn, void *job, size_t size, int in_fd,
		  int *ret_fd);

struct bounded_stats {
	__u64 calls;
	__u64 timeouts;      /* calls abandoned at their deadline */
	__u64 refused;       /* calls refused at once: a stalled process, or too many stuck */
	__u64 stuck;         /* abandoned workers not gone yet */
	__u64 start_failed;  /* workers that did not start (BOUNDED_START_MS): their calls failed */
	__u64 tenants_refused; /* tenants whose calls are refused now (tenants.h) */
};
/* b's figures; its stuck workers that have gone since are reaped first. */
void bounded__stats(struct bounded *b, struct bounded_stats *ret_stats);

#endif /* GP_UTIL_BOUNDED_H */
