/* SPDX-License-Identifier: MIT */
/*
 * Before the loader starts: each check prints its one-line error with the
 * fix (not root, no BTF, no uprobes, no such pid, an unwritable output) and
 * returns -errno; 0 when it holds.
 */
#ifndef GP_SESSION_PREFLIGHT_H
#define GP_SESSION_PREFLIGHT_H

#include <stdint.h>
#include "user/cli.h"

int preflight__check(const struct gp_opts *o);
/*
 * The output's directory writable, the output itself not a directory, nor
 * anything but a regular file we may replace, and its filesystem not full:
 * refused at once (exit 1) rather than after the whole run.
 */
int preflight__output(const char *path);
/* At least this much free where the output goes, before a run. */
#define PREFLIGHT_OUTPUT_MIN_FREE (1ull << 20)
/* -ENOSPC (said) when dir's filesystem has less than need bytes free for path. */
int preflight__output_space(const char *path, const char *dir, uint64_t need);
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
