/* SPDX-License-Identifier: MIT */
/*
 * Reading /proc/<pid>: liveness, comm, the pid list and PID-namespace
 * translation (its maps: proc_maps.c). Every file is read through a
 * /proc/<pid> directory fd (so one call sees one process even if the pid is
 * reused meanwhile), with a bound, and parsed strictly: the target controls
 * its comm.
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
#include <unistd.h>
#include "user/proc/proc.h"
#include "user/proc/proc_internal.h"
#include "user/util/grow.h"

#define STAT_MAX 4096            /* /proc/pid/stat is ~300 bytes */
#define STATUS_MAX (64 * 1024)   /* /proc/pid/status is ~1.5 KiB */
/* Its Groups line with NGROUPS_MAX (65,536) ids of 10 digits: 721 KiB. */
#define STATUS_MAX_GROUPS (1024 * 1024)
#define COMM_MAX 256             /* TASK_COMM_LEN is 16 */
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

int proc__open_in_pid_dir(pid_t pid, const char *name, int flags)
{
	int dfd, fd;

	dfd = proc__open_pid_dir(pid);
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, name, flags);
	fd = fd < 0 ? -errno : fd;
	close(dfd);
	return fd;
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
	pid_t *pids = NULL, *np;
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
		if (n >= max) {
			err = -E2BIG;
			break;
		}
		np = grow__array_max(pids, &cap, n + 1, sizeof(*np), 256, max);
		if (!np) {
			err = -ENOMEM;
			break;
		}
		pids = np;
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

bool proc__next_line(const char *text, size_t n, size_t *pos, const char **ret_line,
		     size_t *ret_len)
{
	const char *line, *nl;
	size_t ll;

	if (*pos >= n)
		return false;
	line = text + *pos;
	nl = memchr(line, '\n', n - *pos);
	ll = nl ? (size_t)(nl - line) : n - *pos;
	*pos += ll + 1;
	*ret_line = line;
	*ret_len = ll;
	return true;
}

/* ------------------------------------------------------------ PID namespaces */

/*
 * The rest of the line of status_text that starts with key: the first such
 * line, or (unique) the only one (-EINVAL when two are). -ENOENT: none.
 */
static int status_line(const char *status_text, size_t len, const char *key, bool unique,
		       const char **ret_line, size_t *ret_len)
{
	const size_t kn = strlen(key);
	const char *line = NULL, *s;
	size_t line_len = 0, pos = 0, n;

	if (!status_text && len)
		return -EINVAL;
	while (proc__next_line(status_text, len, &pos, &s, &n)) {
		if (n < kn || memcmp(s, key, kn))
			continue;
		if (line)
			return -EINVAL;
		line = s + kn;
		line_len = n - kn;
		if (!unique)
			break;
	}
	if (!line)
		return -ENOENT;
	*ret_line = line;
	*ret_len = line_len;
	return 0;
}

int proc__parse_nspid(const char *status_text, size_t len,
		      pid_t *ret_innermost, pid_t *ret_outermost)
{
	const char *line;
	size_t line_len, pos = 0, levels = 0;
	pid_t first = 0, last = 0;
	int err;

	err = status_line(status_text, len, "NSpid:", true, &line, &line_len);
	if (err)
		return err;
	for (;;) {
		size_t start;
		__u64 v;

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

/*
 * dirfd/status_name read whole into a buffer of its own, freed by the
 * caller: STATUS_MAX, or STATUS_MAX_GROUPS for a process whose Groups line
 * (before NSpid) is longer than that.
 */
static int read_status_at(int dirfd, const char *status_name, char **ret_buf, size_t *ret_len)
{
	size_t cap = STATUS_MAX;
	char *buf;
	int err;

	for (;;) {
		buf = malloc(cap);
		if (!buf)
			return -ENOMEM;
		err = proc__read_file_at(dirfd, status_name, buf, cap, ret_len);
		if (!err)
			break;
		free(buf);
		if (err != -EFBIG || cap == STATUS_MAX_GROUPS)
			return err;
		cap = STATUS_MAX_GROUPS;
	}
	*ret_buf = buf;
	return 0;
}

static int read_nspid_at(int dirfd, const char *status_name, pid_t *ret_inner, pid_t *ret_outer)
{
	size_t len;
	char *buf;
	int err;

	err = read_status_at(dirfd, status_name, &buf, &len);
	if (err)
		return err;
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

int proc__parse_uid(const char *status_text, size_t len, uid_t *ret_uid)
{
	const char *s;
	size_t n, i = 0, start;
	__u64 v;
	int err;

	err = status_line(status_text, len, "Uid:", false, &s, &n);
	if (err)
		return err;
	while (i < n && (s[i] == '\t' || s[i] == ' '))
		i++;
	start = i;
	while (i < n && s[i] != '\t' && s[i] != ' ')
		i++;
	if (proc__parse_u64(s + start, i - start, 10, UINT32_MAX - 1, &v))
		return -EINVAL;
	*ret_uid = (uid_t)v;
	return 0;
}

int proc__status_ids(pid_t host_pid, pid_t *ret_ns_pid, uid_t *ret_uid)
{
	pid_t inner;
	size_t len;
	char *buf;
	int dfd, err;

	dfd = proc__open_pid_dir(host_pid);
	if (dfd < 0)
		return dfd;
	err = read_status_at(dfd, "status", &buf, &len);
	close(dfd);
	if (err)
		return err;
	err = proc__parse_uid(buf, len, ret_uid);
	if (!err)
		*ret_ns_pid = proc__parse_nspid(buf, len, &inner, NULL) ? host_pid : inner;
	free(buf);
	return err;
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
