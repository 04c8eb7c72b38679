/* SPDX-License-Identifier: MIT */
/*
 * -- COMMAND: runs the command with the shim injected. The child waits on a
 * pipe until the probes follow its pid, so nothing it does is missed, and
 * writes into a memfd the loader created and already holds, so even a
 * program that exits within a tick is read in full.
 */
#ifndef GP_LAUNCHER_H
#define GP_LAUNCHER_H

#include <stdbool.h>
#include <sys/types.h>

struct launch_probe;

struct launcher {
	pid_t pid;
	int go_fd;      /* write end: one byte lets the child exec */
	int err_fd;     /* read end: errno of a failed exec */
	int shm_fd;     /* memfd handed to the shim (GPUPROBE_SHM_FD) */
	bool exited;
	int status;     /* exit status, or 128 + signal */
};

/* No child yet, no fd held: launcher__fini closes nothing (fd 0 is not ours). */
void launcher__init(struct launcher *l);
/* Forks the child (waiting), follows its pid. shim: path or NULL (default). */
int launcher__start(struct launcher *l, char **argv, const char *shim, struct launch_probe *lp);
/* Lets the child exec; -errno (and a message) when the exec failed. */
int launcher__go(struct launcher *l);
/* Non-blocking: notes the exit when it happened. */
void launcher__reap(struct launcher *l);
/* Forwards sig (if non-zero) to a running child, then waits for it. */
void launcher__wait(struct launcher *l, int sig);
/* Closes the fds it holds; the child, if any, runs on. */
void launcher__fini(struct launcher *l);

/* The default shim path: beside the executable, or PREFIX/lib/gpuprobe. */
int launcher__find_shim(const char *given, char *buf, size_t len);

#endif
