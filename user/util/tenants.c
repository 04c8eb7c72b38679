/* SPDX-License-Identifier: MIT */
/* The bounded calls' cost per tenant (tenants.h). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "user/util/tenants.h"
#include "user/util/u64map.h"

/* The cgroup2 hierarchy's mount in the loader's own mount table (-1: none found). */
static int cg2_fd = -1;
static pthread_once_t cg2_once = PTHREAD_ONCE_INIT;

static void cg2_find(void)
{
	char line[4096], dir[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");

	while (f && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - cgroup2 ");

		/* id parent major:minor root mount-point ...: the fifth field */
		if (sep && sscanf(line, "%*s %*s %*s %*s %4095s", dir) == 1 && !strchr(dir, '\\')) {
			cg2_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
			break;
		}
	}
	if (f)
		fclose(f);
}

/* The owner of cgroup rel (relative to the cgroup2 mount; "" is its root), or -1. */
static long cg2_owner(const char *rel)
{
	struct stat st;

	if (fstatat(cg2_fd, *rel ? rel : ".", &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
		return -1;
	return (long)st.st_uid;
}

/*
 * How much of cgroup path (after its leading '/') names the tenant: a
 * cgroup a user owns (one delegated to it, as systemd's user@.service,
 * and those it made below) goes up to the highest ancestor of that owner
 * in one line, so that making cgroups makes no more tenants. Root-owned:
 * the path whole.
 */
static size_t delegation_cut(char *rel, size_t len)
{
	long owner = cg2_owner(rel), up;
	char *slash;

	if (owner <= 0)
		return len;
	while ((slash = strrchr(rel, '/'))) {
		*slash = 0;
		up = cg2_owner(rel);
		if (up != owner) {
			*slash = '/';
			break;
		}
		len = (size_t)(slash - rel);
	}
	if (!slash && cg2_owner("") == owner)
		return 0; /* the whole hierarchy one user's */
	return len;
}

/* The cgroup2 line's path (after "0::/"), copied into rel; its length, or -1 without one. */
static long v2_path(const char *buf, size_t n, char *rel, size_t cap)
{
	const char *p = NULL, *end;
	size_t len;

	if (n >= 4 && !memcmp(buf, "0::/", 4))
		p = buf + 4;
	for (size_t i = 0; !p && i + 5 <= n; i++)
		if (buf[i] == '\n' && !memcmp(buf + i + 1, "0::/", 4))
			p = buf + i + 5;
	if (!p)
		return -1;
	end = memchr(p, '\n', n - (size_t)(p - buf));
	len = end ? (size_t)(end - p) : n - (size_t)(p - buf);
	if (len >= cap)
		return -1;
	memcpy(rel, p, len);
	rel[len] = 0;
	return (long)len;
}

__u64 tenant__of(pid_t pid)
{
	char path[64], buf[4096], rel[4096];
	__u64 h = 0x243f6a8885a308d3ull;
	const char *what = buf;
	ssize_t n;
	long len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return TENANT_UNKNOWN;
	/*
	 * Its cgroup2 path when it has one below the root, cut at a
	 * delegation; else (cgroup v1 alone) every line as read.
	 */
	pthread_once(&cg2_once, cg2_find);
	len = v2_path(buf, (size_t)n, rel, sizeof(rel));
	if (len > 0 && cg2_fd >= 0) {
		n = (ssize_t)delegation_cut(rel, (size_t)len);
		what = rel;
		h ^= 0x2;
	}
	for (ssize_t i = 0; i < n; i++)
		h = u64map__hash(h ^ (unsigned char)what[i]);
	return h > TENANT_UNKNOWN ? h : TENANT_UNKNOWN + 1;
}

void tenants__init(struct tenants *ts)
{
	*ts = (struct tenants){ 0 };
}

/* t's debt at now: what it owed at paid_ns, less what the time since paid back. */
static __u64 debt(const struct tenant *t, __u64 now)
{
	__u64 paid = now > t->paid_ns ? (now - t->paid_ns) / TENANT_SLOW_REFILL : 0;

	return t->slow_ns > paid ? t->slow_ns - paid : 0;
}

static bool refused(const struct tenant *t, __u64 now)
{
	return t->stuck >= TENANT_STUCK_MAX || debt(t, now) >= TENANT_SLOW_BUDGET_NS;
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

			if (!c->stuck && !debt(c, now))
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
			return refused(&ts->t[i], now);
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

	if (ns < TENANT_SLOW_NS || !(t = get(ts, id, now)))
		return;
	t->slow_ns = debt(t, now) + ns;
	t->paid_ns = now;
}

unsigned tenants__refused(const struct tenants *ts, __u64 now)
{
	unsigned n = 0;

	for (unsigned i = 0; i < ts->n; i++)
		n += refused(&ts->t[i], now);
	return n;
}
