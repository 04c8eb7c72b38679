/* SPDX-License-Identifier: MIT */
/*
 * Opening a file inside another process's root without leaving it.
 *
 * "/proc/<pid>/root/<path>" is not enough: the kernel resolves ".." and
 * absolute symlinks met after the magic link against the *caller's* root, so
 * a container that plants "usr/lib/libcuda.so.1 -> /etc/shadow" makes a root
 * loader open the host's file. openat2(RESOLVE_IN_ROOT) resolves everything
 * against the given directory; on kernels without it (< 5.6) we walk the
 * path ourselves, one openat(O_NOFOLLOW) per component, expanding symlinks
 * by hand, and never open ".." on disk (a directory renamed out of the root
 * mid-walk must not lead us out): ".." pops a stack of directory fds.
 *
 * proc__open_file_at and its siblings are the one way to open a file a
 * target named: O_PATH first, checks, then a reopen (proc.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include "user/proc/proc.h"
#include "user/proc/proc_internal.h"
#include "user/util/bounded.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* Directory depth the fallback walker follows (one fd per level). */
#define WALK_DEPTH_MAX 128
/* openat2 answers EAGAIN when a rename races with RESOLVE_IN_ROOT. */
#define OPENAT2_RETRIES 8

static bool flags_refused(int flags)
{
	/* This opens existing files only: never create in a hostile tree. */
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

struct walk {
	int stack[WALK_DEPTH_MAX];   /* stack[0] is the root, not ours */
	int depth;
	int flags;                    /* the caller's, with O_CLOEXEC */
	unsigned links;               /* symlinks followed so far */
	size_t pos;                   /* where the next component of rest starts */
	char rest[PATH_MAX];          /* what is left to resolve */
	char link[PATH_MAX];
	char tmp[PATH_MAX];
};

static void walk__pop_to(struct walk *w, int depth)
{
	while (w->depth > depth)
		close(w->stack[w->depth--]);
}

/* Replaces the component just read with the symlink's target: rest becomes
 * link + remaining. Absolute targets restart at the root. */
static int walk__expand(struct walk *w, size_t link_len, const char *remaining)
{
	size_t rn = strlen(remaining);

	if (link_len == 0)
		return -ENOENT;
	if (link_len + rn + 1 > sizeof(w->tmp))
		return -ENAMETOOLONG;
	memcpy(w->tmp, w->link, link_len);
	memcpy(w->tmp + link_len, remaining, rn + 1);
	memcpy(w->rest, w->tmp, link_len + rn + 1);
	if (w->link[0] == '/')
		walk__pop_to(w, 0);
	return 0;
}

static int read_link(int dirfd, const char *name, char *buf, size_t cap, size_t *ret_len)
{
	ssize_t n = readlinkat(dirfd, name, buf, cap);

	if (n < 0)
		return -errno;
	if ((size_t)n >= cap)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	*ret_len = (size_t)n;
	return 0;
}

/*
 * The next component of rest, from pos: 1 with its name, where it starts
 * and ends, whether it is the last (and followed by a slash); 0 when
 * nothing is left; -ENAMETOOLONG.
 */
static int walk__component(struct walk *w, char *name, size_t *ret_start, size_t *ret_after,
			   bool *ret_last, bool *ret_trailing_slash)
{
	const char *comp;
	size_t clen, after, next;

	while (w->rest[w->pos] == '/')
		w->pos++;
	if (!w->rest[w->pos])
		return 0;
	comp = w->rest + w->pos;
	clen = strcspn(comp, "/");
	after = w->pos + clen;
	next = after;
	while (w->rest[next] == '/')
		next++;
	*ret_last = !w->rest[next];
	*ret_trailing_slash = *ret_last && next > after;
	if (clen > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(name, comp, clen);
	name[clen] = '\0';
	*ret_start = w->pos;
	*ret_after = after;
	return 1;
}

/* A symlink (fd, O_PATH): the rest of the path continues from its target. */
static int walk__follow(struct walk *w, int fd, size_t after)
{
	size_t ln;
	int err;

	err = read_link(fd, "", w->link, sizeof(w->link), &ln);
	close(fd);
	if (err)
		return err;
	if (++w->links > PROC_MAX_SYMLINKS)
		return -ELOOP;
	err = walk__expand(w, ln, w->rest + after);
	if (err)
		return err;
	w->pos = 0;
	return 0;
}

/* A directory on the way down: the next component resolves in it. */
static int walk__push(struct walk *w, int fd)
{
	if (w->depth + 1 >= WALK_DEPTH_MAX) {
		close(fd);
		return -ENAMETOOLONG;
	}
	w->stack[++w->depth] = fd;
	return 0;
}

/*
 * The final component, not a symlink a moment ago: O_NOFOLLOW keeps a
 * symlink swapped in since from being followed, and the component is
 * resolved again (from start) when one was. 1 with *ret_fd, 0 to go on.
 */
static int walk__open_last(struct walk *w, int cur, const char *name, size_t start,
			   bool trailing_slash, int *ret_fd)
{
	struct stat st;
	int fd, err;

	fd = openat(cur, name, w->flags | O_NOFOLLOW | (trailing_slash ? O_DIRECTORY : 0));
	if (fd < 0) {
		err = -errno;
		if (err == -ELOOP && ++w->links <= PROC_MAX_SYMLINKS) {
			w->pos = start; /* raced with a swap */
			return 0;
		}
		return err;
	}
	/* O_PATH | O_NOFOLLOW opens a symlink itself. */
	if ((w->flags & O_PATH) && (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode))) {
		close(fd);
		if (++w->links > PROC_MAX_SYMLINKS)
			return -ELOOP;
		w->pos = start;
		return 0;
	}
	*ret_fd = fd;
	return 1;
}

/* Opens at the directory on top of the stack: 1 with *ret_fd, or -errno. */
static int walk__open_at(struct walk *w, int cur, const char *name, int flags, int *ret_fd)
{
	int fd = openat(cur, name, flags);

	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return 1;
}

/* One component of the path: 0 to go on, 1 when *ret_fd is the result, or -errno. */
static int walk__step(struct walk *w, int *ret_fd)
{
	char name[NAME_MAX + 1];
	size_t start, after;
	bool last, trailing_slash;
	int cur = w->stack[w->depth], fd, err;
	struct stat st;

	err = walk__component(w, name, &start, &after, &last, &trailing_slash);
	if (err == 0) /* the path ended on a directory ("", ".", "a/..") */
		return walk__open_at(w, cur, ".", w->flags, ret_fd);
	if (err < 0)
		return err;
	w->pos = after;
	if (!strcmp(name, "."))
		return 0;
	if (!strcmp(name, "..")) {
		/* At the root, ".." is the root, as in chroot. */
		walk__pop_to(w, w->depth > 0 ? w->depth - 1 : 0);
		return 0;
	}
	/* The caller asked not to follow the final link. */
	if (last && !trailing_slash && (w->flags & O_NOFOLLOW))
		return walk__open_at(w, cur, name, w->flags, ret_fd);
	fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if (S_ISLNK(st.st_mode))
		return walk__follow(w, fd, after);
	if ((!last || trailing_slash) && !S_ISDIR(st.st_mode)) {
		close(fd);
		return -ENOTDIR;
	}
	if (!last)
		return walk__push(w, fd);
	close(fd);
	return walk__open_last(w, cur, name, start, trailing_slash, ret_fd);
}

int proc__root_walk(int rootfd, const char *path, int flags)
{
	struct walk w;
	int rc, fd = -1;

	if (rootfd < 0 || !path || flags_refused(flags))
		return -EINVAL;
	if (!*path)
		return -ENOENT;
	if (strlen(path) >= sizeof(w.rest))
		return -ENAMETOOLONG;
	memcpy(w.rest, path, strlen(path) + 1);
	w.stack[0] = rootfd;
	w.depth = 0;
	w.flags = flags | O_CLOEXEC;
	w.links = 0;
	w.pos = 0;
	while ((rc = walk__step(&w, &fd)) == 0)
		;
	walk__pop_to(&w, 0);
	return rc < 0 ? rc : fd;
}

int proc__root_openat(int rootfd, const char *path, int flags)
{
	struct open_how how;
	int i;

	if (rootfd < 0 || !path || flags_refused(flags))
		return -EINVAL;
	memset(&how, 0, sizeof(how));
	how.flags = (__u64)(unsigned)(flags | O_CLOEXEC);
	how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	for (i = 0; i < OPENAT2_RETRIES; i++) {
		long fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));

		if (fd >= 0)
			return (int)fd;
		if (errno == ENOSYS)
			return proc__root_walk(rootfd, path, flags);
		if (errno != EAGAIN)
			return -errno;
	}
	return -EAGAIN;
}

int proc__root_open(pid_t pid, const char *path, int flags)
{
	int rootfd, fd;

	if (!path || flags_refused(flags))
		return -EINVAL;
	/* Following this one magic link is the point: it is the target's root. */
	rootfd = proc__open_in_pid_dir(pid, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return rootfd;
	fd = proc__root_openat(rootfd, path, flags);
	close(rootfd);
	return fd;
}

/* The checks of proc__open_file_at on an O_PATH fd, then the reopen. */
static int reopen_checked(int path_fd, pid_t pid, const struct proc_file_id *id, int flags,
			  int *ret_fd)
{
	char self[64];
	struct statfs sfs;
	struct stat st;
	int fd;

	if (fstat(path_fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	if (id && (st.st_dev != id->dev || st.st_ino != id->ino))
		return -ESTALE;
	/* A FUSE daemon (the target may run it) could hold any later read of it. */
	if (fstatfs(path_fd, &sfs))
		return -errno;
	if (sfs.f_type == FUSE_SUPER_MAGIC)
		return -EREMOTE;
	/* Reads go on to a layer's file, which may be on FUSE: who made the overlay decides. */
	if (sfs.f_type == OVERLAYFS_SUPER_MAGIC && proc__overlay_trusted(path_fd, pid))
		return -EREMOTE;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", path_fd);
	fd = open(self, (flags & O_ACCMODE) | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return 0;
}

enum open_how_kind { OPEN_IN_ROOT, OPEN_IN_PID_ROOT, OPEN_MAPPED };

/* One open, as a bounded call: plain data (the root, if any, travels as its fd). */
struct open_job {
	enum open_how_kind how;
	pid_t pid;
	__u64 start, end;         /* OPEN_MAPPED */
	bool has_id;
	struct proc_file_id id;
	int flags;
	int err;                  /* out */
	char path[PATH_MAX];
};

/* In the bounded worker: root_fd is OPEN_IN_ROOT's root. */
static void open_job__run(void *p, int root_fd, int *ret_fd)
{
	struct open_job *j = p;
	char path[96];
	int pfd;

	if (j->how == OPEN_MAPPED) {
		snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)j->pid,
			 (unsigned long long)j->start, (unsigned long long)j->end);
		/* The magic link is the point here: it is the mapped file, not a path. */
		pfd = open(path, O_PATH | O_CLOEXEC);
		if (pfd < 0)
			pfd = -errno;
	} else if (j->how == OPEN_IN_PID_ROOT) {
		pfd = proc__root_open(j->pid, j->path, O_PATH);
	} else {
		pfd = proc__root_openat(root_fd, j->path, O_PATH);
	}
	if (pfd < 0) {
		j->err = pfd;
		return;
	}
	j->err = reopen_checked(pfd, j->pid, j->has_id ? &j->id : NULL, j->flags, ret_fd);
	close(pfd);
}

/*
 * Every step may block as long as a FUSE daemon wants (the walk, fstat,
 * statfs, the open): in the bounded worker, the caller waiting at most
 * BOUNDED_TIMEOUT_MS (user/util/bounded.h).
 */
static int open_job__call(struct bounded *b, struct open_job *j, int root_fd, int *ret_fd)
{
	int fd = -1, err;

	err = bounded__call(b, j->pid, open_job__run, j, offsetof(struct open_job, path) +
			    strlen(j->path) + 1, root_fd, &fd);
	if (err)
		return err == -EDEADLK ? -ETIMEDOUT : err;
	if (j->err || fd < 0) {
		if (fd >= 0)
			close(fd);
		return j->err ? j->err : -EIO;
	}
	*ret_fd = fd;
	return 0;
}

static int open_job__init(struct open_job *j, enum open_how_kind how, pid_t pid, const char *path,
			  const struct proc_file_id *id, int flags)
{
	memset(j, 0, offsetof(struct open_job, path));
	j->how = how;
	j->pid = pid;
	j->flags = flags;
	j->has_id = id != NULL;
	if (id)
		j->id = *id;
	j->path[0] = 0;
	if (path && snprintf(j->path, sizeof(j->path), "%s", path) >= (int)sizeof(j->path))
		return -ENAMETOOLONG;
	return 0;
}

int proc__open_file_at(struct bounded *b, pid_t pid, int root_fd, const char *path,
		       const struct proc_file_id *id, int *ret_fd)
{
	struct open_job j;
	int err;

	if (root_fd < 0 || !path || !ret_fd)
		return -EINVAL;
	if ((err = open_job__init(&j, OPEN_IN_ROOT, pid, path, id, O_RDONLY)))
		return err;
	return open_job__call(b, &j, root_fd, ret_fd);
}

int proc__open_file(struct bounded *b, pid_t pid, const char *path, const struct proc_file_id *id,
		    int *ret_fd)
{
	struct open_job j;
	int err;

	if (!path || !ret_fd)
		return -EINVAL;
	if ((err = open_job__init(&j, OPEN_IN_PID_ROOT, pid, path, id, O_RDONLY)))
		return err;
	return open_job__call(b, &j, -1, ret_fd);
}

int proc__open_mapped(struct bounded *b, pid_t pid, __u64 start, __u64 end,
		      const struct proc_file_id *id, int flags, int *ret_fd)
{
	struct open_job j;

	if (pid <= 0 || !ret_fd || ((flags & O_ACCMODE) != O_RDONLY && (flags & O_ACCMODE) != O_RDWR))
		return -EINVAL;
	open_job__init(&j, OPEN_MAPPED, pid, NULL, id, flags);
	j.start = start;
	j.end = end;
	return open_job__call(b, &j, -1, ret_fd);
}
