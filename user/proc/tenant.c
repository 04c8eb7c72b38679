/* SPDX-License-Identifier: MIT */
/*
 * Which tenant a process is (proc.h, proc__tenant): its cgroup2 path, cut
 * at a delegation, or its whole cgroup file where there is no cgroup2 path.
 */
#include <fcntl.h>
#include <limits.h>
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

/* The owner of cgroup rel (relative to the cgroup2 mount; "" is its root), or -1. */
static long cg2_owner(const char *rel)
{
	struct stat st;

	if (fstatat(cg2_fd, *rel ? rel : ".", &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
		return -1;
	return (long)st.st_uid;
}

/*
 * How much of cgroup path rel (after its leading '/') names the tenant: a
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

static __u64 hash_bytes(__u64 h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = u64map__hash(h ^ (unsigned char)s[i]);
	return h > TENANT_UNKNOWN ? h : TENANT_UNKNOWN + 1;
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
		h = hash_bytes(0x243f6a8885a308d1ull, rel, delegation_cut(rel, len - 1));
	} else {
		/* cgroup v1 alone: every line as read */
		h = hash_bytes(0x243f6a8885a308d3ull, text, n);
	}
out:
	free(text);
	return h;
}
