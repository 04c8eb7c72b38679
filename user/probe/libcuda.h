/* SPDX-License-Identifier: MIT */
/*
 * Finding libcuda.so.1 files and attaching the launch probes to each
 * distinct one: in a process's maps (through /proc/<pid>/root for
 * containers), on every process, or in the usual system locations.
 */
#ifndef GP_LIBCUDA_H
#define GP_LIBCUDA_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

struct launch_probe;
struct proc_lib;
struct bounded;

/* A file a scan refused to attach: the first one, for the loader to say. */
struct libcuda_refusal {
	int err;          /* 0: none; -ENOEXEC: not a CUDA driver; -E2BIG: no slot left;
			     -EREMOTE: on a FUSE mount, or on an overlay
			     not the node's: not opened */
	pid_t pid;
	char path[PATH_MAX];
};

/*
 * Attaches the file at path the user gave; it stays attached. 1: attached
 * now, 0: it was already, -errno. Said in one line, failed or attached.
 */
int libcuda__attach_path(struct launch_probe *lp, const char *path);
/*
 * Attaches every CUDA driver the process maps (launch_probe__attach_driver),
 * each file opened as a bounded call through b (user/util/bounded.h);
 * returns how many are new. The first refusal met is noted in *ret_ref (may
 * be NULL) unless one is there already.
 */
int libcuda__attach_pid(struct launch_probe *lp, struct bounded *b, pid_t pid,
			struct libcuda_refusal *ret_ref, bool verbose);
/*
 * Opens the file a target maps at lib, read-only, in its root (libcuda's,
 * libtorch's): 0 and *ret_fd, or -errno.
 */
int libcuda__open_mapped(struct bounded *b, pid_t pid, const struct proc_lib *lib, int *ret_fd);
/* The same for every process; -errno when the processes cannot be listed. */
int libcuda__attach_all(struct launch_probe *lp, struct bounded *b,
			struct libcuda_refusal *ret_ref, bool verbose);
/*
 * The dirs of ld_library_path (may be NULL), then the usual driver dirs;
 * each file attached or refused said with -v (verbose).
 */
int libcuda__attach_system(struct launch_probe *lp, const char *ld_library_path, bool verbose);

#endif
