/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The programs beside the launch probe that keep a followed process's
 * maps generation true (mmap, munmap, mremap, exec) and follow its forked
 * children. A part of bpf/launch.bpf.c, included at its end: it uses that
 * file's maps and counters. BPF-only.
 */
#ifndef GP_MAPS_WATCH_BPF_H
#define GP_MAPS_WATCH_BPF_H

struct vma_kind {
	bool file, exec;
};

static long vma_kind_of(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct vma_kind *k = data;

	k->file = vma->vm_file != NULL;
	k->exec = vma->vm_flags & 0x4 /* VM_EXEC */;
	return 0;
}

/*
 * Whether the mapping at addr matters to stacks: code (exec), or a file's
 * (unmapping): a library. Unknown (the lock was taken) counts as yes.
 */
static __always_inline bool maps_matter_at(struct task_struct *task, __u64 addr, bool unmap)
{
	struct vma_kind k = {};
	long err = bpf_find_vma(task, addr, vma_kind_of, &k, 0);

	return err == -16 /* -EBUSY */ || (!err && (k.exec || (unmap && k.file)));
}

/*
 * A mapping of a followed process that stacks may name is going or being
 * replaced (its first or last byte checked: dlclose unmaps a library whole,
 * whose first and last mappings are the file's): the process's keys and
 * stacks made before are no longer its truth. A fixed mmap counts only over
 * code: dlopen maps a library's segments over its own new reservation,
 * which no stack names yet. Every thread's memo is made again, so the next
 * launch carries the new value.
 */
static __always_inline void maps_change(__u64 addr, __u64 len, bool unmap)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 *g = bpf_map_lookup_elem(&maps_gens, &tgid);
	struct task_struct *task;

	if (!g)
		return;
	task = bpf_get_current_task_btf();
	if (!maps_matter_at(task, addr, unmap) && !(len && maps_matter_at(task, addr + len - 1, unmap)))
		return;
	__sync_fetch_and_add(g, 1);
	__sync_fetch_and_add(&memo_gen, 1);
	count(GP_BPF_MAPS_CHANGED);
}

SEC("tracepoint/syscalls/sys_enter_munmap")
int maps_munmap(struct trace_event_raw_sys_enter *ctx)
{
	maps_change(ctx->args[0], ctx->args[1], true);
	return 0;
}

#define GP_MAP_FIXED 0x10

SEC("tracepoint/syscalls/sys_enter_mmap")
int maps_mmap(struct trace_event_raw_sys_enter *ctx)
{
	if (ctx->args[3] & GP_MAP_FIXED)
		maps_change(ctx->args[0], ctx->args[1], false);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mremap")
int maps_mremap(struct trace_event_raw_sys_enter *ctx)
{
	maps_change(ctx->args[0], ctx->args[1], true);
	return 0;
}

/* A new program image: none of the process's mappings stay. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(maps_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;
	__u32 *g = bpf_map_lookup_elem(&maps_gens, &tgid);

	if (!g)
		return 0;
	__sync_fetch_and_add(g, 1);
	__sync_fetch_and_add(&memo_gen, 1);
	count(GP_BPF_MAPS_CHANGED);
	return 0;
}

/* A followed process's children are followed too (new processes only). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(follow_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 one = 1;

	if (!filter_pids || child->pid != ctgid)
		return 0;
	if (bpf_map_lookup_elem(&pids, &ptgid))
		bpf_map_update_elem(&pids, &ctgid, &one, BPF_ANY);
	return 0;
}

#endif /* GP_MAPS_WATCH_BPF_H */
