/* SPDX-License-Identifier: MIT */
/* A file written whole or not at all (atomic_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "user/util/atomic_file.h"

int atomic_file__open(const char *path, char *tmp, size_t len)
{
	mode_t mask;
	int fd;

	if (!path || !*path)
		return -EINVAL;
	if (snprintf(tmp, len, "%s.tmp.XXXXXX", path) >= (int)len)
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* mkostemp makes 0600; our files are as readable as any file we create. */
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask)) {
		int err = -errno;

		atomic_file__abort(fd, tmp);
		return err;
	}
	return fd;
}

int atomic_file__write(int fd, const void *d, size_t len)
{
	const uint8_t *p = d;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Best effort: makes the rename itself durable; failure loses no data. */
static void dir__fsync(const char *path)
{
	char tmp[PATH_MAX];
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return;
	fd = open(dirname(tmp), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	fsync(fd);
	close(fd);
}

int atomic_file__commit(int fd, const char *tmp, const char *path)
{
	int err = 0;

	if (fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	dir__fsync(path);
	return 0;
}

void atomic_file__abort(int fd, const char *tmp)
{
	if (fd >= 0)
		close(fd);
	unlink(tmp);
}
