/* SPDX-License-Identifier: MIT */
/*
 * The shim side of a tick (session_internal.h): a target's shared ring
 * found and opened, its records read (hostile input, through user/shm) into
 * the join, and its cubins settled into the profile. Every visit is bounded
 * (DESIGN.md invariant 8).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "user/session/session_internal.h"
#include "user/proc/proc.h"
#include "user/cubin/cubin_syms.h"
#include "user/util/log.h"

#define SHM_RETRY_NS (200 * NS_PER_MS)
#define SHM_RETRY_WATCHED_NS (2 * NS_PER_S)
#define NO_SHIM_WARN_NS (3 * NS_PER_S)
/* One visit to a target's ring reads at most this (the default ring, whole) and this long. */
#define READ_VISIT_MAX (16 * SESSION_READ_BATCH)
#define READ_VISIT_NS (50 * NS_PER_MS)

static const char *copy_label(__u32 kind)
{
	static const char *const names[] = {
		"[memcpy]", "[memcpy HtoD]", "[memcpy DtoH]", "[memcpy HtoA]", "[memcpy AtoH]",
		"[memcpy AtoA]", "[memcpy AtoD]", "[memcpy DtoA]", "[memcpy DtoD]", "[memcpy HtoH]",
		"[memcpy PtoP]",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "[memcpy]";
}

/*
 * A kernel or copy's name id in s->names. A name new to the table counts
 * against the target's share of it (NAMES_BYTES): a process that names a
 * new kernel in every record names no more past its share, and the others
 * keep naming theirs (names_dropped, names_over_share).
 */
static __u32 name_id(struct session *s, struct target *t, const struct gp_record *r)
{
	char buf[4096];
	const char *name = buf;
	size_t len;
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
	len = strlen(name) + 1;
	if (!t->names_hold)
		t->names_hold = key_holds__get(&s->name_holds, proc__tenant(t->pid));
	if (blobtab__intern_held(s->names, name, len, t->names_hold, &s->names_share,
				 len + s->name_cost, &nid)) {
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

/* A graph node made or cloned in t: held for its replays' kernels. */
static void graph_node(struct session *s, struct target *t, const struct gp_record *r)
{
	if (!t->graphs) {
		if (graph_nodes__new(&t->graphs)) {
			s->graphs_gone.refused++;
			return;
		}
		graph_nodes__set_share(t->graphs, &s->graph_share);
		s->graph_targets++;
	}
	if (r->graph.event == GP_GRAPH_NODE_UPDATED)
		graph_nodes__update(t->graphs, r->graph.orig_node, r->graph.node,
				    fix_clock(t, r->start_ns));
	else if (r->graph.event == GP_GRAPH_NODE_SET_PARAMS)
		graph_nodes__set_params(t->graphs, r->graph.node);
	else
		graph_nodes__add(t->graphs, r->graph.node, r->graph.orig_node, r->tid,
				 fix_clock(t, r->start_ns));
}

/*
 * A kernel a graph ran: its node in t, for on_sample to find where the node
 * came from as of its launch (0: not a graph's, or unknown).
 */
static __u32 graph_node_of(struct session *s, struct target *t, __u64 node)
{
	__u32 handle;

	if (!node)
		return 0;
	s->graph_activities++;
	handle = t->graphs ? graph_nodes__find(t->graphs, node) : 0;
	if (!handle)
		s->graph_node_unknown++;
	return handle;
}

/*
 * A "_not_issued" reason counts again samples already counted under its
 * reason (those in which the warp issued nothing: H200, CUPTI 13): its
 * samples are not added, so a profile's samples are CUPTI's total.
 */
#define PC_NOT_ISSUED_SUFFIX "_not_issued"
#define PC_STALL_NOT_ISSUED (1ull << 32) /* flag beside the name id in t->pc_stalls */

static bool pc_stall_not_issued(const char *name)
{
	size_t n = strlen(name), k = strlen(PC_NOT_ISSUED_SUFFIX);

	return n > k && !strcmp(name + n - k, PC_NOT_ISSUED_SUFFIX);
}

/* PC sampling: a stall reason's name (CUPTI's indexes are the process's own: kept per target). */
static void pc_stall(struct session *s, struct target *t, const struct gp_record *r)
{
	char buf[160];
	__u32 id;
	__u64 known;

	if (!t->pc_stalls.cap && u64map__init(&t->pc_stalls, PC_STALLS_NAMED))
		return;
	/* Named once; past PC_STALLS_NAMED reasons, named by index: nothing more interned (s->names is shared). */
	if (u64map__get(&t->pc_stalls, r->pc_stall.stall, &known) ||
	    u64map__len(&t->pc_stalls) >= PC_STALLS_NAMED)
		return;
	if (shm_reader__name(t->shm, r->pc_stall.name_off, buf, sizeof(buf)) || !buf[0])
		return;
	if (blobtab__intern(s->names, buf, strlen(buf) + 1, &id)) {
		s->names_dropped++;
		return;
	}
	u64map__put(&t->pc_stalls, r->pc_stall.stall,
		    id | (pc_stall_not_issued(buf) ? PC_STALL_NOT_ISSUED : 0));
}

/* PC sampling: one instruction's samples of one stall reason, into the profile. */
static void pc_sample(struct session *s, struct target *t, const struct gp_record *r)
{
	char fn[CUBIN_SYMS_MAX_NAME + 1], idx[24];
	const char *stall = NULL;
	__u64 id;

	if (shm_reader__name(t->shm, r->pc.name_off, fn, sizeof(fn)) || !fn[0])
		snprintf(fn, sizeof(fn), "[unknown]");
	if (t->pc_stalls.cap && u64map__get(&t->pc_stalls, r->pc.stall, &id)) {
		if (id & PC_STALL_NOT_ISSUED) {
			s->pc_not_issued += r->pc.samples;
			return;
		}
		stall = blobtab__get(s->names, (__u32)id, NULL);
	}
	if (!stall && r->pc.stall < PC_STALLS_NAMED) {
		snprintf(idx, sizeof(idx), "stall %u", r->pc.stall);
		stall = idx;
	} else if (!stall) {
		stall = "stall [out of range]"; /* one string for any index a ring makes up */
	}
	s->pc_samples += r->pc.samples;
	/* Past the profile's bounds: counted there (pc_table_full). */
	profile__add_pc(s->prof, t->pid, r->pc.cubin_crc, fn, r->pc.pc_offset, stall, r->pc.samples);
}

static void pc_totals(struct session *s, const struct gp_record *r)
{
	s->pc_total += r->pc_totals.total;
	s->pc_dropped += r->pc_totals.dropped;
	s->pc_non_user += r->pc_totals.non_user;
	s->pc_hw_full += r->pc_totals.hw_full != 0;
	s->pc_lost += r->pc_totals.pcs_lost;
}

/*
 * PC sampling's records, taken only when this run asked for them
 * (--pc-sampling): a target sampled on its own (GPUPROBE_PC_SAMPLING in its
 * environment, or a ring that makes them up) would fill the profile's
 * strings with its function names unasked (pc_unasked).
 */
static void pc_record(struct session *s, struct target *t, const struct gp_record *r)
{
	if (s->o->pc_sampling < 0) {
		s->pc_unasked++;
		return;
	}
	if (r->type == GP_REC_PC)
		pc_sample(s, t, r);
	else if (r->type == GP_REC_PC_STALL)
		pc_stall(s, t, r);
	else
		pc_totals(s, r);
}

static bool is_activity(const struct gp_record *r)
{
	return r->type == GP_REC_KERNEL || r->type == GP_REC_MEMCPY || r->type == GP_REC_MEMSET;
}

static void ingest_record(struct session *s, struct target *t, const struct gp_record *r, __u64 now)
{
	if (r->type == GP_REC_API) {
		struct join_api a = {
			.pid = t->pid, .tid = r->tid,
			.start = fix_clock(t, r->start_ns), .end = fix_clock(t, r->end_ns),
			.corr = r->corr,
			.domain = r->api.domain == GP_API_RUNTIME ? JOIN_DOMAIN_RUNTIME : JOIN_DOMAIN_DRIVER,
			.cls = r->flags & GP_REC_F_COPY ? JOIN_CLASS_COPY :
			       r->flags & GP_REC_F_NODE ? JOIN_CLASS_NODE : JOIN_CLASS_LAUNCH,
			.failed = (r->flags & GP_REC_F_FAILED) != 0,
		};

		join__add_api(s->join, &a);
	} else if (is_activity(r)) {
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
			act.aux[4] = graph_node_of(s, t, r->kernel.graph_node);
		} else {
			act.aux[1] = r->copy.device;
			act.aux[2] = r->copy.stream;
			act.aux[3] = r->copy.graph_id;
			act.aux[4] = graph_node_of(s, t, r->copy.graph_node);
		}
		act.kind = act.aux[3] ? JOIN_ACT_GRAPH :
			   r->type == GP_REC_KERNEL ? JOIN_ACT_KERNEL : JOIN_ACT_COPY;
		if (r->type == GP_REC_KERNEL)
			act.shape = join__shape(r->kernel.grid, r->kernel.block);
		join__add_activity(s->join, &act);
	} else if (r->type == GP_REC_GRAPH_NODE) {
		graph_node(s, t, r);
	} else if (r->type == GP_REC_PC || r->type == GP_REC_PC_STALL ||
		   r->type == GP_REC_PC_TOTALS) {
		pc_record(s, t, r);
	} else if (r->type != GP_REC_MODULE) {
		s->records_unknown++;
	}
}

/* Whose cubins a settle reports: the target whose ring is being settled. */
struct settling {
	struct session *s;
	struct target *t;
};

/* A settled cubin's bytes: the kernel names it defines tie them to its CRC. */
static void on_cubin(void *ctx, const struct gpu_module_load_v1 *rec, const void *cubin,
		     size_t size)
{
	const struct settling *st = ctx;

	/* Failures are counted by the profile (its cubins: line); names read stay. */
	profile__add_cubin(st->s->prof, st->t->pid, rec->crc, cubin, size);
}

/*
 * One module settled in t's ring. settle() offers the first copy of each
 * CRC to t's queue just before it reports the record: drained here, so the
 * bytes never pile up in the offer queue (every offer is followed by its
 * record, so nothing waits in the queue between settles).
 */
static void on_module(void *ctx, const struct gpu_module_load_v1 *rec)
{
	struct settling *st = ctx;

	st->s->modules_settled++;
	cubin_queue__drain(shm_reader__cubins(st->t->shm), 0, on_cubin, st);
	(void)rec;
}

/*
 * A ring found, before it is claimed: its shim records from the claim on,
 * and a launch recorded before its libcuda is probed has no stack. The
 * libcuda a process maps is found by the scan every SCAN_NS (session.c)
 * otherwise: seconds late for one found only through the command's own
 * environment (`-- env LD_LIBRARY_PATH=... prog`), whose first launches
 * were all unattributed. Once per ring: a claim that fails is retried.
 */
static void probe_before_claim(struct session *s, struct target *t)
{
	if (t->libcuda_probed_for_ring)
		return;
	t->libcuda_probed_for_ring = true;
	session__probe_libcuda(s, t);
}

/*
 * The ring in fd claimed as t's once its shim has laid it out, t's libcuda
 * probed just before: 0, or why not (the layout's checks are the claim's).
 * found: fd was found in t's maps (shm_reader__find_pid), not one we hold.
 */
static int claim_ring(struct session *s, struct target *t, int fd, bool found)
{
	int err = shm_reader__fd_ready(fd);

	if (err)
		return err;
	probe_before_claim(s, t);
	return found ? shm_reader__open_found(fd, t->pid, &t->shm) : shm_reader__open_fd(fd, &t->shm);
}

int session__open_shm(struct session *s, struct target *t, __u64 now)
{
	int err, fd;

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
		err = claim_ring(s, t, t->shm_fd, false);
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
		err = shm_reader__find_pid(s->bounded, t->pid, &fd);
		if (!err) {
			err = claim_ring(s, t, fd, true);
			close(fd);
		}
	}
	if (err == 0) {
		t->libcuda_probed_for_ring = false; /* a later ring (after an exec) is looked at again */
		log_debug(s->o->verbose, "reading the shim ring of pid %d", t->pid);
		return 0;
	}
	t->shm = NULL;
	/* One reader per ring: another loader's stays its own while it lives. */
	if (err == -EBUSY) {
		pid_t holder = 0;

		if (!t->warned_busy) {
			t->warned_busy = true;
			shm_reader__holder(s->bounded, t->pid, &holder);
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
 * One read's records: every other record first, in ring order, then t's
 * calls paired as far as the launch events drained allow, then the
 * activities, in ring order. An activity read before its call was paired
 * waits for it at several lookups' cost (activities_waited: over half of
 * the bench's small step's, before); CUPTI hands a call's API record and
 * its kernel over in the same buffers, so most now find theirs paired.
 * Graph nodes stay before the pairing: a capturing call's node record,
 * written inside the call, comes before its API record.
 */
static void ingest_read(struct session *s, struct target *t, const struct gp_record *recs,
			size_t n, __u64 now)
{
	bool apis = false;

	for (size_t i = 0; i < n; i++) {
		if (is_activity(&recs[i]))
			continue;
		apis = apis || recs[i].type == GP_REC_API;
		ingest_record(s, t, &recs[i], now);
	}
	if (apis && s->events_watermark)
		TIMED_WITHIN(s, STAGE_SHIM, STAGE_JOIN,
			     join__advance_pid(s->join, (__u32)t->pid, s->events_watermark, now));
	for (size_t i = 0; i < n; i++)
		if (is_activity(&recs[i]))
			ingest_record(s, t, &recs[i], now);
}

/*
 * A target's records, at most READ_VISIT_MAX of them and READ_VISIT_NS of
 * time per visit (DESIGN.md invariant 8): a process that keeps its ring's
 * head ahead of the tail we publish gets a bounded share of each tick, and
 * the rest of its records wait for the next visit. True when some were left.
 */
static bool read_records(struct session *s, struct target *t, __u64 now)
{
	struct gp_record *recs = s->recs;
	__u64 deadline = now_ns() + READ_VISIT_NS;
	size_t n, total = 0;

	while (shm_reader__backlog(t->shm)) {
		if (total >= READ_VISIT_MAX || now_ns() >= deadline) {
			s->shim_visits_cut++;
			return true;
		}
		if (shm_reader__read(t->shm, recs, SESSION_READ_BATCH, &n))
			break;
		ingest_read(s, t, recs, n, now);
		total += SESSION_READ_BATCH;
	}
	return false;
}

/* Cubin bytes published and not settled yet (a bound cut the visit). */
__u64 session__cubins_left(struct target *t)
{
	struct cubin_queue_stats cs;

	cubin_queue__stats(shm_reader__cubins(t->shm), &cs);
	return cs.cubin_pending_depth;
}

/*
 * The shim's recording state (gp_abi.h, "no reader, no records") for the
 * join; and when it switched since our last look to a state other than
 * one its process's stack-cache keys were learnt in, those keys go: the
 * runtime's own launch path differs with CUPTI's activity on and off
 * (measured: cudaLaunchKernel's frames under one key parted at a switch).
 * Keys learnt in one state serve again when it comes back: the duty
 * cycle's windows, whose launches are all made recording, keep theirs from
 * one window to the next. The state is the target's to write: a target
 * flipping it at every visit costs a scan of the cache once a second at
 * most.
 */
#define RECORD_FORGET_EVERY_NS 1000000000ull

/* Whether CUPTI's state can change e's path: not libtorch's own probes. */
static bool path_follows_recording(const struct gp_launch_event *e)
{
	return e->probe != GP_PROBE_AUTOGRAD_EXECUTE && e->probe != GP_PROBE_AUTOGRAD_NODE;
}

void session__note_key_state(struct target *t, const struct gp_launch_event *e)
{
	if (!t)
		return; /* no target (out of memory): nothing to note it in */
	if (path_follows_recording(e))
		key_state__note(&t->keys, e->ts_ns);
}

/* A look at t's shim's recording span (*ret_on, *ret_off), for its keys. */
static void look_at_recording(struct session *s, struct target *t, __u64 *ret_on, __u64 *ret_off)
{
	shm_reader__record_span(t->shm, ret_on, ret_off);
	key_state__look(&t->keys, *ret_on, *ret_off, shm_reader__record_last_off(t->shm),
			s->duty_state == DUTY_ON);
}

/*
 * A target's recording state, looked at before its first key is learnt: a
 * mid-run attach's first launches are made before its shim switches on
 * (our first visit is what tells it a reader came), and their keys would
 * answer the launches made once it records. A process whose ring is not
 * found (yet, or without a shim) has its keys judged at the first visit
 * that finds it.
 */
bool session__may_learn_key(struct session *s, struct target *t, const struct gp_launch_event *e)
{
	__u64 on, off;

	if (!t || !path_follows_recording(e))
		return true;
	if (!t->keys.seen && !session__open_shm(s, t, now_ns()))
		look_at_recording(s, t, &on, &off);
	return key_state__may_learn(&t->keys, e->ts_ns);
}

static void follow_recording(struct session *s, struct target *t, __u64 now)
{
	__u64 on, off;

	look_at_recording(s, t, &on, &off);
	join__recording(s->join, t->pid, on, off, now); /* each look: how long a span was seen on */
	if (s->cache && t->keys.stale && now - t->record_forgot_ns >= RECORD_FORGET_EVERY_NS) {
		stack_cache__forget_pid(s->cache, (__u32)t->pid);
		key_state__forgot(&t->keys);
		t->record_forgot_ns = now;
	}
}

/* One bounded visit to t's ring; true when it left records or cubins for the next. */
bool session__read_target(struct session *s, struct target *t, __u64 now)
{
	bool more;
	__u64 t0;
	int err;

	TIMED(s, STAGE_SHIM, err = session__open_shm(s, t, now));
	if (err)
		return false;
	if (!t->shm_inert_reported && (shm_reader__flags(t->shm) & GP_SHM_F_INERT)) {
		t->shm_inert_reported = true;
		log_warn("pid %d (%s): the shim is inert (no CUPTI, or another CUPTI subscriber "
			 "such as torch.profiler holds it): GPU time is missing", t->pid, t->comm);
	}
	if (s->duty_cycled)
		shm_reader__pause(t->shm, !session__rings_wanted(s));
	follow_recording(s, t, now);
	TIMED(s, STAGE_SHIM, more = read_records(s, t, now));
	t0 = thread_cpu_ns();
	t->crc.e = s->crc;
	TIMED(s, STAGE_SETTLE, shm_reader__settle(t->shm, crc_source__fn, &t->crc, on_module,
						  &(struct settling){ .s = s, .t = t }));
	s->settle_cpu_ns += thread_cpu_ns() - t0;
	more = more || session__cubins_left(t);
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
