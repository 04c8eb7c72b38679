/* SPDX-License-Identifier: MIT */
/*
 * The loader's run loop (session.h). Owns every decision the shim leaves to
 * it: on each tick it drains the BPF ring, reads each target's shared ring
 * (hostile input, through user/shm), settles cubins, feeds the join and the
 * profile, and notices processes that are gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <malloc.h>
#include <unistd.h>
#include "user/session/session_internal.h"
#include "user/probe/libcuda.h"
#include "user/proc/proc.h"
#include "user/symbolize/symbolize.h"
#include "user/python/pyruntime.h"
#include "user/python/pycode.h"
#include "user/session/preflight.h"
#include "user/util/log.h"

#define SHM_RETRY_NS (200 * NS_PER_MS)
#define SHM_RETRY_WATCHED_NS (2 * NS_PER_S)
#define NO_SHIM_WARN_NS (3 * NS_PER_S)
#define SCAN_NS (2 * NS_PER_S)
#define READ_BATCH 4096
/* One visit to a target's ring reads at most this (the default ring, whole) and this long. */
#define READ_VISIT_MAX (16 * READ_BATCH)
#define READ_VISIT_NS (50 * NS_PER_MS)
/* An exited target with records or cubins left is visited this many more ticks at most. */
#define DEAD_VISITS_MAX 50
/* At the end, ticks go on while exited targets have something left, this long at most. */
#define FINISH_MAX_NS (2 * NS_PER_S)
#define SLICE_MS 20
#define QUIET_NS NS_PER_S
/*
 * --stack-copy auto: a thread's first copies, before its stacks are known:
 * all of its stack, up to the bound (a thread's outermost frame sits at the
 * top of its stack, so a full walk needs about all of it). The loader may
 * be seconds late to learn a thread's depth (a busy start: when CFI tables
 * were built whole, about 1 s for libtorch's and cuDNN's), and a smaller
 * start cut every deep launch meanwhile.
 */
#define STACK_COPY_AUTO_START GP_STACK_COPY_MAX
/* Launch events queued while the main thread is busy, at most. */
#define PUMP_MAX_BYTES (256ull << 20)
#define PENDING_MAX (1u << 20)
#define PY_RETRY_NS (50 * NS_PER_MS) /* in effect: every tick */
/* Stack-cache audits a second per CPU, at most (--stack-audit picks how often). */
#define STACK_AUDIT_MAX 256
#define PY_MAX_TRIES 40
/* Events committed after we read the clock may still be in flight. */
#define WATERMARK_SLACK_NS (5 * NS_PER_MS)

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static __u64 realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* ------------------------------------------------------------ targets */

static int declare_proc(struct session *s, struct target *t)
{
	struct profile_proc pp = { .pid = t->pid, .comm = t->comm,
				   .cgroup = s->o->mode == GP_MODE_ALL && t->cgroup[0] ? t->cgroup : NULL };

	return profile__set_proc(s->prof, &pp);
}

static struct target *target_for(struct session *s, pid_t pid)
{
	struct target *t = target_table__find(&s->tt, pid);

	if (t)
		return t;
	/*
	 * Seen first through a launch event: the probes have watched it since
	 * they went in (or its libcuda was attached, see scan_new_libcuda).
	 */
	if (target_table__add(&s->tt, pid, s->probes_ns, &t))
		return NULL;
	if (s->have_child && pid == s->child.pid) {
		t->shm_fd = dup(s->child.shm_fd);
	}
	join__attach(s->join, pid, t->attach_ns);
	declare_proc(s, t);
	log_debug("following pid %d (%s)", pid, t->comm);
	return t;
}

/* ------------------------------------------------------------ BPF side */

/*
 * CPython in t, found once it has an interpreter (a -- COMMAND child has
 * none at exec): the probes then walk its Python frames at each launch.
 */
static void python_setup(struct session *s, struct target *t, __u64 now)
{
	struct pyruntime rt;
	int err;

	if (t->py_done || now < t->py_next_try_ns)
		return;
	err = pyruntime__detect(t->pid, &rt);
	if (err == -EAGAIN) {
		if (!t->py_next_try_ns)
			log_debug("pid %d (%s): CPython not ready: %s", t->pid, t->comm,
				  pyruntime__strerror(err));
		t->py_next_try_ns = now + PY_RETRY_NS;
		return;
	}
	if (err == -ENOENT && !t->first_launch_ns) {
		/* Maybe not exec'd yet (a -- COMMAND child) or not loaded: look again. */
		t->py_next_try_ns = now + PY_RETRY_NS;
		return;
	}
	/* An interpreter caught half way through its start-up: look again, a while. */
	if ((err == -EUCLEAN || err == -EFAULT) && ++t->py_tries < PY_MAX_TRIES) {
		t->py_next_try_ns = now + PY_RETRY_NS;
		return;
	}
	t->py_done = true;
	if (err == -ENOENT || err == -ESRCH) {
		log_debug("pid %d (%s): not CPython: %s", t->pid, t->comm, pyruntime__strerror(err));
		return;
	}
	if (!err)
		err = pycode_cache__new(t->pid, &rt.code, &t->py);
	if (!err)
		err = launch_probe__set_python(s->lp, t->pid, &rt.config);
	if (err) {
		log_warn("pid %d (%s): no Python frames: %s", t->pid, t->comm, pyruntime__strerror(err));
		pycode_cache__destroy(t->py);
		t->py = NULL;
		return;
	}
	t->py_entry_kind = rt.config.entry_kind;
	log_debug("pid %d: CPython %u.%u.%u in %s", t->pid, rt.major, rt.minor, rt.micro, rt.path);
}

static void resolve_stack(struct session *s, struct target *t, __u32 stack_id,
			  const struct raw_stack *raw)
{
	struct resolved_stack *rs = s->resolved;

	if (t && !t->comm_declared) {
		target__symbolizer(t); /* re-reads the comm, after exec */
		declare_proc(s, t);
		t->comm_declared = true;
	}
	raw_stack__resolve(t, raw, rs, &s->stack_stats);
	profile__set_stack(s->prof, stack_id, rs->f, rs->n, rs->truncated);
}

/*
 * Stacks met for the first time are named later (resolve_pending): loading
 * a large library's symbols takes seconds, and the BPF ring must be drained
 * meanwhile. Their Python code objects are read now, while they exist.
 */
void session__defer_stack(struct session *s, struct target *t, __u32 stack_id,
			  const struct raw_stack *raw)
{
	const struct gp_py_frame *py = (const struct gp_py_frame *)(raw->w + raw->n);
	struct pycode_frame f;

	if (t)
		target__symbolizer(t); /* its maps and root, read while it lives */
	for (__u32 i = 0; t && t->py && i < raw->npy; i++)
		if (py[i].code != GP_PY_FRAME_SHIM)
			pycode_cache__lookup_at(t->py, py[i].code & ~GP_PY_FRAME_FLAGS, py[i].instr,
						raw->epoch, &f);
	if (s->npending == s->cap_pending) {
		size_t cap = s->cap_pending ? 2 * s->cap_pending : 1024;
		__u32 *n = cap <= PENDING_MAX ? realloc(s->pending, cap * sizeof(*n)) : NULL;

		if (!n) {
			resolve_stack(s, t, stack_id, raw); /* no room to wait: now */
			return;
		}
		s->pending = n;
		s->cap_pending = cap;
	}
	s->pending[s->npending++] = stack_id;
}

void session__resolve_pending(struct session *s, pid_t pid)
{
	struct target *only = pid ? target_table__find(&s->tt, pid) : NULL;
	size_t keep = 0, len;

	for (size_t i = 0; i < s->npending; i++) {
		const struct raw_stack *raw = stack_table__get(&s->stacks, s->pending[i], &len);
		struct raw_stack copy;

		if (!raw || len > sizeof(copy) || len < offsetof(struct raw_stack, w)) {
			continue;
		}
		if (pid && raw->pid != (__u32)pid) {
			s->pending[keep++] = s->pending[i];
			continue;
		}
		memcpy(&copy, raw, len);
		resolve_stack(s, target_table__find(&s->tt, (pid_t)copy.pid), s->pending[i], &copy);
	}
	s->npending = keep;
	/* Nothing of their time waits to be named: earlier mappings can go. */
	if (only)
		target__drop_old_spaces(only);
	for (size_t i = 0; !pid && i < s->tt.n; i++)
		target__drop_old_spaces(s->tt.t[i]);
}

/*
 * Rings the watch thread held as their processes made them: each becomes
 * its target's ring, read like any other, also after the process exits. A
 * ring it could not hold (gone at once, not a memfd) is counted missed.
 */
static void take_held_rings(struct session *s)
{
	struct held_ring h[64];
	size_t n;

	while ((n = ring_watch__take(&s->rw, h, 64))) {
		for (size_t i = 0; i < n; i++) {
			struct target *t = h[i].fd >= 0 ? target_for(s, h[i].pid) : NULL;

			if (!t || t->shm || t->shm_fd >= 0) {
				if (h[i].fd >= 0)
					close(h[i].fd);
				if (!t) {
					s->rings_missed++;
					log_debug("pid %d: its new shim ring could not be held: %s",
						  h[i].pid, strerror(h[i].fd < 0 ? -h[i].fd : ENOMEM));
				}
				continue;
			}
			t->shm_fd = h[i].fd;
			t->shm_fd_its_own = true;
			t->next_shm_try_ns = 0;
		}
	}
}

static int on_launch_event_timed(void *ctx, const struct gp_launch_event *e, size_t size);

static int on_launch_event(void *ctx, const struct gp_launch_event *e, size_t size)
{
	struct session *s = ctx;
	int err;

	TIMED(s, STAGE_EVENTS, err = on_launch_event_timed(ctx, e, size));
	return err;
}

static int on_launch_event_timed(void *ctx, const struct gp_launch_event *e, size_t size)
{
	struct session *s = ctx;
	struct join_launch jl;
	struct target *t;
	__u32 stack_id;

	if (e->probe == GP_PROBE_SHM_RING) {
		/* A ring was made: read the maps while the process lives, hold the ring. */
		if (e->pid != (__u32)getpid() && (t = target_for(s, (pid_t)e->pid)))
			target__symbolizer(t);
		take_held_rings(s);
		return 0;
	}
	if (!launch_probe__is_launch(e->probe) && !launch_probe__is_copy(e->probe))
		return 0; /* module loads: handles for the cubin link, not yet used */
	s->events_seen++;
	t = target_for(s, e->pid);
	if (t && !t->first_launch_ns) {
		t->first_launch_ns = e->ts_ns;
		python_setup(s, t, now_ns());
	}
	if (t)
		launch_stack__follow_target(s, t, e);
	stack_id = launch_stack__of(s, t, e, size);
	/* Threads are keyed by their own namespace's tid, as CUPTI numbers them. */
	jl = (struct join_launch){ .pid = e->pid, .tid = e->ns_tid ? e->ns_tid : e->tid,
				   .ts = e->ts_ns, .probe = e->probe,
				   .cls = launch_probe__is_copy(e->probe) ? JOIN_CLASS_COPY : JOIN_CLASS_LAUNCH,
				   .site = stack_id };
	join__add_launch(s->join, &jl);
	return 0;
}

/* ------------------------------------------------------------ shim side */

static const char *copy_label(__u32 kind)
{
	static const char *const names[] = {
		"[memcpy]", "[memcpy HtoD]", "[memcpy DtoH]", "[memcpy HtoA]", "[memcpy AtoH]",
		"[memcpy AtoA]", "[memcpy AtoD]", "[memcpy DtoA]", "[memcpy DtoD]", "[memcpy HtoH]",
		"[memcpy PtoP]",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "[memcpy]";
}

static __u32 name_id(struct session *s, struct target *t, const struct gp_record *r)
{
	char buf[4096];
	const char *name = buf;
	__u64 id;
	__u32 nid = 0;

	if (r->type == GP_REC_MEMSET)
		name = "[memset]";
	else if (r->type == GP_REC_MEMCPY)
		name = copy_label(r->copy.kind);
	else if (u64map__get(&t->names, r->kernel.name_off, &id))
		return (__u32)id;
	else
		shm_reader__name(t->shm, r->kernel.name_off, buf, sizeof(buf));
	if (blobtab__intern(s->names, name, strlen(name) + 1, &nid)) {
		s->names_dropped++;
		return 0;
	}
	if (r->type == GP_REC_KERNEL)
		u64map__put(&t->names, r->kernel.name_off, nid); /* full: looked up again next time */
	return nid;
}

static __u64 fix_clock(const struct target *t, __u64 ts)
{
	if (shm_reader__flags(t->shm) & GP_SHM_F_CLOCK_MONOTONIC)
		return ts;
	return ts + (__u64)shm_reader__clock_offset(t->shm);
}

static void ingest_record(struct session *s, struct target *t, const struct gp_record *r, __u64 now)
{
	if (r->type == GP_REC_API) {
		struct join_api a = {
			.pid = t->pid, .tid = r->tid,
			.start = fix_clock(t, r->start_ns), .end = fix_clock(t, r->end_ns),
			.corr = r->corr,
			.domain = r->api.domain == GP_API_RUNTIME ? JOIN_DOMAIN_RUNTIME : JOIN_DOMAIN_DRIVER,
			.cls = r->flags & GP_REC_F_COPY ? JOIN_CLASS_COPY : JOIN_CLASS_LAUNCH,
		};

		join__add_api(s->join, &a);
	} else if (r->type == GP_REC_KERNEL || r->type == GP_REC_MEMCPY || r->type == GP_REC_MEMSET) {
		struct join_activity act = { .pid = t->pid, .corr = r->corr,
					     .start = fix_clock(t, r->start_ns), .end = fix_clock(t, r->end_ns) };

		/* Ran and ended before we attached: outside the profile's window. */
		if (act.end < t->attach_ns) {
			s->before_window++;
			return;
		}

		act.aux[0] = name_id(s, t, r);
		if (r->type == GP_REC_KERNEL) {
			act.aux[1] = r->kernel.device;
			act.aux[2] = r->kernel.stream;
			act.aux[3] = r->kernel.graph_id;
		} else {
			act.aux[1] = r->copy.device;
			act.aux[2] = r->copy.stream;
			act.aux[3] = r->copy.graph_id;
		}
		join__add_activity(s->join, &act);
	} else if (r->type != GP_REC_MODULE) {
		s->records_unknown++;
	}
}

struct cubin_drain {
	struct session *s;
	pid_t pid;
};

/* A settled cubin's bytes: the kernel names it defines tie them to its CRC. */
static void on_cubin(void *ctx, const struct gpu_module_load_v1 *rec, const void *cubin, size_t size)
{
	const struct cubin_drain *d = ctx;

	/* Failures are counted by the profile (its cubins: line); names read stay. */
	profile__add_cubin(d->s->prof, d->pid, rec->crc, cubin, size);
}

static void on_module(void *ctx, const struct gpu_module_load_v1 *rec)
{
	struct session *s = ctx;

	s->modules_settled++;
	/*
	 * settle() offers the first copy of each CRC to its queue just before it
	 * reports the record, and the record does not say whose queue that is:
	 * drain every target's. Only the queue being settled holds anything
	 * (each is drained here as it settles), so the others cost a lock and
	 * an empty check. Draining now also keeps the bytes from piling up in
	 * the offer queue.
	 */
	for (size_t i = 0; i < s->tt.n; i++) {
		struct target *t = s->tt.t[i];

		if (t->shm)
			cubin_queue__drain(shm_reader__cubins(t->shm), 0, on_cubin,
					   &(struct cubin_drain){ .s = s, .pid = t->pid });
	}
	(void)rec;
}

static int try_open_shm(struct session *s, struct target *t, __u64 now)
{
	int err;

	if (t->shm || now < t->next_shm_try_ns)
		return t->shm ? 0 : -EAGAIN;
	/*
	 * Our own memfd is cheap to look at: try it every tick. Another's is
	 * found by reading the process's maps (milliseconds for a PyTorch
	 * process); with the ring watch on, a ring made from now on is
	 * announced, and the maps are only the fallback.
	 */
	t->next_shm_try_ns = t->shm_fd >= 0 ? now
			     : now + (launch_probe__watches_rings(s->lp) ? SHM_RETRY_WATCHED_NS
									 : SHM_RETRY_NS);
	if (t->shm_fd >= 0) {
		err = shm_reader__open_fd(t->shm_fd, &t->shm);
		/*
		 * The memfd we made is claimed by the first process of the command
		 * that starts CUDA: a wrapper's child, maybe. That process is
		 * followed (fork) and found through its maps like any other; reading
		 * the ring here too would make two readers of one ring.
		 */
		if (!err && !t->shm_fd_its_own &&
		    shm_reader__layout(t->shm)->pid != (__u32)t->ns_pid) {
			shm_reader__destroy(t->shm);
			t->shm = NULL;
			close(t->shm_fd);
			t->shm_fd = -1;
			err = -ENOENT;
		}
	} else {
		err = shm_reader__open_pid(t->pid, &t->shm);
	}
	if (err == 0) {
		log_debug("reading the shim ring of pid %d", t->pid);
		return 0;
	}
	t->shm = NULL;
	/* One reader per ring: another loader's stays its own while it lives. */
	if (err == -EBUSY) {
		pid_t holder = 0;

		if (!t->warned_busy) {
			t->warned_busy = true;
			shm_reader__holder(t->pid, &holder);
			log_warn("pid %d (%s): its shim ring is read by another gpuprobe-bpf (pid %d), "
				 "so its GPU time goes there (launches are still counted here)",
				 t->pid, t->comm, (int)holder);
		}
		return err;
	}
	/* Launching for a while with no ring: the shim is not there. */
	if (!t->warned_no_shim && t->first_launch_ns && now > t->first_launch_ns + NO_SHIM_WARN_NS &&
	    (err == -ENOENT || t->shm_fd >= 0)) {
		t->warned_no_shim = true;
		log_warn("pid %d (%s) has no gpuprobe shim, so its GPU time is unknown (launches are "
			 "still counted); start it with CUDA_INJECTION64_PATH=<libgpuprobe_shim.so>",
			 t->pid, t->comm);
	} else if (err != -ENOENT && err != -ESRCH && !t->warned_no_shim && t->shm_fd < 0) {
		t->warned_no_shim = true;
		log_warn("pid %d: cannot read its shim ring: %s", t->pid, strerror(-err));
	}
	return err;
}

/*
 * A target's records, at most READ_VISIT_MAX of them and READ_VISIT_NS of
 * time per visit (DESIGN.md invariant 8): a process that keeps its ring's
 * head ahead of the tail we publish gets a bounded share of each tick, and
 * the rest of its records wait for the next visit. True when some were left.
 */
static bool read_records(struct session *s, struct target *t, __u64 now)
{
	static struct gp_record recs[READ_BATCH];
	__u64 deadline = now_ns() + READ_VISIT_NS;
	size_t n, total = 0;

	while (shm_reader__backlog(t->shm)) {
		if (total >= READ_VISIT_MAX || now_ns() >= deadline) {
			s->shim_visits_cut++;
			return true;
		}
		if (shm_reader__read(t->shm, recs, READ_BATCH, &n))
			break;
		for (size_t i = 0; i < n; i++)
			ingest_record(s, t, &recs[i], now);
		total += READ_BATCH;
	}
	return false;
}

/* Cubin bytes published and not settled yet (a bound cut the visit). */
static __u64 cubins_left(struct target *t)
{
	struct cubin_queue_stats cs;

	cubin_queue__stats(shm_reader__cubins(t->shm), &cs);
	return cs.cubin_pending_depth;
}

/* One bounded visit to t's ring; true when it left records or cubins for the next. */
static bool read_target(struct session *s, struct target *t, __u64 now)
{
	bool more;
	__u64 t0;
	int err;

	TIMED(s, STAGE_SHIM, err = try_open_shm(s, t, now));
	if (err)
		return false;
	if (!t->shm_inert_reported && (shm_reader__flags(t->shm) & GP_SHM_F_INERT)) {
		t->shm_inert_reported = true;
		log_warn("pid %d (%s): the shim is inert (no CUPTI, or another CUPTI subscriber "
			 "such as torch.profiler holds it): GPU time is missing", t->pid, t->comm);
	}
	TIMED(s, STAGE_SHIM, more = read_records(s, t, now));
	t0 = thread_cpu_ns();
	TIMED(s, STAGE_SETTLE, shm_reader__settle(t->shm, crc_engine__fn, s->crc, on_module, s));
	s->settle_cpu_ns += thread_cpu_ns() - t0;
	more = more || cubins_left(t);
	/*
	 * The BPF ring was drained before this: all of an exiting process is
	 * in, unless a bound left some of it for the next visit (it waits one
	 * tick at most for the answer).
	 */
	if (!more)
		shm_reader__ack_exit(t->shm, shm_reader__exit_seq(t->shm));
	shm_reader__heartbeat(t->shm, now, s->o->tick_ms);
	return more;
}

static void retire_target(struct session *s, struct target *t)
{
	__u64 ctr[GP_CTR_MAX];
	struct shm_reader_stats st;
	pid_t pid = t->pid;

	if (t->shm) {
		shm_reader__counters(t->shm, ctr);
		shm_reader__stats(t->shm, &st);
		for (int i = 0; i < GP_CTR_MAX; i++)
			s->shm_ctr_gone[i] += ctr[i];
		s->reader_gone.records_bad += st.records_bad;
		s->reader_gone.ring_resyncs += st.ring_resyncs;
		s->reader_gone.names_bad += st.names_bad;
		session__add_cubin_stats(&s->cubins_gone, t->shm);
	}
	TIMED(s, STAGE_NAME, session__resolve_pending(s, pid)); /* while its maps and root are at hand */
	join__finish_pid(s->join, pid);
	if (s->cache)
		stack_cache__forget_pid(s->cache, (__u32)pid);
	launch_probe__forget_maps_gen(s->lp, (__u32)pid);
	launch_probe__unfollow(s->lp, pid);
	if (t->py)
		launch_probe__set_python(s->lp, pid, NULL);
	target_table__remove(&s->tt, pid);
	log_debug("pid %d exited", pid);
}

/* ------------------------------------------------------------ join output */

static void on_sample(void *ctx, const struct join_sample *js)
{
	struct session *s = ctx;
	const struct join_activity *a = js->act;
	const char *name = blobtab__get(s->names, a->aux[0], NULL);
	struct profile_activity pa = {
		.name = name ? name : "[unknown]",
		.ns = a->end > a->start ? a->end - a->start : 0,
		.device = a->aux[1], .stream = a->aux[2], .graph_id = a->aux[3],
	};

	if (js->reason == JOIN_OK && js->site)
		profile__add(s->prof, js->pid, js->site, launch_probe__name(js->probe), NULL, &pa);
	else
		profile__add(s->prof, js->pid, 0, NULL,
			     js->reason == JOIN_OK ? "stack table full" : join__reason_name(js->reason), &pa);
}

/* A launch no GPU record came for: its stack still counts under launches. */
static void on_unrecorded(void *ctx, const struct join_unrecorded *u)
{
	struct session *s = ctx;

	profile__add_launch(s->prof, u->pid, (__u32)u->site, launch_probe__name(u->probe));
}

/* ------------------------------------------------------------ windows */

static __u64 site_keep(void *ctx, __u64 site)
{
	stack_table__keep(ctx, (__u32)site);
	return site;
}

static __u64 site_remap(void *ctx, __u64 site)
{
	const struct stack_compaction *c = ctx;

	return site && site <= c->n ? c->remap[site] : 0;
}

static bool pid_followed(void *ctx, __u32 pid)
{
	struct session *s = ctx;

	return target_table__find(&s->tt, (pid_t)pid) != NULL;
}

/*
 * Continuous mode, once a window's profile is written: forgets the stacks
 * no launch of the window had and the processes that are gone, with their
 * frames, names and cubins, so memory stays flat however many processes
 * come and go. What the join still holds is kept, renumbered.
 */
static void forget_window(struct session *s)
{
	struct stack_compaction c = { 0 };
	size_t keep = 0;
	int err;

	join__visit_sites(s->join, site_keep, &s->stacks);
	if (s->cache)
		stack_cache__visit_stacks(s->cache, site_keep, &s->stacks);
	for (size_t i = 0; i < s->npending; i++)
		stack_table__keep(&s->stacks, s->pending[i]);
	if ((err = stack_table__compact_begin(&s->stacks, &c)) ||
	    (err = profile__compact(s->prof, c.remap, c.n, pid_followed, s))) {
		log_warn("cannot compact the stack tables (%s): they keep growing", strerror(-err));
		stack_compaction__free(&c);
		return;
	}
	stack_table__compact_commit(&s->stacks, &c);
	join__visit_sites(s->join, site_remap, &c);
	if (s->cache)
		stack_cache__visit_stacks(s->cache, site_remap, &c);
	for (size_t i = 0; i < s->npending; i++)
		if ((s->pending[keep] = (__u32)site_remap(&c, s->pending[i])))
			keep++;
	s->npending = keep;
	stack_compaction__free(&c);
	if (log__verbose())
		session__tables_line(s, stderr);
}

/* ------------------------------------------------------------ report */

/*
 * Two windows can end in the same second (a sub-second --interval, or the
 * last window just after the one before it): the later one gets "-N" after
 * the stamp rather than the same name, which would replace the earlier file.
 */
static void interval_path(struct session *s, __u64 realtime, char *buf, size_t len)
{
	time_t secs = (time_t)(realtime / NS_PER_S);
	const char *out = s->o->output, *dot = strstr(out, ".pb.gz");
	struct tm tm;
	char stamp[48];
	size_t n;

	s->same_stamp = (__u64)secs == s->last_stamp_s ? s->same_stamp + 1 : 0;
	s->last_stamp_s = (__u64)secs;
	gmtime_r(&secs, &tm);
	n = strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	if (s->same_stamp)
		snprintf(stamp + n, sizeof(stamp) - n, "-%u", s->same_stamp);
	if (!dot)
		dot = out + strlen(out);
	snprintf(buf, len, "%.*s-%s%s", (int)(dot - out), out, stamp, dot);
}

static int write_profile(struct session *s, const char *path, __u64 now)
{
	int err;

	TIMED(s, STAGE_NAME, session__resolve_pending(s, 0));
	TIMED(s, STAGE_WRITE, err = profile__write_pprof(s->prof, path,
							 s->start_realtime_ns + (s->last_write_ns - s->start_ns),
							 now - s->last_write_ns));

	if (err) {
		log_error("cannot write %s: %s (nothing was written there)", path, strerror(-err));
		return err;
	}
	return 0;
}

/* ------------------------------------------------------------ tick */

/*
 * A libcuda file a scan refused, said once per reason (every one is
 * counted: libcuda_refused, libcuda_no_slot). Its path is the target's
 * choice: printed with anything unprintable replaced.
 */
static void say_refusal(struct session *s, const struct libcuda_refusal *ref)
{
	char path[256];
	size_t i;

	if ((ref->err == -ENOEXEC && s->said_not_driver) || (ref->err == -E2BIG && s->said_no_slot) ||
	    !ref->err)
		return;
	for (i = 0; ref->path[i] && i < sizeof(path) - 1; i++)
		path[i] = ref->path[i] >= 0x20 && ref->path[i] < 0x7f ? ref->path[i] : '?';
	path[i] = 0;
	if (ref->err == -ENOEXEC) {
		s->said_not_driver = true;
		log_warn("pid %d maps %s, which is not a CUDA driver (it lacks the driver's own "
			 "exports): not attached (counted: libcuda_refused; said once)",
			 (int)ref->pid, path);
	} else {
		s->said_no_slot = true;
		log_warn("every attach slot is taken: %s of pid %d is not attached until a slot "
			 "is freed (counted: libcuda_no_slot; said once)", path, (int)ref->pid);
	}
}

static void scan_new_libcuda(struct session *s, __u64 now)
{
	struct libcuda_refusal ref = { 0 };
	bool complete = true;

	if (now < s->next_scan_ns)
		return;
	s->next_scan_ns = now + SCAN_NS;
	for (size_t i = 0; i < s->tt.n; i++) {
		struct target *t = s->tt.t[i];

		/* Launches before its libcuda was probed cannot be joined. */
		if (libcuda__attach_pid(s->lp, t->pid, &ref) > 0) {
			t->attach_ns = now_ns();
			join__attach(s->join, t->pid, t->attach_ns);
		}
	}
	if (s->o->mode == GP_MODE_ALL)
		complete = libcuda__attach_all(s->lp, &ref) >= 0;
	/* Every target's maps were read: a driver none of them maps frees its slot. */
	if (complete)
		launch_probe__sweep_files(s->lp);
	say_refusal(s, &ref);
}

/*
 * Every launch event committed to the BPF ring so far, through the pump.
 * Once all of them are handled, the stack cache hears of it: entries taken
 * out of its map before the mark can no longer come back in an event.
 */
static int drain_events(struct session *s)
{
	__u64 mark = event_pump__mark(&s->pump);
	int err = 0;

	for (int i = 0; i < 64; i++) { /* a full queue leaves some in the ring: take them too */
		bool reached = event_pump__reached(&s->pump, mark);

		err = event_pump__drain(&s->pump, 0, on_launch_event, s);
		if (err)
			break;
		if (reached) {
			if (s->cache)
				stack_cache__drained(s->cache);
			break;
		}
	}
	return err;
}

/*
 * A burst leaves the heap at its high-water mark: glibc keeps what was
 * freed for reuse (after an overload the loader stayed at 280-310 MB, idle).
 * Once launch events have stopped for QUIET_NS, the free memory goes back
 * to the system, once per quiet spell.
 */
static void trim_when_quiet(struct session *s, __u64 now)
{
	if (s->events_seen != s->quiet_events) {
		s->quiet_events = s->events_seen;
		s->quiet_since_ns = now;
		s->trimmed = false;
		return;
	}
	if (!s->trimmed && now - s->quiet_since_ns >= QUIET_NS) {
		malloc_trim(0);
		s->trimmed = true;
	}
}

static void tick(struct session *s)
{
	__u64 before, now;
	bool drained_dead = false;
	int err;

	session__note_tables(s); /* before targets that exited take their tables along */
	/* Everything committed before this clock reading is drained below. */
	before = now_ns();
	err = drain_events(s);
	if (err && err != -EINTR)
		log_error("reading the BPF ring: %s", strerror(-err));
	take_held_rings(s);
	now = now_ns();
	s->shim_more = false;
	for (size_t i = 0; i < s->tt.n;) {
		struct target *t = s->tt.t[i];
		bool alive = proc__alive(t->pid) && !(s->have_child && t->pid == s->child.pid &&
						      s->child.exited);
		bool more = read_target(s, t, now);

		if (alive)
			python_setup(s, t, now); /* before its first launch, where it can */
		/* Exited with records or cubins left: read on at the next ticks, a while. */
		if (!alive && more && ++t->dead_visits < DEAD_VISITS_MAX) {
			s->shim_more = true;
			i++;
			continue;
		}
		if (!alive && more) {
			s->records_left_at_exit += shm_reader__backlog(t->shm);
			s->cubin_bytes_left_at_exit += cubins_left(t);
		}
		if (!alive) {
			/*
			 * It may have died after the drain above, its last launches
			 * still in the ring: its records, all read now, would be
			 * joined without them. Dead, it has committed every event.
			 */
			if (!drained_dead) {
				drain_events(s);
				drained_dead = true;
			}
			retire_target(s, t); /* swaps the last entry into i */
			continue;
		}
		i++;
	}
	TIMED(s, STAGE_JOIN, join__advance(s->join, before - WATERMARK_SLACK_NS, now));
	TIMED(s, STAGE_SCAN, scan_new_libcuda(s, now));
	trim_when_quiet(s, now);
}

/* An exiting process waits (one tick at most) for us: answer it now. */
static void answer_exits(struct session *s)
{
	__u64 now = now_ns();
	bool synced = false;

	for (size_t i = 0; i < s->tt.n; i++) {
		struct target *t = s->tt.t[i];

		if (!t->shm)
			try_open_shm(s, t, now);
		if (t->shm && shm_reader__exit_seq(t->shm) != t->exit_acked) {
			if (!synced) {
				/* Its last launches too, while it lives (read_target acks the exit). */
				drain_events(s);
				synced = true;
			}
			t->exit_acked = shm_reader__exit_seq(t->shm);
			read_target(s, t, now);
		}
	}
}

/*
 * One tick, in slices: between full ticks the BPF ring is drained (new
 * processes are met, and their stacks symbolized, while they live) and exit
 * handshakes are answered, so a short-lived process is never held long.
 */
static void tick_sliced(struct session *s)
{
	__u64 end = now_ns() + s->o->tick_ms * NS_PER_MS;
	int slice = s->o->tick_ms < SLICE_MS ? (int)s->o->tick_ms : SLICE_MS;

	while (!stop_signal && now_ns() + slice * NS_PER_MS < end) {
		event_pump__drain(&s->pump, slice, on_launch_event, s);
		take_held_rings(s);
		answer_exits(s);
		if (s->have_child) {
			launcher__reap(&s->child);
			if (s->child.exited)
				break;
		}
	}
	tick(s);
}

static bool should_stop(struct session *s, __u64 now)
{
	if (stop_signal)
		return true;
	if (s->o->duration_s && now - s->start_ns >= (__u64)(s->o->duration_s * NS_PER_S))
		return true;
	if (s->have_child) {
		launcher__reap(&s->child);
		return s->child.exited;
	}
	if (s->o->mode == GP_MODE_PID)
		return !proc__alive(s->o->pid);
	return false;
}

/* ------------------------------------------------------------ setup */

static int cache_put(void *ctx, const struct gp_stack_key *k, const struct gp_stack_val *v)
{
	return launch_probe__cache_put(ctx, k, v);
}

static int cache_del(void *ctx, const struct gp_stack_key *k)
{
	return launch_probe__cache_del(ctx, k);
}

static int open_probe(struct session *s)
{
	struct launch_probe_opts lo = {
		.filter_pids = s->o->mode != GP_MODE_ALL,
		.ringbuf_bytes = s->o->ringbuf_mb << 20,
		.wakeup_bytes = (__u64)(s->o->ringbuf_mb << 20) / 4,
		.stack_copy = s->o->unwind_fp ? 0 : s->o->stack_kib ? s->o->stack_kib * 1024
								    : STACK_COPY_AUTO_START,
		.cache_entries = s->o->stack_cache,
		.audit_every = s->o->stack_audit,
		/* --stack-audit 1 asks for every hit: a measurement, not bounded */
		.audit_max = s->o->stack_audit == 1 ? UINT32_MAX : STACK_AUDIT_MAX,
	};
	int err = launch_probe__open(&lo, &s->lp);

	if (err) {
		log_error("cannot load the BPF programs: %s%s", strerror(-err),
			  log__verbose() ? "" : " (run with -v for libbpf's log)");
		return err;
	}
	if (!s->o->unwind_fp && !s->o->stack_kib)
		err = copy_hints__init(&s->hints, s->lp, STACK_COPY_AUTO_START);
	if (!err && launch_probe__cache_on(s->lp)) {
		struct stack_cache_ops ops = { .put = cache_put, .del = cache_del, .ctx = s->lp };

		err = stack_cache__new(launch_probe__cache_entries(s->lp), &ops, &s->cache);
		if (err)
			log_error("cannot make the stack cache: %s", strerror(-err));
	}
	return err;
}

static int setup_targets(struct session *s)
{
	struct libcuda_refusal ref = { 0 };
	struct target *t;
	int err;

	switch (s->o->mode) {
	case GP_MODE_PID:
		/* Probes first: the attach time must not precede them. */
		libcuda__attach_pid(s->lp, s->o->pid, &ref);
		say_refusal(s, &ref);
		if (s->o->libcuda && (err = libcuda__attach_path(s->lp, s->o->libcuda, true)) < 0)
			return err;
		err = launch_probe__follow(s->lp, s->o->pid);
		if (err)
			return err;
		s->probes_ns = now_ns(); /* it ran before: only what follows is ours */
		t = target_for(s, s->o->pid);
		if (!t)
			return -ENOMEM;
		python_setup(s, t, s->probes_ns); /* before the first tick: launches may come first */
		if (!launch_probe__nr_files(s->lp))
			log_warn("pid %d has not loaded libcuda.so.1 yet; waiting for it", s->o->pid);
		return 0;
	case GP_MODE_ALL:
		if (s->o->libcuda) {
			if (libcuda__attach_path(s->lp, s->o->libcuda, true) < 0)
				return -ENOENT;
		} else {
			libcuda__attach_all(s->lp, &ref);
			say_refusal(s, &ref);
			libcuda__attach_system(s->lp, NULL);
		}
		/*
		 * Running processes were watched from here on, not from our start:
		 * scanning every process and attaching can take seconds on a busy
		 * node, and their API records of that time have no launch events.
		 */
		s->probes_ns = now_ns();
		return 0;
	case GP_MODE_COMMAND:
		if (s->o->libcuda) {
			err = libcuda__attach_path(s->lp, s->o->libcuda, true);
			if (err < 0)
				return err;
		} else {
			libcuda__attach_system(s->lp, getenv("LD_LIBRARY_PATH"));
		}
		err = launcher__start(&s->child, s->o->argv, s->o->shim, s->lp);
		if (err)
			return err;
		s->have_child = true;
		if (!target_for(s, s->child.pid))
			return -ENOMEM;
		err = launcher__go(&s->child);
		if (err)
			log_error("cannot run %s: %s", s->o->argv[0], strerror(-err));
		return err;
	default:
		return -EINVAL;
	}
}

static int session__init(struct session *s, const struct gp_opts *o)
{
	struct join_opts jo = { 0 };
	int err;

	memset(s, 0, sizeof(*s));
	s->o = o;
	launcher__init(&s->child);
	if ((err = target_table__init(&s->tt)) || (err = profile__new(&s->prof)) ||
	    (err = stack_table__init(&s->stacks, 1u << 20, 512u << 20)) ||
	    (err = blobtab__new(1u << 18, 64u << 20, &s->names)) ||
	    (err = join__new(&jo, on_sample, s, &s->join)))
		return err;
	join__on_unrecorded(s->join, on_unrecorded, s);
	s->resolved = calloc(1, sizeof(*s->resolved));
	s->py_codes = calloc(PY_CHECK_MAX, sizeof(*s->py_codes));
	if (!s->resolved || !s->py_codes)
		return -ENOMEM;
	crc_engine__new(o->cupti, &s->crc);
	return 0;
}

static int start_threads(struct session *s)
{
	int err = ring_watch__start(&s->rw, s->lp);

	if (!err)
		err = event_pump__start(&s->pump, s->lp, PUMP_MAX_BYTES);
	if (err)
		log_error("cannot start the loader's threads: %s", strerror(-err));
	return err;
}

static void session__fini(struct session *s)
{
	event_pump__stop(&s->pump);
	ring_watch__stop(&s->rw);
	copy_hints__fini(&s->hints);
	launcher__fini(&s->child);
	target_table__fini(&s->tt);
	join__destroy(s->join);
	profile__destroy(s->prof);
	stack_cache__destroy(s->cache);
	stack_table__fini(&s->stacks);
	blobtab__destroy(s->names);
	free(s->resolved);
	free(s->py_codes);
	free(s->pending);
	crc_engine__destroy(s->crc);
	launch_probe__destroy(s->lp);
}

/*
 * SIGHUP ends the run as SIGTERM does, profile written: a terminal that
 * goes away (an ssh session closed) must not cost the profile, and no
 * target's terminal can become ours anyway (every open of a target's path
 * is O_NOCTTY, regular files only: user/proc/proc.h).
 */
static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void finish(struct session *s)
{
	__u64 t0 = now_ns();

	/* What the targets wrote last: their final flush lands before exit. */
	do
		tick(s);
	while (s->shim_more && now_ns() - t0 < FINISH_MAX_NS);
	join__finish_all(s->join);
}

int session__run(const struct gp_opts *o)
{
	struct session s;
	char path[PATH_MAX];
	int err, status = 1;

	if (preflight__check(o) || preflight__output(o->output))
		return 1;
	preflight__one_arena(); /* before any helper thread starts */
	err = session__init(&s, o);
	if (err) {
		log_error("%s", strerror(-err));
		session__fini(&s);
		return 1;
	}
	install_signals();
	if (crc_engine__is_cupti(s.crc))
		log_debug("cubin CRCs by CUPTI in gpuprobe-crc (pid %d, unprivileged, seccomp)",
			  (int)crc_engine__helper_pid(s.crc));
	else
		log_warn("cubin CRCs are zlib CRC-32 | 1<<63, not CUPTI's: gpuprobe-crc %s",
			 crc_engine__why_not(s.crc) == -ENOENT ?
			 "not found beside gpuprobe-bpf or in PREFIX/lib/gpuprobe" :
			 "could not start (no libcupti with cuptiGetCubinCrc? give --cupti PATH)");
	s.start_ns = s.last_write_ns = now_ns();
	s.start_realtime_ns = realtime_ns();
	s.probes_ns = s.start_ns;
	TIMED(&s, STAGE_START, err = open_probe(&s) || start_threads(&s) || setup_targets(&s));
	s.start_cpu_ns = process_cpu_ns();
	if (err) {
		session__fini(&s);
		return 1;
	}
	preflight__raise_nofile(); /* after a -- COMMAND child started: it keeps the usual limit */
	if (!launch_probe__nr_files(s.lp) && o->mode != GP_MODE_PID)
		log_warn("no libcuda.so.1 found yet (give --libcuda PATH if it is somewhere "
			 "unusual); watching for it");
	for (;;) {
		struct profile_totals pt;
		__u64 now;

		tick_sliced(&s);
		now = now_ns();
		if (log__verbose()) {
			session__counters_line(&s, stderr);
			session__loader_line(&s, stderr);
		}
		if (should_stop(&s, now))
			break;
		if (o->interval_s && now - s.last_write_ns >= (__u64)(o->interval_s * NS_PER_S)) {
			interval_path(&s, s.start_realtime_ns + (now - s.start_ns), path, sizeof(path));
			write_profile(&s, path, now);
			s.last_write_ns = now;
			profile__totals(s.prof, &pt);
			s.unattributed_written += pt.unattributed; /* the counters line covers the run */
			profile__reset_samples(s.prof);
			TIMED(&s, STAGE_WRITE, forget_window(&s));
		}
	}
	finish(&s);
	if (o->interval_s)
		interval_path(&s, s.start_realtime_ns + (now_ns() - s.start_ns), path, sizeof(path));
	else
		snprintf(path, sizeof(path), "%s", o->output);
	err = write_profile(&s, path, now_ns());
	profile__report(s.prof, stderr, o->top);
	session__counters_line(&s, stderr);
	session__loader_line(&s, stderr);
	if (!err)
		log_info("wrote %s (read it with: go tool pprof -top %s)", path, path);
	status = err ? 1 : 0;
	if (s.have_child && !err)
		status = s.child.status;
	session__fini(&s);
	return status;
}
