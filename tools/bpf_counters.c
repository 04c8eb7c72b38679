/* SPDX-License-Identifier: MIT */
/*
 * The launch program's own counters (bpf/launch.h's enum gp_bpf_counter),
 * read from outside the loader: the newest BPF map named "counters" of that
 * shape, summed over CPUs, one "name=value" each on one line. Benchmarks
 * read it at a workload's marks to see what the launches between two marks
 * were (hits, misses, audits), which the loader's end-of-run line cannot.
 * Root. Usage: gpuprobe-bpf-counters
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpf/launch.h"

static const char *const names[GP_BPF_COUNTER_MAX] = {
	[GP_BPF_EVENTS] = "events",
	[GP_BPF_RINGBUF_FULL] = "ringbuf_full",
	[GP_BPF_STACK_ERRORS] = "stack_errors",
	[GP_BPF_COPY_ERRORS] = "copy_errors",
	[GP_BPF_COPY_SKIPPED] = "copy_skipped",
	[GP_BPF_FILTERED] = "filtered",
	[GP_BPF_NOTICES_LOST] = "notices_lost",
	[GP_BPF_CACHE_HITS] = "cache_hits",
	[GP_BPF_CACHE_MISSES] = "cache_misses",
	[GP_BPF_CACHE_AUDITS] = "cache_audits",
	[GP_BPF_CACHE_UNUSABLE] = "cache_unusable",
	[GP_BPF_MAPS_CHANGED] = "maps_changed",
	[GP_BPF_PY_KEPT] = "py_kept",
	[GP_BPF_PY_KEPT_STALE] = "py_kept_stale",
};

/* The newest map that looks like the launch program's counters; -errno. */
static int find_counters(void)
{
	__u32 id = 0, best = 0;
	int fd;

	while (!bpf_map_get_next_id(id, &id)) {
		struct bpf_map_info info = { 0 };
		__u32 len = sizeof(info);

		fd = bpf_map_get_fd_by_id(id);
		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) && !strcmp(info.name, "counters") &&
		    info.type == BPF_MAP_TYPE_PERCPU_ARRAY && info.value_size == 8 &&
		    info.max_entries == GP_BPF_COUNTER_MAX)
			best = id;
		close(fd);
	}
	if (errno != ENOENT)
		return -errno; /* not root: EPERM */
	return best ? bpf_map_get_fd_by_id(best) : -ENOENT;
}

/* Prints the counters summed over CPUs; 0 or -errno. */
static int print_counters(int fd)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *v = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*v)) : NULL;
	int err = 0;

	if (!v)
		return ncpu > 0 ? -ENOMEM : ncpu;
	for (__u32 i = 0; i < GP_BPF_COUNTER_MAX && !err; i++) {
		__u64 sum = 0;

		if (bpf_map_lookup_elem(fd, &i, v)) {
			err = -errno;
			break;
		}
		for (int c = 0; c < ncpu; c++)
			sum += v[c];
		printf("%s%s=%llu", i ? " " : "", names[i] ? names[i] : "?", (unsigned long long)sum);
	}
	printf("\n");
	free(v);
	return err;
}

int main(void)
{
	int fd = find_counters(), err;

	if (fd < 0) {
		fprintf(stderr, "gpuprobe-bpf-counters: no launch program's counters map: %s\n",
			strerror(-fd));
		return 1;
	}
	err = print_counters(fd);
	close(fd);
	if (err) {
		fprintf(stderr, "gpuprobe-bpf-counters: reading the counters: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}
