/* SPDX-License-Identifier: MIT */
/* The loader's report lines (report.h), from snapshots of its figures. */
#include "user/session/report.h"

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
		"cache_audits_short=%llu "
		"cache_unreadable=%llu cache_evicted=%llu cache_forgotten=%llu "
		"cache_full=%llu cache_map_errors=%llu maps_changed=%llu py_checks=%llu py_replaced=%llu "
		"py_kept=%llu py_kept_stale=%llu",
		asked ? 100.0 * (c->hits + c->audits) / asked : 0.0, (unsigned long long)c->hits,
		(unsigned long long)c->misses, (unsigned long long)c->audits,
		(unsigned long long)c->unusable_launches, c->keys, c->capacity,
		(unsigned long long)c->installs, (unsigned long long)c->confirmed,
		(unsigned long long)c->splits, (unsigned long long)c->young_caught, c->split_keys,
		(unsigned long long)c->audits_short,
		(unsigned long long)c->unreadable, (unsigned long long)c->evicted,
		(unsigned long long)c->forgotten, (unsigned long long)c->full,
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
		"queue_mb=%.1f syms_mb=%.1f cfi_mb=%.1f memo_hit_pct=%.1f maps_reread=%llu",
		c->copy_kib_mean, (unsigned long long)c->copy_sizes_grown,
		(unsigned long long)c->copy_sizes_shrunk, c->queue_peak_mb, c->queue_mb, c->syms_mb,
		c->cfi_mb, c->memo_hit_pct, (unsigned long long)c->maps_reread);
	fprintf(f, " cpu_user_s=%.3f cpu_sys_s=%.3f start_cpu_s=%.3f pump_cpu_s=%.3f unwind_ms=%.1f "
		"lookups=%llu lookup_ms=%.1f settle_cpu_ms=%.1f", c->cpu_user_s, c->cpu_sys_s,
		c->start_cpu_s, c->pump_cpu_s, c->unwind_ms, (unsigned long long)c->lookups,
		c->lookup_ms, c->settle_cpu_ms);
	fprintf(f, " helper_cpu_s=%.3f helper_rss_mb=%.1f", c->helper_cpu_s, c->helper_rss_mb);
	cache_fields(&c->cache, f);
	fputc('\n', f);
}
