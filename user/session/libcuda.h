/* SPDX-License-Identifier: MIT */
/*
 * Finding libcuda.so.1 files and attaching the launch probes to each
 * distinct one: in a process's maps (through /proc/<pid>/root for
 * containers), on every process, or in the usual system locations.
 */
#ifndef GP_LIBCUDA_H
#define GP_LIBCUDA_H

#include <stdbool.h>
#include <sys/types.h>

struct launch_probe;

/* loud: print a one-line error when it fails. */
int libcuda__attach_path(struct launch_probe *lp, const char *path, bool loud);
/* Attaches every libcuda the process maps; returns how many are new. */
int libcuda__attach_pid(struct launch_probe *lp, pid_t pid, bool verbose);
int libcuda__attach_all(struct launch_probe *lp, bool verbose);
/* The dirs of ld_library_path (may be NULL), then the usual driver dirs. */
int libcuda__attach_system(struct launch_probe *lp, const char *ld_library_path, bool verbose);

#endif
