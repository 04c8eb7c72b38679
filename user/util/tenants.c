/* SPDX-License-Identifier: MIT */
/* What the bounded calls and the file loads cost each tenant (tenants.h). */
#include <stddef.h>
#include "user/util/tenants.h"

void tenants__init(struct tenants *ts, __u64 budget_ns)
{
	*ts = (struct tenants){ .budget_ns = budget_ns, .refill = TENANT_REFILL };
}

void tenants__set_refill(struct tenants *ts, unsigned refill)
{
	ts->refill = refill ? refill : 1;
}

/* t's debt at now: what it owed at paid_ns, less what the time since paid back. */
static __u64 debt(const struct tenants *ts, const struct tenant *t, __u64 now)
{
	__u64 paid = now > t->paid_ns ? (now - t->paid_ns) / ts->refill : 0;

	return t->debt_ns > paid ? t->debt_ns - paid : 0;
}

static bool refused(const struct tenants *ts, const struct tenant *t, __u64 now)
{
	return t->stuck >= TENANT_STUCK_MAX || debt(ts, t, now) >= ts->budget_ns;
}

static struct tenant *find(struct tenants *ts, __u64 id)
{
	for (unsigned i = 0; i < ts->n; i++)
		if (ts->t[i].id == id)
			return &ts->t[i];
	return NULL;
}

/*
 * id's entry, made when new: in a free slot, else in place of one with
 * nothing to remember (no stuck worker, no debt left); NULL when every
 * one has something.
 */
static struct tenant *get(struct tenants *ts, __u64 id, __u64 now)
{
	struct tenant *t = find(ts, id);

	if (t)
		return t;
	if (ts->n < TENANTS_MAX) {
		t = &ts->t[ts->n++];
	} else {
		for (unsigned k = 0; k < TENANTS_MAX && !t; k++) {
			struct tenant *c = &ts->t[(ts->next + k) % TENANTS_MAX];

			if (!c->stuck && !debt(ts, c, now))
				t = c;
		}
		ts->next = (ts->next + 1) % TENANTS_MAX;
		if (!t)
			return NULL;
	}
	*t = (struct tenant){ .id = id, .paid_ns = now };
	return t;
}

bool tenants__refuses(const struct tenants *ts, __u64 id, __u64 now)
{
	for (unsigned i = 0; i < ts->n; i++)
		if (ts->t[i].id == id)
			return refused(ts, &ts->t[i], now);
	return false;
}

bool tenants__stuck(struct tenants *ts, __u64 id, int delta)
{
	struct tenant *t = delta > 0 ? get(ts, id, 0) : find(ts, id);

	if (!t)
		return false;
	if (delta > 0)
		t->stuck++;
	else if (t->stuck)
		t->stuck--;
	return true;
}

void tenants__took(struct tenants *ts, __u64 id, __u64 ns, __u64 now)
{
	struct tenant *t;

	if (!ns || !(t = get(ts, id, now)))
		return;
	t->debt_ns = debt(ts, t, now) + ns;
	t->paid_ns = now;
}

unsigned tenants__refused(const struct tenants *ts, __u64 now)
{
	unsigned n = 0;

	for (unsigned i = 0; i < ts->n; i++)
		n += refused(ts, &ts->t[i], now);
	return n;
}
