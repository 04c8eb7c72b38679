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
	const char *f, *colon, *root, *point, *super = NULL;
	size_t pos = 0, n, root_len, point_len, super_len = 0;
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
	if (!(root = next_field(line, len, &pos, &root_len)) ||
	    !(point = next_field(line, len, &pos, &point_len)) || !next_field(line, len, &pos, &n))
		return -EINVAL; /* root, mount point, options */
	do {
		if (!(f = next_field(line, len, &pos, &n)))
			return -EINVAL;
	} while (n != 1 || *f != '-');
	if (!(f = next_field(line, len, &pos, &n)))
		return -EINVAL;
	if (next_field(line, len, &pos, &super_len)) /* the source */
		super = next_field(line, len, &pos, &super_len);
	ret->id = (int)id;
	ret->dev = makedev((unsigned)major, (unsigned)minor);
	ret->root = root;
	ret->root_len = root_len;
	ret->super = super;
	ret->super_len = super ? super_len : 0;
	ret->point = point;
	ret->point_len = point_len;
	ret->type = f;
	ret->type_len = n;
	return 0;
}

bool proc__mountinfo_next(const char *text, size_t len, size_t *pos, struct proc_mount *ret)
{
	const char *line;
	size_t n;

	while (proc__next_line(text, len, pos, &line, &n))
		if (!proc__parse_mountinfo_line(line, n, ret))
			return true;
	return false;
}

bool proc__mountinfo_find(const char *text, size_t len, int id, dev_t dev, const char *type,
			  struct proc_mount *ret)
{
	struct proc_mount m;
	size_t pos = 0;

	while (proc__mountinfo_next(text, len, &pos, &m)) {
		if (id >= 0 ? m.id != id : (dev && m.dev != dev))
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

int proc__read_mount_table(const char *path, char **ret_text, size_t *ret_len)
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

int proc__mount_table_get(struct proc_mount_table *t, const char **ret_text, size_t *ret_len,
			  bool *ret_changed)
{
	struct pollfd p;
	bool stale = !t->text;
	char path[64], *text, *shrunk;
	int err;

	if (t->pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)t->pid);
	else
		snprintf(path, sizeof(path), "/proc/self/mountinfo");
	if (ret_changed)
		*ret_changed = false;
	if (t->fd < 0) {
		t->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (t->fd < 0)
			return -errno;
		stale = true; /* what changed before this open is in what is read next */
	}
	p = (struct pollfd){ .fd = t->fd, .events = POLLPRI };
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLPRI | POLLERR)))
		stale = true;
	if (stale) {
		free(t->text);
		t->text = NULL;
		if ((err = proc__read_mount_table(path, &text, &t->len)))
			return err;
		shrunk = realloc(text, t->len + 1);
		t->text = shrunk ? shrunk : text;
		if (ret_changed)
			*ret_changed = true;
	}
	*ret_text = t->text;
	*ret_len = t->len;
	return 0;
}

/*
 * The node's tables, kept between calls (the bounded worker lives on): PID
 * 1's, and another process's where the runtime mounts in a namespace of its
 * own (proc__trust_mounts_of), so that an open of each library in a
 * container does not read and parse them again.
 */
static struct proc_mount_table nodes[2] = { PROC_MOUNT_TABLE(1), PROC_MOUNT_TABLE(0) };

void proc__trust_mounts_of(pid_t pid)
{
	nodes[1].pid = pid > 1 ? pid : 0;
}

/* Whether a node table holds an overlay mount of id (id >= 0) or of superblock dev. */
static bool node_has_overlay(int id, dev_t dev)
{
	struct proc_mount m;
	const char *text;
	size_t len;

	if (id < 0 && !dev)
		return false; /* no device: not "any" */
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++)
		if (nodes[i].pid > 0 && !proc__mount_table_get(&nodes[i], &text, &len, NULL) &&
		    proc__mountinfo_find(text, len, id, dev, "overlay", &m))
			return true;
	return false;
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
	size_t own_len;
	struct proc_mount m;
	dev_t dev;
	int id = mount_id_of(fd), err;

	if (id < 0)
		return id;
	if (node_has_overlay(id, 0))
		return 0; /* the node's own mount */
	if (pid <= 0)
		return -EREMOTE;
	/* The target's view of it: the same overlay, bound into its namespace? */
	if (root_overlay_dev(pid, id, &dev))
		return node_has_overlay(-1, dev) ? 0 : -EREMOTE;
	err = -EREMOTE;
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
	if (!proc__read_mount_table(path, &own, &own_len) &&
	    proc__mountinfo_find(own, own_len, id, 0, "overlay", &m) && node_has_overlay(-1, m.dev))
		err = 0;
	free(own);
	return err;
}
