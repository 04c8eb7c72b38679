/* SPDX-License-Identifier: MIT */
/*
 * What the bounded calls (bounded.h) and the loader's file loads
 * (space_caches) cost each tenant: the processes of one cgroup (a
 * container, a pod, a user's session) together. A tenant is refused, all
 * its processes' calls at once, while its processes hold TENANT_STUCK_MAX
 * stuck workers, or while its calls (every one, however short: a process
 * could answer each just under any threshold) owe more than a budget
 * (TENANT_BUDGET_NS) of the caller's time, a debt paid back at
 * TENANT_REFILL of the time that passes: so one container's
 * processes, stalling a call each or answering each slowly, hold at most
 * a few workers and a tenth of the loader's time after a burst of a few
 * seconds, and the workers left for the others stay theirs.
 *
 * Pure bookkeeping: a tenant is an id the caller computes before the call
 * (proc__tenant: a process's cgroup), never 0; times are the caller's CLOCK_MONOTONIC ns.
 * Single-threaded (the bounded's lock).
 */
#ifndef GP_UTIL_TENANTS_H
#define GP_UTIL_TENANTS_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

#define TENANT_STUCK_MAX 4u
#define TENANT_BUDGET_NS (2ull * 1000000000)
/* The debt paid back per ns that passes: a tenth. */
#define TENANT_REFILL 10u
/* Tenants remembered: past it, one with no stuck worker and not refused is forgotten. */
#define TENANTS_MAX 256u

struct tenant {
	__u64 id;
	__u64 debt_ns;  /* the debt at paid_ns */
	__u64 paid_ns;
	unsigned stuck;
};

struct tenants {
	struct tenant t[TENANTS_MAX];
	unsigned n, next;
	__u64 budget_ns; /* a debt this large refuses */
	unsigned refill; /* a debt is paid back at 1 ns per refill ns that pass */
};

/* The tenant of a process that cannot be read (proc__tenant): one for all such. */
#define TENANT_UNKNOWN 1ull

/* Empty; a tenant owing budget_ns is refused (the bounded calls': TENANT_BUDGET_NS). */
void tenants__init(struct tenants *ts, __u64 budget_ns);
/* Paid back at 1 ns of debt per refill ns (TENANT_REFILL), for tests: slower, to keep one. */
void tenants__set_refill(struct tenants *ts, unsigned refill);
/* Whether id's calls are refused at now. */
bool tenants__refuses(const struct tenants *ts, __u64 id, __u64 now);
/*
 * One more stuck worker of id's (delta 1), or one gone (-1). Whether it was
 * counted (a full table of tenants each remembered for a reason counts no
 * new one): only what was counted may be given back.
 */
bool tenants__stuck(struct tenants *ts, __u64 id, int delta);
/* A call of id's took ns, ending at now. */
void tenants__took(struct tenants *ts, __u64 id, __u64 ns, __u64 now);
/* Tenants refused at now. */
unsigned tenants__refused(const struct tenants *ts, __u64 now);

#endif
