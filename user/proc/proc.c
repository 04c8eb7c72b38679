/* SPDX-License-Identifier: MIT */
/*
 * Reading /proc/<pid>: liveness, comm, the pid list, maps (libraries and
 * memfds) and PID-namespace translation. Every file is read through a
 * /proc/<pid> directory fd (so one call sees one process even if the pid is
 * reused meanwhile), with a bound, and parsed strictly: the target controls
 * its comm and its mapped paths.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "user/proc/proc.h"
#include "user/proc/proc_internal.h"

#define STAT_MAX 4096            /* /proc/pid/stat is ~300 bytes */
#define STATUS_MAX (64 * 1024)   /* /proc/pid/status is ~1.5 KiB */
#define COMM_MAX 256             /* TASK_COMM_LEN is 16 */
/* A maps line is ~75 bytes plus a path the kernel bounds by a page. */
#define MAPS_LINE_MAX (2 * PATH_MAX + 256)
#define PIDS_MAX (1u << 23)      /* above PID_MAX_LIMIT (4M) */
#define THREADS_MAX (1u << 22)
#define NSPID_LEVELS_MAX 64      /* the kernel nests at most 32 */

struct proc_tid_entry {
	pid_t ns_tid;
	pid_t host_tid;
};

struct proc_tid_map {
	size_t n;
	struct proc_tid_entry *e;   /* sorted by ns_tid */
};

/* ------------------------------------------------------------ primitives */

int proc__parse_u64(const char *s, size_t n, int base, __u64 max, __u64 *ret)
{
	char tmp[32];
	unsigned long long v;
	char *end;
	size_t i;

	if (n == 0 || n >= sizeof(tmp))
		return n == 0 ? -EINVAL : -ERANGE;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (base == 16 ? !isxdigit(c) : !isdigit(c))
			return -EINVAL;
	}
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	errno = 0;
	v = strtoull(tmp, &end, base);
	if (errno == ERANGE || v > max)
		return -ERANGE;
	if (errno || end != tmp + n)
		return -EINVAL;
	*ret = v;
	return 0;
}

int proc__open_pid_dir(pid_t pid)
{
	char path[32];
	int fd;

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int proc__read_file_at(int dirfd, const char *name, char *buf, size_t cap, size_t *ret_len)
{
	size_t len = 0;
	int fd, err = 0;

	if (cap < 2)
		return -EINVAL;
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r;

		if (len == cap - 1) {
			char c;

			/* Full: is there more? */
			r = read(fd, &c, 1);
			if (r < 0 && errno == EINTR)
				continue;
			err = r < 0 ? -errno : r > 0 ? -EFBIG : 0;
			break;
		}
		r = read(fd, buf + len, cap - 1 - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (err)
		return err;
	buf[len] = '\0';
	*ret_len = len;
	return 0;
}

static int read_pid_file(pid_t pid, const char *name, char *buf, size_t cap, size_t *ret_len)
{
	int dfd, err;

	dfd = proc__open_pid_dir(pid);
	if (dfd < 0)
		return dfd;
	err = proc__read_file_at(dfd, name, buf, cap, ret_len);
	close(dfd);
	return err;
}

/* ------------------------------------------------------------ pid, comm */

bool proc__alive(pid_t pid)
{
	char buf[STAT_MAX];
	const char *rp;
	size_t len;

	if (read_pid_file(pid, "stat", buf, sizeof(buf), &len) < 0)
		return false;
	/* "pid (comm) S ...": comm may hold ')' and spaces; the last ')' ends it. */
	rp = memrchr(buf, ')', len);
	if (!rp || (size_t)(rp - buf) + 2 >= len || rp[1] != ' ')
		return false;
	return rp[2] != 'Z' && rp[2] != 'X' && rp[2] != 'x';
}

int proc__usage(pid_t pid, double *ret_cpu_s, unsigned long *ret_hwm_kib)
{
	char buf[STAT_MAX], status[8192];
	unsigned long long utime, stime;
	const char *rp, *hwm;
	size_t len;
	long hz = sysconf(_SC_CLK_TCK);
	int err;

	err = read_pid_file(pid, "stat", buf, sizeof(buf), &len);
	if (err < 0)
		return err;
	/* After "(comm) ": state is field 3, utime and stime fields 14 and 15. */
	rp = memrchr(buf, ')', len);
	if (!rp || sscanf(rp + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			  &utime, &stime) != 2 || hz <= 0)
		return -EINVAL;
	*ret_cpu_s = (double)(utime + stime) / (double)hz;
	*ret_hwm_kib = 0;
	if (read_pid_file(pid, "status", status, sizeof(status), &len) == 0) {
		hwm = strstr(status, "\nVmHWM:");
		if (hwm)
			*ret_hwm_kib = strtoul(hwm + 7, NULL, 10);
	}
	return 0;
}

int proc__comm(pid_t pid, char *buf, size_t len)
{
	char tmp[COMM_MAX];
	size_t n;
	int err;

	if (!buf || len == 0)
		return -EINVAL;
	err = read_pid_file(pid, "comm", tmp, sizeof(tmp), &n);
	if (err)
		return err;
	if (n > 0 && tmp[n - 1] == '\n')
		n--;
	if (memchr(tmp, '\0', n))
		return -EINVAL;
	if (n + 1 > len)
		return -ENAMETOOLONG;
	memcpy(buf, tmp, n);
	buf[n] = '\0';
	return 0;
}

/* A /proc entry name that is a pid: digits only, 1..INT_MAX. */
static bool parse_pid_name(const char *name, pid_t *ret)
{
	__u64 v;

	if (proc__parse_u64(name, strlen(name), 10, INT_MAX, &v) || v == 0)
		return false;
	*ret = (pid_t)v;
	return true;
}

static int list_numeric_dir(int dfd, size_t max, pid_t **ret_pids, size_t *ret_n)
{
	pid_t *pids = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int err = 0;

	d = fdopendir(dfd);
	if (!d) {
		err = -errno;
		close(dfd);
		return err;
	}
	for (;;) {
		pid_t p;

		errno = 0;
		de = readdir(d);
		if (!de) {
			err = errno ? -errno : 0;
			break;
		}
		if (!parse_pid_name(de->d_name, &p))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			pid_t *np;

			if (n >= max) {
				err = -E2BIG;
				break;
			}
			if (ncap > max)
				ncap = max;
			np = realloc(pids, ncap * sizeof(*np));
			if (!np) {
				err = -ENOMEM;
				break;
			}
			pids = np;
			cap = ncap;
		}
		pids[n++] = p;
	}
	closedir(d);
	if (err) {
		free(pids);
		return err;
	}
	*ret_pids = pids;
	*ret_n = n;
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int proc__list_pids(pid_t **ret_pids, size_t *ret_n)
{
	pid_t *pids;
	size_t n;
	int dfd, err;

	if (!ret_pids || !ret_n)
		return -EINVAL;
	dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	err = list_numeric_dir(dfd, PIDS_MAX, &pids, &n);
	if (err)
		return err;
	if (n)
		qsort(pids, n, sizeof(*pids), cmp_pid);
	*ret_pids = pids;
	*ret_n = n;
	return 0;
}

/* ------------------------------------------------------------ maps */

/* Next token ending at sep; *pos moves past sep. */
static bool next_field(const char *line, size_t len, size_t *pos, char sep,
		       const char **ret_s, size_t *ret_n)
{
	size_t i = *pos;

	while (i < len && line[i] != sep)
		i++;
	if (i >= len)
		return false;
	*ret_s = line + *pos;
	*ret_n = i - *pos;
	*pos = i + 1;
	return true;
}

int proc__parse_maps_line(const char *line, size_t len, struct proc_maps_line *ret)
{
	struct proc_maps_line out;
	const char *s;
	size_t n, pos = 0;
	__u64 major, minor, ino;

	if (!line || !ret)
		return -EINVAL;
	if (len > 0 && line[len - 1] == '\n')
		len--;
	memset(&out, 0, sizeof(out));

	if (!next_field(line, len, &pos, '-', &s, &n) ||
	    proc__parse_u64(s, n, 16, UINT64_MAX, &out.map.start))
		return -EINVAL;
	if (!next_field(line, len, &pos, ' ', &s, &n) ||
	    proc__parse_u64(s, n, 16, UINT64_MAX, &out.map.end) ||
	    out.map.end < out.map.start)
		return -EINVAL;
	if (!next_field(line, len, &pos, ' ', &s, &n) || n != 4 ||
	    (s[0] != 'r' && s[0] != '-') || (s[1] != 'w' && s[1] != '-') ||
	    (s[2] != 'x' && s[2] != '-') || (s[3] != 'p' && s[3] != 's'))
		return -EINVAL;
	memcpy(out.map.perms, s, 4);
	out.map.perms[4] = '\0';
	if (!next_field(line, len, &pos, ' ', &s, &n) ||
	    proc__parse_u64(s, n, 16, UINT64_MAX, &out.map.offset))
		return -EINVAL;
	if (!next_field(line, len, &pos, ':', &s, &n) ||
	    proc__parse_u64(s, n, 16, UINT32_MAX, &major))
		return -EINVAL;
	if (!next_field(line, len, &pos, ' ', &s, &n) ||
	    proc__parse_u64(s, n, 16, UINT32_MAX, &minor))
		return -EINVAL;
	out.map.dev = makedev((unsigned)major, (unsigned)minor);
	/* The inode ends at a space (a path or padding follows) or at the end. */
	s = line + pos;
	n = 0;
	while (pos + n < len && line[pos + n] != ' ')
		n++;
	if (proc__parse_u64(s, n, 10, UINT64_MAX, &ino))
		return -EINVAL;
	out.map.ino = (ino_t)ino;
	pos += n;
	while (pos < len && line[pos] == ' ')
		pos++;
	if (pos < len) {
		out.path = line + pos;
		out.path_len = len - pos;
		if (memchr(out.path, '\0', out.path_len) || memchr(out.path, '\n', out.path_len))
			return -EINVAL;
	}
	*ret = out;
	return 0;
}

/* Bounded line reader over a file descriptor. */
struct line_reader {
	int fd;
	char *buf;
	size_t cap, start, end;
	bool eof;
};

/* 1: a line; 0: end of file; -errno. A line longer than the buffer is
 * -E2BIG: the kernel never writes one. */
static int line_reader__next(struct line_reader *lr, const char **ret_line, size_t *ret_len)
{
	for (;;) {
		char *nl = memchr(lr->buf + lr->start, '\n', lr->end - lr->start);
		ssize_t r;

		if (nl) {
			*ret_line = lr->buf + lr->start;
			*ret_len = (size_t)(nl - (lr->buf + lr->start));
			lr->start = (size_t)(nl - lr->buf) + 1;
			return 1;
		}
		if (lr->eof) {
			if (lr->start == lr->end)
				return 0;
			*ret_line = lr->buf + lr->start;
			*ret_len = lr->end - lr->start;
			lr->start = lr->end;
			return 1;
		}
		if (lr->start > 0) {
			memmove(lr->buf, lr->buf + lr->start, lr->end - lr->start);
			lr->end -= lr->start;
			lr->start = 0;
		}
		if (lr->end == lr->cap)
			return -E2BIG;
		r = read(lr->fd, lr->buf + lr->end, lr->cap - lr->end);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			lr->eof = true;
		lr->end += (size_t)r;
	}
}

typedef int (*maps_line_fn)(void *ctx, const struct proc_maps_line *ml);

/* Calls fn for each maps line; fn returns 0 to go on, > 0 to stop (success),
 * < 0 to fail. Returns 1 if stopped, 0 at the end, or -errno. */
static int for_each_maps_line(pid_t pid, maps_line_fn fn, void *ctx)
{
	struct line_reader lr = { 0 };
	const char *line;
	size_t len;
	int dfd, err;

	dfd = proc__open_pid_dir(pid);
	if (dfd < 0)
		return dfd;
	lr.fd = openat(dfd, "maps", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	err = lr.fd < 0 ? -errno : 0;
	close(dfd);
	if (err)
		return err;
	lr.cap = MAPS_LINE_MAX;
	lr.buf = malloc(lr.cap);
	if (!lr.buf) {
		err = -ENOMEM;
		goto err_close_fd;
	}
	while ((err = line_reader__next(&lr, &line, &len)) > 0) {
		struct proc_maps_line ml;

		err = proc__parse_maps_line(line, len, &ml);
		if (err)
			break;
		err = fn(ctx, &ml);
		if (err)
			break;
	}
	free(lr.buf);
err_close_fd:
	close(lr.fd);
	return err;
}

static const char deleted_suffix[] = " (deleted)";

static bool ends_with(const char *s, size_t n, const char *suffix, size_t sn)
{
	return n >= sn && memcmp(s + n - sn, suffix, sn) == 0;
}

/* The kernel escapes only '\n' in maps paths (as "\012"). 0, or -ENAMETOOLONG. */
static int unescape_maps_path(const char *s, size_t n, char *buf, size_t cap)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' && n - i >= 4 && memcmp(s + i, "\\012", 4) == 0) {
			c = '\n';
			i += 3;
		}
		if (o + 1 >= cap)
			return -ENAMETOOLONG;
		buf[o++] = c;
	}
	buf[o] = '\0';
	return 0;
}

struct find_libs_ctx {
	pid_t pid;
	const char *prefix;
	size_t prefix_len;
	struct proc_lib *libs;
	size_t n, cap;
};

static int find_libs_line(void *p, const struct proc_maps_line *ml)
{
	struct find_libs_ctx *ctx = p;
	struct proc_lib *lib;
	const char *base;
	size_t i, base_len;
	char path[PATH_MAX];
	int len;

	if (ml->map.perms[2] != 'x' || ml->path_len == 0 || ml->path[0] != '/' ||
	    ml->map.ino == 0)
		return 0;
	if (ends_with(ml->path, ml->path_len, deleted_suffix, sizeof(deleted_suffix) - 1))
		return 0;
	if (unescape_maps_path(ml->path, ml->path_len, path, sizeof(path)))
		return 0;   /* longer than any path we could open */
	base = strrchr(path, '/') + 1;
	base_len = strlen(base);
	if (base_len < ctx->prefix_len || memcmp(base, ctx->prefix, ctx->prefix_len) != 0)
		return 0;
	for (i = 0; i < ctx->n; i++) {
		lib = &ctx->libs[i];
		if (lib->dev == ml->map.dev && lib->ino == ml->map.ino && !strcmp(lib->path, path))
			return 0;
	}
	if (ctx->n == ctx->cap) {
		size_t ncap = ctx->cap ? ctx->cap * 2 : 4;
		struct proc_lib *nl;

		if (ctx->n >= PROC_LIBS_MAX)
			return -E2BIG;
		if (ncap > PROC_LIBS_MAX)
			ncap = PROC_LIBS_MAX;
		nl = realloc(ctx->libs, ncap * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		ctx->libs = nl;
		ctx->cap = ncap;
	}
	lib = &ctx->libs[ctx->n];
	len = snprintf(lib->host_path, sizeof(lib->host_path), "/proc/%d/root%s",
		       (int)ctx->pid, path);
	if (len < 0 || (size_t)len >= sizeof(lib->host_path))
		return 0;   /* unreachable from the host by name */
	memcpy(lib->path, path, strlen(path) + 1);
	lib->dev = ml->map.dev;
	lib->ino = ml->map.ino;
	lib->start = ml->map.start;
	lib->end = ml->map.end;
	ctx->n++;
	return 0;
}

int proc__find_libs(pid_t pid, const char *basename_prefix,
		    struct proc_lib **ret_libs, size_t *ret_n)
{
	struct find_libs_ctx ctx = { .pid = pid, .prefix = basename_prefix };
	int err;

	if (!basename_prefix || !ret_libs || !ret_n || strchr(basename_prefix, '/'))
		return -EINVAL;
	ctx.prefix_len = strlen(basename_prefix);
	err = for_each_maps_line(pid, find_libs_line, &ctx);
	if (err < 0) {
		free(ctx.libs);
		return err;
	}
	if (ctx.n == 0) {
		free(ctx.libs);
		ctx.libs = NULL;
	}
	*ret_libs = ctx.libs;
	*ret_n = ctx.n;
	return 0;
}

struct find_memfd_ctx {
	const char *name;
	size_t name_len;
	struct proc_mapping found;
};

static int find_memfd_line(void *p, const struct proc_maps_line *ml)
{
	static const char prefix[] = "/memfd:";
	struct find_memfd_ctx *ctx = p;
	const size_t pn = sizeof(prefix) - 1, dn = sizeof(deleted_suffix) - 1;
	size_t n = ml->path_len;

	if (n < pn || memcmp(ml->path, prefix, pn) != 0)
		return 0;
	if (n == pn + ctx->name_len + dn && ends_with(ml->path, n, deleted_suffix, dn))
		n -= dn;
	if (n != pn + ctx->name_len || memcmp(ml->path + pn, ctx->name, ctx->name_len) != 0)
		return 0;
	ctx->found = ml->map;
	return 1;
}

int proc__find_memfd(pid_t pid, const char *memfd_name, struct proc_mapping *ret)
{
	struct find_memfd_ctx ctx = { .name = memfd_name };
	int err;

	if (!memfd_name || !ret)
		return -EINVAL;
	ctx.name_len = strlen(memfd_name);
	err = for_each_maps_line(pid, find_memfd_line, &ctx);
	if (err < 0)
		return err;
	if (err == 0)
		return -ENOENT;
	*ret = ctx.found;
	return 0;
}

int proc__map_files_path(pid_t pid, const struct proc_mapping *m, char *buf, size_t len)
{
	char tmp[96];
	int n;

	if (pid <= 0 || !m || !buf)
		return -EINVAL;
	n = snprintf(tmp, sizeof(tmp), "/proc/%d/map_files/%llx-%llx", (int)pid,
		     (unsigned long long)m->start, (unsigned long long)m->end);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -EINVAL;
	if ((size_t)n + 1 > len)
		return -ENAMETOOLONG;
	memcpy(buf, tmp, (size_t)n + 1);
	return 0;
}

/* ------------------------------------------------------------ PID namespaces */

int proc__parse_nspid(const char *status_text, size_t len,
		      pid_t *ret_innermost, pid_t *ret_outermost)
{
	static const char key[] = "NSpid:";
	const size_t kn = sizeof(key) - 1;
	const char *line = NULL;
	size_t line_len = 0, pos = 0, levels = 0;
	pid_t first = 0, last = 0;

	if (!status_text && len)
		return -EINVAL;
	/* Find the one line that starts with the key. */
	while (pos < len) {
		const char *s = status_text + pos;
		const char *nl = memchr(s, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - s) : len - pos;

		if (n >= kn && memcmp(s, key, kn) == 0) {
			if (line)
				return -EINVAL;
			line = s + kn;
			line_len = n - kn;
		}
		pos += n + 1;
	}
	if (!line)
		return -ENOENT;

	pos = 0;
	for (;;) {
		size_t start;
		__u64 v;
		int err;

		while (pos < line_len && (line[pos] == '\t' || line[pos] == ' '))
			pos++;
		if (pos == line_len)
			break;
		start = pos;
		while (pos < line_len && line[pos] != '\t' && line[pos] != ' ')
			pos++;
		err = proc__parse_u64(line + start, pos - start, 10, INT_MAX, &v);
		if (err)
			return err;
		if (v == 0)
			return -ERANGE;
		if (++levels > NSPID_LEVELS_MAX)
			return -EINVAL;
		if (levels == 1)
			first = (pid_t)v;
		last = (pid_t)v;
	}
	if (levels == 0)
		return -EINVAL;
	if (ret_innermost)
		*ret_innermost = last;
	if (ret_outermost)
		*ret_outermost = first;
	return 0;
}

static int read_nspid_at(int dirfd, const char *status_name, pid_t *ret_inner, pid_t *ret_outer)
{
	size_t len;
	char *buf;
	int err;

	buf = malloc(STATUS_MAX);
	if (!buf)
		return -ENOMEM;
	err = proc__read_file_at(dirfd, status_name, buf, STATUS_MAX, &len);
	if (!err)
		err = proc__parse_nspid(buf, len, ret_inner, ret_outer);
	free(buf);
	return err;
}

int proc__ns_pid(pid_t host_pid, pid_t *ret_ns_pid)
{
	pid_t inner;
	int dfd, err;

	if (!ret_ns_pid)
		return -EINVAL;
	dfd = proc__open_pid_dir(host_pid);
	if (dfd < 0)
		return dfd;
	err = read_nspid_at(dfd, "status", &inner, NULL);
	close(dfd);
	if (err)
		return err;
	*ret_ns_pid = inner;
	return 0;
}

static int cmp_tid_entry(const void *a, const void *b)
{
	const struct proc_tid_entry *x = a, *y = b;

	if (x->ns_tid != y->ns_tid)
		return (x->ns_tid > y->ns_tid) - (x->ns_tid < y->ns_tid);
	return (x->host_tid > y->host_tid) - (x->host_tid < y->host_tid);
}

int proc__ns_tids(pid_t pid, struct proc_tid_map **ret_map)
{
	struct proc_tid_map *map;
	pid_t *tids = NULL;
	size_t n = 0, i;
	int dfd, tfd, err;

	if (!ret_map)
		return -EINVAL;
	dfd = proc__open_pid_dir(pid);
	if (dfd < 0)
		return dfd;
	tfd = openat(dfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (tfd < 0) {
		err = -errno;
		goto err_close_dir;
	}
	err = list_numeric_dir(tfd, THREADS_MAX, &tids, &n);   /* closes tfd */
	if (err)
		goto err_close_dir;
	map = calloc(1, sizeof(*map));
	if (!map) {
		err = -ENOMEM;
		goto err_free_tids;
	}
	map->e = calloc(n ? n : 1, sizeof(*map->e));
	if (!map->e) {
		err = -ENOMEM;
		goto err_free_map;
	}
	for (i = 0; i < n; i++) {
		char name[48];
		pid_t inner, outer;

		snprintf(name, sizeof(name), "task/%d/status", (int)tids[i]);
		err = read_nspid_at(dfd, name, &inner, &outer);
		if (err == -ENOENT || err == -ESRCH)
			continue;   /* the thread exited */
		if (err)
			goto err_free_map;
		map->e[map->n].ns_tid = inner;
		map->e[map->n].host_tid = tids[i];
		map->n++;
	}
	err = 0;
	qsort(map->e, map->n, sizeof(*map->e), cmp_tid_entry);
	free(tids);
	close(dfd);
	*ret_map = map;
	return 0;

err_free_map:
	proc_tid_map__free(map);
err_free_tids:
	free(tids);
err_close_dir:
	close(dfd);
	return err;
}

bool proc_tid_map__lookup(const struct proc_tid_map *map, pid_t ns_tid, pid_t *ret_host_tid)
{
	size_t lo = 0, hi;

	if (!map)
		return false;
	hi = map->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (map->e[mid].ns_tid < ns_tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == map->n || map->e[lo].ns_tid != ns_tid)
		return false;
	if (ret_host_tid)
		*ret_host_tid = map->e[lo].host_tid;
	return true;
}

size_t proc_tid_map__size(const struct proc_tid_map *map)
{
	return map ? map->n : 0;
}

void proc_tid_map__free(struct proc_tid_map *map)
{
	if (!map)
		return;
	free(map->e);
	free(map);
}
