/* SPDX-License-Identifier: MIT */
/*
 * Remote reads. process_vm_readv needs the same ptrace access as
 * /proc/<pid>/mem but no open file; some seccomp profiles (and old
 * container runtimes) refuse it with ENOSYS or EPERM, so /proc/<pid>/mem is
 * the fallback, opened per read: the loader follows many processes and must
 * not hold an fd on each.
 *
 * Either can block as long as the process wants (a page of its memory that a
 * FUSE daemon or a userfaultfd it runs must provide): every read is a
 * bounded call (user/util/bounded.h) through the caller's struct bounded,
 * keyed by the pid.
 */
#include "user/python/pymem.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "user/util/bounded.h"

static int pymem__pread(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = pread(fd, buf, len, (off_t)addr);
	if (n < 0)
		err = errno == EIO ? -EFAULT : -errno;
	else if ((size_t)n != len)
		err = -EFAULT;
	close(fd);
	return err;
}

static int pymem__read_now(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n >= 0)
		return (size_t)n == len ? 0 : -EFAULT;
	if (errno == ENOSYS || errno == EPERM)
		return pymem__pread(pid, addr, buf, len);
	return -errno;
}

/* One read as a bounded call: the bytes travel in the job. */
struct read_job {
	pid_t pid;
	int err;
	uint64_t addr;
	size_t len;
	unsigned char buf[];
};

static void read_job__run(void *p, int in_fd, int *ret_fd)
{
	struct read_job *j = p;

	(void)in_fd;
	(void)ret_fd;
	j->err = pymem__read_now(j->pid, j->addr, j->buf, j->len);
}

int pymem__read(struct bounded *b, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct read_job *j;
	int err;

	if (pid <= 0 || !buf)
		return -EINVAL;
	if (!len)
		return 0;
	if (addr == 0 || addr + len < addr || addr > INT64_MAX || len > PYMEM_READ_MAX)
		return -EFAULT;
	j = malloc(sizeof(*j) + len);
	if (!j)
		return -ENOMEM;
	*j = (struct read_job){ .pid = pid, .addr = addr, .len = len };
	err = bounded__call(b, pid, read_job__run, j, sizeof(*j) + len, -1, NULL);
	if (!err && !(err = j->err))
		memcpy(buf, j->buf, len);
	free(j);
	return err == -EDEADLK ? -ETIMEDOUT : err;
}

int pymem__read_u64(struct bounded *b, pid_t pid, uint64_t addr, uint64_t *ret)
{
	uint64_t v;
	int err = pymem__read(b, pid, addr, &v, sizeof(v));

	if (err)
		return err;
	*ret = v;
	return 0;
}

/* Up to IOV_MAX segments from first in one call: how many it read whole. */
static size_t readv_batch(pid_t pid, struct pymem_seg *segs, size_t n, int *ret_errno)
{
	struct iovec local[IOV_MAX], remote[IOV_MAX];
	size_t k = n < IOV_MAX ? n : IOV_MAX, done = 0;
	ssize_t got;

	for (size_t i = 0; i < k; i++) {
		local[i] = (struct iovec){ .iov_base = segs[i].buf, .iov_len = segs[i].len };
		remote[i] = (struct iovec){ .iov_base = (void *)(uintptr_t)segs[i].addr,
					    .iov_len = segs[i].len };
	}
	got = process_vm_readv(pid, local, k, remote, k, 0);
	*ret_errno = got < 0 ? errno : 0;
	for (size_t i = 0; got > 0 && i < k && (size_t)got >= segs[i].len; i++) {
		got -= (ssize_t)segs[i].len;
		segs[i].err = 0;
		done++;
	}
	return done;
}

/* Every segment, here and now (in the bounded worker). */
static void readv_now(pid_t pid, struct pymem_seg *segs, size_t n)
{
	size_t i = 0;

	while (i < n) {
		int e;
		size_t done;

		if (!segs[i].len || !segs[i].addr || segs[i].addr > INT64_MAX ||
		    segs[i].addr + segs[i].len < segs[i].addr) {
			segs[i].err = segs[i].len ? -EFAULT : 0;
			i++;
			continue;
		}
		done = readv_batch(pid, segs + i, n - i, &e);
		i += done;
		if (i < n && (e == ENOSYS || e == EPERM)) {
			for (; i < n; i++)
				segs[i].err = pymem__read_now(pid, segs[i].addr, segs[i].buf, segs[i].len);
			return;
		}
		if (i < n && e == ESRCH) {
			for (; i < n; i++)
				segs[i].err = -ESRCH;
			return;
		}
		if (i < n && !done) {
			/* This one could not be read: mark it, go on past it. */
			segs[i].err = -EFAULT;
			i++;
		}
	}
}

/*
 * A gathered read as one bounded call: the segments (their buffers offsets
 * into the job's data), then the data, which comes back filled.
 */
struct readv_seg {
	uint64_t addr;
	uint32_t len, off;
	int32_t err;
	uint32_t pad;
};

struct readv_job {
	pid_t pid;
	uint32_t n;
	struct readv_seg seg[];  /* then the data */
};

static void readv_job__run(void *p, int in_fd, int *ret_fd)
{
	struct readv_job *j = p;
	unsigned char *data = (unsigned char *)&j->seg[j->n];
	struct pymem_seg segs[256];

	(void)in_fd;
	(void)ret_fd;
	for (uint32_t i = 0; i < j->n && i < 256; i++)
		segs[i] = (struct pymem_seg){ .addr = j->seg[i].addr, .buf = data + j->seg[i].off,
					      .len = j->seg[i].len };
	readv_now(j->pid, segs, j->n < 256 ? j->n : 256);
	for (uint32_t i = 0; i < j->n && i < 256; i++)
		j->seg[i].err = segs[i].err;
}

/* How many of segs, from the first, one job holds (at least one when it fits at all). */
static size_t readv_fits(const struct pymem_seg *segs, size_t n, size_t *ret_bytes)
{
	size_t k = 0, bytes = sizeof(struct readv_job);

	while (k < n && k < 256 && segs[k].len <= PYMEM_READ_MAX &&
	       bytes + sizeof(struct readv_seg) + segs[k].len <= BOUNDED_JOB_MAX) {
		bytes += sizeof(struct readv_seg) + segs[k].len;
		k++;
	}
	*ret_bytes = bytes;
	return k;
}

void pymem__readv(struct bounded *b, pid_t pid, struct pymem_seg *segs, size_t n)
{
	while (n) {
		size_t bytes, k = readv_fits(segs, n, &bytes), off = 0;
		struct readv_job *j;
		unsigned char *data;
		int err;

		if (!k) { /* one too large for a job: refused, as pymem__read does */
			segs->err = -EFAULT;
			segs++, n--;
			continue;
		}
		j = calloc(1, bytes);
		if (!j) {
			for (size_t i = 0; i < k; i++)
				segs[i].err = -ENOMEM;
			segs += k, n -= k;
			continue;
		}
		j->pid = pid;
		j->n = (uint32_t)k;
		for (size_t i = 0; i < k; i++) {
			j->seg[i] = (struct readv_seg){ .addr = segs[i].addr, .len = (uint32_t)segs[i].len,
							.off = (uint32_t)off };
			off += segs[i].len;
		}
		err = bounded__call(b, pid, readv_job__run, j, bytes, -1, NULL);
		data = (unsigned char *)&j->seg[k];
		for (size_t i = 0; i < k; i++) {
			segs[i].err = err ? (err == -EDEADLK ? -ETIMEDOUT : err) : j->seg[i].err;
			if (!segs[i].err)
				memcpy(segs[i].buf, data + j->seg[i].off, segs[i].len);
		}
		free(j);
		segs += k, n -= k;
	}
}
