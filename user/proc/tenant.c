/* SPDX-License-Identifier: MIT */
/*
 * Which tenant a process is (proc.h, proc__tenant): its cgroup2 path, cut
 * at a delegation, or where there is no cgroup2 path every v1 line, each
 * cut at a delegation in its hierarchy.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "user/proc/proc.h"
#include "user/proc/proc_internal.h"
#include "user/util/tenants.h"
#include "user/util/u64map.h"

/* The loader's cgroup2 hierarchy, opened once (-1: none). */
static int cg2_fd = -1;
static pthread_once_t cg2_once = PTHREAD_ONCE_INIT;

static void cg2_open(void)
{
	char dir[PATH_MAX];

	if (!proc__cgroup2_mount(dir, sizeof(dir)))
		cg2_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* The owner of cgroup rel (relative to the hierarchy's root dirfd; "" is the root), or -1. */
static long cg_owner(int dirfd, const char *rel)
{
	struct stat st;

	if (fstatat(dirfd, *rel ? rel : ".", &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
		return -1;
	return (long)st.st_uid;
}

/*
 * How much of cgroup path rel (after its leading '/', in the hierarchy at
 * dirfd) names the tenant: a cgroup a user owns (one delegated to it, as
 * systemd's user@.service, and those it made below) goes up to the highest
 * ancestor of that owner in one line, so that making cgroups makes no more
 * tenants. Root-owned: the path whole.
 */
static size_t delegation_cut(int dirfd, char *rel, size_t len)
{
	long owner = cg_owner(dirfd, rel), up;
	char *slash;

	if (owner <= 0)
		return len;
	while ((slash = strrchr(rel, '/'))) {
		*slash = 0;
		up = cg_owner(dirfd, rel);
		if (up != owner) {
			*slash = '/';
			break;
		}
		len = (size_t)(slash - rel);
	}
	if (!slash && cg_owner(dirfd, "") == owner)
		return 0; /* the whole hierarchy one user's */
	return len;
}

static __u64 hash_bytes(__u64 h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = u64map__hash(h ^ (unsigned char)s[i]);
	return h > TENANT_UNKNOWN ? h : TENANT_UNKNOWN + 1;
}

/*
 * The loader's cgroup v1 hierarchies (each mounted at its root), by their
 * controllers as a cgroup file names them ("cpu,cpuacct", "name=systemd"):
 * read again when the loader's mount table changed (POLLPRI on it).
 */
#define V1_HIERARCHIES 32
static struct v1_table {
	pthread_mutex_t lock;
	struct proc_mount_table mounts; /* the loader's own */
	unsigned n;
	struct v1_hierarchy {
		char ctrl[64];  /* the mount's options that name controllers, ','-joined */
		char *point;    /* where it is mounted (opened at each use: no mount is held) */
	} h[V1_HIERARCHIES];
} v1 = { .lock = PTHREAD_MUTEX_INITIALIZER, .mounts = PROC_MOUNT_TABLE(0) };

/* Whether option opt (n bytes) of a cgroup v1 mount names a controller or a named hierarchy. */
static bool v1_controller_opt(const char *opt, size_t n)
{
	static const char *not_controllers[] = { "rw", "ro", "none", "noprefix", "xattr", "cpuset_v2_mode",
						  "clone_children", "all", "favordynmods" };

	if (n >= 14 && !memcmp(opt, "release_agent=", 14))
		return false;
	for (size_t i = 0; i < sizeof(not_controllers) / sizeof(not_controllers[0]); i++)
		if (strlen(not_controllers[i]) == n && !memcmp(opt, not_controllers[i], n))
			return false;
	return n > 0;
}

/* Hierarchy m's controllers into h->ctrl in the order of its options; false when none or too long. */
static bool v1_controllers(const struct proc_mount *m, struct v1_hierarchy *h)
{
	size_t used = 0, pos = 0;

	while (pos < m->super_len) {
		const char *opt = m->super + pos, *comma = memchr(opt, ',', m->super_len - pos);
		size_t n = comma ? (size_t)(comma - opt) : m->super_len - pos;

		pos += n + 1;
		if (!v1_controller_opt(opt, n))
			continue;
		if (used + n + 2 > sizeof(h->ctrl))
			return false;
		if (used)
			h->ctrl[used++] = ',';
		memcpy(h->ctrl + used, opt, n);
		used += n;
	}
	h->ctrl[used] = 0;
	return used > 0;
}

static void v1_forget_all(void)
{
	for (unsigned i = 0; i < v1.n; i++)
		free(v1.h[i].point);
	v1.n = 0;
}

/* The hierarchies of mount table text (len bytes), read again (under v1.lock). */
static void v1_read(const char *text, size_t len)
{
	struct proc_mount m;
	size_t pos = 0;

	v1_forget_all();
	while (v1.n < V1_HIERARCHIES && proc__mountinfo_next(text, len, &pos, &m)) {
		struct v1_hierarchy *h = &v1.h[v1.n];

		if (m.type_len != 6 || memcmp(m.type, "cgroup", 6) || m.root_len != 1 ||
		    *m.root != '/' || memchr(m.point, '\\', m.point_len) ||
		    m.point_len >= PATH_MAX || !v1_controllers(&m, h))
			continue;
		h->point = strndup(m.point, m.point_len);
		if (h->point)
			v1.n++;
	}
}

/* The root of the hierarchy of controllers ctrl (n bytes), opened; -1 where not mounted (under v1.lock). */
static int v1_open(const char *ctrl, size_t n)
{
	for (unsigned i = 0; i < v1.n; i++)
		if (strlen(v1.h[i].ctrl) == n && !memcmp(v1.h[i].ctrl, ctrl, n))
			return open(v1.h[i].point, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return -1;
}

/* The table, read first or again when the mount table changed (under v1.lock). */
static void v1_fresh(void)
{
	const char *text;
	size_t len;
	bool changed;

	if (proc__mount_table_get(&v1.mounts, &text, &len, &changed))
		v1_forget_all();
	else if (changed)
		v1_read(text, len);
}

/* Line (n bytes, "ID:controllers:/path", no '\n') hashed into h, its path cut at a delegation. */
static __u64 v1_hash_line(__u64 h, const char *line, size_t n)
{
	const char *c1 = memchr(line, ':', n);
	const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
	size_t plen = c2 ? n - (size_t)(c2 + 1 - line) : 0;
	char rel[PATH_MAX];
	int fd;

	if (!c2 || plen < 2 || c2[1] != '/' || plen > sizeof(rel) || memchr(c2 + 1, '\0', plen) ||
	    (fd = v1_open(c1 + 1, (size_t)(c2 - c1 - 1))) < 0)
		return hash_bytes(h, line, n);
	memcpy(rel, c2 + 2, plen - 1); /* after the leading '/', with room for its NUL */
	rel[plen - 1] = 0;
	h = hash_bytes(h, c1 + 1, (size_t)(c2 + 1 - (c1 + 1)));
	h = hash_bytes(h, rel, delegation_cut(fd, rel, plen - 1));
	close(fd);
	return h;
}

__u64 proc__tenant_v1(const char *text, size_t n)
{
	__u64 h = 0x243f6a8885a308d3ull;
	const char *line;
	size_t pos = 0, ll;

	pthread_mutex_lock(&v1.lock);
	v1_fresh();
	while (proc__next_line(text, n, &pos, &line, &ll)) {
		h = v1_hash_line(h, line, ll);
		h = hash_bytes(h, "\n", 1);
	}
	pthread_mutex_unlock(&v1.lock);
	return h;
}

__u64 proc__tenant(pid_t pid)
{
	char *text = malloc(CGROUP_FILE_MAX), rel[PATH_MAX];
	const char *v2;
	size_t n, len;
	__u64 h = TENANT_UNKNOWN;

	if (!text)
		return TENANT_UNKNOWN;
	if (proc__read_cgroup(pid, text, CGROUP_FILE_MAX, &n) || !n)
		goto out;
	pthread_once(&cg2_once, cg2_open);
	/* Its cgroup2 path when it has one below the root, cut at a delegation. */
	if (cg2_fd >= 0 && !proc__cgroup_v2_line(text, n, &v2, &len) && len > 1 && len < sizeof(rel)) {
		memcpy(rel, v2 + 1, len - 1);
		rel[len - 1] = 0;
		h = hash_bytes(0x243f6a8885a308d1ull, rel, delegation_cut(cg2_fd, rel, len - 1));
	} else {
		h = proc__tenant_v1(text, n);
	}
out:
	free(text);
	return h;
}
