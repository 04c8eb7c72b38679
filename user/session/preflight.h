/* SPDX-License-Identifier: MIT */
/*
 * Before the loader starts: each check prints its one-line error with the
 * fix (not root, no BTF, no uprobes, no such pid, an unwritable output) and
 * returns -errno; 0 when it holds.
 */
#ifndef GP_SESSION_PREFLIGHT_H
#define GP_SESSION_PREFLIGHT_H

#include "user/cli.h"

int preflight__check(const struct gp_opts *o);
int preflight__output(const char *path);
/* The soft RLIMIT_NOFILE raised to the hard one (CFI tables keep files open). */
void preflight__raise_nofile(void);

#endif /* GP_SESSION_PREFLIGHT_H */
