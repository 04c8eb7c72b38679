/* SPDX-License-Identifier: MIT */
/*
 * Every probe of one file in one BPF link (BPF_TRACE_UPROBE_MULTI, Linux
 * 6.6+), where a perf-event uprobe per entry point is the alternative.
 * Removing uprobes waits for a kernel grace period (40-80 ms measured), once
 * per perf-event uprobe and machine-wide serialised, but once per multi link:
 * a loader with 40-odd probes per libcuda copy stops in a tenth of the time.
 * libbpf 1.1 (Debian 12) has no API for it, so the link is made here.
 */
#ifndef GP_UPROBE_MULTI_H
#define GP_UPROBE_MULTI_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>

/* The attach type a program needs, set before it is loaded. */
#define GP_BPF_TRACE_UPROBE_MULTI 48

/*
 * Whether to use multi links: the kernel is 6.6 or later and the
 * environment does not say GPUPROBE_UPROBES=perf.
 */
bool uprobe_multi__wanted(void);
/*
 * File offsets of the function symbols names[0..n) of the ELF file at path
 * (.symtab and .dynsym); 0 for a name the file does not define. Returns how
 * many were found, or -errno.
 */
int uprobe_multi__offsets(const char *path, const char *const *names, size_t n,
			  __u64 *ret_offsets);
/* One link for prog_fd at offsets[i] with cookies[i]: its fd, or -errno. */
int uprobe_multi__attach(int prog_fd, const char *path, const __u64 *offsets,
			 const __u64 *cookies, size_t n);

#endif /* GP_UPROBE_MULTI_H */
