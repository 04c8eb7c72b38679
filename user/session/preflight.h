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
 * One malloc arena for all the loader's threads. A helper thread that
 * allocates (the event pump's BPF ring reader keeps a buffer for records
 * that wrap, the ring watch its queue, the detach threads libbpf's) would
 * otherwise get an arena of its own: heap mappings that stay, where the
 * soak test (tools/soak.sh) requires the loader's mappings to stay flat.
 * The event queue itself maps its own blocks (user/ingest/event_queue.h).
 */
void preflight__one_arena(void);
/* The soft RLIMIT_NOFILE raised to the hard one (CFI tables keep files open). */
void preflight__raise_nofile(void);

#endif /* GP_SESSION_PREFLIGHT_H */
