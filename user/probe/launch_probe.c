/* SPDX-License-Identifier: MIT */
/*
 * The launch probe family (bpf/launch.bpf.c): split skeleton lifecycle
 * (open, size, load, attach), one uprobe set per distinct libcuda file
 * (a uprobe on a file covers every process that maps it), and the ring
 * buffer reader.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "user/probe/bpf_ring.h"
#include "user/probe/launch_probe.h"
#include "user/probe/uprobe_multi.h"
#include "shim/gp_abi.h"
#include "user/util/thread.h"
#include "user/util/log.h"
#include "user/util/tracepoint.h"
#include "launch.skel.h"

#define MAX_FILES 64
/* Files refused as no driver, remembered (dev, inode) so that no scan reads them again. */
#define REFUSED_MAX 1024
/* Scans in a row that found no target mapping a file before its slot is freed. */
#define SWEEP_MISSES 2
/* Slots freed per sweep at most: each detach waits for a kernel grace period. */
#define SWEEP_MAX 8

struct probe_desc {
	const char *symbol;
	const char *alt_symbol;  /* the _v2 name cuda.h maps it to, if any */
	bool launch;
	bool copy;
};

static const struct probe_desc probes[GP_PROBE_MAX] = {
	[GP_PROBE_LAUNCH_KERNEL] = { "cuLaunchKernel", NULL, true, false },
	[GP_PROBE_LAUNCH_KERNEL_PTSZ] = { "cuLaunchKernel_ptsz", NULL, true, false },
	[GP_PROBE_LAUNCH_KERNEL_EX] = { "cuLaunchKernelEx", NULL, true, false },
	[GP_PROBE_LAUNCH_KERNEL_EX_PTSZ] = { "cuLaunchKernelEx_ptsz", NULL, true, false },
	[GP_PROBE_LAUNCH_COOPERATIVE] = { "cuLaunchCooperativeKernel", NULL, true, false },
	[GP_PROBE_LAUNCH_COOPERATIVE_PTSZ] = { "cuLaunchCooperativeKernel_ptsz", NULL, true, false },
	[GP_PROBE_GRAPH_LAUNCH] = { "cuGraphLaunch", NULL, true, false },
	[GP_PROBE_GRAPH_LAUNCH_PTSZ] = { "cuGraphLaunch_ptsz", NULL, true, false },
	[GP_PROBE_MODULE_LOAD] = { "cuModuleLoad", NULL, false, false },
	[GP_PROBE_MODULE_LOAD_DATA] = { "cuModuleLoadData", NULL, false, false },
	[GP_PROBE_MODULE_LOAD_DATA_EX] = { "cuModuleLoadDataEx", NULL, false, false },
	[GP_PROBE_MODULE_LOAD_FAT_BINARY] = { "cuModuleLoadFatBinary", NULL, false, false },
	[GP_PROBE_LIBRARY_LOAD_DATA] = { "cuLibraryLoadData", NULL, false, false },
	[GP_PROBE_LIBRARY_LOAD_FROM_FILE] = { "cuLibraryLoadFromFile", NULL, false, false },
	[GP_PROBE_MEMCPY] = { "cuMemcpy", NULL, false, true },
	[GP_PROBE_MEMCPY_PTDS] = { "cuMemcpy_ptds", NULL, false, true },
	[GP_PROBE_MEMCPY_ASYNC] = { "cuMemcpyAsync", NULL, false, true },
	[GP_PROBE_MEMCPY_ASYNC_PTSZ] = { "cuMemcpyAsync_ptsz", NULL, false, true },
	[GP_PROBE_MEMCPY_HTO_D_V2] = { "cuMemcpyHtoD_v2", "cuMemcpyHtoD", false, true },
	[GP_PROBE_MEMCPY_HTO_D_V2_PTDS] = { "cuMemcpyHtoD_v2_ptds", NULL, false, true },
	[GP_PROBE_MEMCPY_DTO_H_V2] = { "cuMemcpyDtoH_v2", "cuMemcpyDtoH", false, true },
	[GP_PROBE_MEMCPY_DTO_H_V2_PTDS] = { "cuMemcpyDtoH_v2_ptds", NULL, false, true },
	[GP_PROBE_MEMCPY_DTO_D_V2] = { "cuMemcpyDtoD_v2", "cuMemcpyDtoD", false, true },
	[GP_PROBE_MEMCPY_DTO_D_V2_PTDS] = { "cuMemcpyDtoD_v2_ptds", NULL, false, true },
	[GP_PROBE_MEMCPY_HTO_D_ASYNC_V2] = { "cuMemcpyHtoDAsync_v2", NULL, false, true },
	[GP_PROBE_MEMCPY_HTO_D_ASYNC_V2_PTSZ] = { "cuMemcpyHtoDAsync_v2_ptsz", NULL, false, true },
	[GP_PROBE_MEMCPY_DTO_H_ASYNC_V2] = { "cuMemcpyDtoHAsync_v2", NULL, false, true },
	[GP_PROBE_MEMCPY_DTO_H_ASYNC_V2_PTSZ] = { "cuMemcpyDtoHAsync_v2_ptsz", NULL, false, true },
	[GP_PROBE_MEMCPY_DTO_D_ASYNC_V2] = { "cuMemcpyDtoDAsync_v2", NULL, false, true },
	[GP_PROBE_MEMCPY_DTO_D_ASYNC_V2_PTSZ] = { "cuMemcpyDtoDAsync_v2_ptsz", NULL, false, true },
	[GP_PROBE_MEMCPY2_D_V2] = { "cuMemcpy2D_v2", NULL, false, true },
	[GP_PROBE_MEMCPY2_D_ASYNC_V2] = { "cuMemcpy2DAsync_v2", NULL, false, true },
	[GP_PROBE_MEMCPY3_D_V2] = { "cuMemcpy3D_v2", NULL, false, true },
	[GP_PROBE_MEMCPY3_D_ASYNC_V2] = { "cuMemcpy3DAsync_v2", NULL, false, true },
	[GP_PROBE_MEMCPY_PEER] = { "cuMemcpyPeer", NULL, false, true },
	[GP_PROBE_MEMCPY_PEER_ASYNC] = { "cuMemcpyPeerAsync", NULL, false, true },
	[GP_PROBE_MEMCPY_BATCH_ASYNC] = { "cuMemcpyBatchAsync", NULL, false, true },
	[GP_PROBE_MEMSET_D8_V2] = { "cuMemsetD8_v2", "cuMemsetD8", false, true },
	[GP_PROBE_MEMSET_D8_ASYNC] = { "cuMemsetD8Async", NULL, false, true },
	[GP_PROBE_MEMSET_D8_ASYNC_PTSZ] = { "cuMemsetD8Async_ptsz", NULL, false, true },
	[GP_PROBE_MEMSET_D16_V2] = { "cuMemsetD16_v2", "cuMemsetD16", false, true },
	[GP_PROBE_MEMSET_D16_ASYNC] = { "cuMemsetD16Async", NULL, false, true },
	[GP_PROBE_MEMSET_D32_V2] = { "cuMemsetD32_v2", "cuMemsetD32", false, true },
	[GP_PROBE_MEMSET_D32_ASYNC] = { "cuMemsetD32Async", NULL, false, true },
	[GP_PROBE_MEMSET_D32_ASYNC_PTSZ] = { "cuMemsetD32Async_ptsz", NULL, false, true },
	[GP_PROBE_MEMSET_D2_D8_V2] = { "cuMemsetD2D8_v2", NULL, false, true },
	[GP_PROBE_MEMSET_D2_D32_V2] = { "cuMemsetD2D32_v2", NULL, false, true },
};

/*
 * Exports of the CUDA driver itself, beside its entry points (a one-function
 * look-alike named libcuda.so.1 has none of them); each row is one name or
 * its alternative. Every libcuda.so.1 exports them, the stub vendor's too.
 */
static const char *const driver_exports[][2] = {
	{ "cuInit", NULL }, { "cuDriverGetVersion", NULL },
	{ "cuGetProcAddress", "cuGetProcAddress_v2" }, { "cuDeviceGet", NULL },
	{ "cuCtxGetCurrent", NULL }, { "cuModuleGetFunction", NULL },
};
#define NR_DRIVER_EXPORTS (sizeof(driver_exports) / sizeof(driver_exports[0]))

struct file_id {
	dev_t dev;
	ino_t ino;
};

struct attached_file {
	dev_t dev;
	ino_t ino;
	int multi_fd;                 /* its uprobe_multi link, or -1 */
	size_t first_link, nr_links;  /* its perf-event links in lp->links */
	bool swept;                   /* attached as a driver a target mapped: freed when none does */
	bool seen;                    /* a target mapped it since the last sweep */
	unsigned missed;              /* sweeps in a row that found no target mapping it */
};

struct launch_probe {
	struct launch_bpf *skel;
	struct bpf_ring rb;           /* launch events */
	struct bpf_ring rings_rb;     /* shim rings made: polled by one other thread */
	bool rings_open;
	bool cache_on;                /* stack_cache_on set: maps_gens kept true */
	__u32 cache_entries;
	struct bpf_link *maps_links[4]; /* munmap, mmap, mremap, exec */
	ring_event_fn ring_fn;
	void *ring_ctx;
	struct bpf_link **links;
	size_t nr_links, cap_links;
	bool multi;                   /* one uprobe_multi link per file (multi_fd) */
	struct attached_file files[MAX_FILES];
	unsigned nr_files;
	struct file_id refused[REFUSED_MAX]; /* not drivers: a ring, the oldest forgotten */
	unsigned nr_refused, next_refused;
	struct launch_file_stats fst;
	launch_event_fn fn;
	void *fn_ctx;
	int fn_err;
};

/* Attaching by name to a file that lacks the name is expected: stay quiet. */
static bool libbpf_quiet;

__attribute__((format(printf, 2, 0)))
static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	bool verbose = log__verbose();

	if ((level == LIBBPF_DEBUG || libbpf_quiet) && !verbose)
		return 0;
	if (level == LIBBPF_WARN || verbose)
		return vfprintf(stderr, fmt, args);
	return 0;
}

const char *launch_probe__name(__u32 probe)
{
	if (probe >= GP_PROBE_MAX)
		return "?";
	return probes[probe].symbol;
}

bool launch_probe__is_launch(__u32 probe)
{
	return probe < GP_PROBE_MAX && probes[probe].launch;
}

bool launch_probe__is_copy(__u32 probe)
{
	return probe < GP_PROBE_MAX && probes[probe].copy;
}

static int on_event(void *ctx, const void *data, size_t size)
{
	struct launch_probe *lp = ctx;
	int err;

	if (size < GP_LAUNCH_EVENT_HDR)
		return 0;
	err = lp->fn(lp->fn_ctx, data, size);
	if (err) {
		lp->fn_err = err;
		return err;
	}
	return 0;
}

static bool is_pow2(__u64 v)
{
	return v && !(v & (v - 1));
}

static int on_ring(void *ctx, const void *data, size_t size)
{
	struct launch_probe *lp = ctx;

	if (size >= sizeof(struct gp_ring_event))
		lp->ring_fn(lp->ring_ctx, data);
	return 0;
}

static struct bpf_link *attach_tracepoint(struct bpf_program *prog, const char *name)
{
	struct perf_event_attr attr = { .type = PERF_TYPE_TRACEPOINT, .size = sizeof(attr) };
	struct bpf_link *link;
	__u64 id;
	int pfd, err;

	if ((err = tracepoint__id("syscalls", name, &id))) {
		errno = -err;
		return NULL;
	}
	attr.config = id;
	/* pid -1, cpu 0: the program runs on every CPU (as libbpf attaches them). */
	pfd = (int)syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0)
		return NULL;
	link = bpf_program__attach_perf_event(prog, pfd);
	if (!link) {
		err = errno;
		close(pfd);
		errno = err;
	}
	return link;
}

/*
 * memfd_create of the shim's ring, seen as it happens: the loader holds the
 * ring before a short-lived process can exit. Where the tracepoints cannot
 * attach, rings are found on the loader's visits instead, and it says so.
 */
static void attach_ring_watch(struct launch_probe *lp)
{
	struct launch_bpf *sk = lp->skel;

	_Static_assert(sizeof(GP_SHM_RING_NAME) == sizeof(GP_SHM_NAME), "ring name");
	if (strcmp(GP_SHM_RING_NAME, GP_SHM_NAME) != 0)
		abort(); /* bpf/launch.h and shim/gp_abi.h disagree: a build error */
	sk->links.ring_make = attach_tracepoint(sk->progs.ring_make, "sys_enter_memfd_create");
	if (sk->links.ring_make)
		sk->links.ring_made = attach_tracepoint(sk->progs.ring_made, "sys_exit_memfd_create");
	if (sk->links.ring_made) {
		int err = bpf_ring__open(&lp->rings_rb, bpf_map__fd(sk->maps.rings),
					 bpf_map__max_entries(sk->maps.rings));

		lp->rings_open = !err;
		errno = -err;
	}
	if (!lp->rings_open) {
		int err = errno;

		bpf_link__destroy(sk->links.ring_made);
		bpf_link__destroy(sk->links.ring_make);
		sk->links.ring_made = sk->links.ring_make = NULL;
		log_warn("cannot watch memfd_create (%s): processes that exit within a tick of "
			 "starting CUDA may lose their GPU records", strerror(err));
	}
}

/*
 * The stack cache is only as true as each process's mapping generation:
 * without the probes that bump it (a library unloaded and another mapped
 * at its address would keep its keys), the cache stays off, and says so.
 */
static void attach_maps_watch(struct launch_probe *lp)
{
	struct launch_bpf *sk = lp->skel;
	int err = 0;

	if (!lp->cache_entries)
		return;
	lp->maps_links[0] = attach_tracepoint(sk->progs.maps_munmap, "sys_enter_munmap");
	if (lp->maps_links[0])
		lp->maps_links[1] = attach_tracepoint(sk->progs.maps_mmap, "sys_enter_mmap");
	if (lp->maps_links[1])
		lp->maps_links[2] = attach_tracepoint(sk->progs.maps_mremap, "sys_enter_mremap");
	if (lp->maps_links[2])
		lp->maps_links[3] = bpf_program__attach(sk->progs.maps_exec);
	if (!lp->maps_links[3]) {
		err = errno;
		for (int i = 0; i < 4; i++) {
			bpf_link__destroy(lp->maps_links[i]);
			lp->maps_links[i] = NULL;
		}
		log_warn("cannot watch mapping changes (%s): the stack cache is off, every launch "
			 "copies its stack", strerror(err));
		return;
	}
	sk->bss->stack_cache_on = true;
	lp->cache_on = true;
}

/* Opens and loads the programs; with multi, the uprobe program for multi links. */
static int load_skel(struct launch_probe *lp, const struct launch_probe_opts *opts, bool multi)
{
	int err;

	lp->skel = launch_bpf__open();
	if (!lp->skel)
		return -errno ? -errno : -EINVAL;
	lp->skel->rodata->filter_pids = opts->filter_pids;
	lp->skel->rodata->wakeup_bytes = opts->wakeup_bytes;
	lp->skel->rodata->ring_size = opts->ringbuf_bytes;
	lp->skel->rodata->stack_copy = opts->stack_copy > GP_STACK_COPY_MAX ? GP_STACK_COPY_MAX
									   : opts->stack_copy;
	lp->skel->rodata->audit_every = opts->audit_every;
	lp->skel->rodata->audit_max = opts->audit_max;
	err = bpf_map__set_max_entries(lp->skel->maps.events, opts->ringbuf_bytes);
	if (!err)
		err = bpf_map__set_max_entries(lp->skel->maps.stack_cache,
					       opts->cache_entries ? opts->cache_entries : 1);
	if (!err && multi)
		err = bpf_program__set_expected_attach_type(lp->skel->progs.cu_call,
							    GP_BPF_TRACE_UPROBE_MULTI);
	/* Attached apart, below: without them the loader still profiles. */
	bpf_program__set_autoattach(lp->skel->progs.ring_make, false);
	bpf_program__set_autoattach(lp->skel->progs.ring_made, false);
	bpf_program__set_autoattach(lp->skel->progs.maps_munmap, false);
	bpf_program__set_autoattach(lp->skel->progs.maps_mmap, false);
	bpf_program__set_autoattach(lp->skel->progs.maps_mremap, false);
	bpf_program__set_autoattach(lp->skel->progs.maps_exec, false);
	if (!err)
		err = launch_bpf__load(lp->skel);
	if (err) {
		launch_bpf__destroy(lp->skel);
		lp->skel = NULL;
		return err;
	}
	lp->multi = multi;
	return 0;
}

void launch_probe__ring_positions(const struct launch_probe *lp, __u64 *ret_consumed,
				  __u64 *ret_reserved)
{
	bpf_ring__positions(&lp->rb, ret_consumed, ret_reserved);
}

int launch_probe__open(const struct launch_probe_opts *opts, struct launch_probe **ret_lp)
{
	struct launch_probe *lp;
	int err;

	if (!is_pow2(opts->ringbuf_bytes) || opts->ringbuf_bytes < 4096 ||
	    opts->cache_entries > GP_STACK_CACHE_MAX)
		return -EINVAL;
	libbpf_set_print(print_libbpf);
	lp = calloc(1, sizeof(*lp));
	if (!lp)
		return -ENOMEM;
	lp->cache_entries = opts->cache_entries;
	/* A kernel that refuses the multi attach type gets a uprobe per entry point. */
	libbpf_quiet = true; /* a refusal here is expected on older kernels */
	err = uprobe_multi__wanted() ? load_skel(lp, opts, true) : -ENOTSUP;
	libbpf_quiet = false;
	if (err)
		err = load_skel(lp, opts, false);
	if (err)
		goto err_free;
	log_debug("uprobes: %s", lp->multi ? "one multi link per file" :
		  "one per entry point (GPUPROBE_UPROBES=perf, or no uprobe_multi in this kernel)");
	/* Auto-attaches only the fork tracepoint; uprobes are per file, below. */
	err = launch_bpf__attach(lp->skel);
	if (err)
		goto err_destroy;
	attach_ring_watch(lp);
	attach_maps_watch(lp);
	err = bpf_ring__open(&lp->rb, bpf_map__fd(lp->skel->maps.events), opts->ringbuf_bytes);
	if (err) {
		if (lp->rings_open)
			bpf_ring__close(&lp->rings_rb);
		goto err_destroy;
	}
	*ret_lp = lp;
	return 0;

err_destroy:
	launch_bpf__destroy(lp->skel);
err_free:
	free(lp);
	return err;
}

static int push_link(struct launch_probe *lp, struct bpf_link *link)
{
	if (lp->nr_links == lp->cap_links) {
		size_t cap = lp->cap_links ? 2 * lp->cap_links : 32;
		struct bpf_link **n = realloc(lp->links, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		lp->links = n;
		lp->cap_links = cap;
	}
	lp->links[lp->nr_links++] = link;
	return 0;
}

static int attach_one(struct launch_probe *lp, int probe, const char *path, bool *ret_found)
{
	const struct probe_desc *d = &probes[probe];
	const char *names[2] = { d->symbol, d->alt_symbol };
	int err = 0;

	*ret_found = false;
	for (int i = 0; i < 2 && names[i]; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = names[i], .retprobe = false,
			    .bpf_cookie = (__u64)probe);
		struct bpf_link *link;

		libbpf_quiet = true;
		link = bpf_program__attach_uprobe_opts(lp->skel->progs.cu_call, -1, path, 0, &uo);
		libbpf_quiet = false;
		if (!link) {
			err = -errno;
			if (err == -ENOENT || err == -ESRCH)
				continue; /* the file does not export this name */
			return err;
		}
		err = push_link(lp, link);
		if (err) {
			bpf_link__destroy(link);
			return err;
		}
		*ret_found = true;
		return 0;
	}
	return 0;
}

/* A perf-event uprobe for each entry point the file defines. */
static int attach_file_each(struct launch_probe *lp, const char *path,
			    struct launch_attach_result *res, unsigned *launches)
{
	for (int p = 0; p < GP_PROBE_MAX; p++) {
		bool found;
		int err = attach_one(lp, p, path, &found);

		if (err)
			return err;
		if (found) {
			res->attached++;
			*launches += probes[p].launch;
		} else {
			res->missing++;
		}
	}
	return 0;
}

/* Every entry point the file defines in one uprobe_multi link (cookie: probe id). */
static int attach_file_multi(struct launch_probe *lp, const char *path,
			     struct launch_attach_result *res, unsigned *launches)
{
	const char *names[2 * GP_PROBE_MAX];
	__u64 off[2 * GP_PROBE_MAX], offsets[GP_PROBE_MAX], cookies[GP_PROBE_MAX];
	size_t n = 0;
	int err, fd;

	for (int p = 0; p < GP_PROBE_MAX; p++) {
		names[p] = probes[p].symbol;
		names[GP_PROBE_MAX + p] = probes[p].alt_symbol;
	}
	err = uprobe_multi__offsets(path, names, 2 * GP_PROBE_MAX, off);
	if (err < 0)
		return err;
	for (int p = 0; p < GP_PROBE_MAX; p++) {
		__u64 o = off[p] ? off[p] : off[GP_PROBE_MAX + p];

		if (!o) {
			res->missing++;
			continue;
		}
		offsets[n] = o;
		cookies[n++] = (__u64)p;
		res->attached++;
		*launches += probes[p].launch;
	}
	if (!*launches)
		return -ENOENT;
	fd = uprobe_multi__attach(bpf_program__fd(lp->skel->progs.cu_call), path, offsets, cookies, n);
	if (fd < 0)
		return fd;
	lp->files[lp->nr_files].multi_fd = fd;
	return 0;
}

static void detach_links(struct bpf_link **links, size_t n);

/* Undoes what attaching file i did, and frees its slot. */
static void file__detach(struct launch_probe *lp, unsigned i)
{
	struct attached_file *f = &lp->files[i];

	if (f->multi_fd >= 0)
		close(f->multi_fd);
	detach_links(lp->links + f->first_link, f->nr_links);
	memmove(lp->links + f->first_link, lp->links + f->first_link + f->nr_links,
		(lp->nr_links - f->first_link - f->nr_links) * sizeof(*lp->links));
	lp->nr_links -= f->nr_links;
	for (unsigned k = i + 1; k < lp->nr_files; k++)
		if (lp->files[k].first_link > f->first_link)
			lp->files[k].first_link -= f->nr_links;
	memmove(f, f + 1, (lp->nr_files - i - 1) * sizeof(*f));
	lp->nr_files--;
}

static int file__find(const struct launch_probe *lp, dev_t dev, ino_t ino)
{
	for (unsigned i = 0; i < lp->nr_files; i++)
		if (lp->files[i].dev == dev && lp->files[i].ino == ino)
			return (int)i;
	return -1;
}

static bool file__refused(const struct launch_probe *lp, dev_t dev, ino_t ino)
{
	for (unsigned i = 0; i < lp->nr_refused; i++)
		if (lp->refused[i].dev == dev && lp->refused[i].ino == ino)
			return true;
	return false;
}

static void file__refuse(struct launch_probe *lp, dev_t dev, ino_t ino)
{
	lp->refused[lp->next_refused] = (struct file_id){ .dev = dev, .ino = ino };
	lp->next_refused = (lp->next_refused + 1) % REFUSED_MAX;
	if (lp->nr_refused < REFUSED_MAX)
		lp->nr_refused++;
	lp->fst.refused++;
}

/* Whether the ELF file at path exports the driver's own functions (driver_exports). */
static bool is_driver(const char *path)
{
	const char *names[2 * NR_DRIVER_EXPORTS];
	__u64 off[2 * NR_DRIVER_EXPORTS];

	for (size_t i = 0; i < NR_DRIVER_EXPORTS; i++) {
		names[i] = driver_exports[i][0];
		names[NR_DRIVER_EXPORTS + i] = driver_exports[i][1];
	}
	if (uprobe_multi__offsets(path, names, 2 * NR_DRIVER_EXPORTS, off) < 0)
		return false;
	for (size_t i = 0; i < NR_DRIVER_EXPORTS; i++)
		if (!off[i] && !off[NR_DRIVER_EXPORTS + i])
			return false;
	return true;
}

static int attach_file(struct launch_probe *lp, const char *path, bool driver_only,
		       struct launch_attach_result *ret_res)
{
	struct launch_attach_result res = {};
	struct attached_file *f;
	struct stat st;
	unsigned launches = 0;
	int err, i;

	if (stat(path, &st))
		return -errno;
	if ((i = file__find(lp, st.st_dev, st.st_ino)) >= 0) {
		lp->files[i].seen = true;
		res.already = true;
		*ret_res = res;
		return 0;
	}
	if (driver_only && file__refused(lp, st.st_dev, st.st_ino))
		return -ENOEXEC;
	/* Before reading its symbols: a full table costs no ELF read per scan. */
	if (lp->nr_files == MAX_FILES) {
		lp->fst.no_slot++;
		return -E2BIG;
	}
	if (driver_only && !is_driver(path)) {
		file__refuse(lp, st.st_dev, st.st_ino);
		return -ENOEXEC;
	}
	f = &lp->files[lp->nr_files];
	*f = (struct attached_file){ .dev = st.st_dev, .ino = st.st_ino, .multi_fd = -1,
				     .first_link = lp->nr_links, .swept = driver_only, .seen = true };
	err = lp->multi ? attach_file_multi(lp, path, &res, &launches)
			: attach_file_each(lp, path, &res, &launches);
	f->nr_links = lp->nr_links - f->first_link;
	if (!err && !launches)
		err = -ENOENT; /* not a CUDA driver: nothing launches through it */
	if (err) {
		lp->nr_files++;
		file__detach(lp, lp->nr_files - 1); /* what attached before the failure */
		return err;
	}
	lp->nr_files++;
	*ret_res = res;
	return 0;
}

int launch_probe__attach_file(struct launch_probe *lp, const char *path,
			      struct launch_attach_result *ret_res)
{
	return attach_file(lp, path, false, ret_res);
}

int launch_probe__attach_driver(struct launch_probe *lp, const char *path,
				struct launch_attach_result *ret_res)
{
	return attach_file(lp, path, true, ret_res);
}

int launch_probe__file_seen(struct launch_probe *lp, dev_t dev, ino_t ino)
{
	int i = file__find(lp, dev, ino);

	if (i >= 0) {
		lp->files[i].seen = true;
		return 1;
	}
	return file__refused(lp, dev, ino) ? -ENOEXEC : 0;
}

unsigned launch_probe__sweep_files(struct launch_probe *lp)
{
	unsigned freed = 0;

	for (unsigned i = 0; i < lp->nr_files;) {
		struct attached_file *f = &lp->files[i];

		f->missed = f->seen ? 0 : f->missed + 1;
		f->seen = false;
		if (f->swept && f->missed >= SWEEP_MISSES && freed < SWEEP_MAX) {
			file__detach(lp, i);
			freed++;
			continue;
		}
		i++;
	}
	lp->fst.detached += freed;
	return freed;
}

void launch_probe__file_stats(const struct launch_probe *lp, struct launch_file_stats *ret_stats)
{
	*ret_stats = lp->fst;
}

bool launch_probe__uses_multi(const struct launch_probe *lp)
{
	return lp->multi;
}

unsigned launch_probe__nr_files(const struct launch_probe *lp)
{
	return lp->nr_files;
}

/*
 * The BPF side keeps each thread's answers from pids, copy_hints and
 * py_configs while memo_gen stays the same: after a change to any of them,
 * a new value, so the next launch looks them up again.
 */
static void memos_stale(struct launch_probe *lp)
{
	__atomic_fetch_add(&lp->skel->bss->memo_gen, 1, __ATOMIC_RELEASE);
}

int launch_probe__follow(struct launch_probe *lp, __u32 tgid)
{
	__u8 one = 1;

	if (bpf_map__update_elem(lp->skel->maps.pids, &tgid, sizeof(tgid), &one, sizeof(one), BPF_ANY))
		return -errno;
	memos_stale(lp);
	return 0;
}

int launch_probe__unfollow(struct launch_probe *lp, __u32 tgid)
{
	if (bpf_map__delete_elem(lp->skel->maps.pids, &tgid, sizeof(tgid), 0))
		return errno == ENOENT ? 0 : -errno;
	memos_stale(lp);
	return 0;
}

int launch_probe__set_copy_hint(struct launch_probe *lp, __u32 tid, __u32 bytes)
{
	if (bpf_map__update_elem(lp->skel->maps.copy_hints, &tid, sizeof(tid), &bytes, sizeof(bytes),
				 BPF_ANY))
		return -errno;
	memos_stale(lp);
	return 0;
}

int launch_probe__set_python(struct launch_probe *lp, __u32 tgid, const struct gp_py_config *cfg)
{
	if (cfg) {
		if (bpf_map__update_elem(lp->skel->maps.py_configs, &tgid, sizeof(tgid), cfg,
					 sizeof(*cfg), BPF_ANY))
			return -errno;
	} else if (bpf_map__delete_elem(lp->skel->maps.py_configs, &tgid, sizeof(tgid), 0)) {
		return errno == ENOENT ? 0 : -errno;
	}
	memos_stale(lp);
	return 0;
}

bool launch_probe__cache_on(const struct launch_probe *lp)
{
	return lp->cache_on;
}

__u32 launch_probe__cache_entries(const struct launch_probe *lp)
{
	return lp->cache_on ? lp->cache_entries : 0;
}

int launch_probe__cache_put(struct launch_probe *lp, const struct gp_stack_key *k,
			    const struct gp_stack_val *v)
{
	if (bpf_map__update_elem(lp->skel->maps.stack_cache, k, sizeof(*k), v, sizeof(*v), BPF_ANY))
		return -errno;
	return 0;
}

int launch_probe__cache_del(struct launch_probe *lp, const struct gp_stack_key *k)
{
	if (bpf_map__delete_elem(lp->skel->maps.stack_cache, k, sizeof(*k), 0))
		return errno == ENOENT ? 0 : -errno;
	return 0;
}

int launch_probe__forget_maps_gen(struct launch_probe *lp, __u32 tgid)
{
	if (bpf_map__delete_elem(lp->skel->maps.maps_gens, &tgid, sizeof(tgid), 0))
		return errno == ENOENT ? 0 : -errno;
	return 0;
}

int launch_probe__poll(struct launch_probe *lp, int timeout_ms, launch_event_fn fn, void *ctx)
{
	int err;

	lp->fn = fn;
	lp->fn_ctx = ctx;
	lp->fn_err = 0;
	/* Events submitted without a wakeup wait for the timeout: then all are taken. */
	err = bpf_ring__poll(&lp->rb, timeout_ms, on_event, lp);
	if (err < 0)
		return lp->fn_err ? lp->fn_err : err;
	return 0;
}

bool launch_probe__watches_rings(const struct launch_probe *lp)
{
	return lp->rings_open;
}

int launch_probe__poll_rings(struct launch_probe *lp, int timeout_ms, ring_event_fn fn, void *ctx)
{
	int err;

	if (!lp->rings_open)
		return -ENOTSUP;
	lp->ring_fn = fn;
	lp->ring_ctx = ctx;
	err = bpf_ring__poll(&lp->rings_rb, timeout_ms, on_ring, lp);
	return err < 0 ? err : 0;
}

int launch_probe__counters(struct launch_probe *lp, __u64 ret_counters[GP_BPF_COUNTER_MAX])
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 out[GP_BPF_COUNTER_MAX] = {};
	__u64 *vals;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < GP_BPF_COUNTER_MAX; k++) {
		if (bpf_map__lookup_elem(lp->skel->maps.counters, &k, sizeof(k), vals,
					 ncpu * sizeof(*vals), 0)) {
			int err = -errno;

			free(vals);
			return err;
		}
		for (int c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
	memcpy(ret_counters, out, sizeof(out));
	return 0;
}

#define DETACH_THREADS 16

struct detach_share {
	struct bpf_link **links;
	size_t n, first, stride;
};

static void *detach_some(void *arg)
{
	struct detach_share *d = arg;

	for (size_t i = d->first; i < d->n; i += d->stride)
		bpf_link__destroy(d->links[i]);
	return NULL;
}

/*
 * Removing a perf-event uprobe waits for a kernel grace period (40-80 ms
 * each, measured): one after the other, 40 links kept a -- COMMAND's caller
 * waiting over a second after the program ended. Side by side the waits
 * overlap in part (one loader, 19 links: 1.29 -> 0.94 s; the kernel
 * serialises much of it); a thread that cannot start leaves its share to
 * this one. Multi links (one per file) need none of this.
 */
static void detach_links(struct bpf_link **links, size_t n)
{
	struct detach_share share[DETACH_THREADS];
	pthread_t th[DETACH_THREADS];
	bool started[DETACH_THREADS] = { false };
	size_t k, nth = n < DETACH_THREADS ? n : DETACH_THREADS;

	for (k = 0; k < nth; k++) {
		share[k] = (struct detach_share){ .links = links, .n = n, .first = k, .stride = nth };
		if (k)
			started[k] = thread__start_quiet(&th[k], detach_some, &share[k]) == 0;
	}
	for (k = 1; k < nth; k++)
		if (!started[k])
			detach_some(&share[k]);
	if (nth)
		detach_some(&share[0]);
	for (k = 1; k < nth; k++)
		if (started[k])
			pthread_join(th[k], NULL);
}

void launch_probe__destroy(struct launch_probe *lp)
{
	if (!lp)
		return;
	bpf_ring__close(&lp->rb);
	if (lp->rings_open)
		bpf_ring__close(&lp->rings_rb);
	detach_links(lp->links, lp->nr_links);
	free(lp->links);
	for (int i = 0; i < 4; i++)
		bpf_link__destroy(lp->maps_links[i]);
	for (unsigned i = 0; i < lp->nr_files; i++)
		if (lp->files[i].multi_fd >= 0)
			close(lp->files[i].multi_fd);
	launch_bpf__destroy(lp->skel);
	free(lp);
}
