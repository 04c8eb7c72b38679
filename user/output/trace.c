/* SPDX-License-Identifier: MIT */
/* The timeline in trace-event JSON (trace.h). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/output/trace.h"
#include "user/symbolize/demangle.h"
#include "user/util/atomic_file.h"
#include "user/util/grow.h"
#include "user/util/u64map.h"

struct tlaunch {
	__u64 start, end, corr;
	__u32 pid, tid, stack, probe;
};

struct tactivity {
	__u64 start, end, corr;
	__u32 pid, name_id, device, stream;
	bool joined;
};

struct trace {
	struct tlaunch *l;
	size_t nl, cap_l;
	struct tactivity *a;
	size_t na, cap_a;
	struct trace_stats st;
};

int trace__new(struct trace **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void trace__destroy(struct trace *t)
{
	if (!t)
		return;
	free(t->l);
	free(t->a);
	free(t);
}

void trace__launch(struct trace *t, __u32 pid, __u32 tid, __u64 start, __u64 end, __u32 stack,
		   __u32 probe, __u64 corr)
{
	struct tlaunch *l;

	if (t->nl == TRACE_MAX_LAUNCHES ||
	    !(l = grow__array(t->l, &t->cap_l, t->nl + 1, sizeof(*t->l), 1024))) {
		t->st.launches_dropped++;
		return;
	}
	t->l = l;
	t->l[t->nl++] = (struct tlaunch){ .start = start, .end = end > start ? end : start, .corr = corr,
					  .pid = pid, .tid = tid, .stack = stack, .probe = probe };
	t->st.launches++;
}

void trace__activity(struct trace *t, __u32 pid, __u64 start, __u64 end, __u32 name_id,
		     __u32 device, __u32 stream, __u64 corr, bool joined)
{
	struct tactivity *a;

	if (t->na == TRACE_MAX_ACTIVITIES ||
	    !(a = grow__array(t->a, &t->cap_a, t->na + 1, sizeof(*t->a), 1024))) {
		t->st.activities_dropped++;
		return;
	}
	t->a = a;
	t->a[t->na++] = (struct tactivity){ .start = start, .end = end > start ? end : start,
					    .corr = corr, .pid = pid, .name_id = name_id,
					    .device = device, .stream = stream, .joined = joined };
	t->st.activities++;
}

void trace__stats(const struct trace *t, struct trace_stats *ret)
{
	*ret = t->st;
}

/* ------------------------------------------------------------ writing */

/* Buffered output to the temporary file; the first error sticks. */
struct out {
	int fd, err;
	size_t n;
	char buf[1 << 16];
};

static void out__flush(struct out *o)
{
	if (!o->err && o->n)
		o->err = atomic_file__write(o->fd, o->buf, o->n);
	o->n = 0;
}

static void out__put(struct out *o, const char *s, size_t len)
{
	if (len > sizeof(o->buf) - o->n)
		out__flush(o);
	if (len > sizeof(o->buf)) {
		if (!o->err)
			o->err = atomic_file__write(o->fd, s, len);
		return;
	}
	memcpy(o->buf + o->n, s, len);
	o->n += len;
}

/* A string literal, its length counted by the compiler. */
#define OUT_LIT(o, lit) out__put(o, lit, sizeof(lit) - 1)

__attribute__((format(printf, 2, 3))) static void out__printf(struct out *o, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		out__put(o, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/*
 * A JSON string. Every name comes from the profiled process (kernel names,
 * symbols, Python files): quotes, backslashes, control bytes and bytes
 * outside ASCII are escaped (\u00XX: read as Latin-1, never invalid UTF-8).
 */
static void out__str(struct out *o, const char *s)
{
	char esc[8];

	OUT_LIT(o, "\"");
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			out__put(o, esc, 2);
		} else if (*p < 0x20 || *p >= 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			out__put(o, esc, 6);
		} else {
			out__put(o, (const char *)p, 1);
		}
	}
	OUT_LIT(o, "\"");
}

/*
 * Times are microseconds in steps of 1/1024 us (under a ns): a step count
 * k prints exactly ("12.5009765625") and is a double exactly, so whatever
 * a viewer adds or subtracts (ts + dur; every ts less the first one, as
 * speedscope does) is exact too. With ns printed as decimals, one slice in
 * eight that ended where the next began (kernels back to back on a
 * stream) ended a fraction past it in a viewer's doubles, and speedscope,
 * which needs a track's slices nested, then left the first open to the
 * track's end. Each end is rounded to the nearest step: within half a ns.
 */
static __u64 steps_of(__u64 ns, __u64 base)
{
	__u64 d = ns > base ? ns - base : 0;

	return (__u64)(((unsigned __int128)d * 128 + 62) / 125); /* d * 1024 / 1000, rounded */
}

/* k steps as a JSON number: "12", "12.5", "0.0009765625". */
static void steps_str(char *buf, size_t size, __u64 k)
{
	__u64 frac = (k & 1023) * 9765625ull; /* k % 1024 / 1024, in 1e-10 */
	int digits = 10;

	if (!frac) {
		snprintf(buf, size, "%llu", (unsigned long long)(k >> 10));
		return;
	}
	while (frac % 10 == 0) {
		frac /= 10;
		digits--;
	}
	snprintf(buf, size, "%llu.%0*llu", (unsigned long long)(k >> 10), digits, (unsigned long long)frac);
}

static void out__ts(struct out *o, const char *key, __u64 ns, __u64 base)
{
	char us[40];

	steps_str(us, sizeof(us), steps_of(ns, base));
	out__printf(o, ",\"%s\":%s", key, us);
}

/* A slice's duration: its rounded end less its rounded start, so it ends where the next begins. */
static void out__dur(struct out *o, __u64 start, __u64 end, __u64 base)
{
	char us[40];

	steps_str(us, sizeof(us), steps_of(end, base) - steps_of(start, base));
	out__printf(o, ",\"dur\":%s", us);
}

/* A process's GPU: a track group of its own, one track per device and stream. */
#define GPU_PID(pid) (0x40000000u | (pid))
#define GPU_TID(dev, stream) (((dev) & 0x7fu) << 24 | ((stream) & 0xffffffu))
/*
 * A stream's second track: the activities that begin inside another on
 * the stream and end after it (kernels that overlap, as programmatic
 * dependent launch lets them; viewers need a track's slices nested).
 */
#define GPU_TID_OVERLAP (1u << 31)
/*
 * A call's key: its process and the low 31 bits of its correlation. Two
 * calls of one process 2^31 correlations apart would share it; the trace
 * keeps a run's first 20,000 calls, and a process that forges its records'
 * ids can only misdraw its own arrows.
 */
#define FLOW_ID(pid, corr) ((unsigned long long)(pid) << 31 | ((corr) & 0x7fffffffu))

static void event_sep(struct out *o, bool *first)
{
	out__put(o, *first ? "\n" : ",\n", *first ? 1 : 2);
	*first = false;
}

static void meta(struct out *o, bool *first, const char *what, __u32 pid, __u32 tid, bool with_tid,
		 const char *name)
{
	event_sep(o, first);
	out__printf(o, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u", what, pid);
	if (with_tid)
		out__printf(o, ",\"tid\":%u", tid);
	OUT_LIT(o, ",\"args\":{\"name\":");
	out__str(o, name);
	OUT_LIT(o, "}}");
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static __u32 act_tid(const struct tactivity *a, bool overlap)
{
	return GPU_TID(a->device, a->stream) | (overlap ? GPU_TID_OVERLAP : 0);
}

static int cmp_by_track(const void *x, const void *y, void *ctx)
{
	const struct tactivity *a = &((const struct tactivity *)ctx)[*(const size_t *)x];
	const struct tactivity *b = &((const struct tactivity *)ctx)[*(const size_t *)y];
	__u64 ka = (__u64)a->pid << 32 | act_tid(a, false), kb = (__u64)b->pid << 32 | act_tid(b, false);

	if (ka != kb)
		return ka < kb ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->end > b->end ? -1 : a->end < b->end; /* the longer first: it holds the other */
}

/*
 * Which activities go on their stream's second track: on each stream, in
 * start order, one that begins inside an open slice and ends after it.
 * NULL (none moved) when there is nothing to sort or no memory.
 */
static bool *overlaps(const struct trace *t)
{
	size_t *idx = t->na ? malloc(t->na * sizeof(*idx)) : NULL, depth = 0;
	__u64 *open = t->na ? malloc(t->na * sizeof(*open)) : NULL;
	bool *over = t->na ? calloc(t->na, sizeof(*over)) : NULL;

	if (!idx || !open || !over) {
		free(idx);
		free(open);
		free(over);
		return NULL;
	}
	for (size_t i = 0; i < t->na; i++)
		idx[i] = i;
	qsort_r(idx, t->na, sizeof(*idx), cmp_by_track, t->a);
	for (size_t k = 0; k < t->na; k++) {
		const struct tactivity *a = &t->a[idx[k]], *prev = k ? &t->a[idx[k - 1]] : NULL;

		if (prev && (prev->pid != a->pid || act_tid(prev, false) != act_tid(a, false)))
			depth = 0; /* a track of its own */
		while (depth && open[depth - 1] <= a->start)
			depth--;
		if (depth && a->end > open[depth - 1])
			over[idx[k]] = true;
		else
			open[depth++] = a->end;
	}
	free(idx);
	free(open);
	return over;
}

/* Names each process, its threads, its GPU and that GPU's tracks: once each. */
static int write_meta(const struct trace *t, const bool *over, struct out *o, bool *first,
		      const struct trace_names *nm)
{
	size_t n = 0, cap = t->nl + 2 * t->na;
	__u64 *keys = cap ? malloc(cap * sizeof(*keys)) : NULL;
	char name[128];

	if (cap && !keys)
		return -ENOMEM;
	/* kind << 62 | pid << 32 | tid: 0 a process, 2 its GPU, 3 a GPU track (threads: below) */
	for (size_t i = 0; i < t->nl; i++)
		keys[n++] = (__u64)t->l[i].pid << 32;
	for (size_t i = 0; i < t->na; i++) {
		keys[n++] = 2ull << 62 | (__u64)t->a[i].pid << 32;
		keys[n++] = 3ull << 62 | (__u64)t->a[i].pid << 32 | act_tid(&t->a[i], over && over[i]);
	}
	qsort(keys, n, sizeof(*keys), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		__u32 kind = (__u32)(keys[i] >> 62), pid = (__u32)(keys[i] >> 32) & 0x3fffffffu;
		__u32 tid = (__u32)keys[i];
		const char *comm = nm->process ? nm->process(nm->ctx, pid) : NULL;

		if (i && keys[i] == keys[i - 1])
			continue;
		if (kind == 0) {
			/* Its pid is the viewers' to add: each shows it beside the name. */
			meta(o, first, "process_name", pid, 0, false, comm ? comm : "?");
		} else if (kind == 2) {
			snprintf(name, sizeof(name), "GPU of %s (pid %u)", comm ? comm : "?", pid);
			meta(o, first, "process_name", GPU_PID(pid), 0, false, name);
		} else if (kind == 3) {
			snprintf(name, sizeof(name), "device %u stream %u%s", (tid >> 24) & 0x7fu, tid & 0xffffffu,
				 tid & GPU_TID_OVERLAP ? " (overlapping)" : "");
			meta(o, first, "thread_name", GPU_PID(pid), tid, true, name);
		}
	}
	/* Every launching thread by its tid. */
	for (size_t i = 0; i < t->nl; i++)
		keys[i] = (__u64)t->l[i].pid << 32 | t->l[i].tid;
	qsort(keys, t->nl, sizeof(*keys), cmp_u64);
	for (size_t i = 0; i < t->nl; i++) {
		if (i && keys[i] == keys[i - 1])
			continue;
		snprintf(name, sizeof(name), "thread %u", (__u32)keys[i]);
		meta(o, first, "thread_name", (__u32)(keys[i] >> 32), (__u32)keys[i], true, name);
	}
	free(keys);
	return 0;
}

/* A slice ("X") on pid/tid from start to end. */
static void slice(struct out *o, bool *first, const char *cat, const char *name, __u32 pid, __u32 tid,
		  __u64 start, __u64 end, __u64 base)
{
	event_sep(o, first);
	out__printf(o, "{\"ph\":\"X\",\"cat\":\"%s\",\"pid\":%u,\"tid\":%u", cat, pid, tid);
	out__ts(o, "ts", start, base);
	out__dur(o, start, end, base);
	OUT_LIT(o, ",\"name\":");
	out__str(o, name);
}

/* A launch call: its stack's frames root first, then the call, each inside the one before. */
static void write_launch(const struct tlaunch *l, struct out *o, bool *first,
			 const struct trace_names *nm, const char **names, __u64 base)
{
	__u32 n = nm->frames && l->stack ? nm->frames(nm->ctx, l->stack, names, TRACE_MAX_FRAMES) : 0;

	for (__u32 i = n; i > 0; i--) {
		slice(o, first, "stack", names[i - 1], l->pid, l->tid, l->start, l->end, base);
		OUT_LIT(o, "}");
	}
	slice(o, first, "launch", nm->api ? nm->api(nm->ctx, l->probe) : "launch", l->pid, l->tid,
	      l->start, l->end, base);
	out__printf(o, ",\"args\":{\"correlation\":%llu}}", (unsigned long long)l->corr);
}

/*
 * An activity: its slice, and an arrow from its call when that call is in
 * the trace (kept: a call's flow key -> its index + 1). Each arrow has an id
 * of its own, the activity's index + 1: a graph launch's one call sends an
 * arrow to each of its kernels. A joined activity whose call came after the
 * calls' bound says so, as one with no known call does.
 */
static void write_activity(const struct trace *t, size_t i, bool overlap, struct out *o, bool *first,
			   const struct trace_names *nm, const struct u64map *kept, __u64 base)
{
	const struct tactivity *a = &t->a[i];
	__u64 li = 0;
	bool arrow = a->joined && u64map__get(kept, FLOW_ID(a->pid, a->corr), &li) && li;
	const char *raw = nm->activity ? nm->activity(nm->ctx, a->name_id) : NULL;
	char *pretty = demangle__or_copy(raw ? raw : "[unknown]");
	__u32 pid = GPU_PID(a->pid), tid = act_tid(a, overlap);

	slice(o, first, "gpu", pretty ? pretty : "[unknown]", pid, tid, a->start, a->end, base);
	free(pretty);
	out__printf(o, ",\"args\":{\"correlation\":%llu,\"device\":%u,\"stream\":%u%s}}",
		    (unsigned long long)a->corr, a->device, a->stream,
		    arrow ? "" : a->joined ? ",\"launch\":\"not kept\"" : ",\"launch\":\"unknown\"");
	if (!arrow)
		return;
	event_sep(o, first);
	out__printf(o, "{\"ph\":\"s\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":%zu,\"pid\":%u,\"tid\":%u",
		    i + 1, t->l[li - 1].pid, t->l[li - 1].tid);
	out__ts(o, "ts", t->l[li - 1].start, base);
	OUT_LIT(o, "}");
	event_sep(o, first);
	out__printf(o, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":%zu,"
		       "\"pid\":%u,\"tid\":%u", i + 1, pid, tid);
	out__ts(o, "ts", a->start, base);
	OUT_LIT(o, "}");
}

static __u64 first_ns(const struct trace *t)
{
	__u64 base = UINT64_MAX;

	for (size_t i = 0; i < t->nl; i++)
		base = t->l[i].start < base ? t->l[i].start : base;
	for (size_t i = 0; i < t->na; i++)
		base = t->a[i].start < base ? t->a[i].start : base;
	return base == UINT64_MAX ? 0 : base;
}

static int write_all(const struct trace *t, struct out *o, const struct trace_names *nm)
{
	const char **names = malloc(TRACE_MAX_FRAMES * sizeof(*names));
	__u64 base = first_ns(t);
	struct u64map kept;
	bool first = true, *over;
	int err;

	if (!names || u64map__init(&kept, 0)) {
		free(names);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->nl; i++)
		if (u64map__put(&kept, FLOW_ID(t->l[i].pid, t->l[i].corr), i + 1)) {
			u64map__fini(&kept);
			free(names);
			return -ENOMEM;
		}
	out__printf(o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"gpuprobe-bpf\","
		       "\"clock\":\"CLOCK_MONOTONIC\",\"base_ns\":%llu,\"launches\":%llu,\"launches_not_kept\":%llu,\"activities\":%llu,"
		       "\"activities_not_kept\":%llu,\"limits\":\"%u launches, %u activities\"},"
		       "\"traceEvents\":[",
		    (unsigned long long)base, (unsigned long long)t->st.launches,
		    (unsigned long long)t->st.launches_dropped,
		    (unsigned long long)t->st.activities, (unsigned long long)t->st.activities_dropped,
		    TRACE_MAX_LAUNCHES, TRACE_MAX_ACTIVITIES);
	over = overlaps(t);
	err = write_meta(t, over, o, &first, nm);
	for (size_t i = 0; !err && i < t->nl; i++)
		write_launch(&t->l[i], o, &first, nm, names, base);
	for (size_t i = 0; !err && i < t->na; i++)
		write_activity(t, i, over && over[i], o, &first, nm, &kept, base);
	OUT_LIT(o, "\n]}\n");
	u64map__fini(&kept);
	free(names);
	free(over);
	return err;
}

int trace__write(const struct trace *t, const char *path, const struct trace_names *names)
{
	struct out *o = malloc(sizeof(*o));
	char tmp[PATH_MAX];
	int fd, err;

	if (!o)
		return -ENOMEM;
	fd = atomic_file__open(path, tmp, sizeof(tmp));
	if (fd < 0) {
		free(o);
		return fd;
	}
	o->fd = fd;
	o->err = 0;
	o->n = 0;
	err = write_all(t, o, names);
	out__flush(o);
	err = err ? err : o->err;
	free(o);
	if (err) {
		atomic_file__abort(fd, tmp);
		return err;
	}
	return atomic_file__commit(fd, tmp, path);
}
