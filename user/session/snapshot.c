/* SPDX-License-Identifier: MIT */
/*
 * The session's figures, taken at one moment for the report
 * (session_internal.h): its counters into the registry, in the order the
 * "counters:" line prints them, and what the loader cost, for "loader:".
 * This file alone reads the parts' statistics for the report; report.c
 * only formats. A new counter is added here, once, in its group.
 */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include "user/session/session_internal.h"
#include "user/proc/proc.h"
#include "user/symbolize/symbolize.h"
#include "user/util/bounded.h"

void session__note_tables(struct session *s)
{
	size_t sym_bytes, cfi_bytes;

	target_table__table_bytes(&s->tt, &sym_bytes, &cfi_bytes);
	if (sym_bytes > s->peak_sym_bytes)
		s->peak_sym_bytes = sym_bytes;
	if (cfi_bytes > s->peak_cfi_bytes)
		s->peak_cfi_bytes = cfi_bytes;
}

/* Adds the settler's loss counters of r's cubin ring to sum. */
static void add_cubin_stats(struct cubin_queue_stats *sum, struct shm_reader *r)
{
	struct cubin_queue_stats c;

	cubin_queue__stats(shm_reader__cubins(r), &c);
	sum->cubin_garbage += c.cubin_garbage;
	sum->cubin_crc_failed += c.cubin_crc_failed;
	sum->cubin_nomem += c.cubin_nomem;
	sum->cubin_offer_full += c.cubin_offer_full;
	sum->cubin_dedup_full += c.cubin_dedup_full;
	sum->cubin_over_limit += c.cubin_over_limit;
	sum->settle_cut += c.settle_cut;
	sum->settle_deferred += c.settle_deferred;
}

/* Adds what r's shim and its reader counted to shm and rs. */
static void add_shim_counters(__u64 shm[GP_CTR_MAX], struct shm_reader_stats *rs,
			      struct shm_reader *r)
{
	__u64 ctr[GP_CTR_MAX];
	struct shm_reader_stats st;

	shm_reader__counters(r, ctr);
	shm_reader__stats(r, &st);
	for (int k = 0; k < GP_CTR_MAX; k++)
		shm[k] += ctr[k];
	rs->records_bad += st.records_bad;
	rs->ring_resyncs += st.ring_resyncs;
	rs->names_bad += st.names_bad;
}

void session__keep_counters_of(struct session *s, struct target *t)
{
	if (!t->shm)
		return;
	add_shim_counters(s->shm_ctr_gone, &s->reader_gone, t->shm);
	add_cubin_stats(&s->cubins_gone, t->shm);
}

/* The probes' counts, then the shims' and their readers', over every target (gone ones too). */
static void probe_and_shim_counters(struct session *s, const __u64 *bpf, struct counters *c)
{
	struct shm_reader_stats rs = s->reader_gone;
	__u64 shm[GP_CTR_MAX];

	memcpy(shm, s->shm_ctr_gone, sizeof(shm));
	for (size_t i = 0; i < s->tt.n; i++)
		if (s->tt.t[i]->shm)
			add_shim_counters(shm, &rs, s->tt.t[i]->shm);
	counters__add(c, "launch_events", bpf[GP_BPF_EVENTS]);
	counters__add(c, "ringbuf_full", bpf[GP_BPF_RINGBUF_FULL]);
	counters__add(c, "stack_errors", bpf[GP_BPF_STACK_ERRORS]);
	counters__add(c, "copy_errors", bpf[GP_BPF_COPY_ERRORS]);
	counters__add(c, "copy_skipped", bpf[GP_BPF_COPY_SKIPPED]);
	counters__add(c, "records", shm[GP_CTR_RECORDS_WRITTEN]);
	counters__add(c, "ring_dropped", shm[GP_CTR_RING_DROPPED]);
	counters__add(c, "cupti_dropped", shm[GP_CTR_CUPTI_DROPPED]);
	counters__add(c, "buffers_exhausted", shm[GP_CTR_BUFFERS_EXHAUSTED]);
	counters__add(c, "modules_captured", shm[GP_CTR_MODULES_CAPTURED]);
	counters__add(c, "modules_settled", s->modules_settled);
	counters__add(c, "cubin_too_large", shm[GP_CTR_CUBIN_TOO_LARGE]);
	counters__add(c, "cubin_pending_full", shm[GP_CTR_CUBIN_PENDING_FULL]);
	counters__add(c, "strings_full", shm[GP_CTR_STRINGS_FULL]);
	counters__add(c, "cupti_errors", shm[GP_CTR_CUPTI_ERRORS]);
	counters__add(c, "recording_on", shm[GP_CTR_RECORDING_ON]);
	counters__add(c, "recording_off", shm[GP_CTR_RECORDING_OFF]);
	counters__add(c, "records_bad", rs.records_bad);
	counters__add(c, "ring_resyncs", rs.ring_resyncs);
	counters__add(c, "pc_unload_busy", shm[GP_CTR_PC_UNLOAD_BUSY]);
}

/* PC sampling (--pc-sampling): samples read, and every way some were lost. */
static void pc_counters(struct session *s, struct counters *c)
{
	counters__add(c, "pc_samples", s->pc_samples);
	counters__add(c, "pc_cupti_total", s->pc_total);
	counters__add(c, "pc_not_issued", s->pc_not_issued);
	counters__add(c, "pc_dropped", s->pc_dropped);
	counters__add(c, "pc_non_user", s->pc_non_user);
	counters__add(c, "pc_hw_full", s->pc_hw_full);
	counters__add(c, "pc_lost", s->pc_lost);
	counters__add(c, "pc_table_full", profile__pc_dropped(s->prof));
	counters__add(c, "pc_no_cubin", profile__pc_unplaced(s->prof));
}

/* What the join made of them; unattributed activities by reason. */
static void join_counters(struct session *s, struct counters *c)
{
	struct join_counters jc;
	struct profile_totals pt;

	join__counters(s->join, &jc);
	profile__totals(s->prof, &pt);
	counters__add(c, "joined", jc.activities_joined);
	counters__add(c, "api_without_launch", jc.api_without_launch);
	counters__add(c, "launches_without_record", jc.launches_without_record);
	counters__add(c, "launches_before_recording", jc.launches_before_recording);
	counters__add(c, "launches_without_activity", jc.launches_without_activity);
	counters__add(c, "corr_reused", jc.corr_reused);
	counters__add(c, "activities_on_reused", jc.activities_on_reused);
	counters__add(c, "activities_waited", jc.activities_waited);
	counters__add(c, "launches_outside", jc.launches_outside);
	counters__add(c, "activities_outside", jc.activities_outside);
	counters__add(c, "duty_windows", s->duty_windows);
	counters__add(c, "duty_unready", s->duty_unready);
	counters__add(c, "duty_unwaited", s->duty_unwaited);
	counters__add(c, "duty_probe_errors", launch_probe__pause_errors(s->lp));
	counters__add(c, "unattributed", s->unattributed_written + pt.unattributed);
	counters__add_part(c, "no_launch_event", jc.activities_unattributed[JOIN_NO_LAUNCH_EVENT]);
	counters__add_part(c, "no_api_record", jc.activities_unattributed[JOIN_NO_API_RECORD]);
	counters__add_part(c, "before_attach", jc.activities_unattributed[JOIN_BEFORE_ATTACH]);
	counters__add_part(c, "at_attach", jc.activities_unattributed[JOIN_AT_ATTACH]);
	counters__add_part(c, "table_full", jc.activities_unattributed[JOIN_TABLE_FULL]);
	counters__add(c, "queue_full", jc.queue_full);
	counters__add(c, "budget_refused", jc.budget_refused);
	counters__add(c, "api_disordered", jc.api_disordered);
}

/* The loader's own losses: stacks, names, records, rings. */
static void loader_counters(struct session *s, const __u64 *bpf, struct counters *c)
{
	struct stack_cache_stats cs;

	stack_cache__stats(s->cache, &cs);
	counters__add(c, "stacks_dropped", s->stacks_dropped);
	counters__add(c, "names_dropped", s->names_dropped);
	counters__add(c, "targets_full", s->targets_full);
	counters__add(c, "records_unknown", s->records_unknown);
	counters__add(c, "symbolize_failed", s->stack_stats.sym_failed);
	counters__add(c, "stacks_short", s->stack_stats.native_truncated);
	counters__add(c, "python_short", s->stack_stats.py_truncated);
	counters__add(c, "python_unresolved", s->stack_stats.py_unresolved);
	counters__add(c, "py_names_over_share", mem_share__refused(&s->py_share));
	counters__add(c, "graph_nodes_over_share", mem_share__refused(&s->graph_share));
	counters__add(c, "names_over_share", mem_share__refused(&s->names_share));
	counters__add(c, "crc_helper_lost", crc_engine__helper_lost(s->crc));
	counters__add(c, "crc_sources_blamed", crc_engine__sources_blamed(s->crc));
	counters__add(c, "rings_missed", s->rings_missed);
	counters__add(c, "notices_lost", bpf[GP_BPF_NOTICES_LOST]);
	counters__add(c, "events_bad", s->events_bad);
	counters__add(c, "before_window", s->before_window);
	counters__add(c, "stack_cache_mismatch", cs.mismatch);
	counters__add(c, "stack_cache_lost", s->cache_lost);
}

/*
 * What hostile or overloaded targets cost them (DESIGN.md invariants 4, 5,
 * 8): the bounded worker's refusals, libcuda files refused, the settler's
 * losses and the bounds it met, over every target (removed ones too).
 */
static void hostile_counters(struct session *s, struct counters *c)
{
	struct cubin_queue_stats q = s->cubins_gone;
	struct launch_file_stats lf;
	struct bounded_stats io;
	struct space_stats ts;

	bounded__stats(s->bounded, &io);
	target_table__stats(&s->tt, &ts);
	launch_probe__file_stats(s->lp, &lf);
	for (size_t i = 0; i < s->tt.n; i++)
		if (s->tt.t[i]->shm)
			add_cubin_stats(&q, s->tt.t[i]->shm);
	counters__add(c, "io_timeouts", io.timeouts);
	counters__add(c, "io_refused", io.refused);
	counters__add(c, "io_stuck", io.stuck);
	counters__add(c, "io_tenants_refused", io.tenants_refused);
	counters__add(c, "io_start_failed", io.start_failed);
	counters__add(c, "maps_reread_limited", ts.maps_reread_limited);
	counters__add(c, "maps_over_share", ts.maps_over_share);
	counters__add(c, "cfi_over_bound", ts.cfi_over_bound);
	counters__add(c, "loads_refused", ts.loads_refused);
	counters__add(c, "libcuda_refused", lf.refused);
	counters__add(c, "libcuda_no_slot", lf.no_slot);
	counters__add(c, "libcuda_detached", lf.detached);
	counters__add(c, "cubin_over_limit", q.cubin_over_limit);
	counters__add(c, "cubin_crc_failed", q.cubin_crc_failed);
	counters__add(c, "cubin_garbage", q.cubin_garbage);
	counters__add(c, "cubin_nomem", q.cubin_nomem);
	counters__add(c, "cubin_offer_full", q.cubin_offer_full);
	counters__add(c, "cubin_dedup_full", q.cubin_dedup_full);
	counters__add(c, "shim_visits_cut", s->shim_visits_cut);
	counters__add(c, "exit_answers", s->exit_answers);
	counters__add(c, "pc_unasked", s->pc_unasked);
	counters__add(c, "settle_cut", q.settle_cut);
	counters__add(c, "settle_deferred", q.settle_deferred);
	counters__add(c, "ring_notices_dropped", s->rw.lp ? ring_watch__dropped(&s->rw) : 0);
	counters__add(c, "records_left_at_exit", s->records_left_at_exit);
	counters__add(c, "cubin_bytes_left_at_exit", s->cubin_bytes_left_at_exit);
}

/*
 * CUDA graphs: replayed kernels put under the launch that captured their
 * node, and those that keep the replay's stack, by why (a node never
 * reported, or no paired call made it); the nodes held, those no call
 * took, those refused (docs/ARCHITECTURE.md, CUDA graphs).
 */
static void graph_counters(struct session *s, struct counters *c)
{
	struct graph_nodes_stats g = s->graphs_gone;

	for (size_t i = 0; i < s->tt.n; i++)
		graph_nodes__add_stats(s->tt.t[i]->graphs, &g);
	counters__add(c, "graph_activities", s->graph_activities);
	counters__add_part(c, "under_capture", s->graph_under_capture);
	counters__add_part(c, "node_unknown", s->graph_node_unknown);
	counters__add_part(c, "capture_unknown", s->graph_capture_unknown);
	counters__add_part(c, "replay_unattributed", s->graph_replay_unattributed);
	counters__add(c, "graph_nodes", g.nodes);
	counters__add_part(c, "bound", g.bound);
	counters__add_part(c, "unbound", g.unbound);
	counters__add_part(c, "waiting", g.waiting);
	counters__add_part(c, "refused", g.refused);
	counters__add_part(c, "updated", g.updated);
	counters__add_part(c, "params_set", g.params_set);
	counters__add_part(c, "embedded", g.embedded);
	counters__add_part(c, "layouts_refused", g.layouts_refused);
}

/*
 * Backward passes: launches made inside a node of a pass, put under the
 * caller of their pass, or keeping their own stack because no caller is
 * known (attached mid-pass, its begin lost, its caller refused) or because
 * the thread is the caller (a pass's CPU nodes run on the thread that
 * began it); the passes begun (nested: inside another's node), the
 * distinct callers, those refused; the nodes the node probe saw (in duty
 * windows only, where its links can go between them) (docs/ARCHITECTURE.md).
 */
static void autograd_counters(struct session *s, const __u64 *bpf, struct counters *c)
{
	struct autograd_callers_stats a = s->autograd_gone;

	for (size_t i = 0; i < s->tt.n; i++)
		autograd_callers__add_stats(s->tt.t[i]->autograd, &a);
	counters__add(c, "autograd_launches", s->autograd_launches);
	counters__add_part(c, "under_caller", s->autograd_under_caller);
	counters__add_part(c, "caller_unknown", s->autograd_caller_unknown);
	counters__add_part(c, "own_thread", s->autograd_own_thread);
	counters__add_part(c, "after_node", s->autograd_after_node);
	counters__add(c, "autograd_passes", a.passes);
	counters__add_part(c, "nested", a.nested);
	counters__add_part(c, "callers", a.callers);
	counters__add_part(c, "callers_refused", a.refused);
	counters__add(c, "autograd_engines", s->autograd_engines);
	counters__add_part(c, "no_slot", s->autograd_no_slot);
	counters__add(c, "autograd_nodes", bpf[GP_BPF_AG_NODES]);
	counters__add_part(c, "learnt", bpf[GP_BPF_AG_LEARNED]);
	counters__add_part(c, "unknown_launches", bpf[GP_BPF_AG_UNLEARNED]);
	counters__add_part(c, "probe_away", s->node_watch.quiets);
	counters__add_part(c, "probe_back", s->node_watch.wakes);
}

void session__counters(struct session *s, struct counters *ret)
{
	__u64 bpf[GP_BPF_COUNTER_MAX] = {};

	launch_probe__counters(s->lp, bpf);
	counters__init(ret);
	probe_and_shim_counters(s, bpf, ret);
	join_counters(s, ret);
	pc_counters(s, ret);
	loader_counters(s, bpf, ret);
	hostile_counters(s, ret);
	graph_counters(s, ret);
	autograd_counters(s, bpf, ret);
}

static double tv_s(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

/* The stack cache's part of the loader line. */
static void cache_costs(struct session *s, struct cache_costs *c)
{
	__u64 bpf[GP_BPF_COUNTER_MAX] = {};
	struct stack_cache_stats cs;

	launch_probe__counters(s->lp, bpf);
	stack_cache__stats(s->cache, &cs);
	*c = (struct cache_costs){
		.hits = bpf[GP_BPF_CACHE_HITS], .misses = bpf[GP_BPF_CACHE_MISSES],
		/* An audit the ring had no room for went as a hit, counted in both. */
		.audits = bpf[GP_BPF_CACHE_AUDITS] > bpf[GP_BPF_AUDITS_SKIPPED]
				  ? bpf[GP_BPF_CACHE_AUDITS] - bpf[GP_BPF_AUDITS_SKIPPED]
				  : 0, /* two per-CPU sums read apart */
		.audits_skipped = bpf[GP_BPF_AUDITS_SKIPPED], .unusable_launches = bpf[GP_BPF_CACHE_UNUSABLE],
		.keys = cs.live, .capacity = cs.capacity, .split_keys = cs.split_keys,
		.installs = cs.installs, .confirmed = cs.confirmed, .splits = cs.splits,
		.young_caught = cs.young_caught,
		.audits_short = cs.audits_short, .unreadable = cs.unreadable, .evicted = cs.evicted,
		.forgotten = cs.forgotten, .other_state = s->cache_other_state, .full = cs.full,
		.map_errors = cs.map_errors,
		.maps_changed = s->maps_changed, .py_checks = s->py_checks, .py_replaced = s->py_replaced,
		.py_kept = bpf[GP_BPF_PY_KEPT], .py_kept_stale = bpf[GP_BPF_PY_KEPT_STALE],
	};
}

/* Where the walks' and the tables' time and memory went. */
static void walk_costs(struct session *s, struct loader_costs *c)
{
	struct space_stats ts;

	session__note_tables(s);
	target_table__stats(&s->tt, &ts);
	c->copy_kib_mean = s->copied_events ? s->copied_bytes / 1024.0 / s->copied_events : 0.0;
	c->copy_sizes_grown = s->hints.grown;
	c->copy_sizes_shrunk = s->hints.shrunk;
	c->syms_mb = s->peak_sym_bytes / 1048576.0;
	c->cfi_mb = s->peak_cfi_bytes / 1048576.0;
	c->memo_hit_pct = ts.memo_hits + ts.memo_misses ?
			  100.0 * ts.memo_hits / (ts.memo_hits + ts.memo_misses) : 0.0;
	c->maps_reread = ts.maps_reread;
	c->py_looks = s->py_looks;
	c->unwind_ms = s->unwind_ns / 1e6;
	c->lookups = ts.lookups;
	c->lookup_ms = ts.lookup_ns / 1e6;
}

/* The CRC helper's CPU and peak memory (0 when none runs). */
static void helper_costs(struct session *s, struct loader_costs *c)
{
	pid_t helper = crc_engine__helper_pid(s->crc);
	unsigned long hwm_kib = 0;
	double cpu = 0;

	if (helper > 0 && proc__usage(helper, &cpu, &hwm_kib))
		cpu = 0, hwm_kib = 0;
	c->helper_cpu_s = cpu;
	c->helper_rss_mb = hwm_kib / 1024.0;
}

int session__loader_costs(struct session *s, struct loader_costs *ret)
{
	struct loader_costs c = { .wall_s = (now_ns() - s->start_ns) / 1e9 };
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return -errno;
	c.cpu_user_s = tv_s(ru.ru_utime);
	c.cpu_sys_s = tv_s(ru.ru_stime);
	c.cpu_s = c.cpu_user_s + c.cpu_sys_s;
	c.max_rss_mb = ru.ru_maxrss / 1024.0;
	for (int i = 0; i < STAGE_MAX; i++)
		c.stage_ms[i] = s->stage_ns[i] / 1e6;
	walk_costs(s, &c);
	/* The queue's resident peak is since the previous loader line: read once per line. */
	c.queue_peak_mb = s->pump.lp ? event_pump__peak_bytes(&s->pump) / 1048576.0 : 0.0;
	c.queue_mb = s->pump.lp ? event_pump__resident_peak(&s->pump) / 1048576.0 : 0.0;
	c.start_cpu_s = s->start_cpu_ns / 1e9;
	c.pump_cpu_s = event_pump__cpu_ns(&s->pump) / 1e9;
	c.settle_cpu_ms = s->settle_cpu_ns / 1e6;
	helper_costs(s, &c);
	cache_costs(s, &c.cache);
	*ret = c;
	return 0;
}

void session__table_sizes(struct session *s, struct table_sizes *ret)
{
	struct profile_sizes ps;

	profile__sizes(s->prof, &ps);
	*ret = (struct table_sizes){
		.window = s->stacks.window, .raw_stacks = stack_table__count(&s->stacks),
		.targets = s->tt.n, .stacks = ps.stacks, .frames = ps.frames, .strings = ps.strings,
		.procs = ps.procs, .cubins = ps.cubins,
	};
}

void session__counters_line(struct session *s, FILE *f, bool all)
{
	struct counters c;

	session__counters(s, &c);
	if (all)
		counters__print(&c, "counters", f);
	else
		counters__print_moved(&c, "counters", f);
}

void session__verdict_line(struct session *s, FILE *f)
{
	struct profile_totals pt;
	struct counters c;

	session__counters(s, &c);
	profile__totals(s->prof, &pt);
	report__verdict(&c, pt.gpu_ns, f);
}

void session__loader_line(struct session *s, FILE *f)
{
	struct loader_costs c;

	if (!session__loader_costs(s, &c))
		report__loader_line(&c, f);
}

void session__tables_line(struct session *s, FILE *f)
{
	struct table_sizes t;

	session__table_sizes(s, &t);
	report__tables_line(&t, f);
}
