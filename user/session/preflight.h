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
/*
 * One malloc arena for all the loader's threads. The event pump allocates
 * each queued event on its thread and the main thread frees it: with an
 * arena of its own, a backlog grew that arena by new heap mappings that
 * stayed (the 20-minute soak saw +2 mappings); the main heap grows and
 * shrinks in place.
 */
void preflight__one_arena(void);
/* The soft RLIMIT_NOFILE raised to the hard one (CFI tables keep files open). */
void preflight__raise_nofile(void);

#endif /* GP_SESSION_PREFLIGHT_H */
