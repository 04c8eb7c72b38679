/* SPDX-License-Identifier: MIT */
/*
 * BPF links destroyed side by side: removing a uprobe or a syscall
 * tracepoint waits for a kernel grace period, tens of milliseconds each.
 */
#ifndef GP_PROBE_LINKS_H
#define GP_PROBE_LINKS_H

#include <stddef.h>

struct bpf_link;

/* Destroys links[0, n) (NULL entries are passed over) on up to 16 threads,
 * this one among them, and returns once every one is gone. */
void probe_links__detach(struct bpf_link **links, size_t n);

#endif
