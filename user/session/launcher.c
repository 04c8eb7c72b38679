/* SPDX-License-Identifier: MIT */
/* The -- COMMAND child (launcher.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "user/session/launcher.h"
#include "user/probe/launch_probe.h"
#include "user/util/installed.h"
#include "user/util/log.h"

int launcher__find_shim(const char *given, char *buf, size_t len)
{
	char cand[PATH_MAX];

	if (!given)
		return installed__find("libgpuprobe_shim.so", R_OK, buf, len);
	if (!realpath(given, cand) || access(cand, R_OK))
		return -errno ? -errno : -ENOENT;
	snprintf(buf, len, "%s", cand);
	return 0;
}

/* In the child: wait for the go byte, set the environment, exec. */
static void child_main(char **argv, const char *shim, int go_rd, int err_wr, int shm_fd)
{
	char fdstr[16], owner[16], b;
	int e;

	if (read(go_rd, &b, 1) != 1)
		_exit(127); /* the loader gave up before letting us run */
	close(go_rd);
	snprintf(fdstr, sizeof(fdstr), "%d", shm_fd);
	snprintf(owner, sizeof(owner), "%d", (int)getppid()); /* the loader */
	/*
	 * No PYTHONPERFSUPPORT: Python frames are read from the interpreter
	 * itself, and its perf trampolines would add a call to every Python
	 * call and anonymous code to every stack.
	 */
	if (setenv("CUDA_INJECTION64_PATH", shim, 1) || setenv("GPUPROBE_SHM_FD", fdstr, 1) ||
	    setenv("GPUPROBE_SHM_OWNER", owner, 1))
		goto fail;
	signal(SIGPIPE, SIG_DFL);
	execvp(argv[0], argv);
fail:
	e = errno;
	if (write(err_wr, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

void launcher__init(struct launcher *l)
{
	memset(l, 0, sizeof(*l));
	l->go_fd = l->err_fd = l->shm_fd = -1;
}

int launcher__start(struct launcher *l, char **argv, const char *shim, struct launch_probe *lp)
{
	char shim_path[PATH_MAX];
	int go[2], errp[2], err;

	launcher__init(l);
	err = launcher__find_shim(shim, shim_path, sizeof(shim_path));
	if (err) {
		log_error("cannot find the shim%s%s: %s (build it with make, or give --shim PATH)",
			  shim ? " " : "", shim ? shim : " libgpuprobe_shim.so", strerror(-err));
		return err;
	}
	/* Inherited on purpose; the shim marks it close-on-exec once adopted. */
	l->shm_fd = memfd_create("gpuprobe-shm", MFD_ALLOW_SEALING);
	if (l->shm_fd < 0)
		return -errno;
	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(errp, O_CLOEXEC)) {
		err = -errno;
		close(go[0]);
		close(go[1]);
		return err;
	}
	l->pid = fork();
	if (l->pid < 0) {
		err = -errno;
		close(go[0]); close(go[1]); close(errp[0]); close(errp[1]);
		return err;
	}
	if (l->pid == 0) {
		close(go[1]);
		close(errp[0]);
		child_main(argv, shim_path, go[0], errp[1], l->shm_fd);
	}
	close(go[0]);
	close(errp[1]);
	l->go_fd = go[1];
	l->err_fd = errp[0];
	err = launch_probe__follow(lp, (__u32)l->pid);
	if (err) {
		kill(l->pid, SIGKILL);
		return err;
	}
	return 0;
}

int launcher__go(struct launcher *l)
{
	char b = 1;
	int e = 0;
	ssize_t n;

	if (write(l->go_fd, &b, 1) != 1)
		return -errno;
	close(l->go_fd);
	l->go_fd = -1;
	n = read(l->err_fd, &e, sizeof(e)); /* EOF: exec succeeded (CLOEXEC) */
	close(l->err_fd);
	l->err_fd = -1;
	if (n == (ssize_t)sizeof(e)) {
		launcher__wait(l, 0);
		return -e;
	}
	return 0;
}

static void note_status(struct launcher *l, int st)
{
	l->exited = true;
	if (WIFEXITED(st))
		l->status = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		l->status = 128 + WTERMSIG(st);
}

void launcher__reap(struct launcher *l)
{
	int st;

	if (l->pid <= 0 || l->exited)
		return;
	if (waitpid(l->pid, &st, WNOHANG) == l->pid)
		note_status(l, st);
}

void launcher__wait(struct launcher *l, int sig)
{
	int st;

	if (l->pid <= 0 || l->exited)
		return;
	if (sig)
		kill(l->pid, sig);
	while (waitpid(l->pid, &st, 0) < 0)
		if (errno != EINTR)
			return;
	note_status(l, st);
}

void launcher__fini(struct launcher *l)
{
	if (l->go_fd >= 0)
		close(l->go_fd); /* a child still waiting reads EOF and exits */
	if (l->err_fd >= 0)
		close(l->err_fd);
	if (l->shm_fd >= 0)
		close(l->shm_fd);
	l->go_fd = l->err_fd = l->shm_fd = -1;
}
