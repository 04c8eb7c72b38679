/* SPDX-License-Identifier: MIT */
/* Locating libcuda.so.1 and attaching the probes to it (libcuda.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "user/probe/libcuda.h"
#include "user/probe/launch_probe.h"
#include "user/proc/proc.h"
#include "user/util/log.h"

/* Where drivers install it: distro packages, NVIDIA's runfile, k8s plugins. */
static const char *const system_dirs[] = {
	"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu", "/lib64",
	"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/run/nvidia/driver/usr/lib/x86_64-linux-gnu",
};

/* given: the user named it (said, failed or attached); else a -v line, with verbose. */
static int attach_path(struct launch_probe *lp, const char *path, bool given, bool verbose)
{
	struct launch_attach_result res;
	int err = launch_probe__attach_file(lp, path, &res);
	bool say = given || verbose;

	if (err && say)
		log__say(given ? LOG_ERROR : LOG_DEBUG, "cannot attach to %s: %s%s", path, strerror(-err),
			  err == -ENOENT ? " (no such file, or it exports no CUDA launch entry point)" : "");
	if (!err && !res.already && say)
		log__say(given ? LOG_INFO : LOG_DEBUG, "attached %u probes to %s", res.attached, path);
	return err ? err : res.already ? 0 : 1;
}

int libcuda__attach_path(struct launch_probe *lp, const char *path)
{
	return attach_path(lp, path, true, false);
}

static void refusal__note(struct libcuda_refusal *ref, int err, pid_t pid, const char *path)
{
	if (!ref || ref->err)
		return;
	ref->err = err;
	ref->pid = pid;
	snprintf(ref->path, sizeof(ref->path), "%s", path);
}

/*
 * The file mapped, not whatever its path names now (a tty, a FIFO, another
 * file): by path when it is that file, else (overlayfs, or the path
 * replaced) the mapping's own file.
 */
int libcuda__open_mapped(struct bounded *b, pid_t pid, const struct proc_lib *lib, int *ret_fd)
{
	struct proc_file_id id = { .dev = lib->dev, .ino = lib->ino };

	if (!proc__open_file(b, pid, lib->path, &id, ret_fd))
		return 0;
	return proc__open_mapped(b, pid, lib->start, lib->end, &id, O_RDONLY, ret_fd);
}

/*
 * The file is opened inside the target's root without leaving it (a
 * container could plant an absolute symlink pointing at a host file), only
 * if it is the regular file the maps line names (proc__open_file), and the
 * probes attach through the opened fd, only if it is a CUDA driver (a
 * process may map any number of look-alikes named libcuda.so.1). A file
 * known, attached or refused, is only noted as mapped: not read again.
 */
int libcuda__attach_pid(struct launch_probe *lp, struct bounded *b, pid_t pid,
			struct libcuda_refusal *ret_ref, bool verbose)
{
	struct proc_lib *libs = NULL;
	size_t n = 0;
	int added = 0;

	if (proc__find_libs(pid, "libcuda.so", &libs, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct launch_attach_result res;
		char fdpath[64];
		int fd, err;

		if (launch_probe__file_seen(lp, libs[i].dev, libs[i].ino))
			continue;
		err = libcuda__open_mapped(b, pid, &libs[i], &fd);
		if (err == -EREMOTE) {
			/* On FUSE: its daemon (the target, maybe) could hold every read of it. */
			launch_probe__refuse_file(lp, libs[i].dev, libs[i].ino);
			refusal__note(ret_ref, err, pid, libs[i].path);
		}
		if (err)
			continue;
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		err = launch_probe__attach_driver(lp, fdpath, &res);
		close(fd);
		if (err == -ENOEXEC || err == -E2BIG)
			refusal__note(ret_ref, err, pid, libs[i].path);
		if (err || res.already)
			continue;
		added++;
		log_debug(verbose, "attached to %s of pid %d", libs[i].path, pid);
	}
	free(libs);
	return added;
}

int libcuda__attach_all(struct launch_probe *lp, struct bounded *b,
			struct libcuda_refusal *ret_ref, bool verbose)
{
	pid_t *pids = NULL, self = getpid();
	size_t n = 0;
	int added = 0, err;

	if ((err = proc__list_pids(&pids, &n)))
		return err;
	for (size_t i = 0; i < n; i++)
		if (pids[i] != self)
			added += libcuda__attach_pid(lp, b, pids[i], ret_ref, verbose);
	free(pids);
	return added;
}

static int attach_dir(struct launch_probe *lp, const char *dir, bool verbose)
{
	char path[PATH_MAX];

	if (!*dir || strstr(dir, "/stubs")) /* the toolkit's link-time stub launches nothing */
		return 0;
	snprintf(path, sizeof(path), "%s/libcuda.so.1", dir);
	if (access(path, R_OK))
		return 0;
	return attach_path(lp, path, false, verbose) > 0;
}

int libcuda__attach_system(struct launch_probe *lp, const char *ld_library_path, bool verbose)
{
	int added = 0;

	if (ld_library_path) {
		char *copy = strdup(ld_library_path), *save = NULL;

		for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save))
			added += attach_dir(lp, d, verbose);
		free(copy);
	}
	for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++)
		added += attach_dir(lp, system_dirs[i], verbose);
	return added;
}
