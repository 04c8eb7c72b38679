/* SPDX-License-Identifier: MIT */
/*
 * The loader's run loop (session.h). Owns every decision the shim leaves to
 * it: on each tick it drains the BPF ring, reads each target's shared ring
 * (hostile input, through user/shm), settles cubins, feeds the join and the
 * profile, and notices processes that are gone. This file sets the session
 * up, runs the ticks and stops; the parts of a tick are the files that
 * session_internal.h lists.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <malloc.h>
#include "user/session/session_internal.h"
#include "user/output/trace.h"
#include "user/probe/libcuda.h"
#include "user/proc/proc.h"
#include "user/session/preflight.h"
#include "user/util/bounded.h"
#include "user/util/log.h"
#include "user/util/test_env.h"

/* libcuda files are looked for in every target's maps this often. */
#define SCAN_NS (2 * NS_PER_S)
/* An exited target with records or cubins left is visited this many more ticks at most. */
#define DEAD_VISITS_MAX 50
/* At the end, ticks go on while exited targets have something left, this long at most. */
#define FINISH_MAX_NS (2 * NS_PER_S)
/*
 * Asked to stop while targets with a shim run on (-d, a signal): the records
 * of their last launches are still in CUPTI's buffers, flushed every 100 ms
 * by default. The profile ends at the stop; reading goes on until each of
 * those shims has finished a flush begun after it and its ring is read
 * whole, so what was launched before it is joined (join__stop); this long
 * at most, however slow a shim (a loaded machine), or one that never says.
 */
#define STOP_MAX_NS (5 * NS_PER_S)
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
/* Stack-cache audits a second per CPU, at most (--stack-audit picks how often). */
#define STACK_AUDIT_MAX 256

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

/* ------------------------------------------------------------ tick */

static void scan_new_libcuda(struct session *s, __u64 now)
{
	struct libcuda_refusal ref = { 0 };
	bool complete = true;

	if (now < s->next_scan_ns)
		return;
	s->next_scan_ns = now + SCAN_NS;
	for (size_t i = 0; i < s->tt.n; i++) {
		struct target *t = s->tt.t[i];

		session__probe_libcuda(s, t);
		if (t->driver_seen)
			session__autograd_scan(s, t); /* loaded after its first driver call; or kept from the sweep */
	}
	if (s->o->mode == GP_MODE_ALL)
		complete = libcuda__attach_all(s->lp, s->bounded, &ref, s->o->verbose) >= 0;
	/* Every target's maps were read: a driver none of them maps frees its slot. */
	if (complete)
		launch_probe__sweep_files(s->lp);
	session__say_refusal(s, &ref);
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
	int err;

	session__note_tables(s); /* before targets that exited take their tables along */
	/* Everything committed before this clock reading is drained below. */
	before = now_ns();
	err = session__drain_events(s); /* its own clock reading, less the slack: s->events_watermark */
	if (err && err != -EINTR && err != -EAGAIN)
		log_error("reading the BPF ring: %s", strerror(-err));
	session__take_held_rings(s);
	now = now_ns();
	session__duty_tick(s, now); /* before the visits: they tell the rings */
	s->shim_more = false;
	for (size_t i = 0; i < s->tt.n;) {
		struct target *t = s->tt.t[i];
		bool alive = proc__alive(t->pid) && !(s->have_child && t->pid == s->child.pid &&
						      s->child.exited);
		bool more = session__read_target(s, t, now);

		if (alive)
			session__python_setup(s, t, now); /* before its first launch, where it can */
		/* Exited with records or cubins left: read on at the next ticks, a while. */
		if (!alive && more && ++t->dead_visits < DEAD_VISITS_MAX) {
			s->shim_more = true;
			i++;
			continue;
		}
		if (!alive && more) {
			s->records_left_at_exit += shm_reader__backlog(t->shm);
			s->cubin_bytes_left_at_exit += session__cubins_left(t);
		}
		if (!alive) {
			/*
			 * It may have died after the drain above, its last launches
			 * still in the ring: its records, all read now, would be
			 * joined without them. Dead, it has committed every event;
			 * when the pump has not caught up with them yet (a loaded
			 * machine), it waits for the next tick, a while. A drain
			 * for an earlier dead target of this tick does not do: this
			 * one may have died after it (seen: a launcher's last 109
			 * events handled after it was retired, then followed anew).
			 */
			bool dead_drained = session__drain_events(s) == 0;

			if (!dead_drained && ++t->dead_visits < DEAD_VISITS_MAX) {
				i++;
				continue;
			}
			session__retire_target(s, t); /* swaps the last entry into i */
			continue;
		}
		i++;
	}
	TIMED(s, STAGE_JOIN, join__advance(s->join, before - WATERMARK_SLACK_NS, now));
	TIMED(s, STAGE_SCAN, scan_new_libcuda(s, now));
	session__watch_nodes(s, now);
	trim_when_quiet(s, now);
}

/*
 * An exiting process waits (one tick at most) for us: answer it now. Once
 * a tick at most per target: a process exits once, and one that bumps its
 * ring's exit_seq without end would have its ring read at every slice,
 * each visit with a visit's bounds (answered at the tick then, as every
 * ring is read).
 */
static void answer_exits(struct session *s)
{
	__u64 now = now_ns(), tick_ns = s->o->tick_ms * NS_PER_MS;
	bool synced = false;

	for (size_t i = 0; i < s->tt.n; i++) {
		struct target *t = s->tt.t[i];

		if (!t->shm)
			session__open_shm(s, t, now);
		if (t->shm && shm_reader__exit_seq(t->shm) != t->exit_acked) {
			if (t->exit_answer_ns && now - t->exit_answer_ns < tick_ns)
				continue;
			t->exit_answer_ns = now;
			s->exit_answers++;
			if (!synced) {
				/* Its last launches too, while it lives (session__read_target acks the exit). */
				session__drain_events(s);
				synced = true;
			}
			t->exit_acked = shm_reader__exit_seq(t->shm);
			session__read_target(s, t, now);
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
	__u64 end = now_ns() + s->o->tick_ms * NS_PER_MS, now;

	/*
	 * Stopping with live rings (stop_now) reads on at the usual pace. Each
	 * slice waits for events up to SLICE_MS, the last up to the tick's
	 * end (rounded up to a ms): a tick of SLICE_MS or less waits too (it
	 * did not, and the loader spun at a whole core with --tick-ms 20).
	 */
	while ((!stop_signal || s->stop_ns) && (now = now_ns()) < end) {
		__u64 left_ms = (end - now + NS_PER_MS - 1) / NS_PER_MS;

		if (event_pump__wait(&s->pump, left_ms < SLICE_MS ? (int)left_ms : SLICE_MS))
			session__drain(s);
		session__take_held_rings(s);
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
		.verbose = s->o->verbose,
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
			  s->o->verbose ? "" : " (run with -v for libbpf's log)");
		return err;
	}
	if (!s->o->unwind_fp && !s->o->stack_kib)
		err = copy_hints__init(&s->hints, s->lp, STACK_COPY_AUTO_START);
	if (!err && launch_probe__cache_on(s->lp)) {
		struct stack_cache_ops ops = { .put = cache_put, .del = cache_del, .ctx = s->lp };

		err = stack_cache__new(launch_probe__cache_entries(s->lp), s->o->stack_young, &ops,
				       &s->cache);
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
		libcuda__attach_pid(s->lp, s->bounded, s->o->pid, &ref, s->o->verbose);
		session__say_refusal(s, &ref);
		if (s->o->libcuda && (err = libcuda__attach_path(s->lp, s->o->libcuda)) < 0)
			return err;
		err = launch_probe__follow(s->lp, s->o->pid);
		if (err)
			return err;
		s->probes_ns = now_ns(); /* it ran before: only what follows is ours */
		t = session__target(s, s->o->pid);
		if (!t)
			return -ENOMEM;
		session__python_setup(s, t, s->probes_ns); /* before the first tick: launches may come first */
		if (!launch_probe__nr_files(s->lp))
			log_warn("pid %d has not loaded libcuda.so.1 yet; waiting for it", s->o->pid);
		return 0;
	case GP_MODE_ALL:
		if (s->o->libcuda) {
			if (libcuda__attach_path(s->lp, s->o->libcuda) < 0)
				return -ENOENT;
		} else {
			libcuda__attach_all(s->lp, s->bounded, &ref, s->o->verbose);
			session__say_refusal(s, &ref);
			libcuda__attach_system(s->lp, NULL, s->o->verbose);
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
			err = libcuda__attach_path(s->lp, s->o->libcuda);
			if (err < 0)
				return err;
		} else {
			libcuda__attach_system(s->lp, getenv("LD_LIBRARY_PATH"), s->o->verbose);
		}
		if (s->o->pc_sampling >= 0) {
			char period[8];

			/* The child's shim reads it (and so do its children's). */
			snprintf(period, sizeof(period), "%d", s->o->pc_sampling);
			if (setenv("GPUPROBE_PC_SAMPLING", period, 1))
				return -errno;
		}
		err = launcher__start(&s->child, s->o->argv, s->o->shim, s->lp);
		if (err)
			return err;
		s->have_child = true;
		/* Between windows from its first launch: its ring is ours, made paused. */
		if (s->duty_cycled)
			shm_reader__mark_watched(s->child.shm_fd, now_ns(), true);
		if (!session__target(s, s->child.pid))
			return -ENOMEM;
		err = launcher__go(&s->child);
		if (err)
			log_error("cannot run %s: %s", s->o->argv[0], strerror(-err));
		return err;
	default:
		return -EINVAL;
	}
}

/* GRAPH_SHARE_BYTES, or for tests GPUPROBE_TEST_GRAPH_SHARE_BYTES (a bound a test can reach). */
static size_t graph_share_bytes(void)
{
	size_t b = test_env__bytes("GPUPROBE_TEST_GRAPH_SHARE_BYTES");

	return b ? b : GRAPH_SHARE_BYTES;
}

/* NAMES_BYTES, or for tests GPUPROBE_TEST_NAMES_BYTES (a table a test can fill). */
static size_t names_bytes(void)
{
	size_t b = test_env__bytes("GPUPROBE_TEST_NAMES_BYTES");

	return b ? b : NAMES_BYTES;
}

/* With -v: the first correlation ids two calls held (corr_reused), both calls. */
static void say_reuses(struct session *s)
{
	const struct join_reuse *r;
	size_t n = join__reuses(s->join, &r);

	for (size_t i = 0; i < n; i++)
		log_debug(s->o->verbose,
			  "corr %llu held twice: tid %u ts %llu reason %u domain %u%s, then tid %u ts %llu "
			  "reason %u domain %u",
			  (unsigned long long)r[i].corr, r[i].tid[0], (unsigned long long)r[i].ts[0],
			  r[i].reason[0], r[i].domain[0], r[i].seen ? " (its activity came)" : "",
			  r[i].tid[1], (unsigned long long)r[i].ts[1], r[i].reason[1], r[i].domain[1]);
}

static int session__init(struct session *s, const struct gp_opts *o)
{
	struct join_opts jo = { 0 };
	int err;

	memset(s, 0, sizeof(*s));
	s->o = o;
	launcher__init(&s->child);
	proc__trust_mounts_of(o->mounts_of); /* before the bounded worker starts: it inherits it */
	s->bounded = bounded__new();
	if (!s->bounded)
		return -ENOMEM;
	bounded__set_tenants(s->bounded, proc__tenant);
	mem_share__init(&s->py_share, PY_SHARE_BYTES);
	mem_share__init(&s->graph_share, graph_share_bytes());
	mem_share__init(&s->names_share, names_bytes() / 2);
	key_holds__init(&s->name_holds, &s->names_share);
	s->name_cost = names_bytes() / NAMES_ENTRIES ? names_bytes() / NAMES_ENTRIES : 1;
	if ((err = target_table__init(&s->tt, s->bounded)) || (err = profile__new(&s->prof)) ||
	    (o->trace && (err = trace__new(&s->trace))) ||
	    (err = stack_table__init(&s->stacks, 1u << 20, 512u << 20)) ||
	    (err = blobtab__new(NAMES_ENTRIES, names_bytes(), &s->names)) ||
	    (err = join__new(&jo, session__on_sample, s, &s->join)))
		return err;
	if (o->pc_sampling >= 0)
		profile__want_pc(s->prof);
	join__on_unrecorded(s->join, session__on_unrecorded, s);
	join__on_matched(s->join, session__on_matched, s);
	s->resolved = calloc(1, sizeof(*s->resolved));
	s->py_codes = calloc(PY_CHECK_MAX, sizeof(*s->py_codes));
	s->recs = calloc(SESSION_READ_BATCH, sizeof(*s->recs));
	if (!s->resolved || !s->py_codes || !s->recs)
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
	trace__destroy(s->trace);
	stack_cache__destroy(s->cache);
	stack_table__fini(&s->stacks);
	key_holds__fini(&s->name_holds);
	blobtab__destroy(s->names);
	free(s->resolved);
	free(s->py_codes);
	free(s->recs);
	free(s->pending);
	crc_engine__destroy(s->crc);
	launch_probe__destroy(s->lp);
	bounded__free(s->bounded); /* after everything that holds it */
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

/* Which CRCs cubins get, said at start: a fallback changes what the profile's build ids mean. */
static void say_crc_engine(const struct session *s)
{
	if (crc_engine__is_cupti(s->crc))
		log_debug(s->o->verbose, "cubin CRCs by CUPTI in gpuprobe-crc (pid %d, unprivileged, seccomp)",
			  (int)crc_engine__helper_pid(s->crc));
	else
		log_warn("cubin CRCs are zlib CRC-32 | 1<<63, not CUPTI's: gpuprobe-crc %s",
			 crc_engine__why_not(s->crc) == -ENOENT ?
			 "not found beside gpuprobe-bpf or in PREFIX/lib/gpuprobe" :
			 "could not start (no libcupti with cuptiGetCubinCrc? give --cupti PATH)");
}

/* GPUPROBE_NODE_PROBE=always: the autograd node probe is never taken away (for measuring). */
static bool node_probe_always(void)
{
	const char *e = getenv("GPUPROBE_NODE_PROBE");

	return e && !strcmp(e, "always");
}

/* The start stage: probes loaded and attached, threads started, targets set up. */
static int start(struct session *s)
{
	int err;

	s->start_ns = s->last_write_ns = now_ns();
	s->start_realtime_ns = realtime_ns();
	s->probes_ns = s->start_ns;
	TIMED(s, STAGE_START, err = open_probe(s) || start_threads(s));
	if (!err) {
		session__duty_setup(s, now_ns()); /* before any file is attached */
		node_watch__init(&s->node_watch, node_probe_always(), now_ns());
		TIMED(s, STAGE_START, err = setup_targets(s));
	}
	s->start_cpu_ns = process_cpu_ns();
	if (err)
		return err;
	preflight__raise_nofile(); /* after a -- COMMAND child started: it keeps the usual limit */
	log_debug(s->o->verbose, "launch probes: %s",
		  launch_probe__uses_multi(s->lp) ? "uprobe_multi links (detached between duty windows)"
						 : "perf-event links (inert between duty windows)");
	if (!launch_probe__nr_files(s->lp) && s->o->mode != GP_MODE_PID)
		log_warn("no libcuda.so.1 found yet (give --libcuda PATH if it is somewhere "
			 "unusual); watching for it");
	return 0;
}

/* Whether a target that runs on has a ring whose last records are still to come. */
static bool live_rings(struct session *s)
{
	for (size_t i = 0; i < s->tt.n; i++)
		if (s->tt.t[i]->shm && proc__alive(s->tt.t[i]->pid))
			return true;
	return false;
}

/* Its shim's flushes begun (GP_CTR_FLUSHES_BEGUN) or finished (GP_CTR_FLUSHES). */
static __u64 shim_flushes(const struct target *t, int which)
{
	__u64 ctr[GP_CTR_MAX];

	shm_reader__counters(t->shm, ctr);
	return ctr[which];
}

/*
 * Whether every live shim has finished a CUPTI flush begun after the stop
 * and its ring was read up to where its head stood when that was seen (a
 * target launching on keeps it busy, but those later records are not the
 * stop's). An inert shim holds nothing; a target's word on its own flushes
 * decides only when its own last records stop being read.
 */
static bool rings_flushed(struct session *s)
{
	bool all = true;

	for (size_t i = 0; i < s->tt.n; i++) {
		struct target *t = s->tt.t[i];

		if (!t->shm || !proc__alive(t->pid) || (shm_reader__flags(t->shm) & GP_SHM_F_INERT))
			continue;
		if (!t->flushed_pos && shim_flushes(t, GP_CTR_FLUSHES) > t->flushes_at_stop) {
			/* The backlog first: it may move the read position over a bad head. */
			__u64 backlog = shm_reader__backlog(t->shm);

			t->flushed_pos = shm_reader__read_pos(t->shm) + backlog + 1;
		}
		if (!t->flushed_pos || shm_reader__read_pos(t->shm) + 1 < t->flushed_pos)
			all = false;
	}
	return all;
}

/* True to stop now; at the first stop with live rings, ends the profile and reads on a while. */
static bool stop_now(struct session *s, __u64 now)
{
	if (s->stop_ns) {
		bool flushed = rings_flushed(s);

		if (!flushed && now - s->stop_ns < STOP_MAX_NS)
			return false;
		log_debug(s->o->verbose, "stopped: read on %.0f ms after the stop (%s)",
			  (double)(now - s->stop_ns) / NS_PER_MS,
			  flushed ? "every running shim flushed" : "the bound: a shim had not flushed");
		return true;
	}
	if (!should_stop(s, now))
		return false;
	if (!live_rings(s))
		return true;
	for (size_t i = 0; i < s->tt.n; i++)
		if (s->tt.t[i]->shm) {
			s->tt.t[i]->flushes_at_stop = shim_flushes(s->tt.t[i], GP_CTR_FLUSHES_BEGUN);
			s->tt.t[i]->flushed_pos = 0;
		}
	s->stop_ns = now;
	join__stop(s->join, now);
	if (s->lp)
		launch_probe__mute(s->lp);
	log_debug(s->o->verbose, "stopping at %llu (CLOCK_MONOTONIC ns): reading the last records of "
		  "the running targets", (unsigned long long)now);
	return false;
}

/* Ticks until the run should stop, writing each --interval window as it ends. */
static void run_ticks(struct session *s)
{
	for (;;) {
		__u64 now;

		tick_sliced(s);
		now = now_ns();
		if (s->o->verbose) {
			session__counters_line(s, stderr, true);
			session__loader_line(s, stderr);
		}
		if (stop_now(s, now))
			break;
		if (!s->stop_ns && s->o->interval_s && now - s->last_write_ns >= (__u64)(s->o->interval_s * NS_PER_S))
			session__write_window(s, now);
	}
}

/* The last counters line whole: with -v, or for a tool that parses it (GPUPROBE_COUNTERS=all). */
static bool all_counters(const struct gp_opts *o)
{
	const char *e = getenv("GPUPROBE_COUNTERS");

	return o->verbose || (e && !strcmp(e, "all"));
}

int session__run(const struct gp_opts *o)
{
	struct session s;
	char path[PATH_MAX];
	int err, status = 1;

	if (preflight__check(o) || preflight__output(o->output) || (o->trace && preflight__output(o->trace)))
		return 1;
	preflight__one_arena(); /* before any helper thread starts */
	err = session__init(&s, o);
	if (err) {
		log_error("%s", strerror(-err));
		session__fini(&s);
		return 1;
	}
	install_signals();
	say_crc_engine(&s);
	if (start(&s)) {
		session__fini(&s);
		return 1;
	}
	run_ticks(&s);
	finish(&s);
	err = session__write_last(&s, path, sizeof(path));
	session__verdict_line(&s, stderr);
	say_reuses(&s);
	session__duty_line(&s, stderr);
	profile__report(s.prof, stderr, o->top);
	session__counters_line(&s, stderr, all_counters(o));
	session__loader_line(&s, stderr);
	if (!err)
		log_info("wrote %s (read it with: go tool pprof -top %s)", path, path);
	if (session__write_trace(&s))
		err = -EIO;
	status = err ? 1 : 0;
	if (s.have_child && !err)
		status = s.child.status;
	session__fini(&s);
	return status;
}
