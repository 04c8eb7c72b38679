// SPDX-License-Identifier: GPL-2.0
/*
 * Uprobes on libcuda.so.1's exported launch, load and copy entry points.
 * Each hit sends one gp_launch_event (pid, tid, time, cgroup, the launch
 * arguments that matter and the user stack) through a BPF ring buffer.
 *
 * Cost matters: a wakeup per event costs microseconds per launch, so events
 * are submitted without a wakeup until wakeup_bytes are waiting; the loader
 * also drains the ring on its tick.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bpf/launch.h"
#include "bpf/pywalk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader between open and load. */
const volatile bool filter_pids = false;
const volatile __u64 wakeup_bytes = 256 * 1024;
/* Bytes of user stack copied per event for CFI unwinding; 0: frame pointers. */
const volatile __u32 stack_copy = 0;
/* The events ring's size in bytes (the loader sizes the map). */
const volatile __u64 ring_size = 16 * 1024 * 1024;
/* Stack cache: about one hit in audit_every is sent whole (0: none), at most audit_max a second per CPU. */
const volatile __u32 audit_every = 64;
const volatile __u32 audit_max = 256;

/*
 * The stack cache is consulted while this is set: by the loader, once the
 * probes that keep maps_gens true are attached (and never without them).
 */
bool stack_cache_on = false;

/*
 * Between the duty cycle's windows (the loader sets it): launches, copies
 * and graph-node calls send nothing. Module and library loads, and the
 * autograd engine's points, still do. Where the launch probes can be
 * detached (uprobe_multi links) they are too; this is the rest of it.
 */
bool launches_paused = false;

/*
 * Bumped by the loader after every change to pids, copy_hints or
 * py_configs: a thread's memo (below) filled under another value is stale.
 */
__u32 memo_gen = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 * 1024 * 1024); /* resized by the loader */
} events SEC(".maps");

/* tgid -> 1 for the processes followed when filter_pids is set. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GP_BPF_COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/*
 * A thread's answers from pids, copy_hints and py_configs, kept with the
 * thread (task storage) while memo_gen stays what it was when they were
 * looked up: every launch looked them up again, three hash lookups the
 * answers of which change a few times a run.
 */
/*
 * A node's call: its return slot (sp at the call, and the address there),
 * and where the caller keeps the node's graph task (the shared_ptr the
 * call was given: PyTorch's thread_main keeps it in its frame, at the same
 * place for every node its thread takes, until the next node's). The pass
 * is read from there when a launch needs it (node_pass), not when the node
 * is taken: so a thread whose nodes the probe no longer sees (detached once
 * it has learnt them, or between duty windows) still names each node's own.
 * A node of the pass its thread drives (own) keeps the pass it runs for
 * instead: its caller's frame goes when that pass returns.
 */
struct ag_node {
	__u64 sp, ret, gtref;
	__u64 own_pass;  /* own: the pass the thread was running for when it began its pass */
	__u64 own_drive; /* and that pass (its id), so a later one's node at the slot is not taken for it */
	__u32 own, pad;
};

struct task_memo {
	__u32 gen;  /* memo_gen * 2 + 1 when filled (never 0); 0: never filled */
	__u32 copy; /* the thread's copy size: its hint, or stack_copy */
	__u32 maps_gen; /* its process's mapping generation (maps_gens) */
	__u8 followed, python;
	__u8 engine;      /* named as PyTorch names its engine's device threads (pt_autograd_N) */
	__u8 main_kept;   /* the main thread's walk below stands while it has not run */
	__u8 main_status; /* that walk's gp_py_walk_status */
	__u32 main_n;     /* its frames */
	__u64 main_switches; /* the main thread's context switches when it was walked */
	__u64 main_hash;  /* and the frames' hash */
	/*
	 * The last node it took (autograd_node). A launch deeper than its
	 * return slot, the address still in it, runs for that node's pass
	 * (autograd_of). ag2: the node it was inside when it began a pass
	 * itself (a reentrant backward), for its launches once that pass
	 * returned.
	 */
	struct ag_node ag, ag2;
	/*
	 * The pass it began last (execute_with_graph_task): its graph task,
	 * the call's return slot, and the pass it was running for then.
	 */
	__u64 driving_gt, driving_sp, driving_ret, driving_outer, driving_pass;
	struct gp_py_config py; /* python: its process's entry in py_configs */
};

/* Scratch space: an event is too large for the BPF stack. */
struct scratch {
	struct gp_launch_event e;
	struct py_out pyo;     /* the Python frames follow e */
	struct task_memo memo; /* when the thread's own could not be made */
	struct gp_stack_key key;
	struct gp_py_config py; /* this event's process's Python (when python) */
	__u64 audit_sec;       /* this CPU's audits: the second they were counted in */
	__u32 audits;          /* and how many in it */
	__u32 copy;            /* this event's: the thread's copy size */
	__u32 maps_gen;        /* and its process's mapping generation */
	bool python;           /* and whether its process runs CPython */
	bool py_kept;          /* its Python frames' hash is a kept walk's: frames not read */
	struct ag_node ag, ag2; /* the thread's autograd nodes (task_memo's) */
	struct ag_node drives; /* the pass the thread began last: its call's slot (task_memo's) */
	__u64 drives_gt, drives_outer; /* and its graph task, the pass it was running for then */
	__u64 drives_pass;     /* and that pass's id */
	bool ag_after;         /* this event's pass is its post-processing (autograd_of) */
	bool engine;           /* the thread is named as an engine's device thread (task_memo's) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
}

/*
 * A task's id as its own (innermost) pid namespace numbers it: what the
 * shim's CUPTI records carry (CUPTI's SYSTEM thread ids are gettid()). Read
 * here, while the thread lives, so the join needs no /proc lookup. Plain
 * loads through the task's BTF pointers (the verifier guards each against a
 * fault) cost a few ns; a helper call per field cost about 20. The level
 * indexes numbers[], so it must be a constant for a plain load: hosts and
 * containers (levels 0 and 1) take it, deeper nesting reads with the helper.
 */
static __always_inline __u32 ns_id(struct pid *p)
{
	unsigned int level;
	int nr = 0;

	if (!p)
		return 0;
	level = p->level;
	if (level == 0) {
		nr = p->numbers[0].nr;
		barrier_var(nr); /* one load per kind of pointer: the verifier's rule */
	} else if (level == 1) {
		nr = p->numbers[1].nr;
		barrier_var(nr);
	} else {
		bpf_core_read(&nr, sizeof(nr), &p->numbers[level & 31].nr);
	}
	return (__u32)nr;
}

/*
 * tid -> bytes of stack to copy for it: set by the loader from how deep the
 * thread's stacks were (a copy that ended short grows, one far larger than
 * needed shrinks). Threads not in it get stack_copy.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} copy_hints SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_memo);
} task_memos SEC(".maps");

/*
 * tgid -> how many times a mapping of that process went or was replaced
 * (munmap, mremap or a fixed mmap over a mapped file; exec), from 1: the
 * stack cache's keys and the loader's stacks carry it, so that a library
 * unloaded and another loaded at its address never answer for each other.
 * Made by the launch program for a process it follows.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} maps_gens SEC(".maps");

/* gp_stack_key -> the loader's entry for the stack of launches with that key. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* filled by the loader only: nothing to make at load */
	__uint(max_entries, 16384); /* sized by the loader (--stack-cache) */
	__type(key, struct gp_stack_key);
	__type(value, struct gp_stack_val);
} stack_cache SEC(".maps");

/*
 * Whether the current thread is named as PyTorch's engine names its device
 * threads: a launch of one in no node known asks for the node probe again.
 */
static __always_inline __u8 engine_named(void)
{
	static const char want[] = "pt_autograd_";
	char comm[16] = {};

	bpf_get_current_comm(comm, sizeof(comm));
	for (int i = 0; i < (int)sizeof(want) - 1; i++)
		if (comm[i] != want[i])
			return 0;
	return 1;
}

/*
 * The launching thread's memo, filled again when stale; read memo_gen
 * before the maps, so a change made between the two is seen next time.
 * Without room for it (the allocation failed) the scratch slot's is used.
 */
static __always_inline struct task_memo *thread_memo(struct task_struct *task, __u64 id,
						     struct task_memo *spare)
{
	__u32 gen = *(volatile __u32 *)&memo_gen << 1 | 1, tgid = id >> 32, tid = (__u32)id;
	struct task_memo *m = bpf_task_storage_get(&task_memos, task, 0,
						   BPF_LOCAL_STORAGE_GET_F_CREATE);
	struct gp_py_config *py;
	__u32 *hint;

	if (!m) {
		m = spare;
		m->gen = 0;
	}
	if (m->gen == gen)
		return m;
	m->followed = !filter_pids || bpf_map_lookup_elem(&pids, &tgid);
	hint = bpf_map_lookup_elem(&copy_hints, &tid);
	m->copy = hint ? *hint : stack_copy;
	py = bpf_map_lookup_elem(&py_configs, &tgid);
	m->python = py != NULL;
	if (py)
		m->py = *py;
	m->main_kept = 0;
	m->engine = engine_named();
	m->maps_gen = 1;
	if (m->followed) {
		__u32 *mg = bpf_map_lookup_elem(&maps_gens, &tgid);

		if (mg)
			m->maps_gen = *mg;
		else
			bpf_map_update_elem(&maps_gens, &tgid, &m->maps_gen, BPF_NOEXIST);
	}
	m->gen = gen;
	return m;
}

/* Starts an event in the per-CPU scratch slot; NULL when not followed. */
static __always_inline struct gp_launch_event *begin(__u32 probe)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct task_struct *task = bpf_get_current_task_btf();
	/*
	 * The pointers first, before any branch: the verifier checks each load
	 * of a pointer from a task with a few searches of the kernel's BTF by
	 * name (about 0.3 ms each here), once per path that reaches it.
	 */
	struct pid *own = task->thread_pid, *leader = task->group_leader->thread_pid;
	struct task_memo *m;
	struct scratch *sc;
	struct gp_launch_event *e;
	__u32 zero = 0;

	sc = bpf_map_lookup_elem(&scratch, &zero);
	if (!sc)
		return NULL;
	m = thread_memo(task, id, &sc->memo);
	if (!m->followed) {
		count(GP_BPF_FILTERED);
		return NULL;
	}
	sc->copy = m->copy;
	sc->python = m->python;
	sc->maps_gen = m->maps_gen;
	if (m->python)
		sc->py = m->py; /* a copy: a hash lookup per launch less */
	e = &sc->e; /* the Python frames follow it */
	e->ts_ns = bpf_ktime_get_ns();
	e->cgroup_id = bpf_get_current_cgroup_id();
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->probe = probe;
	e->nr_frames = 0;
	e->func = 0;
	e->stream = 0;
	e->grid[0] = e->grid[1] = e->grid[2] = 0;
	e->block[0] = e->block[1] = e->block[2] = 0;
	e->ns_tid = ns_id(own);
	e->ns_pid = ns_id(leader);
	e->autograd_pass = 0; /* autograd_of, once sp is known */
	sc->ag.sp = sc->ag2.sp = 0;
	sc->drives.sp = 0;
	sc->drives_gt = sc->drives_outer = sc->drives_pass = 0;
	sc->ag_after = false;
	sc->engine = false;
	if (m != &sc->memo) {
		sc->ag = m->ag;
		sc->ag2 = m->ag2;
		sc->engine = m->engine;
		if (m->driving_gt) {
			sc->drives.sp = m->driving_sp;
			sc->drives.ret = m->driving_ret;
			sc->drives_gt = m->driving_gt;
			sc->drives_outer = m->driving_outer;
			sc->drives_pass = m->driving_pass;
		}
	}
	return e;
}

static long vma_end(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	*(__u64 *)data = vma->vm_end;
	return 0;
}

/*
 * How much of the stack to copy, at most want (the thread's hint, or
 * stack_copy), in whole chunks.
 * Frames live below a bound known without walking: the main thread's
 * start_stack (the stack pointer _start began with; above it only argv, the
 * environment and the aux vector) or, for a glibc thread, its thread pointer
 * (struct pthread and the static TLS sit at the top of the thread's stack
 * mapping). Otherwise the end of the mapping holding sp, rounded down:
 * reading past it would fail the chunk.
 */
static __always_inline __u32 copy_size(__u64 want, __u64 sp, __u16 *flags)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 start = task->mm->start_stack;
	__u64 tp = task->thread.fsbase;
	__u64 end = 0, avail;

	if (start > sp && start - sp < (1ull << 30)) {
		avail = start - sp + GP_STACK_CHUNK - 1;
	} else if (tp > sp && tp - sp < (1ull << 30)) {
		avail = tp - sp + GP_STACK_CHUNK - 1;
	} else if (bpf_find_vma(task, sp, vma_end, &end, 0) == 0 && end > sp) {
		avail = end - sp;
	} else {
		*flags |= GP_EV_F_VMA_BUSY; /* mmap lock contended: stay inside sp's page */
		avail = 4096 - (sp & 4095);
	}
	if (want > GP_STACK_COPY_MAX)
		want = GP_STACK_COPY_MAX;
	if (avail > want)
		avail = want;
	return (__u32)avail & ~(GP_STACK_CHUNK - 1);
}

/* Reads one chunk of n bytes (a constant) of the stack into the ring record. */
#define COPY_CHUNK(dp, head, off, sp, n) ({                                   \
	void *slot_ = bpf_dynptr_data(dp, (head) + (off), n);                  \
	slot_ && !bpf_probe_read_user(slot_, n, (void *)((sp) + (off)));       \
})

/* A block of the stack copy read again chunk by chunk (bpf_loop's context). */
struct rechunk {
	struct bpf_dynptr *dp;
	__u64 base;
	__u32 head, off;
};

static long rechunk_step(__u32 idx, void *arg)
{
	struct rechunk *x = arg;

	COPY_CHUNK(x->dp, x->head, x->off + idx * GP_STACK_CHUNK, x->base, GP_STACK_CHUNK);
	return 0;
}

/*
 * Copies the n bytes (a constant: a power of two, whole chunks) of the stack
 * at *off when the copy's size has that bit, in one read: each read has a
 * cost of its own besides its bytes, so a copy takes as few as its size's
 * bits (30 KiB: four reads, not eleven). A page the thread never touched (a
 * large local array left unused) is not resident and fails the read; the
 * helper zeroes what it could not read, and the block is read again chunk
 * by chunk (under bpf_loop: verified once, not once per chunk), so the
 * frames on either side of the hole are still there. False when any of it
 * could not be read.
 */
static __always_inline bool copy_block(struct bpf_dynptr *dp, __u32 head, __u32 copy,
				       __u32 *off, __u64 base, const __u32 n)
{
	struct rechunk x = { .dp = dp, .base = base, .head = head, .off = *off };
	bool ok = true;

	if (!(copy & n))
		return true;
	if (!COPY_CHUNK(dp, head, *off, base, n)) {
		ok = false;
		bpf_loop(n / GP_STACK_CHUNK, rechunk_step, &x, 0);
	}
	*off += n;
	return ok;
}

_Static_assert(GP_STACK_COPY_MAX == 256 * 1024 && GP_STACK_CHUNK == 512,
	       "submit's blocks cover sizes up to GP_STACK_COPY_MAX in chunks");

/*
 * The record that takes the ring past wakeup_bytes wakes the reader,
 * forced: the kernel's default wakes it only for a record at its read
 * position, and the records before this one went without a wakeup.
 * Later ones do not: woken, the reader drains the ring below the mark
 * (or, its queue full, waits on the loader and could not answer).
 * avail: the bytes waiting before this record of len bytes.
 */
static __always_inline __u64 wakeup_flag(__u64 avail, __u64 len)
{
	return avail < wakeup_bytes && avail + len >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
								    : BPF_RB_NO_WAKEUP;
}

/*
 * Sends the event: reserved at its exact size, header and frame-pointer
 * stack, then the Python frames, then the stack copy read straight into the
 * ring (no second copy), a block per bit of its size. avail: the bytes
 * waiting in the ring before it.
 */
static __always_inline int submit(struct scratch *sc, __u32 npy, __u32 copy, __u64 avail)
{
	struct gp_launch_event *e = &sc->e;
	__u32 head = GP_LAUNCH_EVENT_HDR + 8 * (e->nr_frames & 0x7f);
	__u32 pyb = sizeof(struct gp_py_frame) * (npy & (GP_PY_MAX_FRAMES * 2 - 1));
	__u64 base = GP_STACK_COPY_BASE(e->sp);
	__u32 off = 0;
	struct bpf_dynptr dp;
	bool ok = true;

	if (head > sizeof(*e))
		head = sizeof(*e);
	if (pyb > sizeof(sc->pyo.py))
		pyb = sizeof(sc->pyo.py);
	if (bpf_ringbuf_reserve_dynptr(&events, head + pyb + copy, 0, &dp)) {
		bpf_ringbuf_discard_dynptr(&dp, 0);
		count(GP_BPF_RINGBUF_FULL);
		return 0;
	}
	bpf_dynptr_write(&dp, 0, e, head, 0);
	if (pyb)
		bpf_dynptr_write(&dp, head, sc->pyo.py, pyb, 0);
	head += pyb;
	ok = copy_block(&dp, head, copy, &off, base, 256 * 1024) && ok;
	ok = copy_block(&dp, head, copy, &off, base, 128 * 1024) && ok;
	ok = copy_block(&dp, head, copy, &off, base, 64 * 1024) && ok;
	ok = copy_block(&dp, head, copy, &off, base, 32 * 1024) && ok;
	ok = copy_block(&dp, head, copy, &off, base, 16 * 1024) && ok;
	ok = copy_block(&dp, head, copy, &off, base, 8 * 1024) && ok;
	ok = copy_block(&dp, head, copy, &off, base, 4 * 1024) && ok;
	ok = copy_block(&dp, head, copy, &off, base, 2 * 1024) && ok;
	ok = copy_block(&dp, head, copy, &off, base, 1024) && ok;
	ok = copy_block(&dp, head, copy, &off, base, 512) && ok;
	if (!ok) {
		__u16 f = e->flags | GP_EV_F_COPY_PARTIAL;

		bpf_dynptr_write(&dp, offsetof(struct gp_launch_event, flags), &f, sizeof(f), 0);
		count(GP_BPF_COPY_ERRORS);
	}
	bpf_ringbuf_submit_dynptr(&dp, wakeup_flag(avail, head + copy));
	count(GP_BPF_EVENTS);
	return 0;
}

/* How often a task was switched out: the same count, and off its CPU, it has not run since. */
static __always_inline __u64 switches(struct task_struct *t)
{
	return t->nvcsw + t->nivcsw;
}

/*
 * Whether t is off its CPU, read before its switch count: a switch counts
 * before it clears on_cpu, so a task seen off its CPU has counted every run
 * it had. (Read the other way round, a run that ended between the two reads
 * would show its old count and off its CPU.)
 */
static __always_inline bool off_cpu(struct task_struct *t, __u64 *ret_switches)
{
	bool off = !*(volatile int *)&t->on_cpu;

	barrier();
	*ret_switches = switches(t);
	return off;
}

/*
 * The main thread's frames, for a thread running no Python. A main thread
 * that has not run since its frames were last walked has the same frames
 * (only a thread writes its own): the walk's hash is kept in the launching
 * thread's memo with the main thread's switch count, and while the main
 * thread stays off its CPU with that count (waiting in backward() while
 * the autograd thread launches) the kept hash stands for a walk. *kept says
 * that it did: the frames themselves were not read. A walk is kept only
 * when it found frames (a status that other threads' state decided, no
 * thread state found, is not the main thread's alone) and the main thread
 * was off its CPU, with one count, before and after.
 */
static __always_inline __u32 main_frames(struct scratch *sc, bool keep, __u32 *status, bool *kept)
{
	struct gp_launch_event *e = &sc->e;
	struct task_struct *task = bpf_get_current_task_btf(), *main = task->group_leader;
	struct task_memo *m = keep ? bpf_task_storage_get(&task_memos, task, 0, 0) : NULL;
	__u64 sw, sw_after;
	bool off = off_cpu(main, &sw);
	/* Its entry frames lie on its own C stack: near its user sp. */
	struct pt_regs *main_regs;
	__u32 n;

	if (m && m->main_kept && off && m->main_switches == sw) {
		sc->pyo.hash = m->main_hash;
		*status = m->main_status;
		*kept = true;
		count(GP_BPF_PY_KEPT);
		return m->main_n;
	}
	main_regs = (struct pt_regs *)bpf_task_pt_regs(main);
	n = py_walk(&sc->py, e->pid, e->ns_pid, &sc->pyo, main_regs ? main_regs->sp : 0);
	*status = sc->pyo.status;
	if (m) {
		m->main_kept = off && off_cpu(main, &sw_after) && sw_after == sw && n &&
			       (*status == GP_PY_WALK_OK || *status == GP_PY_WALK_TRUNCATED);
		m->main_switches = sw;
		m->main_hash = sc->pyo.hash;
		m->main_n = n;
		m->main_status = (__u8)*status;
	}
	return n;
}

/*
 * The Python frames of the launching thread, when its process runs CPython.
 * A thread running no Python (PyTorch's autograd threads launch the
 * backward pass) works for the main thread, which waits in backward(): its
 * frames are taken instead, and the event says so; with keep, maybe from a
 * kept walk (sc->py_kept: the hash alone).
 */
static __always_inline __u32 python_frames(struct scratch *sc, bool keep)
{
	struct gp_launch_event *e = &sc->e;
	struct gp_py_config *c = &sc->py;
	__u32 status = 0, n;
	__u64 key;

	sc->py_kept = false;
	if (!sc->python)
		return 0;
	if (c->tid_kind == GP_PY_TID_PTHREAD)
		key = bpf_get_current_task_btf()->thread.fsbase;
	else
		key = e->ns_tid;
	sc->pyo.now = e->ts_ns;
	n = py_walk(c, e->tid, key, &sc->pyo, e->sp);
	status = sc->pyo.status;
	/*
	 * No thread state, or one without frames (PyTorch gives its engine
	 * threads one). An engine thread known to run a backward pass's node
	 * goes under that pass's caller instead (the loader's join of
	 * autograd_pass): borrowing the main thread's frames would name the
	 * wrong thread when another one called backward().
	 */
	if (!n && !e->autograd_pass && (status == GP_PY_WALK_NO_THREAD || status == GP_PY_WALK_OK) &&
	    c->tid_kind == GP_PY_TID_NATIVE && e->ns_tid != e->ns_pid) {
		n = main_frames(sc, keep, &status, &sc->py_kept);
		e->flags |= GP_EV_F_PY_MAIN;
	}
	e->flags |= GP_EV_F_PY | (__u16)((status & 7) << GP_EV_PY_STATUS_SHIFT);
	return n;
}

#include "bpf/stack_cache.bpf.h"

/*
 * Walks the Python frames, asks the stack cache, and else captures the user
 * stack (frame pointers, or a copy for CFI) and sends the event.
 */
static __always_inline int finish(struct pt_regs *ctx, struct gp_launch_event *e)
{
	struct scratch *sc = (struct scratch *)e;
	__u64 avail;
	__u32 copy = 0;

	e->ip = PT_REGS_IP(ctx);
	e->sp = PT_REGS_SP(ctx);
	e->bp = PT_REGS_FP(ctx);
	e->flags = sc->ag_after ? GP_EV_F_AG_AFTER : 0;
	e->nr_frames = 0;
	e->cache_id = 0;
	e->maps_gen = sc->maps_gen;
	/* A kept walk serves only the cache's lookup: without the cache, frames are always read. */
	e->nr_py = python_frames(sc, stack_cache_on);
	e->py_hash = sc->pyo.hash;
	if (try_cache(sc))
		return 0;
	/*
	 * Sent whole: the frames a kept walk stood for are read now. Found
	 * otherwise (the main thread ran since the lookup), the launch is not
	 * the looked-up entry's to check, nor its key the one to install.
	 */
	if (sc->py_kept) {
		__u64 kept_hash = e->py_hash;

		e->flags &= ~GP_EV_KEY_FLAGS;
		e->nr_py = python_frames(sc, false);
		e->py_hash = sc->pyo.hash;
		if (e->py_hash != kept_hash) {
			count(GP_BPF_PY_KEPT_STALE);
			e->flags &= ~(GP_EV_F_AUDIT | GP_EV_F_KEYED);
			e->cache_id = 0;
		}
	}
	if (stack_copy) {
		copy = copy_size(sc->copy, GP_STACK_COPY_BASE(e->sp), &e->flags);
	} else {
		long len = bpf_get_stack(ctx, e->stack, sizeof(e->stack), BPF_F_USER_STACK);

		if (len < 0) {
			count(GP_BPF_STACK_ERRORS);
			len = 0;
		}
		if (len > (long)sizeof(e->stack))
			len = sizeof(e->stack);
		e->nr_frames = len / 8;
	}
	avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	/*
	 * A loader busy elsewhere (loading a large library's symbols) must not
	 * cost launch events: past half full, stack copies stay behind.
	 */
	if (copy && avail + copy > ring_size / 2) {
		/*
		 * An audit goes as the hit it is: its entry's stack stands,
		 * unchecked this once, where a miss has nothing to fall back on.
		 */
		if (e->flags & GP_EV_F_AUDIT) {
			e->flags &= ~GP_EV_F_AUDIT;
			count(GP_BPF_AUDITS_SKIPPED);
			return submit_hit(e);
		}
		copy = 0;
		e->flags |= GP_EV_F_COPY_SKIPPED;
		count(GP_BPF_COPY_SKIPPED);
	}
	e->stack_len = copy;
	return submit(sc, e->nr_py, copy, avail);
}

/*
 * libbpf 1.1 has no PT_REGS_PARM6 and the stack-argument layout below is the
 * x86-64 System V one (six register arguments, then the stack above the
 * return address): the CUDA driver ships for x86-64 first.
 */
#if !defined(__TARGET_ARCH_x86)
#error "launch.bpf.c reads x86-64 calling-convention arguments"
#endif
#define PARM6(x) ((x)->r9)

/*
 * cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
 * the stack-passed arguments 7 to 9 (bz, shmem, stream) lie above the
 * return address at entry (on_stack[1..3], read with it in one call).
 */
static __always_inline void args_classic(struct pt_regs *ctx, struct gp_launch_event *e,
					 const __u64 *on_stack)
{
	e->func = PT_REGS_PARM1(ctx);
	e->grid[0] = PT_REGS_PARM2(ctx);
	e->grid[1] = PT_REGS_PARM3(ctx);
	e->grid[2] = PT_REGS_PARM4(ctx);
	e->block[0] = PT_REGS_PARM5(ctx);
	e->block[1] = PARM6(ctx);
	e->block[2] = on_stack[1];
	e->stream = on_stack[3];
}

/* The head of CUlaunchConfig, as cuda.h lays it out. */
struct launch_config_head {
	__u32 grid[3];
	__u32 block[3];
	__u32 shmem;
	__u32 pad;
	__u64 stream;
};

/* cuLaunchKernelEx(const CUlaunchConfig *config, f, params, extra) */
static __always_inline void args_ex(struct pt_regs *ctx, struct gp_launch_event *e)
{
	struct launch_config_head cfg = {};

	bpf_probe_read_user(&cfg, sizeof(cfg), (void *)PT_REGS_PARM1(ctx));
	e->func = PT_REGS_PARM2(ctx);
	e->grid[0] = cfg.grid[0];
	e->grid[1] = cfg.grid[1];
	e->grid[2] = cfg.grid[2];
	e->block[0] = cfg.block[0];
	e->block[1] = cfg.block[1];
	e->block[2] = cfg.block[2];
	e->stream = cfg.stream;
}

/* Whether a call whose return address ret was at slot is still under way at sp. */
static __always_inline bool slot_holds(__u64 slot, __u64 ret, __u64 sp)
{
	__u64 now = 0;

	if (!slot || sp >= slot)
		return false;
	return !bpf_probe_read_user(&now, sizeof(now), (void *)slot) && now == ret;
}

/* (process, graph task) -> the pass begun on it last: that begin's time, its id. */
struct ag_task_key {
	__u32 tgid, pad;
	__u64 task;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct ag_task_key);
	__type(value, __u64);
} autograd_tasks SEC(".maps");

/*
 * The pass a node runs for, read now from where its caller keeps its graph
 * task: the pass begun on that task last (autograd_tasks), or
 * AUTOGRAD_PASS_UNSEEN (begun before the probes, or without the call they
 * see; or the task unreadable): never an older pass at the same address.
 * A node of the pass the thread drives runs for the pass the thread was
 * running for when it began it: its own (0), or, in a reentrant backward,
 * the outer one (kept when the node was taken, or, for a node the probe
 * did not see, the task read now is the one the thread drives).
 */
static __always_inline __u64 node_pass(struct scratch *sc, const struct ag_node *n, __u64 sp)
{
	struct ag_task_key k = { .tgid = sc->e.pid };
	__u64 *pass;

	if (n->own && n->own_drive == sc->drives_pass)
		return n->own_pass;
	if (bpf_probe_read_user(&k.task, sizeof(k.task), (void *)n->gtref))
		return AUTOGRAD_PASS_UNSEEN;
	/*
	 * A node of a pass the thread drove before, at the slot where a node
	 * of the pass it drives now may run unseen: that one's, or not known.
	 */
	if (n->own)
		return k.task == sc->drives_gt && slot_holds(sc->drives.sp, sc->drives.ret, sp)
			       ? sc->drives_outer
			       : AUTOGRAD_PASS_UNSEEN;
	if (sc->drives_gt && k.task == sc->drives_gt && slot_holds(sc->drives.sp, sc->drives.ret, sp))
		return sc->drives_outer;
	pass = bpf_map_lookup_elem(&autograd_tasks, &k);
	return pass ? *pass : AUTOGRAD_PASS_UNSEEN;
}

/*
 * Whether a node's frame is gone: taken inside a pass the thread began
 * (deeper than that call's return slot), and that call has returned. A
 * thread's nodes of its own pass leave nothing behind it.
 */
static __always_inline bool node_gone(const struct scratch *sc, const struct ag_node *n, __u64 sp)
{
	return sc->drives.sp && n->sp < sc->drives.sp &&
	       !slot_holds(sc->drives.sp, sc->drives.ret, sp);
}

/*
 * The pass a launch at sp runs for: the node the thread is inside (the
 * last one's call still under way below it), else the one it was inside
 * when it began a pass of its own; 0: none (or the thread's own pass).
 * A thread whose last node was of a pass seen to begin, outside its nodes
 * and inside no pass it began itself (an engine thread between nodes), runs
 * the post-processing of that pass: GraphTask's final callbacks (DDP's
 * reducer, queue_callback) run on the thread that finished the pass, after
 * its last node returned, in no function the probes see
 * (exec_post_processing is not exported: PyTorch 2.11,
 * tools/gpu/post_callback.sh); flagged GP_EV_F_AG_AFTER. PyTorch's
 * thread_main still holds the pass's task then, where its node had it. The
 * thread that began a pass runs that pass's CPU nodes for itself (pass 0):
 * never so.
 */
static __always_inline __u64 autograd_of(struct scratch *sc, __u64 sp)
{
	const struct ag_node *last = &sc->ag;
	__u64 pass;

	/*
	 * Inside a pass it began inside a node (a reentrant backward), its
	 * last node seen no deeper than that call: a node its inner loop took
	 * unseen (the node probe away), which may be another thread's pass's.
	 */
	if (sc->drives_outer && sc->ag.sp >= sc->drives.sp &&
	    slot_holds(sc->drives.sp, sc->drives.ret, sp))
		return AUTOGRAD_PASS_UNSEEN;
	if (sc->ag.sp && node_gone(sc, &sc->ag, sp))
		last = &sc->ag2;
	if (last == &sc->ag && slot_holds(sc->ag.sp, sc->ag.ret, sp))
		return node_pass(sc, &sc->ag, sp);
	if (slot_holds(sc->ag2.sp, sc->ag2.ret, sp))
		return node_pass(sc, &sc->ag2, sp);
	if (!last->sp || slot_holds(sc->drives.sp, sc->drives.ret, sp))
		return 0;
	pass = node_pass(sc, last, sp);
	if (pass <= AUTOGRAD_PASS_UNSEEN)
		return 0;
	sc->ag_after = true;
	return pass;
}

/*
 * A pass begun on this thread (e, its event: e->ts_ns names the pass,
 * e->autograd_pass the pass it was running for when it began it). The
 * task's pass goes in autograd_tasks for the nodes other threads take; the
 * thread drives it (autograd_node); the node it was inside is kept (ag2)
 * for its launches after this pass.
 */
static __always_inline void autograd_begun(struct pt_regs *ctx, struct gp_launch_event *e, __u64 task)
{
	struct scratch *sc = (struct scratch *)e;
	struct task_memo *m = bpf_task_storage_get(&task_memos, bpf_get_current_task_btf(), 0, 0);
	struct ag_task_key k = { .tgid = e->pid, .task = task };
	__u64 pass = e->ts_ns;

	if (m && m->driving_gt && !slot_holds(m->driving_sp, m->driving_ret, PT_REGS_SP(ctx))) {
		/*
		 * The pass it drove before has ended (its call returned): its
		 * task's entry goes, unless another pass took the address
		 * since, so that a pass begun there unseen is not taken for it.
		 */
		struct ag_task_key old = { .tgid = e->pid, .task = m->driving_gt };
		__u64 *was = bpf_map_lookup_elem(&autograd_tasks, &old);

		if (was && *was == m->driving_pass)
			bpf_map_delete_elem(&autograd_tasks, &old);
	}
	bpf_map_update_elem(&autograd_tasks, &k, &pass, BPF_ANY);
	if (!m)
		return;
	m->driving_gt = task;
	m->driving_pass = pass;
	m->driving_sp = PT_REGS_SP(ctx);
	m->driving_ret = e->ret;
	m->driving_outer = e->autograd_pass;
	/*
	 * A pass begun inside a node (a reentrant backward): the inner loop
	 * may take other passes' nodes at calls of its own, which only the
	 * node probe sees; the loader puts it back (GP_BPF_AG_UNLEARNED).
	 */
	if (e->autograd_pass)
		count(GP_BPF_AG_UNLEARNED);
	if (!e->autograd_pass)
		m->ag2.sp = 0;
	else if (slot_holds(sc->ag.sp, sc->ag.ret, PT_REGS_SP(ctx)))
		m->ag2 = sc->ag;
}

/*
 * A thread takes a node of a backward pass:
 * Engine::evaluate_function(this, std::shared_ptr<GraphTask> &task, ...).
 * Kept in the thread's memo: the call's return slot and where the caller
 * keeps the task (the shared_ptr, whose first word is the task's pointer);
 * nothing is sent. Only for followed processes. A node at another call
 * than the thread's last one is counted (GP_BPF_AG_LEARNED): the loader
 * keeps the probe while nodes come at calls not seen, and takes it away
 * once they come only at known ones (an engine's device thread takes every
 * node at one call of its thread_main; a launch then reads its node's pass
 * from there, node_pass). A thread's node of its own pass is not counted,
 * and keeps the pass it runs for (its launches are the thread's own, or, in
 * a reentrant backward, the outer pass's). No return probe: a uretprobe
 * breaks the unwinding of a C++ exception thrown through the function (a
 * failing backward), which would end the program; the return slot tells a
 * call under way from one that returned.
 */
static __always_inline int autograd_node(struct pt_regs *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 id = bpf_get_current_pid_tgid(), sp = PT_REGS_SP(ctx), ret = 0, gt = 0;
	__u64 gtref = PT_REGS_PARM2(ctx);
	struct task_memo *m;
	bool own;
	struct scratch *sc;
	__u32 zero = 0;

	sc = bpf_map_lookup_elem(&scratch, &zero);
	if (!sc)
		return 0;
	m = thread_memo(task, id, &sc->memo);
	if (m == &sc->memo || !m->followed)
		return 0;
	count(GP_BPF_AG_NODES);
	bpf_probe_read_user(&ret, sizeof(ret), (void *)sp);
	bpf_probe_read_user(&gt, sizeof(gt), (void *)gtref);
	own = m->driving_gt && gt == m->driving_gt && slot_holds(m->driving_sp, m->driving_ret, sp);
	if (!own && (sp != m->ag.sp || ret != m->ag.ret || gtref != m->ag.gtref || m->ag.own))
		count(GP_BPF_AG_LEARNED);
	m->ag.sp = sp;
	m->ag.ret = ret;
	m->ag.gtref = gtref;
	m->ag.own = own;
	m->ag.own_pass = own ? m->driving_outer : 0;
	m->ag.own_drive = own ? m->driving_pass : 0;
	return 0;
}

/*
 * Every driver entry point we probe, one program: the loader gives each
 * attachment its probe id as the cookie. One program is verified once (a
 * program per entry point cost about 70 ms of kernel time each at start).
 * cuGraphLaunch(exec, stream), the loads (module slot or image first) and
 * the copies keep their first two arguments.
 */
SEC("uprobe")
int BPF_KPROBE(cu_call)
{
	__u64 probe = bpf_get_attach_cookie(ctx);
	/* The return address at sp (the cache's key), then stack-passed arguments. */
	__u64 on_stack[4] = {};
	struct gp_launch_event *e;

	if (probe == GP_PROBE_AUTOGRAD_NODE)
		return autograd_node(ctx);
	if (probe >= GP_PROBE_MAX && probe != GP_PROBE_AUTOGRAD_EXECUTE)
		return 0;
	if (launches_paused && GP_PROBE_WINDOWED(probe))
		return 0;
	e = begin((__u32)probe);
	if (!e)
		return 0;
	bpf_probe_read_user(on_stack, sizeof(on_stack), (void *)PT_REGS_SP(ctx));
	e->ret = on_stack[0];
	e->autograd_pass = autograd_of((struct scratch *)e, PT_REGS_SP(ctx));
	/*
	 * An engine's device thread launching (or beginning a pass: a
	 * reentrant backward) in no node known: a node not seen (the node
	 * probe away when the thread took its first), or the final callbacks
	 * of a pass not seen to begin. Its caller is not known (counted
	 * caller_unknown), and the probe is wanted back.
	 */
	if (!e->autograd_pass && ((struct scratch *)e)->engine) {
		count(GP_BPF_AG_UNLEARNED);
		e->autograd_pass = AUTOGRAD_PASS_UNSEEN;
	}
	switch (probe) {
	case GP_PROBE_LAUNCH_KERNEL:
	case GP_PROBE_LAUNCH_KERNEL_PTSZ:
	case GP_PROBE_LAUNCH_COOPERATIVE:
	case GP_PROBE_LAUNCH_COOPERATIVE_PTSZ:
		args_classic(ctx, e, on_stack);
		break;
	case GP_PROBE_LAUNCH_KERNEL_EX:
	case GP_PROBE_LAUNCH_KERNEL_EX_PTSZ:
		args_ex(ctx, e);
		break;
	case GP_PROBE_AUTOGRAD_EXECUTE:
		/*
		 * (sret, this, const std::shared_ptr<GraphTask> &task, ...): it
		 * returns a c10::intrusive_ptr, in memory. The task goes in
		 * stream, not func: func is part of the stack cache's key.
		 */
		bpf_probe_read_user(&e->stream, sizeof(e->stream), (void *)PT_REGS_PARM3(ctx));
		autograd_begun(ctx, e, e->stream);
		break;
	default:
		e->func = PT_REGS_PARM1(ctx);
		e->stream = PT_REGS_PARM2(ctx);
		break;
	}
	return finish(ctx, e);
}

#include "bpf/maps_watch.bpf.h"
#include "bpf/ring_watch.bpf.h"
