/* SPDX-License-Identifier: MIT */
/*
 * One profiling run: attach, tick (read the BPF ring and every target's
 * shared ring, settle cubins, join), stop, write the profile and report.
 */
#ifndef GP_SESSION_H
#define GP_SESSION_H

#include "user/cli.h"

/* Returns the process exit status (0, 1, or the command's own status). */
int session__run(const struct gp_opts *opts);

#endif
