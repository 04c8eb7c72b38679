/* SPDX-License-Identifier: MIT */
/*
 * A kernel tracepoint's perf id, also where tracefs is not mounted (some
 * nodes and containers): then a child mounts it in a mount namespace of its
 * own, reads the id and exits, so nothing on the machine changes.
 */
#ifndef GP_TRACEPOINT_H
#define GP_TRACEPOINT_H

#include <linux/types.h>

/* 0 and the id; -ENOENT for no such tracepoint, or the mount's error. */
int tracepoint__id(const char *category, const char *name, __u64 *ret_id);

#endif
