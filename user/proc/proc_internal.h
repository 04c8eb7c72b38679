/* SPDX-License-Identifier: MIT */
/*
 * Internals of user/proc/ shared between its files, its tests and its fuzzer.
 * Nothing else in user/ includes this.
 */
#ifndef GP_PROC_INTERNAL_H
#define GP_PROC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "user/proc/proc.h"

/* Symlinks followed in one resolution, as the kernel's MAXSYMLINKS. */
#define PROC_MAX_SYMLINKS 40

/* One parsed maps line; path points into the line (not NUL-terminated),
 * path_len 0 for an anonymous mapping. */
struct proc_maps_line {
	struct proc_mapping map;
	const char *path;
	size_t path_len;
};

/* THE maps parser (proc_maps.c): one /proc/<pid>/maps line (without or with
 * its '\n'). Every reader of maps goes through it. -EINVAL on
 * anything but the kernel's format. */
int proc__parse_maps_line(const char *line, size_t len, struct proc_maps_line *ret);

/* Strict decimal/hex parse of exactly n bytes of s (no sign, no spaces, no
 * prefix) into [0, max]. -EINVAL: not a number; -ERANGE: above max. */
int proc__parse_u64(const char *s, size_t n, int base, __u64 max, __u64 *ret);

/* The line of text (n bytes) at *pos, moved past it: its start and its
 * length without the '\n'; false at the end. Every reader of a /proc text
 * file's lines goes through it. */
bool proc__next_line(const char *text, size_t n, size_t *pos, const char **ret_line,
		     size_t *ret_len);

/* O_PATH fd of /proc/<pid>, or -errno. */
int proc__open_pid_dir(pid_t pid);
/* openat(/proc/<pid>, name, flags): one file of that one process. An fd, or -errno. */
int proc__open_in_pid_dir(pid_t pid, const char *name, int flags);

/* Reads the whole of dirfd/name (name relative, not followed) into buf,
 * NUL-terminated; -EFBIG when it does not fit in cap - 1 bytes. */
int proc__read_file_at(int dirfd, const char *name, char *buf, size_t cap, size_t *ret_len);

/* proc__root_open against an already opened root directory: openat2 with
 * RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, falling back to
 * proc__root_walk when the kernel has no openat2. */
int proc__root_openat(int rootfd, const char *path, int flags);

/* The fallback: a component-by-component openat(O_NOFOLLOW) walk from
 * rootfd that resolves symlinks itself (at most PROC_MAX_SYMLINKS), keeps
 * ".." at the root, and never uses ".." on disk. */
int proc__root_walk(int rootfd, const char *path, int flags);

/* One line of a mountinfo table, what the overlay check and the cgroup mounts need of it. */
struct proc_mount {
	int id;
	dev_t dev;         /* its superblock's */
	const char *root;  /* the superblock's directory mounted there, into the line: root_len bytes */
	size_t root_len;
	const char *point; /* its mount point, into the line: point_len bytes, as escaped */
	size_t point_len;
	const char *type;  /* into the line, type_len bytes */
	size_t type_len;
	const char *super; /* its superblock's options (a cgroup v1 mount's controllers), super_len */
	size_t super_len;  /* bytes; 0 where the line ends before them */
};

/* THE mountinfo parser (mount_trust.c): one line (with or without its
 * '\n'). -EINVAL on anything but the kernel's format. */
int proc__parse_mountinfo_line(const char *line, size_t len, struct proc_mount *ret);
/* The next mount of text at *pos (moved past it) whose line parses; false at the end. */
bool proc__mountinfo_next(const char *text, size_t len, size_t *pos, struct proc_mount *ret);
/* The first mount of text whose id is id (id < 0: whose device is dev; dev
 * 0 too: any) and, when type is given, of that type; false when none. */
bool proc__mountinfo_find(const char *text, size_t len, int id, dev_t dev, const char *type,
			  struct proc_mount *ret);
/* A mount table read whole, at most (about 60,000 mounts). */
#define MOUNTINFO_MAX (8u << 20)
/* A mount table (path: a /proc/<pid>/mountinfo) read whole into a buffer of
 * its own, freed by the caller; -EFBIG past MOUNTINFO_MAX. */
int proc__read_mount_table(const char *path, char **ret_text, size_t *ret_len);

/*
 * A process's mount table kept between calls, read again only when the
 * kernel says it changed (POLLPRI on an fd of it, which a mount or an
 * unmount in its namespace raises): a caller asking often reads and parses
 * it once per change. Not locked: one owner, or the owner's lock.
 */
struct proc_mount_table {
	pid_t pid;  /* whose: 0 the loader's own */
	int fd;     /* polled; -1: not open yet */
	char *text; /* NULL: not read yet */
	size_t len;
};
#define PROC_MOUNT_TABLE(p) { .pid = (p), .fd = -1 }
/* The table's text, read first or again when it changed; *ret_changed
 * (when given) true when it was read at this call. -errno when it cannot
 * be read (the text the caller had is then gone). */
int proc__mount_table_get(struct proc_mount_table *t, const char **ret_text, size_t *ret_len,
			  bool *ret_changed);

/* A cgroup file read whole, at most. */
#define CGROUP_FILE_MAX (64 * 1024)
/* The whole of /proc/<pid>/cgroup into buf (cap bytes, NUL-terminated), or -errno. */
int proc__read_cgroup(pid_t pid, char *buf, size_t cap, size_t *ret_len);
/* Its cgroup v2 path (the "0::" line, from its '/', not NUL-terminated):
 * -ENOENT without one, -EINVAL for one that is not the kernel's. */
int proc__cgroup_v2_line(const char *text, size_t n, const char **ret_path, size_t *ret_len);
/* The path of the loader's own cgroup2 hierarchy (the first cgroup2 mount
 * of /proc/self/mountinfo) into buf; -ENOENT without one, -EINVAL for a
 * mount point the kernel had to escape (a space, a tab, a newline or a
 * backslash in it), -ENAMETOOLONG when it does not fit. */
int proc__cgroup2_mount(char *buf, size_t len);
/* The tenant of a cgroup file with no cgroup2 path (n bytes, as read):
 * every line, each v1 path cut at a delegation in its hierarchy where the
 * loader has that hierarchy mounted at its root (tenant.c). */
__u64 proc__tenant_v1(const char *text, size_t n);

#endif /* GP_PROC_INTERNAL_H */
