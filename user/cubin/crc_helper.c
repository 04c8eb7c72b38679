/* SPDX-License-Identifier: MIT */
/* The gpuprobe-crc child process (crc_helper.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "user/cubin/crc_helper.h"
#include "user/util/clock.h"
#include "user/util/installed.h"

#define READY_MS 10000     /* loading libcupti */
#define ANSWER_MS 5000     /* plus 1 ms per MiB of cubin */
#define PIPE_BYTES (1 << 20) /* the request pipe: it fills once a MiB of cubin, not 16 times */

struct crc_helper {
	pid_t pid;
	int req_fd, ans_fd;
};

struct answer {
	__s32 status;
	__u32 pad;
	__u64 crc;
};

int crc_helper__find(char *buf, size_t len)
{
	return installed__find("gpuprobe-crc", X_OK, buf, len);
}

enum io_how { IO_READ, IO_WRITE, IO_SPLICE };

/*
 * Moves len bytes through fd (non-blocking) before the deadline. IO_SPLICE
 * hands the pipe the pages themselves (vmsplice: no copy in the loader;
 * the caller keeps them unchanged until the helper has answered), and
 * writes them where the kernel will not splice.
 */
static int io_all(int fd, enum io_how how, void *buf, size_t len, __u64 deadline)
{
	struct pollfd p = { .fd = fd, .events = how == IO_READ ? POLLIN : POLLOUT };

	for (size_t off = 0; off < len;) {
		struct iovec iov = { .iov_base = (char *)buf + off, .iov_len = len - off };
		ssize_t n = how == IO_READ    ? read(fd, (char *)buf + off, len - off)
			    : how == IO_WRITE ? write(fd, (char *)buf + off, len - off)
					      : vmsplice(fd, &iov, 1, SPLICE_F_NONBLOCK);
		int left;

		if (n < 0 && how == IO_SPLICE && (errno == EINVAL || errno == ENOSYS)) {
			how = IO_WRITE;
			continue;
		}
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == 0)
			return -EPIPE;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return errno == EPIPE ? -EPIPE : -errno;
		left = clock_ms_until(deadline);
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, left) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

int crc_helper__start(const char *helper, const char *cupti, struct crc_helper **ret_h)
{
	int req[2], ans[2], err;
	struct crc_helper *h;
	__u64 dl;
	struct answer a;

	if (!helper || !ret_h)
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	if (pipe2(req, O_CLOEXEC)) {
		err = -errno;
		goto err_free;
	}
	if (pipe2(ans, O_CLOEXEC)) {
		err = -errno;
		goto err_close_req;
	}
	h->pid = fork();
	if (h->pid < 0) {
		err = -errno;
		goto err_close_ans;
	}
	if (h->pid == 0) {
		char *argv[] = { (char *)helper, (char *)(cupti ? cupti : ""), NULL };

		if (dup2(req[0], 0) < 0 || dup2(ans[1], 1) < 0)
			_exit(127);
		execv(helper, argv);
		_exit(127);
	}
	close(req[0]);
	close(ans[1]);
	fcntl(req[1], F_SETPIPE_SZ, PIPE_BYTES); /* past the system's limits it fails: 64 KiB then */
	h->req_fd = req[1];
	h->ans_fd = ans[0];
	fcntl(h->req_fd, F_SETFL, O_NONBLOCK);
	fcntl(h->ans_fd, F_SETFL, O_NONBLOCK);
	dl = clock_deadline_ms(READY_MS);
	err = io_all(h->ans_fd, IO_READ, &a, sizeof(a), dl);
	if (!err && a.status)
		err = -EPROTO;
	if (err) {
		crc_helper__stop(h);
		return err;
	}
	*ret_h = h;
	return 0;

err_close_ans:
	close(ans[0]);
	close(ans[1]);
err_close_req:
	close(req[0]);
	close(req[1]);
err_free:
	free(h);
	return err;
}

int crc_helper__compute(struct crc_helper *h, const void *cubin, size_t size, __u64 *ret_crc)
{
	__u64 len = size, dl;
	struct answer a;
	int err;

	if (!h || !cubin || !size)
		return -EINVAL;
	/* The helper ends on a size it does not take: asking it would lose it for every cubin. */
	if (size > CRC_HELPER_MAX_CUBIN)
		return -EFBIG;
	dl = clock_deadline_ms(ANSWER_MS + (size >> 20));
	err = io_all(h->req_fd, IO_WRITE, &len, sizeof(len), dl);
	if (!err)
		err = io_all(h->req_fd, IO_SPLICE, (void *)cubin, size, dl);
	if (!err)
		err = io_all(h->ans_fd, IO_READ, &a, sizeof(a), dl);
	if (err)
		return err == -ETIMEDOUT ? err : -EPIPE;
	if (a.status)
		return -EIO;
	*ret_crc = a.crc;
	return 0;
}

pid_t crc_helper__pid(const struct crc_helper *h)
{
	return h ? h->pid : 0;
}

void crc_helper__stop(struct crc_helper *h)
{
	if (!h)
		return;
	close(h->req_fd); /* EOF: it ends by itself */
	close(h->ans_fd);
	for (int i = 0; i < 50; i++) {
		if (waitpid(h->pid, NULL, WNOHANG) == h->pid)
			goto out;
		usleep(2000);
	}
	kill(h->pid, SIGKILL);
	waitpid(h->pid, NULL, 0);
out:
	free(h);
}
