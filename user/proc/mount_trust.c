/* SPDX-License-Identifier: MIT */
/*
 * Whether an overlayfs file may be read by the loader (proc.h,
 * proc__overlay_trusted): an overlay passes every read on to the file of the
 * layer under it, which may be on a FUSE mount its maker serves, and
 * nothing the kernel shows of the overlay's file (its file system type,
 * its device in stat or maps, its map_files link) tells which layer that
 * is. What can be known is who made the overlay: one in the node's own
 * mount table (PID 1's: a container runtime's root file systems) was made
 * by the node's root, its layers chosen by it; one that only a target's
 * mount namespace holds was made in there, its layers maybe a FUSE mount
 * the target serves. The first is read, the second refused.
 *
 * The mount tables are /proc text; a target names its mount points, so each
 * line is parsed strictly (proc__parse_mountinfo_line) and the tables are
 * read whole up to MOUNTINFO_MAX, refused past it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "user/proc/proc.h"
#include "user/proc/proc_internal.h"

/* A mount table read whole, at most (about 60,000 mounts). */
#define MOUNTINFO_MAX (8u << 20)

/* The n-th space-separated field of line[0, len) from pos: its start, its length in *ret_n. */
static const char *next_field(const char *line, size_t len, size_t *pos, size_t *ret_n)
{
	size_t start = *pos, end = start;

	if (start >= len)
		return NULL;
	while (end < len && line[end] != ' ')
		end++;
	*ret_n = end - start;
	*pos = end < len ? end + 1 : end;
	return *ret_n ? line + start : NULL;
}

int proc__parse_mountinfo_line(const char *line, size_t len, struct proc_mount *ret)
{
	const char *f, *colon;
	size_t pos = 0, n;
	__u64 id, major, minor;

	if (len && line[len - 1] == '\n')
		len--;
	/* mount id, parent id, major:minor, root, mount point, options, optional fields..., "-", type */
	if (!(f = next_field(line, len, &pos, &n)) || proc__parse_u64(f, n, 10, INT32_MAX, &id))
		return -EINVAL;
	if (!(f = next_field(line, len, &pos, &n)))
		return -EINVAL;
	if (!(f = next_field(line, len, &pos, &n)) || !(colon = memchr(f, ':', n)) ||
	    proc__parse_u64(f, (size_t)(colon - f), 10, 0xfff, &major) ||
	    proc__parse_u64(colon + 1, n - (size_t)(colon - f) - 1, 10, 0xfffff, &minor))
		return -EINVAL;
	for (int i = 0; i < 3; i++)
		if (!next_field(line, len, &pos, &n))
			return -EINVAL;
	do {
		if (!(f = next_field(line, len, &pos, &n)))
			return -EINVAL;
	} while (n != 1 || *f != '-');
	if (!(f = next_field(line, len, &pos, &n)))
		return -EINVAL;
	ret->id = (int)id;
	ret->dev = makedev((unsigned)major, (unsigned)minor);
	ret->type = f;
	ret->type_len = n;
	return 0;
}

bool proc__mountinfo_find(const char *text, size_t len, int id, dev_t dev, const char *type,
			  struct proc_mount *ret)
{
	size_t pos = 0;

	while (pos < len) {
		const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) + 1 : len - pos;
		struct proc_mount m;

		pos += n;
		if (proc__parse_mountinfo_line(line, n, &m))
			continue;
		if (id >= 0 ? m.id != id : m.dev != dev)
			continue;
		if (type && (m.type_len != strlen(type) || memcmp(m.type, type, m.type_len)))
			continue;
		*ret = m;
		return true;
	}
	return false;
}

/* The mount id of fd (its fdinfo's mnt_id), or -errno. */
static int mount_id_of(int fd)
{
	char name[64], buf[1024];
	const char *p;
	size_t len;
	__u64 id;
	int err;

	snprintf(name, sizeof(name), "/proc/self/fdinfo/%d", fd);
	if ((err = proc__read_file_at(AT_FDCWD, name, buf, sizeof(buf), &len)))
		return err;
	p = strstr(buf, "\nmnt_id:\t");
	if (!p)
		return -ENOENT;
	p += strlen("\nmnt_id:\t");
	if (proc__parse_u64(p, strcspn(p, "\n"), 10, INT32_MAX, &id))
		return -EINVAL;
	return (int)id;
}

/* A mount table read whole into a buffer of its own (freed by the caller). */
static int read_table(const char *path, char **ret_text, size_t *ret_len)
{
	char *buf = malloc(MOUNTINFO_MAX);
	int err;

	if (!buf)
		return -ENOMEM;
	err = proc__read_file_at(AT_FDCWD, path, buf, MOUNTINFO_MAX, ret_len);
	if (err) {
		free(buf);
		return err;
	}
	*ret_text = buf;
	return 0;
}

/*
 * The node's table, kept between calls (the bounded worker lives on): read
 * again only when the kernel says it changed (POLLPRI on an fd of it, which
 * a mount or an unmount in PID 1's namespace raises), so that an open of
 * each library in a container does not read and parse it again.
 */
static struct {
	int fd;       /* polled; -1: not open yet */
	char *text;   /* NULL: not read yet */
	size_t len;
} node = { .fd = -1 };

static int node_table(const char **ret_text, size_t *ret_len)
{
	struct pollfd p;
	bool stale = !node.text;
	char *text, *shrunk;
	int err;

	if (node.fd < 0) {
		node.fd = open("/proc/1/mountinfo", O_RDONLY | O_CLOEXEC);
		if (node.fd < 0)
			return -errno;
		stale = true; /* what changed before this open is in what is read next */
	}
	p = (struct pollfd){ .fd = node.fd, .events = POLLPRI };
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLPRI | POLLERR)))
		stale = true;
	if (stale) {
		free(node.text);
		node.text = NULL;
		if ((err = read_table("/proc/1/mountinfo", &text, &node.len)))
			return err;
		shrunk = realloc(text, node.len + 1);
		node.text = shrunk ? shrunk : text;
	}
	*ret_text = node.text;
	*ret_len = node.len;
	return 0;
}

/*
 * The superblock of the overlay mounted at id in pid's namespace, read
 * cheaply where it is pid's root (a container's): its root's device.
 * false when id is not pid's root mount.
 */
static bool root_overlay_dev(pid_t pid, int id, dev_t *ret_dev)
{
	char path[64];
	struct stat st;
	bool found = false;
	int root;

	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return false;
	if (mount_id_of(root) == id && !fstat(root, &st)) {
		*ret_dev = st.st_dev; /* an overlay's directories show its own device */
		found = true;
	}
	close(root);
	return found;
}

int proc__overlay_trusted(int fd, pid_t pid)
{
	char path[64], *own = NULL;
	const char *node_text;
	size_t node_len, own_len;
	struct proc_mount m;
	dev_t dev;
	int id = mount_id_of(fd), err;

	if (id < 0)
		return id;
	if ((err = node_table(&node_text, &node_len)))
		return err;
	if (proc__mountinfo_find(node_text, node_len, id, 0, "overlay", &m))
		return 0; /* the node's own mount */
	if (pid <= 0)
		return -EREMOTE;
	/* The target's view of it: the same overlay, bound into its namespace? */
	if (root_overlay_dev(pid, id, &dev))
		return proc__mountinfo_find(node_text, node_len, -1, dev, "overlay", &m) ? 0 : -EREMOTE;
	err = -EREMOTE;
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
	if (!read_table(path, &own, &own_len) &&
	    proc__mountinfo_find(own, own_len, id, 0, "overlay", &m) &&
	    proc__mountinfo_find(node_text, node_len, -1, m.dev, "overlay", &m))
		err = 0;
	free(own);
	return err;
}
