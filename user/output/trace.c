/* SPDX-License-Identifier: MIT */
/* The timeline in trace-event JSON (trace.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
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

/* "12.345": ns - base in microseconds, the ns kept. */
static void us_str(char *buf, size_t size, __u64 ns, __u64 base)
{
	__u64 d = ns > base ? ns - base : 0;

	snprintf(buf, size, "%llu.%03llu", (unsigned long long)(d / 1000), (unsigned long long)(d % 1000));
}

static void out__ts(struct out *o, const char *key, __u64 ns, __u64 base)
{
	char us[32];

	us_str(us, sizeof(us), ns, base);
	out__printf(o, ",\"%s\":%s", key, us);
}

/*
 * A slice's duration, as a viewer adds it to its start. Viewers read both
 * as doubles and end the slice at ts + dur, rounded: one of eight slices
 * that end exactly where the next begins (kernels back to back on a stream)
 * would end a fraction of a ns after it, and a viewer that needs slices
 * nested (speedscope) then leaves the first open to the end of the track.
 * So dur is the double that, added to ts's double, gives exactly the
 * double of the end's own time: "2.500" where that sum is already exact,
 * else its 17 digits.
 */
static void out__dur(struct out *o, __u64 start, __u64 end, __u64 base)
{
	char ts[32], te[32], dur[40];
	double t, e, d;

	us_str(ts, sizeof(ts), start, base);
	us_str(te, sizeof(te), end, base);
	us_str(dur, sizeof(dur), end, start);
	t = strtod(ts, NULL);
	e = strtod(te, NULL);
	d = strtod(dur, NULL);
	if (t + d != e) {
		d = e - t;
		for (int i = 0; i < 8 && t + d > e; i++)
			d = nextafter(d, 0.0);
		for (int i = 0; i < 8 && t + d < e; i++)
			d = nextafter(d, INFINITY);
		snprintf(dur, sizeof(dur), "%.17g", d);
	}
	out__printf(o, ",\"dur\":%s", dur);
}

/* A process's GPU: a track group of its own, one track per device and stream. */
#define GPU_PID(pid) (0x40000000u | (pid))
#define GPU_TID(dev, stream) (((dev) & 0x7fu) << 24 | ((stream) & 0xffffffu))
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

/* Names each process, its threads, its GPU and that GPU's tracks: once each. */
static int write_meta(const struct trace *t, struct out *o, bool *first, const struct trace_names *nm)
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
		keys[n++] = 3ull << 62 | (__u64)t->a[i].pid << 32 | GPU_TID(t->a[i].device, t->a[i].stream);
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
			snprintf(name, sizeof(name), "device %u stream %u", tid >> 24, tid & 0xffffffu);
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
static void write_activity(const struct trace *t, size_t i, struct out *o, bool *first,
			   const struct trace_names *nm, const struct u64map *kept, __u64 base)
{
	const struct tactivity *a = &t->a[i];
	__u64 li = 0;
	bool arrow = a->joined && u64map__get(kept, FLOW_ID(a->pid, a->corr), &li) && li;
	const char *raw = nm->activity ? nm->activity(nm->ctx, a->name_id) : NULL;
	char *pretty = demangle__or_copy(raw ? raw : "[unknown]");
	__u32 pid = GPU_PID(a->pid), tid = GPU_TID(a->device, a->stream);

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
	bool first = true;
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
	err = write_meta(t, o, &first, nm);
	for (size_t i = 0; !err && i < t->nl; i++)
		write_launch(&t->l[i], o, &first, nm, names, base);
	for (size_t i = 0; !err && i < t->na; i++)
		write_activity(t, i, o, &first, nm, &kept, base);
	OUT_LIT(o, "\n]}\n");
	u64map__fini(&kept);
	free(names);
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
