/* SPDX-License-Identifier: MIT */
/*
 * Calls bounded by a deadline in a worker process (bounded.h). The worker
 * is a fork of the loader: the function pointer of a call is valid there.
 * One SOCK_SEQPACKET message each way per call: a header (the function, the
 * job's size), the job, and the fd it carries, if any.
 */
#include "user/util/bounded.h"
#include "user/util/clock.h"
#include "user/util/tenants.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKER_SOCK 3
#define SOCK_BYTES (2 * BOUNDED_JOB_MAX + 4096)
/* Processes whose tenant is kept (by pid, direct-mapped). */
#define TENANT_CACHE 256u

struct msg_hdr {
	uintptr_t fn;   /* request: the bounded_fn; answer: 0 */
	__u64 size;
};

struct stalled {
	pid_t pid;
	__u64 start;    /* the process's start time: a reused pid is another process */
};

struct bounded {
	pthread_mutex_t lock;    /* one call at a time */
	pid_t worker;            /* 0: none yet */
	int sock;
	pid_t lost[BOUNDED_MAX_STUCK]; /* abandoned workers, reaped when they go */
	__u64 lost_tenant[BOUNDED_MAX_STUCK]; /* whose call each was (0: none's) */
	unsigned nlost;
	struct tenants tenants;  /* what each tenant's calls cost */
	bounded_tenant_fn tenant_fn; /* NULL: no tenants (bounded__set_tenants) */
	struct {
		pid_t pid;
		__u64 start, tenant;
	} tenant_of[TENANT_CACHE]; /* a process's tenant, by pid (its start tells a reused one) */
	struct stalled stalled[BOUNDED_MAX_STALLED];
	unsigned nstalled, next_stalled;
	struct bounded_stats st;
};

/* starttime of /proc/<pid>/stat (field 22), 0 when unreadable. */
static __u64 pid_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')'); /* comm may hold anything but NUL */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
			 "%*d %*d %*d %llu", &start) != 1)
		return 0;
	return start;
}

static bool stalled__has(const struct bounded *b, pid_t pid, __u64 start)
{
	for (unsigned i = 0; i < b->nstalled; i++)
		if (b->stalled[i].pid == pid && b->stalled[i].start == start)
			return true;
	return false;
}

static void stalled__add(struct bounded *b, pid_t pid, __u64 start)
{
	b->stalled[b->next_stalled] = (struct stalled){ .pid = pid, .start = start };
	b->next_stalled = (b->next_stalled + 1) % BOUNDED_MAX_STALLED;
	if (b->nstalled < BOUNDED_MAX_STALLED)
		b->nstalled++;
}

/* Abandoned workers that have gone since: reaped, no longer counted stuck. */
static void lost__reap(struct bounded *b)
{
	for (unsigned i = 0; i < b->nlost;) {
		pid_t r = waitpid(b->lost[i], NULL, WNOHANG);

		if (r == b->lost[i] || (r < 0 && errno == ECHILD)) {
			if (b->lost_tenant[i])
				tenants__stuck(&b->tenants, b->lost_tenant[i], -1);
			b->nlost--;
			b->lost[i] = b->lost[b->nlost];
			b->lost_tenant[i] = b->lost_tenant[b->nlost];
			continue;
		}
		i++;
	}
	b->st.stuck = b->nlost;
}

/* One message: header and job, and an fd when fd >= 0. */
static ssize_t msg_send(int sock, const struct msg_hdr *h, const void *job, int fd, int flags)
{
	struct iovec iov[2] = { { (void *)h, sizeof(*h) }, { (void *)job, (size_t)h->size } };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL | flags);
}

/* One message into h and job (cap bytes); *ret_fd the fd it carried, or -1. */
static ssize_t msg_recv(int sock, struct msg_hdr *h, void *job, size_t cap, int *ret_fd, int flags)
{
	struct iovec iov[2] = { { h, sizeof(*h) }, { job, cap } };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	ssize_t n;

	*ret_fd = -1;
	n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC | flags);
	if (n < 0)
		return n;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(ret_fd, CMSG_DATA(c), sizeof(int));
	if ((m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)n < sizeof(*h) ||
	    h->size != (size_t)n - sizeof(*h)) {
		if (*ret_fd >= 0)
			close(*ret_fd);
		*ret_fd = -1;
		errno = EPROTO;
		return -1;
	}
	return n;
}

/* Every fd but 0-2 and the socket (now WORKER_SOCK): nothing of the loader's held. */
static void worker__close_fds(int sock)
{
	DIR *d;
	struct dirent *de;

	if (sock != WORKER_SOCK && dup2(sock, WORKER_SOCK) != WORKER_SOCK)
		_exit(1);
	if (syscall(SYS_close_range, WORKER_SOCK + 1, ~0u, 0) == 0)
		return;
	d = opendir("/proc/self/fd");
	if (!d)
		_exit(1);
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);

		if (fd > WORKER_SOCK && fd != dirfd(d))
			close(fd);
	}
	closedir(d);
}

static void worker_main(int sock, pid_t parent)
{
	void *job = malloc(BOUNDED_JOB_MAX);
	struct msg_hdr h;

	/* Gone with the loader, unless stuck where nothing but its daemon can free it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent || !job)
		_exit(1);
	worker__close_fds(sock);
	/* Ready: a call's deadline (BOUNDED_TIMEOUT_MS) is the call's, not the start's. */
	h = (struct msg_hdr){ 0 };
	if (msg_send(WORKER_SOCK, &h, NULL, -1, 0) < 0)
		_exit(0);
	for (;;) {
		int in_fd, out_fd = -1;

		if (msg_recv(WORKER_SOCK, &h, job, BOUNDED_JOB_MAX, &in_fd, 0) <= 0 || !h.fn)
			_exit(0);
		((bounded_fn)h.fn)(job, in_fd, &out_fd);
		if (in_fd >= 0)
			close(in_fd);
		h.fn = 0;
		if (msg_send(WORKER_SOCK, &h, job, out_fd, 0) < 0)
			_exit(0);
		if (out_fd >= 0)
			close(out_fd);
	}
}

/* key's tenant (its start: start), read once per process and kept, so that a call costs no more reads. */
static __u64 tenant_of(struct bounded *b, pid_t key, __u64 start)
{
	unsigned slot = (unsigned)key % TENANT_CACHE;
	__u64 tenant;

	if (!b->tenant_fn)
		return 0;
	if (start && b->tenant_of[slot].pid == key && b->tenant_of[slot].start == start)
		return b->tenant_of[slot].tenant;
	tenant = b->tenant_fn(key);
	if (start && tenant != TENANT_UNKNOWN) {
		b->tenant_of[slot].pid = key;
		b->tenant_of[slot].start = start;
		b->tenant_of[slot].tenant = tenant;
	}
	return tenant;
}

/* The worker is given up: killed, never waited for; reaped once gone. tenant: whose call (0: none's). */
static void worker__abandon(struct bounded *b, __u64 tenant)
{
	kill(b->worker, SIGKILL);
	close(b->sock);
	if (b->nlost < BOUNDED_MAX_STUCK) {
		b->lost_tenant[b->nlost] = tenant && tenants__stuck(&b->tenants, tenant, 1) ? tenant : 0;
		b->lost[b->nlost++] = b->worker;
	}
	b->st.stuck = b->nlost;
	b->worker = 0;
	b->sock = -1;
}

/*
 * One message from the worker before deadline (CLOCK_MONOTONIC ns): its
 * length, -ETIMEDOUT, or -EIO when the worker is gone (or died in a call).
 */
static ssize_t worker__recv(struct bounded *b, struct msg_hdr *h, void *answer, size_t size,
			    int *ret_fd, __u64 deadline)
{
	struct pollfd p = { .fd = b->sock, .events = POLLIN };

	for (;;) {
		ssize_t n = msg_recv(b->sock, h, answer, size, ret_fd, MSG_DONTWAIT);

		if (n > 0)
			return n;
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			return -EIO;
		if (poll(&p, 1, clock_ms_until(deadline)) == 0)
			return -ETIMEDOUT;
	}
}

/*
 * Waits for a new worker's ready message (worker_main): a fork's start-up on
 * a loaded machine (under a sanitizer, many times slower) is not charged to
 * the first call's deadline. A worker not ready in BOUNDED_START_MS is given up.
 */
static int worker__ready(struct bounded *b)
{
	struct msg_hdr h;
	int fd;
	ssize_t n = worker__recv(b, &h, NULL, 0, &fd, clock_deadline_ms(BOUNDED_START_MS));

	if (fd >= 0)
		close(fd);
	if (n > 0 && !h.fn && !h.size)
		return 0;
	worker__abandon(b, 0);
	b->st.start_failed++;
	return -EAGAIN;
}

static int worker__start(struct bounded *b)
{
	int sv[2], bytes = SOCK_BYTES;
	pid_t parent = getpid(), pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	for (int i = 0; i < 2; i++) {
		/* A whole job in one message: root may go past the system's default. */
		if (setsockopt(sv[i], SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof(bytes)))
			setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
		if (setsockopt(sv[i], SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)))
			setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(sv[0]);
		close(sv[1]);
		return err;
	}
	if (pid == 0) {
		worker_main(sv[1], parent);
		_exit(0);
	}
	close(sv[1]);
	b->worker = pid;
	b->sock = sv[0];
	return worker__ready(b);
}

/* Sends the call and takes its answer, both before the deadline. */
static int worker__exchange(struct bounded *b, bounded_fn fn, void *job, size_t size, int in_fd,
			    void *answer, int *ret_fd)
{
	struct msg_hdr h = { .fn = (uintptr_t)fn, .size = size };
	struct pollfd p = { .fd = b->sock, .events = POLLOUT };
	__u64 deadline = clock_deadline_ms(BOUNDED_TIMEOUT_MS);
	ssize_t n;

	while ((n = msg_send(b->sock, &h, job, in_fd, MSG_DONTWAIT)) < 0) {
		if (errno != EAGAIN && errno != EINTR)
			return -EIO;
		if (poll(&p, 1, clock_ms_until(deadline)) == 0)
			return -ETIMEDOUT;
	}
	n = worker__recv(b, &h, answer, size, ret_fd, deadline);
	if (n < 0)
		return (int)n; /* -EIO: the worker died in the call */
	return h.size == size ? 0 : -EIO;
}

struct bounded *bounded__new(void)
{
	struct bounded *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	if (pthread_mutex_init(&b->lock, NULL)) {
		free(b);
		return NULL;
	}
	b->sock = -1;
	tenants__init(&b->tenants, TENANT_BUDGET_NS);
	return b;
}

void bounded__set_tenants(struct bounded *b, bounded_tenant_fn tenant_of)
{
	pthread_mutex_lock(&b->lock);
	b->tenant_fn = tenant_of;
	pthread_mutex_unlock(&b->lock);
}

/*
 * As the loader's exit does (PR_SET_PDEATHSIG, its fds closed): the worker
 * killed and its socket closed, the stuck ones left to the kernel, none
 * waited for (bounded.h). Those gone already are reaped; the rest are
 * init's once the loader exits.
 */
void bounded__free(struct bounded *b)
{
	if (!b)
		return;
	if (b->worker) {
		kill(b->worker, SIGKILL);
		close(b->sock);
	}
	lost__reap(b);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

int bounded__call(struct bounded *b, pid_t key, bounded_fn fn, void *job, size_t size, int in_fd,
		  int *ret_fd)
{
	__u64 start = key > 0 ? pid_start(key) : 0, tenant = 0, t0;
	int err, out_fd = -1;
	void *answer;

	if (!b || !fn || (!job && size) || size > BOUNDED_JOB_MAX)
		return -EINVAL;
	answer = malloc(size ? size : 1);
	if (!answer)
		return -ENOMEM;
	pthread_mutex_lock(&b->lock);
	b->st.calls++;
	lost__reap(b);
	/* Known before the call: a process that exits during it still pays for it. */
	if (key > 0)
		tenant = tenant_of(b, key, start);
	if ((key > 0 && stalled__has(b, key, start)) || b->nlost >= BOUNDED_MAX_STUCK ||
	    (tenant && tenants__refuses(&b->tenants, tenant, clock_ns(CLOCK_MONOTONIC)))) {
		b->st.refused++;
		err = -EDEADLK;
		goto out_unlock;
	}
	if (!b->worker && (err = worker__start(b)))
		goto out_unlock;
	t0 = clock_ns(CLOCK_MONOTONIC);
	err = worker__exchange(b, fn, job, size, in_fd, answer, &out_fd);
	if (tenant) {
		__u64 now = clock_ns(CLOCK_MONOTONIC);

		tenants__took(&b->tenants, tenant, now - t0, now);
	}
	if (!err) {
		memcpy(job, answer, size);
		if (ret_fd)
			*ret_fd = out_fd;
		else if (out_fd >= 0)
			close(out_fd);
		goto out_unlock;
	}
	if (out_fd >= 0)
		close(out_fd);
	worker__abandon(b, err == -ETIMEDOUT ? tenant : 0);
	if (err == -ETIMEDOUT) {
		b->st.timeouts++;
		if (key > 0)
			stalled__add(b, key, start);
	}
out_unlock:
	pthread_mutex_unlock(&b->lock);
	free(answer);
	return err;
}

void bounded__set_refill(struct bounded *b, unsigned refill)
{
	pthread_mutex_lock(&b->lock);
	tenants__set_refill(&b->tenants, refill);
	pthread_mutex_unlock(&b->lock);
}

void bounded__stats(struct bounded *b, struct bounded_stats *ret_stats)
{
	pthread_mutex_lock(&b->lock);
	lost__reap(b);
	b->st.tenants_refused = tenants__refused(&b->tenants, clock_ns(CLOCK_MONOTONIC));
	*ret_stats = b->st;
	pthread_mutex_unlock(&b->lock);
}
