/* SPDX-License-Identifier: MIT */
/*
 * The launch probe family (bpf/launch.bpf.c): the split skeleton's
 * lifecycle (open, size, load, attach; the only file that sees struct
 * launch_bpf), the maps the loader writes (pids followed, copy sizes,
 * Python configs, the stack cache), and the two ring buffers' readers.
 * Which files the probes attach to is probe_files.c's; which entry points,
 * entry_points.c's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "user/probe/bpf_ring.h"
#include "user/probe/launch_probe.h"
#include "user/probe/libbpf_log.h"
#include "user/probe/probe_files.h"
#include "user/probe/probe_links.h"
#include "user/probe/uprobe_multi.h"
#include "shim/gp_abi.h"
#include "user/util/log.h"
#include "user/util/tracepoint.h"
#include "launch.skel.h"

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
	struct probe_files pf;        /* the libcuda files attached */
	launch_event_fn fn;
	void *fn_ctx;
	int fn_err;
};

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

/* py_tstates' size when only followed processes are probed (--pid, -- COMMAND). */
#define PY_TSTATES_FOLLOWED 8192

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
	/*
	 * Python threads' states: a cache (a miss walks the interpreter's list
	 * again), made whole at load (an LRU map cannot be made on demand).
	 * Following a few processes, a node's worth of threads is room wasted.
	 */
	if (!err && opts->filter_pids)
		err = bpf_map__set_max_entries(lp->skel->maps.py_tstates, PY_TSTATES_FOLLOWED);
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
	probe_files__init(&lp->pf, lp->skel->progs.cu_call, multi);
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
	libbpf_log__install(opts->verbose);
	lp = calloc(1, sizeof(*lp));
	if (!lp)
		return -ENOMEM;
	lp->cache_entries = opts->cache_entries;
	/* A kernel that refuses the multi attach type gets a uprobe per entry point. */
	libbpf_log__quiet(true); /* a refusal here is expected on older kernels */
	err = uprobe_multi__wanted() ? load_skel(lp, opts, true) : -ENOTSUP;
	libbpf_log__quiet(false);
	if (err)
		err = load_skel(lp, opts, false);
	if (err)
		goto err_free;
	log_debug(opts->verbose, "uprobes: %s", lp->pf.multi ? "one multi link per file" :
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

int launch_probe__attach_file(struct launch_probe *lp, const char *path,
			      struct launch_attach_result *ret_res)
{
	return probe_files__attach(&lp->pf, path, PROBE_FILE_CUDA, ret_res);
}

int launch_probe__attach_driver(struct launch_probe *lp, const char *path,
				struct launch_attach_result *ret_res)
{
	return probe_files__attach(&lp->pf, path, PROBE_FILE_DRIVER, ret_res);
}

int launch_probe__attach_autograd(struct launch_probe *lp, const char *path,
				  struct launch_attach_result *ret_res)
{
	return probe_files__attach(&lp->pf, path, PROBE_FILE_AUTOGRAD, ret_res);
}

void launch_probe__file_stats(const struct launch_probe *lp, struct launch_file_stats *ret_stats)
{
	*ret_stats = lp->pf.fst;
}

int launch_probe__file_seen(struct launch_probe *lp, dev_t dev, ino_t ino)
{
	return probe_files__seen(&lp->pf, dev, ino);
}

void launch_probe__refuse_file(struct launch_probe *lp, dev_t dev, ino_t ino)
{
	probe_files__refuse(&lp->pf, dev, ino);
}

unsigned launch_probe__sweep_files(struct launch_probe *lp)
{
	return probe_files__sweep(&lp->pf);
}

unsigned launch_probe__pause(struct launch_probe *lp, bool paused)
{
	unsigned failed;

	if (paused)
		launch_probe__mute(lp);
	failed = probe_files__pause(&lp->pf, paused);
	if (!paused)
		__atomic_store_n(&lp->skel->bss->launches_paused, false, __ATOMIC_RELEASE);
	return failed;
}

unsigned launch_probe__quiet_nodes(struct launch_probe *lp, bool quiet)
{
	return probe_files__quiet_nodes(&lp->pf, quiet);
}

bool launch_probe__nodes_quiet(const struct launch_probe *lp)
{
	return lp->pf.nodes_quiet;
}

void launch_probe__mute(struct launch_probe *lp)
{
	__atomic_store_n(&lp->skel->bss->launches_paused, true, __ATOMIC_RELEASE);
}

__u64 launch_probe__pause_errors(const struct launch_probe *lp)
{
	return lp->pf.win_errors;
}

bool launch_probe__uses_multi(const struct launch_probe *lp)
{
	return lp->pf.multi;
}

unsigned launch_probe__nr_files(const struct launch_probe *lp)
{
	return lp->pf.nr_files;
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

/* One counter summed over CPUs, into vals (ncpu slots) as scratch. */
static int counter_sum(struct launch_probe *lp, __u32 k, __u64 *vals, int ncpu, __u64 *ret)
{
	*ret = 0;
	if (bpf_map__lookup_elem(lp->skel->maps.counters, &k, sizeof(k), vals, ncpu * sizeof(*vals), 0))
		return -errno;
	for (int c = 0; c < ncpu; c++)
		*ret += vals[c];
	return 0;
}

int launch_probe__counter(struct launch_probe *lp, __u32 idx, __u64 *ret)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;
	int err;

	if (idx >= GP_BPF_COUNTER_MAX)
		return -EINVAL;
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	err = counter_sum(lp, idx, vals, ncpu, ret);
	free(vals);
	return err;
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
		int err = counter_sum(lp, k, vals, ncpu, &out[k]);

		if (err) {
			free(vals);
			return err;
		}
	}
	free(vals);
	memcpy(ret_counters, out, sizeof(out));
	return 0;
}

void launch_probe__destroy(struct launch_probe *lp)
{
	struct bpf_link *tps[sizeof(lp->maps_links) / sizeof(lp->maps_links[0]) + 2];
	size_t n = sizeof(lp->maps_links) / sizeof(lp->maps_links[0]);

	if (!lp)
		return;
	bpf_ring__close(&lp->rb);
	if (lp->rings_open)
		bpf_ring__close(&lp->rings_rb);
	probe_files__fini(&lp->pf);
	/* The syscall tracepoints' links each wait for a grace period: side by side. */
	memcpy(tps, lp->maps_links, sizeof(lp->maps_links));
	if (lp->skel) { /* the ring watch's two, taken from the skeleton that would destroy them */
		tps[n++] = lp->skel->links.ring_make;
		tps[n++] = lp->skel->links.ring_made;
		lp->skel->links.ring_make = lp->skel->links.ring_made = NULL;
	}
	probe_links__detach(tps, n);
	launch_bpf__destroy(lp->skel);
	free(lp);
}
