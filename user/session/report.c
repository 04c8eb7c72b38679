/* SPDX-License-Identifier: MIT */
/* The loader's report lines (report.h), from snapshots of its figures. */
#include "user/session/report.h"

#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

static const char *const stage_names[STAGE_MAX] = { "start", "events", "shim", "settle", "join",
						      "scan", "name", "write" };

void report__tables_line(const struct table_sizes *t, FILE *f)
{
	fprintf(f, "tables: window=%u raw_stacks=%zu stacks=%llu frames=%llu strings=%llu procs=%llu "
		"cubins=%llu targets=%zu\n", t->window, t->raw_stacks, (unsigned long long)t->stacks,
		(unsigned long long)t->frames, (unsigned long long)t->strings,
		(unsigned long long)t->procs, (unsigned long long)t->cubins, t->targets);
}

/*
 * The stack cache: how many launches it answered (hits and audits over
 * every launch that asked it, the BPF side's counts), what the loader did
 * with its keys, how full it is.
 */
static void cache_fields(const struct cache_costs *c, FILE *f)
{
	__u64 asked = c->hits + c->audits + c->misses + c->unusable_launches;

	fprintf(f, " cache_hit_pct=%.1f cache_hits=%llu cache_misses=%llu cache_audits=%llu "
		"cache_unusable_launches=%llu cache_keys=%zu cache_capacity=%zu cache_installs=%llu "
		"cache_confirmed=%llu cache_splits=%llu cache_young_caught=%llu cache_split_keys=%zu "
		"cache_audits_short=%llu cache_audits_skipped=%llu "
		"cache_unreadable=%llu cache_evicted=%llu cache_forgotten=%llu cache_other_state=%llu "
		"cache_full=%llu cache_map_errors=%llu maps_changed=%llu py_checks=%llu py_replaced=%llu "
		"py_kept=%llu py_kept_stale=%llu",
		asked ? 100.0 * (c->hits + c->audits) / asked : 0.0, (unsigned long long)c->hits,
		(unsigned long long)c->misses, (unsigned long long)c->audits,
		(unsigned long long)c->unusable_launches, c->keys, c->capacity,
		(unsigned long long)c->installs, (unsigned long long)c->confirmed,
		(unsigned long long)c->splits, (unsigned long long)c->young_caught, c->split_keys,
		(unsigned long long)c->audits_short, (unsigned long long)c->audits_skipped,
		(unsigned long long)c->unreadable, (unsigned long long)c->evicted,
		(unsigned long long)c->forgotten, (unsigned long long)c->other_state,
		(unsigned long long)c->full,
		(unsigned long long)c->map_errors, (unsigned long long)c->maps_changed,
		(unsigned long long)c->py_checks, (unsigned long long)c->py_replaced,
		(unsigned long long)c->py_kept, (unsigned long long)c->py_kept_stale);
}

/*
 * Where the loader's CPU went: user and kernel time (the verifier's and the
 * BPF maps' at start are kernel time), each stage, the event pump's thread;
 * the CRC helper, a process of its own, beside it.
 */
void report__loader_line(const struct loader_costs *c, FILE *f)
{
	fprintf(f, "loader: cpu_s=%.3f wall_s=%.3f cpu_share=%.2f%% max_rss_mb=%.1f stage_ms",
		c->cpu_s, c->wall_s, c->wall_s > 0 ? 100.0 * c->cpu_s / c->wall_s : 0.0,
		c->max_rss_mb);
	for (int i = 0; i < STAGE_MAX; i++)
		fprintf(f, " %s=%.1f", stage_names[i], c->stage_ms[i]);
	fprintf(f, " copy_kib_mean=%.1f copy_sizes_grown=%llu shrunk=%llu queue_peak_mb=%.1f "
		"queue_mb=%.1f syms_mb=%.1f cfi_mb=%.1f memo_hit_pct=%.1f maps_reread=%llu py_looks=%llu",
		c->copy_kib_mean, (unsigned long long)c->copy_sizes_grown,
		(unsigned long long)c->copy_sizes_shrunk, c->queue_peak_mb, c->queue_mb, c->syms_mb,
		c->cfi_mb, c->memo_hit_pct, (unsigned long long)c->maps_reread,
		(unsigned long long)c->py_looks);
	fprintf(f, " cpu_user_s=%.3f cpu_sys_s=%.3f start_cpu_s=%.3f pump_cpu_s=%.3f unwind_ms=%.1f "
		"lookups=%llu lookup_ms=%.1f settle_cpu_ms=%.1f", c->cpu_user_s, c->cpu_sys_s,
		c->start_cpu_s, c->pump_cpu_s, c->unwind_ms, (unsigned long long)c->lookups,
		c->lookup_ms, c->settle_cpu_ms);
	fprintf(f, " helper_cpu_s=%.3f helper_rss_mb=%.1f", c->helper_cpu_s, c->helper_rss_mb);
	cache_fields(&c->cache, f);
	fputc('\n', f);
}

/*
 * The counters whose moving means something is missing from, or less
 * exact in, the profile (the rest count what went well, or are figures).
 */
static const char *const loss_names[] = {
	"ringbuf_full", "stack_errors", "copy_errors", "copy_skipped", "ring_dropped",
	"cupti_dropped", "cupti_errors", "buffers_exhausted", "cubin_too_large",
	"cubin_pending_full", "strings_full", "records_bad", "ring_resyncs", "api_without_launch",
	"launches_without_record", "launches_without_activity", "unattributed", "queue_full",
	"budget_refused", "api_disordered", "stacks_dropped", "names_dropped", "records_unknown", "symbolize_failed",
	"stacks_short", "python_short", "python_unresolved", "crc_helper_lost", "rings_missed",
	"notices_lost", "events_bad", "before_window", "stack_cache_mismatch", "stack_cache_lost",
	"io_timeouts", "io_refused", "maps_reread_limited", "libcuda_refused", "libcuda_no_slot",
	"cubin_over_limit", "cubin_crc_failed", "cubin_garbage", "cubin_nomem", "cubin_offer_full",
	"cubin_dedup_full", "shim_visits_cut", "settle_cut", "ring_notices_dropped",
	"records_left_at_exit", "node_unknown", "capture_unknown", "replay_unattributed", "unbound",
	"caller_unknown", "callers_refused", "no_slot", "io_stuck", "io_start_failed", "io_tenants_refused",
	"cubin_bytes_left_at_exit", "targets_full", "pc_unload_busy", "pc_dropped", "pc_hw_full",
	"pc_lost", "pc_table_full", "graph_nodes_over_share", "maps_over_share", "cfi_over_bound", "names_over_share", "corr_reused",
	"loads_refused",
};

static __u64 counter_of(const struct counters *c, const char *name)
{
	__u64 v = 0;

	return counters__get(c, name, &v) ? 0 : v;
}

/* No GPU activity: what was captured, if anything, and the likeliest reason. */
static void say_no_activity(const struct counters *c, FILE *f)
{
	__u64 events = counter_of(c, "launch_events"), records = counter_of(c, "records");

	if (events && records)
		fprintf(f, "verdict: %llu launch events, %llu shim records and no GPU activity: the "
			   "profile counts launches, with no GPU time (the calls failed or were captured "
			   "into graphs; launches_without_activity=%llu were due an activity CUPTI never "
			   "gave)\n",
			(unsigned long long)events, (unsigned long long)records,
			(unsigned long long)counter_of(c, "launches_without_activity"));
	else if (!events && !records)
		fprintf(f, "verdict: nothing captured: no launch and no GPU record (the target launched "
			   "nothing while the loader was attached, or its libcuda is not the one probed: "
			   "--libcuda PATH; -v lists the files attached)\n");
	else if (events)
		fprintf(f, "verdict: %llu launch events, no GPU activity: the profile counts launches, "
			   "with no GPU time (the target runs without the shim: start it with "
			   "CUDA_INJECTION64_PATH=<libgpuprobe_shim.so>, or as gpuprobe-bpf -- COMMAND)\n",
			(unsigned long long)events);
	else
		fprintf(f, "verdict: nothing captured: %llu GPU records but no launch event (its "
			   "libcuda is not the one probed: --libcuda PATH)\n", (unsigned long long)records);
}

/* Appends to line (len bytes, *n used), never past its end. */
__attribute__((format(printf, 4, 5)))
static void append(char *line, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (*n >= len - 1)
		return;
	va_start(ap, fmt);
	k = vsnprintf(line + *n, len - *n, fmt, ap);
	va_end(ap);
	if (k > 0)
		*n = *n + (size_t)k < len - 1 ? *n + (size_t)k : len - 1;
}

void report__verdict(const struct counters *c, __u64 gpu_ns, FILE *f)
{
	__u64 events = counter_of(c, "launch_events");
	__u64 joined = counter_of(c, "joined"), unattr = counter_of(c, "unattributed");
	__u64 acts = joined + unattr;
	bool lost = false;
	char line[1024];
	size_t n = 0;

	if (!acts) {
		say_no_activity(c, f);
		return;
	}
	append(line, sizeof(line), &n, "verdict: %llu launch events, %llu GPU activities, %llu "
	       "joined (%.1f%%), GPU time %.3f ms in the profile written last; losses:",
	       (unsigned long long)events, (unsigned long long)acts, (unsigned long long)joined,
	       100.0 * joined / acts, gpu_ns / 1e6);
	for (size_t i = 0; i < sizeof(loss_names) / sizeof(loss_names[0]); i++) {
		__u64 v = counter_of(c, loss_names[i]);

		if (v)
			append(line, sizeof(line), &n, " %s=%llu", loss_names[i], (unsigned long long)v);
		lost |= v != 0;
	}
	if (c->refused)
		append(line, sizeof(line), &n, " counters_refused=%u", c->refused);
	if (!lost && !c->refused)
		append(line, sizeof(line), &n, " none");
	/* Not a loss: no record was due (shim/gp_abi.h, "no reader, no records"). */
	if (counter_of(c, "launches_before_recording"))
		append(line, sizeof(line), &n, "; %llu launches made before the shim recorded, "
		       "labelled [no GPU record: before the shim recorded]",
		       (unsigned long long)counter_of(c, "launches_before_recording"));
	/*
	 * CUPTI's fault (docs/BENCHMARKS.md): after its launch callbacks, or
	 * its RUNTIME and DRIVER activity kinds (GPUPROBE_API_RECORDS=kinds),
	 * were switched on while threads launched, a thread's calls and
	 * kernels may all carry one id, for the process's life. Started under
	 * the loader with the default capture, the callbacks go on before any
	 * launch and stay on.
	 */
	if (counter_of(c, "corr_reused"))
		append(line, sizeof(line), &n, "; corr_reused: CUPTI gave one thread's calls one "
		       "correlation id (its fault after the shim switched its API capture on while the "
		       "program launched; it lasts the process's life), their GPU time paired by "
		       "order: profile the program from its start (gpuprobe-bpf -- COMMAND), without "
		       "GPUPROBE_API_RECORDS=kinds, to avoid it");
	if (n >= sizeof(line) - 1)
		memcpy(line + sizeof(line) - 5, " ...", 5); /* cut: says so */
	fprintf(f, "%s\n", line);
}
