/* SPDX-License-Identifier: MIT */
/*
 * What the loader learns about other processes from /proc and /sys/fs/cgroup:
 * liveness, comm, mapped libraries and memfds, PID-namespace translation,
 * cgroup paths, and opening a file inside a process's root without escaping
 * it.
 *
 * Everything read here is controlled by the profiled (unprivileged) process:
 * its comm, its mappings' paths, its mount namespace and every symlink in
 * its root. Reads are bounded, numbers are range-checked, and no path is
 * resolved outside the target's root (use proc__root_open, not host_path,
 * to open a target's file).
 *
 * Conventions: actions return 0 (or an fd) or -errno; out-parameters are
 * ret_*, last, and written only on success; predicates return bool; nothing
 * here prints.
 */
#ifndef GP_PROC_H
#define GP_PROC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

/* A file-backed executable mapping found in /proc/<pid>/maps. */
struct proc_lib {
	/* The path as the target sees it (inside its own root and mount
	 * namespace), as printed by the kernel: "\012" is turned back into a
	 * newline, nothing else is unescaped. */
	char path[PATH_MAX];
	/* "/proc/<pid>/root" + path: reaches the same name from the host even
	 * in another mount namespace. For display and for kernel interfaces
	 * that take only a path: the kernel resolves an absolute symlink met
	 * on the way against the *host's* root, so never open it as root;
	 * open with proc__root_open(pid, path, ...) and compare dev/ino. */
	char host_path[PATH_MAX];
	dev_t dev;   /* major:minor from maps (on overlayfs: the real layer's) */
	ino_t ino;
	__u64 start, end; /* its first mapping: proc__open_mapped reaches the file itself */
};

/* One line of /proc/<pid>/maps, without its path. */
struct proc_mapping {
	__u64 start;
	__u64 end;
	__u64 offset;
	char perms[5];   /* "r-xp", NUL-terminated */
	dev_t dev;
	ino_t ino;
};

/* Innermost-namespace tid -> host tid for every thread of one process. */
struct proc_tid_map;
/* The bounded calls the in-root opens run as (user/util/bounded.h). */
struct bounded;

/* Most distinct libraries proc__find_libs returns (-E2BIG beyond). */
#define PROC_LIBS_MAX 256

/* The process exists and is neither a zombie ('Z') nor dead ('X'). */
bool proc__alive(pid_t pid);

/*
 * CPU time (user + system, seconds) and peak resident size (VmHWM, KiB) of
 * a live process of our own (the CRC helper), for the loader's line.
 */
int proc__usage(pid_t pid, double *ret_cpu_s, unsigned long *ret_hwm_kib);

/* The task's comm, without the kernel's trailing newline. Raw bytes: the
 * target chooses them (any byte but NUL), escape before printing.
 * -ENAMETOOLONG when it does not fit in len (buf untouched). */
int proc__comm(pid_t pid, char *buf, size_t len);

/* All numeric entries of /proc, ascending. *ret_pids is malloc'ed (NULL when
 * *ret_n is 0); the caller frees it. */
int proc__list_pids(pid_t **ret_pids, size_t *ret_n);

/* The distinct (dev, ino, path) executable file mappings whose basename
 * starts with basename_prefix (e.g. "libcuda.so"). Deleted files are
 * skipped. *ret_libs is malloc'ed (NULL when *ret_n is 0). */
int proc__find_libs(pid_t pid, const char *basename_prefix,
		    struct proc_lib **ret_libs, size_t *ret_n);

/* The first mapping of "/memfd:<memfd_name>" (deleted or not). -ENOENT when
 * there is none. */
int proc__find_memfd(pid_t pid, const char *memfd_name, struct proc_mapping *ret);

/* "/proc/<pid>/map_files/<start>-<end>" (lowercase hex, no 0x). Opening it
 * needs CAP_SYS_ADMIN; it reaches the mapped file itself, whatever its name. */
int proc__map_files_path(pid_t pid, const struct proc_mapping *m, char *buf, size_t len);

/* Parses the "NSpid:" line of a /proc/<pid>/status text (not necessarily
 * NUL-terminated). Innermost = the pid in the process's own namespace,
 * outermost = the pid in the namespace of the /proc that was read.
 * -ENOENT: no NSpid line; -EINVAL: malformed or repeated; -ERANGE: a number
 * outside 1..INT_MAX. */
int proc__parse_nspid(const char *status_text, size_t len,
		      pid_t *ret_innermost, pid_t *ret_outermost);

/* The pid of host_pid inside its innermost PID namespace. */
int proc__ns_pid(pid_t host_pid, pid_t *ret_ns_pid);
/* The real uid of a status text's Uid line (its first field). -ENOENT: none; -EINVAL: malformed. */
int proc__parse_uid(const char *status_text, size_t len, uid_t *ret_uid);
/*
 * One read of host_pid's status: its pid inside its innermost namespace
 * (host_pid where the kernel shows no NSpid) and its real uid.
 */
int proc__status_ids(pid_t host_pid, pid_t *ret_ns_pid, uid_t *ret_uid);

/* Maps every thread of pid from its innermost-namespace tid to its host tid.
 * Threads that exit during the scan are left out. */
int proc__ns_tids(pid_t pid, struct proc_tid_map **ret_map);
bool proc_tid_map__lookup(const struct proc_tid_map *map, pid_t ns_tid, pid_t *ret_host_tid);
size_t proc_tid_map__size(const struct proc_tid_map *map);
void proc_tid_map__free(struct proc_tid_map *map);

/* The cgroup v2 path of pid (the "0::" line of /proc/<pid>/cgroup), e.g.
 * "/system.slice/foo.service"; -ENOENT when the process has none. */
int proc__cgroup_path(pid_t pid, char *buf, size_t len);

/*
 * The tenant of pid (user/util/tenants.h): a hash of its cgroup2 path,
 * where it has one below the root, cut at a delegation (a cgroup a user
 * owns stands for every cgroup that user made below it, so making cgroups
 * makes no more tenants); else (cgroup v1 alone) of its /proc/<pid>/cgroup,
 * every line. TENANT_UNKNOWN when it cannot be read (a process gone), so
 * that exiting does not make a tenant of its own.
 */
__u64 proc__tenant(pid_t pid);

/* Opens path (absolute or relative: both start at the target's root) inside
 * the root of pid without ever leaving it: "..", absolute symlinks and
 * magic links all stay inside. flags as open(2), O_CLOEXEC is added;
 * O_CREAT and O_TMPFILE are refused (-EINVAL). Returns an fd or -errno. */
int proc__root_open(pid_t pid, const char *path, int flags);

/* What a maps line says a mapped file is. */
struct proc_file_id {
	dev_t dev;
	ino_t ino;
};

/*
 * THE way to open a file a target named (DESIGN.md invariant 5; every open
 * of a path from a target's maps, or of a file in its root, goes here).
 * path is resolved inside root_fd (the target's root) without leaving it,
 * as an O_PATH fd first, which has no side effect whatever it names; then
 * refused unless it is a regular file (-EISDIR, -EINVAL: a FIFO would block
 * us, a tty would become our controlling terminal, a device could act),
 * refused unless it has id's device and inode when id is given (-ESTALE:
 * the path names another file than the one mapped), refused on a FUSE mount
 * (-EREMOTE: its daemon, maybe the target, could hold every later read) and
 * on an overlay the node's mount table does not hold (-EREMOTE: made in a
 * target's namespace, its layers maybe such a mount), and only then
 * reopened O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC. All of it
 * runs as a bounded call through b (user/util/bounded.h), keyed by pid (0:
 * none): a walk or an open that blocks gives -ETIMEDOUT after
 * BOUNDED_TIMEOUT_MS, and that process's later opens through b -ETIMEDOUT at
 * once. 0 and *ret_fd, or -errno.
 */
int proc__open_file_at(struct bounded *b, pid_t pid, int root_fd, const char *path,
		       const struct proc_file_id *id, int *ret_fd);
/* The same inside the root of pid. */
int proc__open_file(struct bounded *b, pid_t pid, const char *path, const struct proc_file_id *id,
		    int *ret_fd);
/*
 * The file mapped at [start, end) in pid through /proc/<pid>/map_files
 * (needs CAP_SYS_ADMIN), whatever its path names now, with the same checks;
 * flags: O_RDONLY or O_RDWR (O_NOCTTY, O_NONBLOCK, O_CLOEXEC are added).
 */
int proc__open_mapped(struct bounded *b, pid_t pid, __u64 start, __u64 end,
		      const struct proc_file_id *id, int flags, int *ret_fd);
/*
 * Whether the file at fd, on an overlayfs, may be read (the call itself
 * reads only /proc): 0 when its overlay is one of the node's mounts (PID
 * 1's mountinfo, or proc__trust_mounts_of's, holds its mount, or pid's
 * holds it and the node's an overlay of the same superblock); -EREMOTE when
 * not, or when a table is past its bound; -errno. For the bounded worker:
 * the node's tables are kept there between calls.
 */
int proc__overlay_trusted(int fd, pid_t pid);
/*
 * The mount table of pid's namespace is the node's too (pid > 1; beside PID
 * 1's): a container runtime that mounts in a namespace of its own. Before
 * the first bounded call (its worker inherits it).
 */
void proc__trust_mounts_of(pid_t pid);

#endif /* GP_PROC_H */
