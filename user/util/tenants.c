/* SPDX-License-Identifier: MIT */
/* The bounded calls' cost per tenant (tenants.h). */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include "user/util/tenants.h"
#include "user/util/u64map.h"

__u64 tenant__of(pid_t pid)
{
	char path[64], buf[4096];
	__u64 h = 0x243f6a8885a308d3ull;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return ((__u64)1 << 63) | (__u64)pid; /* a tenant of its own */
	for (ssize_t i = 0; i < n; i++)
		h = u64map__hash(h ^ (unsigned char)buf[i]);
	return h ? h : 1;
}

void tenants__init(struct tenants *ts)
{
	*ts = (struct tenants){ 0 };
}

static bool refused(const struct tenant *t)
{
	return t->slow_refused || t->stuck >= TENANT_STUCK_MAX;
}

static struct tenant *find(struct tenants *ts, __u64 id)
{
	for (unsigned i = 0; i < ts->n; i++)
		if (ts->t[i].id == id)
			return &ts->t[i];
	return NULL;
}

/* id's entry, made when new: in a free slot, else in place of one with nothing to remember. */
static struct tenant *get(struct tenants *ts, __u64 id)
{
	struct tenant *t = find(ts, id);

	if (t)
		return t;
	if (ts->n < TENANTS_MAX) {
		t = &ts->t[ts->n++];
	} else {
		for (unsigned k = 0; k < TENANTS_MAX && !t; k++) {
			struct tenant *c = &ts->t[(ts->next + k) % TENANTS_MAX];

			if (!c->stuck && !c->slow_refused)
				t = c;
		}
		ts->next = (ts->next + 1) % TENANTS_MAX;
		if (!t)
			return NULL; /* every one remembered for a reason: not counted */
	}
	*t = (struct tenant){ .id = id };
	return t;
}

bool tenants__refuses(const struct tenants *ts, __u64 id)
{
	for (unsigned i = 0; i < ts->n; i++)
		if (ts->t[i].id == id)
			return refused(&ts->t[i]);
	return false;
}

/* Runs change on t, keeping the count of refused tenants. */
static void update(struct tenants *ts, struct tenant *t, int stuck_delta, __u64 slow_ns)
{
	bool was = refused(t);

	if (stuck_delta < 0 && t->stuck)
		t->stuck--;
	else if (stuck_delta > 0)
		t->stuck++;
	t->slow_ns += slow_ns;
	if (t->slow_ns >= TENANT_SLOW_BUDGET_NS)
		t->slow_refused = true;
	if (refused(t) && !was)
		ts->limited++;
	else if (!refused(t) && was)
		ts->limited--;
}

void tenants__stuck(struct tenants *ts, __u64 id, int delta)
{
	struct tenant *t = delta > 0 ? get(ts, id) : find(ts, id);

	if (t)
		update(ts, t, delta, 0);
}

void tenants__took(struct tenants *ts, __u64 id, __u64 ns)
{
	struct tenant *t;

	if (ns < TENANT_SLOW_NS || !(t = get(ts, id)))
		return;
	update(ts, t, 0, ns);
}
