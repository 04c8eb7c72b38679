/* SPDX-License-Identifier: MIT */
/*
 * cgroup v2 paths: of a process (/proc/<pid>/cgroup), and of a cgroup id as
 * BPF reports it (bpf_get_current_cgroup_id() is the kernfs id, which on
 * 64-bit kernels is the inode number of the cgroup's directory in cgroup2).
 * There is no id -> path syscall usable here, so we walk the cgroup2 mount,
 * bounded in depth and in directories visited, and keep what we find in a
 * small table. A cached entry is checked with one fstatat before use: a
 * cgroup may have been removed (ids are not reused, but paths are).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include "user/proc/proc.h"
#include "user/proc/proc_internal.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define CGROUP_FILE_MAX (64 * 1024)
#define MOUNTS_MAX (4 * 1024 * 1024)
#define CGROUP_CACHE_N 64
#define CGROUP_WALK_DEPTH 32
#define CGROUP_WALK_DIRS (1u << 16)

struct cgroup_cache_entry {
	__u64 id;        /* 0: unused */
	char path[PATH_MAX];
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cgroup_cache_entry cache[CGROUP_CACHE_N];
static unsigned cache_next;
static unsigned long cache_hits, cache_misses;
static char cgroup2_mnt[PATH_MAX];   /* "" until found */

int proc__cgroup_path(pid_t pid, char *buf, size_t len)
{
	size_t n, pos = 0;
	char *text;
	int err;

	if (!buf || len == 0)
		return -EINVAL;
	text = malloc(CGROUP_FILE_MAX);
	if (!text)
		return -ENOMEM;
	{
		int dfd = proc__open_pid_dir(pid);

		if (dfd < 0) {
			free(text);
			return dfd;
		}
		err = proc__read_file_at(dfd, "cgroup", text, CGROUP_FILE_MAX, &n);
		close(dfd);
	}
	if (err)
		goto out;
	err = -ENOENT;
	while (pos < n) {
		char *line = text + pos, *nl = memchr(line, '\n', n - pos);
		size_t ll = nl ? (size_t)(nl - line) : n - pos;

		pos += ll + 1;
		if (ll < 4 || memcmp(line, "0::", 3) != 0)
			continue;
		line += 3;
		ll -= 3;
		/* The kernel rejects '\n' in cgroup names; NUL cannot occur. */
		if (line[0] != '/' || memchr(line, '\0', ll)) {
			err = -EINVAL;
			break;
		}
		if (ll + 1 > len) {
			err = -ENAMETOOLONG;
			break;
		}
		memcpy(buf, line, ll);
		buf[ll] = '\0';
		err = 0;
		break;
	}
out:
	free(text);
	return err;
}

/* Undoes the octal escapes of /proc/self/mounts (\040 for a space...). */
static int unescape_mount_field(const char *s, size_t n, char *buf, size_t cap)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' && n - i >= 4 && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			c = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		}
		if (c == '\0' || o + 1 >= cap)
			return c == '\0' ? -EINVAL : -ENAMETOOLONG;
		buf[o++] = c;
	}
	buf[o] = '\0';
	return 0;
}

int proc__cgroup2_mount(char *buf, size_t len)
{
	size_t n, pos = 0;
	char *text;
	int dfd, err;

	if (!buf || len == 0)
		return -EINVAL;
	text = malloc(MOUNTS_MAX);
	if (!text)
		return -ENOMEM;
	dfd = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		err = -errno;
		goto out;
	}
	err = proc__read_file_at(dfd, "mounts", text, MOUNTS_MAX, &n);
	close(dfd);
	if (err)
		goto out;
	err = -ENOENT;
	while (pos < n) {
		char *line = text + pos, *nl = memchr(line, '\n', n - pos);
		size_t ll = nl ? (size_t)(nl - line) : n - pos;
		char *f[3];
		size_t fl[3], i, p = 0;

		pos += ll + 1;
		/* "source mountpoint fstype options 0 0" */
		for (i = 0; i < 3; i++) {
			f[i] = line + p;
			while (p < ll && line[p] != ' ')
				p++;
			fl[i] = (size_t)(line + p - f[i]);
			if (p < ll)
				p++;
		}
		if (fl[2] != 7 || memcmp(f[2], "cgroup2", 7) != 0 || fl[1] == 0)
			continue;
		err = unescape_mount_field(f[1], fl[1], buf, len);
		break;
	}
out:
	free(text);
	return err;
}

/* Depth-first search under dfd (which it owns and closes) for the directory
 * with inode id; path[0..plen) is dfd's path. 0: found (in path), -ENOENT,
 * -E2BIG: a bound stopped the search. */
static int walk_cgroups(int dfd, __u64 id, char *path, size_t plen, size_t cap,
			int depth, unsigned *budget)
{
	bool bounded = false;
	struct dirent *de;
	int err = -ENOENT;
	DIR *d;

	d = fdopendir(dfd);
	if (!d) {
		err = -errno;
		close(dfd);
		return err;
	}
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		size_t nlen = strlen(name);
		struct stat st;

		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (*budget == 0) {
			err = -E2BIG;
			break;
		}
		(*budget)--;
		if (plen + 1 + nlen + 1 > cap) {
			bounded = true;
			continue;
		}
		path[plen] = '/';
		memcpy(path + plen + 1, name, nlen + 1);
		if ((__u64)de->d_ino == id &&
		    fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode) && (__u64)st.st_ino == id) {
			err = 0;
			break;
		}
		if (depth + 1 < CGROUP_WALK_DEPTH) {
			int cfd = openat(dirfd(d), name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (cfd >= 0) {
				int r = walk_cgroups(cfd, id, path, plen + 1 + nlen, cap,
						     depth + 1, budget);

				if (r == 0 || r == -E2BIG) {
					err = r;
					break;
				}
			}
		} else {
			bounded = true;
		}
		path[plen] = '\0';
	}
	closedir(d);
	if (err == -ENOENT && bounded)
		err = -E2BIG;
	if (err)
		path[plen] = '\0';
	return err;
}

/* Is path (as proc__cgroup_path writes it) still the directory of id? */
static bool cgroup_path_is(int mntfd, const char *path, __u64 id)
{
	struct stat st;
	int r;

	if (!strcmp(path, "/"))
		r = fstat(mntfd, &st);
	else
		r = fstatat(mntfd, path + 1, &st, AT_SYMLINK_NOFOLLOW);
	return r == 0 && S_ISDIR(st.st_mode) && (__u64)st.st_ino == id;
}

static int open_cgroup2_locked(void)
{
	struct statfs sfs;
	int fd, err;

	if (!cgroup2_mnt[0]) {
		err = proc__cgroup2_mount(cgroup2_mnt, sizeof(cgroup2_mnt));
		if (err) {
			cgroup2_mnt[0] = '\0';
			return err == -ENOENT ? -ENODEV : err;
		}
	}
	fd = open(cgroup2_mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstatfs(fd, &sfs) < 0 || sfs.f_type != CGROUP2_SUPER_MAGIC) {
		close(fd);
		cgroup2_mnt[0] = '\0';
		return -ENODEV;
	}
	return fd;
}

int proc__cgroup_id_path(__u64 cgroup_id, char *buf, size_t len)
{
	char path[PATH_MAX];
	unsigned budget = CGROUP_WALK_DIRS;
	struct stat st;
	int mntfd, err = 0, i;
	bool hit = false;

	if (cgroup_id == 0 || !buf || len == 0)
		return -EINVAL;
	pthread_mutex_lock(&cache_lock);
	mntfd = open_cgroup2_locked();
	if (mntfd < 0) {
		err = mntfd;
		goto out_unlock;
	}
	for (i = 0; i < CGROUP_CACHE_N; i++) {
		if (cache[i].id != cgroup_id)
			continue;
		if (cgroup_path_is(mntfd, cache[i].path, cgroup_id)) {
			memcpy(path, cache[i].path, strlen(cache[i].path) + 1);
			hit = true;
		} else {
			cache[i].id = 0;   /* removed or renamed */
		}
		break;
	}
	if (hit) {
		cache_hits++;
		close(mntfd);
	} else {
		cache_misses++;
		if (fstat(mntfd, &st) == 0 && (__u64)st.st_ino == cgroup_id) {
			close(mntfd);
			strcpy(path, "/");
		} else {
			path[0] = '\0';
			err = walk_cgroups(mntfd, cgroup_id, path, 0, sizeof(path), 0, &budget);
			if (err)
				goto out_unlock;
		}
		cache[cache_next].id = cgroup_id;
		memcpy(cache[cache_next].path, path, strlen(path) + 1);
		cache_next = (cache_next + 1) % CGROUP_CACHE_N;
	}
	if (strlen(path) + 1 > len) {
		err = -ENAMETOOLONG;
		goto out_unlock;
	}
	memcpy(buf, path, strlen(path) + 1);
out_unlock:
	pthread_mutex_unlock(&cache_lock);
	return err;
}

void proc__cgroup_cache_reset(void)
{
	pthread_mutex_lock(&cache_lock);
	memset(cache, 0, sizeof(cache));
	cache_next = 0;
	cache_hits = cache_misses = 0;
	cgroup2_mnt[0] = '\0';
	pthread_mutex_unlock(&cache_lock);
}

void proc__cgroup_cache_stats(unsigned long *ret_hits, unsigned long *ret_misses)
{
	pthread_mutex_lock(&cache_lock);
	if (ret_hits)
		*ret_hits = cache_hits;
	if (ret_misses)
		*ret_misses = cache_misses;
	pthread_mutex_unlock(&cache_lock);
}
