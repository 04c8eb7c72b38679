/* SPDX-License-Identifier: MIT */
/*
 * The loader's report lines (session_internal.h): "tables:" after each
 * window (-v), "counters:" each tick (-v) and at the end, where every loss
 * has its own counter, and "loader:", what the loader itself cost.
 */
#include <string.h>
#include <sys/resource.h>
#include "user/proc/proc.h"
#include "user/session/session_internal.h"
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

static const char *const stage_names[STAGE_MAX] = { "start", "events", "shim", "settle", "join",
						      "scan", "name", "write" };

void session__tables_line(struct session *s, FILE *f)
{
	struct profile_sizes ps;

	profile__sizes(s->prof, &ps);
	fprintf(f, "tables: window=%u raw_stacks=%zu stacks=%llu frames=%llu strings=%llu procs=%llu "
		"cubins=%llu targets=%zu\n", s->stacks.window, stack_table__count(&s->stacks),
		(unsigned long long)ps.stacks, (unsigned long long)ps.frames,
		(unsigned long long)ps.strings, (unsigned long long)ps.procs,
		(unsigned long long)ps.cubins, s->tt.n);
}

void session__add_cubin_stats(struct cubin_queue_stats *sum, struct shm_reader *r)
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
}

/* The settler's losses and the bounds it met, over every target (removed ones too). */
static void hostile_counters(struct session *s, FILE *f)
{
	struct cubin_queue_stats c = s->cubins_gone;
	struct launch_file_stats lf;
	struct bounded_stats io;
	struct target_stats ts;

	bounded__stats(&io);
	fprintf(f, " io_timeouts=%llu io_refused=%llu io_stuck=%llu", (unsigned long long)io.timeouts,
		(unsigned long long)io.refused, (unsigned long long)io.stuck);
	target_table__stats(&s->tt, &ts);
	launch_probe__file_stats(s->lp, &lf);
	fprintf(f, " maps_reread_limited=%llu", (unsigned long long)ts.maps_reread_limited);
	fprintf(f, " libcuda_refused=%llu libcuda_no_slot=%llu libcuda_detached=%llu",
		(unsigned long long)lf.refused, (unsigned long long)lf.no_slot,
		(unsigned long long)lf.detached);
	for (size_t i = 0; i < s->tt.n; i++)
		if (s->tt.t[i]->shm)
			session__add_cubin_stats(&c, s->tt.t[i]->shm);
	fprintf(f, " cubin_over_limit=%llu cubin_crc_failed=%llu cubin_garbage=%llu cubin_nomem=%llu "
		"cubin_offer_full=%llu cubin_dedup_full=%llu shim_visits_cut=%llu settle_cut=%llu "
		"ring_notices_dropped=%llu records_left_at_exit=%llu cubin_bytes_left_at_exit=%llu",
		c.cubin_over_limit, c.cubin_crc_failed, c.cubin_garbage, c.cubin_nomem,
		c.cubin_offer_full, c.cubin_dedup_full, s->shim_visits_cut, c.settle_cut,
		s->rw.lp ? ring_watch__dropped(&s->rw) : 0, s->records_left_at_exit,
		s->cubin_bytes_left_at_exit);
}

void session__counters_line(struct session *s, FILE *f)
{
	__u64 bpf[GP_BPF_COUNTER_MAX] = {}, shm[GP_CTR_MAX], ctr[GP_CTR_MAX];
	struct shm_reader_stats rs = s->reader_gone, st;
	struct join_counters jc;
	struct profile_totals pt;
	struct stack_cache_stats cs;

	stack_cache__stats(s->cache, &cs);
	memcpy(shm, s->shm_ctr_gone, sizeof(shm));
	for (size_t i = 0; i < s->tt.n; i++) {
		if (!s->tt.t[i]->shm)
			continue;
		shm_reader__counters(s->tt.t[i]->shm, ctr);
		shm_reader__stats(s->tt.t[i]->shm, &st);
		for (int k = 0; k < GP_CTR_MAX; k++)
			shm[k] += ctr[k];
		rs.records_bad += st.records_bad;
		rs.ring_resyncs += st.ring_resyncs;
		rs.names_bad += st.names_bad;
	}
	launch_probe__counters(s->lp, bpf);
	join__counters(s->join, &jc);
	profile__totals(s->prof, &pt);
	fprintf(f,
		"counters: launch_events=%llu ringbuf_full=%llu stack_errors=%llu copy_errors=%llu "
		"copy_skipped=%llu "
		"records=%llu ring_dropped=%llu cupti_dropped=%llu buffers_exhausted=%llu "
		"modules_captured=%llu modules_settled=%llu cubin_too_large=%llu cubin_pending_full=%llu "
		"strings_full=%llu records_bad=%llu ring_resyncs=%llu "
		"joined=%llu api_without_launch=%llu launches_without_record=%llu "
		"unattributed=%llu (no_launch_event=%llu no_api_record=%llu before_attach=%llu at_attach=%llu "
		"table_full=%llu) "
		"queue_full=%llu stacks_dropped=%llu names_dropped=%llu records_unknown=%llu "
		"symbolize_failed=%llu stacks_short=%llu python_short=%llu python_unresolved=%llu "
		"crc_helper_lost=%llu rings_missed=%llu notices_lost=%llu "
		"events_bad=%llu before_window=%llu stack_cache_mismatch=%llu stack_cache_lost=%llu",
		bpf[GP_BPF_EVENTS], bpf[GP_BPF_RINGBUF_FULL], bpf[GP_BPF_STACK_ERRORS],
		bpf[GP_BPF_COPY_ERRORS], bpf[GP_BPF_COPY_SKIPPED], shm[GP_CTR_RECORDS_WRITTEN], shm[GP_CTR_RING_DROPPED], shm[GP_CTR_CUPTI_DROPPED],
		shm[GP_CTR_BUFFERS_EXHAUSTED], shm[GP_CTR_MODULES_CAPTURED], s->modules_settled,
		shm[GP_CTR_CUBIN_TOO_LARGE], shm[GP_CTR_CUBIN_PENDING_FULL], shm[GP_CTR_STRINGS_FULL],
		rs.records_bad, rs.ring_resyncs, jc.activities_joined, jc.api_without_launch,
		jc.launches_without_record, s->unattributed_written + pt.unattributed,
		jc.activities_unattributed[JOIN_NO_LAUNCH_EVENT],
		jc.activities_unattributed[JOIN_NO_API_RECORD],
		jc.activities_unattributed[JOIN_BEFORE_ATTACH],
		jc.activities_unattributed[JOIN_AT_ATTACH],
		jc.activities_unattributed[JOIN_TABLE_FULL], jc.queue_full, s->stacks_dropped,
		s->names_dropped, s->records_unknown, s->stack_stats.sym_failed,
		s->stack_stats.native_truncated, s->stack_stats.py_truncated,
		s->stack_stats.py_unresolved, crc_engine__helper_lost(s->crc), s->rings_missed,
		bpf[GP_BPF_NOTICES_LOST], s->events_bad, s->before_window, cs.mismatch, s->cache_lost);
	hostile_counters(s, f);
	fputc('\n', f);
}

static double tv_s(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

/*
 * The loader's own cost, so benchmarks need no outside tool; the CRC
 * helper's, a process of its own, beside it (helper_*: 0 when none runs).
 * Where its CPU went: user and kernel time (the verifier's and the BPF
 * maps' at start are kernel time), the start stage, the event pump's thread.
 */
void session__loader_line(struct session *s, FILE *f)
{
	struct rusage ru;
	double wall = (now_ns() - s->start_ns) / 1e9, cpu, helper_cpu = 0;
	unsigned long helper_hwm_kib = 0;
	pid_t helper = crc_engine__helper_pid(s->crc);
	size_t sym_bytes, cfi_bytes;
	struct target_stats ts;

	if (getrusage(RUSAGE_SELF, &ru))
		return;
	cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
	fprintf(f, "loader: cpu_s=%.3f wall_s=%.3f cpu_share=%.2f%% max_rss_mb=%.1f stage_ms", cpu, wall,
		wall > 0 ? 100.0 * cpu / wall : 0.0, ru.ru_maxrss / 1024.0);
	for (int i = 0; i < STAGE_MAX; i++)
		fprintf(f, " %s=%.1f", stage_names[i], s->stage_ns[i] / 1e6);
	session__note_tables(s);
	sym_bytes = s->peak_sym_bytes;
	cfi_bytes = s->peak_cfi_bytes;
	target_table__stats(&s->tt, &ts);
	fprintf(f, " copy_kib_mean=%.1f copy_sizes_grown=%llu shrunk=%llu queue_peak_mb=%.1f "
		"queue_mb=%.1f syms_mb=%.1f cfi_mb=%.1f memo_hit_pct=%.1f maps_reread=%llu",
		s->copied_events ? s->copied_bytes / 1024.0 / s->copied_events : 0.0,
		(unsigned long long)s->hints.grown, (unsigned long long)s->hints.shrunk,
		s->pump.lp ? event_pump__peak_bytes(&s->pump) / 1048576.0 : 0.0,
		s->pump.lp ? event_pump__resident_peak(&s->pump) / 1048576.0 : 0.0,
		sym_bytes / 1048576.0, cfi_bytes / 1048576.0,
		ts.memo_hits + ts.memo_misses ? 100.0 * ts.memo_hits / (ts.memo_hits + ts.memo_misses)
					      : 0.0,
		(unsigned long long)ts.maps_reread);
	fprintf(f, " cpu_user_s=%.3f cpu_sys_s=%.3f start_cpu_s=%.3f pump_cpu_s=%.3f unwind_ms=%.1f "
		"lookups=%llu lookup_ms=%.1f settle_cpu_ms=%.1f",
		tv_s(ru.ru_utime), tv_s(ru.ru_stime), s->start_cpu_ns / 1e9,
		event_pump__cpu_ns(&s->pump) / 1e9, s->unwind_ns / 1e6,
		(unsigned long long)ts.lookups, ts.lookup_ns / 1e6, s->settle_cpu_ns / 1e6);
	if (helper > 0 && proc__usage(helper, &helper_cpu, &helper_hwm_kib))
		helper_cpu = 0, helper_hwm_kib = 0;
	fprintf(f, " helper_cpu_s=%.3f helper_rss_mb=%.1f", helper_cpu, helper_hwm_kib / 1024.0);
	session__cache_fields(s, f);
	fputc('\n', f);
}

/*
 * The stack cache on the loader line: how many launches it answered (hits
 * over hits and misses, the BPF side's counts), what the loader did with
 * its keys, and how full it is.
 */
void session__cache_fields(struct session *s, FILE *f)
{
	__u64 bpf[GP_BPF_COUNTER_MAX] = {};
	struct stack_cache_stats cs;
	__u64 asked;

	launch_probe__counters(s->lp, bpf);
	stack_cache__stats(s->cache, &cs);
	asked = bpf[GP_BPF_CACHE_HITS] + bpf[GP_BPF_CACHE_AUDITS] + bpf[GP_BPF_CACHE_MISSES] +
		bpf[GP_BPF_CACHE_UNUSABLE];
	fprintf(f, " cache_hit_pct=%.1f cache_hits=%llu cache_misses=%llu cache_audits=%llu "
		"cache_unusable_launches=%llu cache_keys=%zu cache_capacity=%zu cache_installs=%llu "
		"cache_confirmed=%llu cache_splits=%llu cache_split_keys=%zu cache_audits_short=%llu "
		"cache_unreadable=%llu cache_evicted=%llu cache_forgotten=%llu "
		"cache_full=%llu cache_map_errors=%llu maps_changed=%llu py_checks=%llu py_replaced=%llu",
		asked ? 100.0 * (bpf[GP_BPF_CACHE_HITS] + bpf[GP_BPF_CACHE_AUDITS]) / asked : 0.0,
		(unsigned long long)bpf[GP_BPF_CACHE_HITS], (unsigned long long)bpf[GP_BPF_CACHE_MISSES],
		(unsigned long long)bpf[GP_BPF_CACHE_AUDITS],
		(unsigned long long)bpf[GP_BPF_CACHE_UNUSABLE], cs.live, cs.capacity,
		(unsigned long long)cs.installs, (unsigned long long)cs.confirmed,
		(unsigned long long)cs.splits, cs.split_keys, (unsigned long long)cs.audits_short,
		(unsigned long long)cs.unreadable, (unsigned long long)cs.evicted,
		(unsigned long long)cs.forgotten, (unsigned long long)cs.full,
		(unsigned long long)cs.map_errors, (unsigned long long)s->maps_changed,
		(unsigned long long)s->py_checks, (unsigned long long)s->py_replaced);
}
