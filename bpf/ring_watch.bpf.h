/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A followed process making its shim ring, noticed at the memfd_create
 * syscall. A part of bpf/launch.bpf.c, included at its end: it uses that
 * file's maps and counters. BPF-only.
 */
#ifndef GP_RING_WATCH_BPF_H
#define GP_RING_WATCH_BPF_H

/*
 * A followed process making its shim ring (shim/shm.c: memfd_create with
 * GP_SHM_RING_NAME): the entry notes the thread, the return sends the fd at
 * once on a ring of its own, with a forced wakeup (rare, and the process may
 * be about to exit): a thread of the loader that does nothing else holds it.
 * The syscall tracepoints: kprobes and fexit are missing from some kernels.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} ring_calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} rings SEC(".maps");

static __always_inline bool is_shm_name(const char *user_name)
{
	static const char want[] = GP_SHM_RING_NAME;
	char name[sizeof(want)];

	if (bpf_probe_read_user_str(name, sizeof(name), user_name) != sizeof(name))
		return false;
	for (int i = 0; i < (int)sizeof(want); i++)
		if (name[i] != want[i])
			return false;
	return true;
}

/* And the main thread: to read the process's maps while it lives. */
static __always_inline void wake_loader(__u64 id)
{
	struct gp_launch_event *e = bpf_ringbuf_reserve(&events, GP_LAUNCH_EVENT_HDR, 0);

	if (!e) {
		count(GP_BPF_NOTICES_LOST); /* not a launch: apart, so launches add up */
		return;
	}
	__builtin_memset(e, 0, GP_LAUNCH_EVENT_HDR);
	e->ts_ns = bpf_ktime_get_ns();
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->probe = GP_PROBE_SHM_RING;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

SEC("tracepoint/syscalls/sys_enter_memfd_create")
int ring_make(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, tgid = id >> 32;
	__u8 one = 1;

	if (filter_pids && !bpf_map_lookup_elem(&pids, &tgid))
		return 0;
	if (is_shm_name((const char *)ctx->args[0]))
		bpf_map_update_elem(&ring_calls, &tid, &one, BPF_ANY);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_memfd_create")
int ring_made(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	long ret = ctx->ret;
	__u32 tid = (__u32)id;
	struct gp_ring_event *e;

	if (!bpf_map_lookup_elem(&ring_calls, &tid))
		return 0;
	bpf_map_delete_elem(&ring_calls, &tid);
	if (ret < 0)
		return 0;
	e = bpf_ringbuf_reserve(&rings, sizeof(*e), 0);
	if (!e) {
		count(GP_BPF_NOTICES_LOST);
		return 0;
	}
	e->pid = id >> 32;
	e->tid = tid;
	e->fd = (__s32)ret;
	e->pad = 0;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	wake_loader(id);
	return 0;
}

#endif /* GP_RING_WATCH_BPF_H */
