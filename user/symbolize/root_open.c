/* SPDX-License-Identifier: MIT */
/*
 * In-root file opening. The fast path is openat2(RESOLVE_IN_ROOT) (Linux
 * 5.6+). The fallback walks the path itself: every component is opened with
 * O_PATH|O_NOFOLLOW relative to the directory before it, symlinks are read
 * and spliced back into the remaining path (absolute ones restart at the
 * root), and ".." never climbs above the root. Either way the final file is
 * opened as O_PATH first, checked to be a regular file, then re-opened for
 * reading through /proc/self/fd, so opening never has side effects.
 */
#include "user/symbolize/root_open.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#define ROOT_OPEN_MAX_HOPS 40  /* as the kernel's MAXSYMLINKS */
#define ROOT_OPEN_MAX_DEPTH 256

static int fd__reopen_regular(int path_fd, int *ret_fd)
{
	char proc[64];
	struct stat st;
	int fd;

	if (fstat(path_fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", path_fd);
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return 0;
}

static int root_open__openat2(int root_fd, const char *path, int *ret_fd)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;
	int err;

	fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	err = fd__reopen_regular((int)fd, ret_fd);
	close((int)fd);
	return err;
}

/* Re-opens the directory reached by the first depth components in names. */
static int walk__reopen_dir(int root_fd, char names[][NAME_MAX + 1], int depth, int *ret_fd)
{
	int fd = dup(root_fd), next, i;

	if (fd < 0)
		return -errno;
	for (i = 0; i < depth; i++) {
		next = openat(fd, names[i], O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		if (next < 0)
			return -errno;
		fd = next;
	}
	*ret_fd = fd;
	return 0;
}

/* Splices a link target in front of the rest of the path, in place. */
static int walk__splice(char *rest, size_t cap, const char *target, size_t tlen)
{
	size_t rlen = strlen(rest);

	if (tlen + 1 + rlen + 1 > cap)
		return -ENAMETOOLONG;
	memmove(rest + tlen + 1, rest, rlen + 1);
	memcpy(rest, target, tlen);
	rest[tlen] = '/';
	return 0;
}

int root_open__walk(int root_fd, const char *path, int *ret_fd)
{
	char (*names)[NAME_MAX + 1];
	char buf[PATH_MAX * 2], target[PATH_MAX], *comp, *next;
	int dir_fd, fd, depth = 0, hops = 0, err;
	struct stat st;
	ssize_t tlen;
	size_t clen;

	if (snprintf(buf, sizeof(buf), "%s", path) >= PATH_MAX)
		return -ENAMETOOLONG;
	names = malloc(sizeof(*names) * ROOT_OPEN_MAX_DEPTH);
	if (!names)
		return -ENOMEM;
	err = walk__reopen_dir(root_fd, names, 0, &dir_fd);
	if (err)
		goto out_free_names;
	comp = buf;
	for (;;) {
		while (*comp == '/')
			comp++;
		if (!*comp) { /* ended on a directory */
			err = -EISDIR;
			goto out_close_dir;
		}
		next = strchr(comp, '/');
		clen = next ? (size_t)(next - comp) : strlen(comp);
		if (clen > NAME_MAX) {
			err = -ENAMETOOLONG;
			goto out_close_dir;
		}
		if (next)
			*next++ = '\0';
		else
			next = comp + clen;
		if (!strcmp(comp, ".")) {
			comp = next;
			continue;
		}
		if (!strcmp(comp, "..")) {
			/* Climbing above the root stays at the root, as in chroot. */
			if (depth > 0)
				depth--;
			close(dir_fd);
			err = walk__reopen_dir(root_fd, names, depth, &dir_fd);
			if (err)
				goto out_free_names;
			comp = next;
			continue;
		}
		fd = openat(dir_fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			err = -errno;
			if (fd >= 0)
				close(fd);
			goto out_close_dir;
		}
		if (S_ISLNK(st.st_mode)) {
			close(fd);
			tlen = readlinkat(dir_fd, comp, target, sizeof(target) - 1);
			if (tlen <= 0 || ++hops > ROOT_OPEN_MAX_HOPS) {
				err = tlen < 0 ? -errno : -ELOOP;
				goto out_close_dir;
			}
			/* next points into buf; move what is left to the front first. */
			memmove(buf, next, strlen(next) + 1);
			err = walk__splice(buf, sizeof(buf), target, (size_t)tlen);
			if (err)
				goto out_close_dir;
			if (target[0] == '/') {
				depth = 0;
				close(dir_fd);
				err = walk__reopen_dir(root_fd, names, 0, &dir_fd);
				if (err)
					goto out_free_names;
			}
			comp = buf;
			continue;
		}
		if (!*next) { /* the last component */
			err = fd__reopen_regular(fd, ret_fd);
			close(fd);
			goto out_close_dir;
		}
		if (!S_ISDIR(st.st_mode) || depth >= ROOT_OPEN_MAX_DEPTH) {
			close(fd);
			err = S_ISDIR(st.st_mode) ? -ENAMETOOLONG : -ENOTDIR;
			goto out_close_dir;
		}
		memcpy(names[depth], comp, clen + 1);
		depth++;
		close(dir_fd);
		dir_fd = fd;
		comp = next;
	}

out_close_dir:
	close(dir_fd);
out_free_names:
	free(names);
	return err;
}

int root_open__file(int root_fd, const char *path, int *ret_fd)
{
	static int have_openat2 = -1; /* unknown until the first call answers */
	int err;

	if (root_fd < 0 || !path || !ret_fd)
		return -EINVAL;
	if (__atomic_load_n(&have_openat2, __ATOMIC_RELAXED)) {
		err = root_open__openat2(root_fd, path, ret_fd);
		if (err != -ENOSYS && err != -EPERM) /* EPERM: seccomp filters */
			return err;
		__atomic_store_n(&have_openat2, 0, __ATOMIC_RELAXED);
	}
	return root_open__walk(root_fd, path, ret_fd);
}
