/* SPDX-License-Identifier: MIT */
/*
 * What /proc says of cgroups: a process's cgroup file and its v2 path (the
 * "0::" line: what the profile's cgroup label says, read when the process
 * is followed), and where the loader's own cgroup2 hierarchy is mounted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/proc/proc.h"
#include "user/proc/proc_internal.h"

int proc__read_cgroup(pid_t pid, char *buf, size_t cap, size_t *ret_len)
{
	int dfd = proc__open_pid_dir(pid), err;

	if (dfd < 0)
		return dfd;
	err = proc__read_file_at(dfd, "cgroup", buf, cap, ret_len);
	close(dfd);
	return err;
}

int proc__cgroup_v2_line(const char *text, size_t n, const char **ret_path, size_t *ret_len)
{
	const char *line;
	size_t pos = 0, ll;

	while (proc__next_line(text, n, &pos, &line, &ll)) {
		if (ll < 4 || memcmp(line, "0::", 3) != 0)
			continue;
		/* The kernel rejects '\n' in cgroup names; NUL cannot occur. */
		if (line[3] != '/' || memchr(line + 3, '\0', ll - 3))
			return -EINVAL;
		*ret_path = line + 3;
		*ret_len = ll - 3;
		return 0;
	}
	return -ENOENT;
}

int proc__cgroup_path(pid_t pid, char *buf, size_t len)
{
	const char *path;
	size_t n, plen;
	char *text;
	int err;

	if (!buf || len == 0)
		return -EINVAL;
	text = malloc(CGROUP_FILE_MAX);
	if (!text)
		return -ENOMEM;
	err = proc__read_cgroup(pid, text, CGROUP_FILE_MAX, &n);
	if (!err)
		err = proc__cgroup_v2_line(text, n, &path, &plen);
	if (!err && plen + 1 > len)
		err = -ENAMETOOLONG;
	if (!err) {
		memcpy(buf, path, plen);
		buf[plen] = '\0';
	}
	free(text);
	return err;
}

int proc__cgroup2_mount(char *buf, size_t len)
{
	struct proc_mount m;
	char *text;
	size_t n;
	int err = proc__read_mount_table("/proc/self/mountinfo", &text, &n);

	if (err)
		return err;
	if (!proc__mountinfo_find(text, n, -1, 0, "cgroup2", &m))
		err = -ENOENT;
	else if (memchr(m.point, '\\', m.point_len))
		err = -EINVAL;
	else if (m.point_len + 1 > len)
		err = -ENAMETOOLONG;
	if (!err) {
		memcpy(buf, m.point, m.point_len);
		buf[m.point_len] = '\0';
	}
	free(text);
	return err;
}
