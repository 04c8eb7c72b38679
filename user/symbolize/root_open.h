/* SPDX-License-Identifier: MIT */
/*
 * Opening a file of another process's filesystem view (a container's
 * /proc/<pid>/root) as root without ever leaving it: symlinks and ".." are
 * resolved as if that directory were "/", the way the process itself sees
 * them, so a hostile link to /etc/shadow cannot make the loader read ours.
 */
#ifndef GP_SYMBOLIZE_ROOT_OPEN_H
#define GP_SYMBOLIZE_ROOT_OPEN_H

/*
 * Opens path (absolute or relative, read-only) under the directory root_fd.
 * Only regular files are opened (a FIFO would block us, a device could act).
 * Uses openat2(RESOLVE_IN_ROOT) and falls back to root_open__walk.
 */
int root_open__file(int root_fd, const char *path, int *ret_fd);
/* The portable fallback: component by component with O_NOFOLLOW. */
int root_open__walk(int root_fd, const char *path, int *ret_fd);

#endif /* GP_SYMBOLIZE_ROOT_OPEN_H */
