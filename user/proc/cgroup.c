/* SPDX-License-Identifier: MIT */
/*
 * A process's cgroup v2 path (/proc/<pid>/cgroup's "0::" line): what the
 * profile's cgroup label says, read when the process is followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/proc/proc.h"
#include "user/proc/proc_internal.h"

#define CGROUP_FILE_MAX (64 * 1024)

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
