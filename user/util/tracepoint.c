/* SPDX-License-Identifier: MIT */
/* Tracepoint ids through tracefs, mounted privately if need be (tracepoint.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>
#include "user/util/tracepoint.h"

#define TRACEFS "/sys/kernel/tracing"

static const char *const tracefs_dirs[] = { TRACEFS, "/sys/kernel/debug/tracing" };

static int read_id(const char *dir, const char *category, const char *name, __u64 *ret_id)
{
	char path[512], buf[32];
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/events/%s/%s/id", dir, category, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0) {
		err = n < 0 ? -errno : -EINVAL;
	} else {
		char *end;

		buf[n] = '\0';
		*ret_id = strtoull(buf, &end, 10);
		if (end == buf)
			err = -EINVAL;
	}
	close(fd);
	return err;
}

static bool tracefs_mounted(const char *dir)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/events", dir);
	return access(path, F_OK) == 0;
}

/*
 * Makes the mounts above TRACEFS private in this (new) namespace, so the
 * tracefs mounted there stays in it: "/" and all under it; where "/" is
 * not a mount point (a chroot into a plain directory: EINVAL), the nearest
 * mount above TRACEFS that is.
 */
static int mounts_private(void)
{
	static const char *const tops[] = { "/", "/sys", "/sys/kernel" };
	int err = 0;

	for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++) {
		if (!mount(NULL, tops[i], NULL, MS_REC | MS_PRIVATE, NULL))
			return 0;
		if (!err)
			err = -errno;
	}
	return err;
}

/* In a child, in a new mount namespace: mount tracefs there, send the id. */
static int id_via_private_mount(const char *category, const char *name, __u64 *ret_id)
{
	int p[2], status, err;
	struct { int err; __u64 id; } msg = { -EIO, 0 };
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(p[0]);
		close(p[1]);
		return err;
	}
	if (pid == 0) {
		close(p[0]);
		if (unshare(CLONE_NEWNS))
			msg.err = -errno;
		else if ((msg.err = mounts_private()) == 0 &&
			 mount("tracefs", TRACEFS, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
			msg.err = -errno;
		if (msg.err == 0)
			msg.err = read_id(TRACEFS, category, name, &msg.id);
		_exit(write(p[1], &msg, sizeof(msg)) == sizeof(msg) ? 0 : 1);
	}
	close(p[1]);
	if (read(p[0], &msg, sizeof(msg)) != sizeof(msg))
		msg.err = -EIO;
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!msg.err)
		*ret_id = msg.id;
	return msg.err;
}

int tracepoint__id(const char *category, const char *name, __u64 *ret_id)
{
	for (size_t i = 0; i < sizeof(tracefs_dirs) / sizeof(tracefs_dirs[0]); i++)
		if (tracefs_mounted(tracefs_dirs[i]))
			return read_id(tracefs_dirs[i], category, name, ret_id);
	return id_via_private_mount(category, name, ret_id);
}
