/* SPDX-License-Identifier: MIT */
/* What the loader checks and sets before it starts (preflight.h). */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "user/session/preflight.h"
#include "user/proc/proc.h"
#include "user/util/log.h"

void preflight__one_arena(void)
{
	mallopt(M_ARENA_MAX, 1);
}

/*
 * Every CFI table keeps its file open to build FDEs on demand (up to 512
 * files), beside each target's ring and root: the soft limit of 1024 is
 * too tight on a busy node, so take what the hard limit allows.
 */
void preflight__raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int preflight__check(const struct gp_opts *o)
{
	if (geteuid() != 0) {
		log_error("needs root to load BPF programs and attach uprobes "
			  "(CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN): run it with sudo");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		log_error("this kernel has no BTF (/sys/kernel/btf/vmlinux): "
			  "a kernel built with CONFIG_DEBUG_INFO_BTF=y is needed");
		return -ENOTSUP;
	}
	if (access("/sys/bus/event_source/devices/uprobe/type", R_OK)) {
		log_error("this kernel has no uprobe support (CONFIG_UPROBE_EVENTS): "
			  "cannot probe libcuda");
		return -ENOTSUP;
	}
	if (o->mode == GP_MODE_PID && !proc__alive(o->pid)) {
		log_error("no such process: %d", o->pid);
		return -ESRCH;
	}
	if (o->mounts_of && !proc__alive(o->mounts_of)) {
		log_error("--mounts-of: no such process: %d", o->mounts_of);
		return -ESRCH;
	}
	return 0;
}

int preflight__output_space(const char *path, const char *dir, uint64_t need)
{
	struct statvfs vfs;

	uint64_t free_bytes;

	if (statvfs(dir, &vfs) || !vfs.f_blocks)
		return 0; /* unknown (a pseudo filesystem): the write will say */
	/* Root (the loader) may write into the blocks reserved for it. */
	free_bytes = (uint64_t)(geteuid() == 0 ? vfs.f_bfree : vfs.f_bavail) * vfs.f_frsize;
	if (free_bytes >= need)
		return 0;
	log_error("cannot write the output %s: no space left on %s (%llu bytes free; at least %llu "
		  "wanted before a run)", path, dir, (unsigned long long)free_bytes,
		  (unsigned long long)need);
	return -ENOSPC;
}

int preflight__output(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if (slash)
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	else
		snprintf(dir, sizeof(dir), ".");
	if (access(dir, W_OK | X_OK)) {
		int err = -errno;

		log_error("cannot write the output %s: directory %s: %s", path, dir, strerror(-err));
		return err;
	}
	/* What is there already: a directory, or a file we may not replace, fails now, not at the end. */
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			log_error("cannot write the output %s: it is a directory (name a file in it)", path);
			return -EISDIR;
		}
		if (!S_ISREG(st.st_mode)) {
			log_error("cannot write the output %s: not a regular file", path);
			return -EINVAL;
		}
		if (access(path, W_OK)) {
			int err = -errno;

			log_error("cannot write the output %s: %s", path, strerror(-err));
			return err;
		}
	}
	return preflight__output_space(path, dir, PREFLIGHT_OUTPUT_MIN_FREE);
}
