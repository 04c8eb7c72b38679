/* SPDX-License-Identifier: MIT */
/*
 * What the bounded calls (bounded.h) cost each tenant: the processes of one
 * cgroup (a container, a pod, a user's session) together. A tenant is
 * refused, all its processes' calls at once, when its processes hold
 * TENANT_STUCK_MAX stuck workers, or when its slow calls (each at least
 * TENANT_SLOW_NS) have taken TENANT_SLOW_BUDGET_NS of the caller's time in
 * all: so one container's processes, stalling a call each or answering
 * each just before the deadline, hold at most a few workers and a few
 * seconds of the loader, and the workers left for the others stay theirs.
 * A tenant refused for slowness stays refused for the run; one at its stuck
 * bound, until one of its workers is gone.
 *
 * Pure bookkeeping: a tenant is an id the caller computes (tenant__of),
 * never 0. Single-threaded (the bounded's lock).
 */
#ifndef GP_UTIL_TENANTS_H
#define GP_UTIL_TENANTS_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

#define TENANT_STUCK_MAX 4u
#define TENANT_SLOW_NS (20ull * 1000000)
#define TENANT_SLOW_BUDGET_NS (2ull * 1000000000)
/* Tenants remembered: past it, one with no stuck worker and not refused is forgotten. */
#define TENANTS_MAX 256u

struct tenant {
	__u64 id;
	__u64 slow_ns;
	unsigned stuck;
	bool slow_refused;
};

struct tenants {
	struct tenant t[TENANTS_MAX];
	unsigned n, next;
	unsigned limited; /* tenants refused now: 0 lets a caller skip tenant__of */
};

/* The tenant of pid: a hash of its /proc/<pid>/cgroup (the pid itself when unreadable). */
__u64 tenant__of(pid_t pid);

void tenants__init(struct tenants *ts);
/* Whether id's calls are refused now. */
bool tenants__refuses(const struct tenants *ts, __u64 id);
/* One more stuck worker of id's (delta 1), or one gone (-1). */
void tenants__stuck(struct tenants *ts, __u64 id, int delta);
/* A call of id's took ns (counted when at least TENANT_SLOW_NS). */
void tenants__took(struct tenants *ts, __u64 id, __u64 ns);
/* Whether any tenant is refused now. */
static inline bool tenants__any_refused(const struct tenants *ts)
{
	return ts->limited != 0;
}

#endif
