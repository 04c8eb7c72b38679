/* SPDX-License-Identifier: MIT */
/*
 * Root-only: loads the real launch probe, attaches its uprobes to functions
 * of this very binary that carry libcuda's names and signatures, calls them
 * from several threads and checks every event: exact counts, arguments,
 * thread ids, and a stack that contains the calling function.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "user/probe/launch_probe.h"
#include "user/ingest/event_pump.h"
#include "user/session/stack_cache.h"
#include "user/probe/entry_points.h"
#include "user/probe/uprobe_multi.h"
#include "tests/progs/engine/engine.h"

#define THREADS 4
#define CALLS 2500

/* Same names and argument layout as the driver's; the probes read them. */
__attribute__((noinline, used)) int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
						   unsigned bx, unsigned by, unsigned bz, unsigned shmem,
						   void *stream, void **params, void **extra)
{
	__asm__ volatile("" ::: "memory");
	return (int)(gx + gy + gz + bx + by + bz + shmem) + (stream != NULL) + (params != NULL) +
	       (extra != NULL) + (f != NULL);
}

struct launch_config {
	unsigned grid[3], block[3], shmem;
	void *stream;
	void *attrs;
	unsigned nattrs;
};

__attribute__((noinline, used)) int cuLaunchKernelEx(const struct launch_config *c, void *f,
						     void **params, void **extra)
{
	__asm__ volatile("" ::: "memory");
	return (int)c->grid[0] + (f != NULL) + (params != NULL) + (extra != NULL);
}

__attribute__((noinline)) static void call_site(uintptr_t tid)
{
	for (int i = 0; i < CALLS; i++)
		cuLaunchKernel((void *)0x1234, 3, 2, 1, 128, 1, 1, 0, (void *)(0x5000 + tid), NULL, NULL);
	__asm__ volatile("" ::: "memory");
}

static void *thread_main(void *arg)
{
	call_site((uintptr_t)arg);
	return NULL;
}

struct seen {
	unsigned launches, ex, bad_args, with_site, threads_mismatch;
	pid_t pid;
	uintptr_t site_lo, site_hi;
};

static int on_event(void *ctx, const struct gp_launch_event *e, size_t size)
{
	struct seen *s = ctx;

	if (e->pid != (__u32)s->pid)
		return 0;
	if (size < GP_LAUNCH_EVENT_HDR + 8ull * e->nr_frames)
		s->bad_args++;
	if (e->probe == GP_PROBE_LAUNCH_KERNEL_EX) {
		s->ex++;
		if (e->grid[0] != 7 || e->block[2] != 9 || e->stream != 0x7777 || e->func != 0x4321)
			s->bad_args++;
		return 0;
	}
	if (e->probe != GP_PROBE_LAUNCH_KERNEL)
		return 0;
	s->launches++;
	if (e->func != 0x1234 || e->grid[0] != 3 || e->grid[1] != 2 || e->grid[2] != 1 ||
	    e->block[0] != 128 || e->block[1] != 1 || e->block[2] != 1 || e->stream < 0x5000 ||
	    e->stream > 0x5000 + THREADS)
		s->bad_args++;
	if (e->tid == (__u32)s->pid)
		s->threads_mismatch++; /* launches come from the worker threads only */
	/* Same pid namespace as the test: the namespace's ids are the host's. */
	if (e->ns_tid != e->tid || e->ns_pid != e->pid)
		s->bad_args++;
	for (__u32 i = 0; i < e->nr_frames && i < GP_MAX_STACK; i++) {
		if (e->stack[i] >= s->site_lo && e->stack[i] < s->site_hi) {
			s->with_site++;
			break;
		}
	}
	return 0;
}

/* This binary's path. */
static void self_exe(char exe[4096])
{
	ssize_t n = readlink("/proc/self/exe", exe, 4095);

	assert_true(n > 0);
	exe[n] = 0;
}

/* The probe with options o attached to this binary's stand-ins, following this process. */
static struct launch_probe *probe_self_with(const struct launch_probe_opts *o)
{
	struct launch_attach_result res;
	struct launch_probe *lp = NULL;
	char exe[4096];

	self_exe(exe);
	assert_int_equal(launch_probe__open(o, &lp), 0);
	assert_int_equal(launch_probe__attach_file(lp, exe, &res), 0);
	assert_true(res.attached >= 2);
	assert_int_equal(launch_probe__follow(lp, getpid()), 0);
	return lp;
}

static struct launch_probe *probe_self(void)
{
	struct launch_probe_opts o = { .filter_pids = true, .ringbuf_bytes = 64 << 20,
				       .wakeup_bytes = 1 << 20 };

	return probe_self_with(&o);
}

/* THREADS threads of CALLS launches each, joined. */
static void launch_from_threads(void)
{
	pthread_t th[THREADS];

	for (uintptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, thread_main, (void *)i), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
}

static void test_every_launch_arrives_once_with_its_arguments_and_stack(void **state)
{
	struct launch_probe *lp = probe_self();
	struct seen s = { .pid = getpid() };
	__u64 ctr[GP_BPF_COUNTER_MAX];
	__u64 one;
	struct launch_config cfg = { .grid = { 7, 1, 1 }, .block = { 1, 1, 9 }, .stream = (void *)0x7777 };

	s.site_lo = (uintptr_t)call_site;
	s.site_hi = s.site_lo + 256;
	/* The way asked for (or the kernel's default) is the way taken: both are tested. */
	assert_int_equal(launch_probe__uses_multi(lp), uprobe_multi__wanted());
	print_message("  uprobes: %s\n", launch_probe__uses_multi(lp) ? "multi link" : "perf, one each");
	launch_from_threads();
	cuLaunchKernelEx(&cfg, (void *)0x4321, NULL, NULL);

	for (int i = 0; i < 5; i++)
		assert_int_equal(launch_probe__poll(lp, 20, on_event, &s), 0);
	assert_int_equal(s.launches, THREADS * CALLS);
	assert_int_equal(s.ex, 1);
	assert_int_equal(s.bad_args, 0);
	assert_int_equal(s.threads_mismatch, 0);
	assert_int_equal(s.with_site, THREADS * CALLS);
	assert_int_equal(launch_probe__counters(lp, ctr), 0);
	assert_int_equal(ctr[GP_BPF_RINGBUF_FULL], 0);
	assert_true(ctr[GP_BPF_EVENTS] >= THREADS * CALLS + 1);
	/* One counter read alone is the sum read with the rest (nothing launches now). */
	assert_int_equal(launch_probe__counter(lp, GP_BPF_EVENTS, &one), 0);
	assert_int_equal(one, ctr[GP_BPF_EVENTS]);
	assert_int_equal(launch_probe__counter(lp, GP_BPF_COUNTER_MAX, &one), -EINVAL);
	launch_probe__destroy(lp);
}

static int count_launches(void *ctx, const struct gp_launch_event *e, size_t size)
{
	struct seen *s = ctx;

	if (e->pid == (__u32)s->pid && e->probe == GP_PROBE_LAUNCH_KERNEL)
		s->launches++;
	return 0;
}

/* The open file descriptors of this process. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}

/*
 * A destroyed probe leaves nothing attached: every uprobe and tracepoint
 * link (the mapping and ring watches', destroyed side by side), program and
 * map goes with it. A link left behind would keep its fd open here.
 */
static void test_a_destroyed_probe_leaves_no_link_behind(void **state)
{
	struct launch_probe_opts o = { .filter_pids = true, .ringbuf_bytes = 1 << 20,
				       .wakeup_bytes = 1 << 16, .cache_entries = 16 };
	int before = open_fds(), during;
	struct launch_probe *lp;

	(void)state;
	lp = probe_self_with(&o);
	during = open_fds();
	launch_probe__destroy(lp);
	/* the programs, maps, rings and at least the six watch links */
	assert_true(during >= before + 6);
	assert_int_equal(open_fds(), before);
}

/*
 * The pump's queue bounded at 16 KiB (a few dozen events) under 10,000
 * launches: at the bound the pump waits and the events wait in the BPF ring,
 * none lost; the ring position taken after the launches is reached.
 */
static void test_a_full_pump_queue_holds_events_back_and_loses_none(void **state)
{
	struct launch_probe *lp = probe_self();
	struct event_pump pump;
	struct seen s = { .pid = getpid() };
	__u64 ctr[GP_BPF_COUNTER_MAX], mark;
	unsigned rounds = 0, short_rounds = 0;

	assert_int_equal(event_pump__start(&pump, lp, 16 << 10), 0);
	launch_from_threads();
	mark = event_pump__mark(&pump);
	for (;;) {
		bool reached = event_pump__reached(&pump, mark);

		assert_int_equal(event_pump__drain(&pump, count_launches, &s), 0);
		rounds++;
		if (reached)
			break;
		short_rounds++;
		assert_true(rounds < 100000);
	}
	print_message("  %u drains, %u with the queue full, peak %zu bytes\n", rounds, short_rounds,
		      event_pump__peak_bytes(&pump));
	assert_int_equal(s.launches, THREADS * CALLS);
	assert_true(short_rounds > 0); /* the bound was met */
	assert_true(event_pump__peak_bytes(&pump) <= 16 << 10);
	assert_int_equal(launch_probe__counters(lp, ctr), 0);
	assert_int_equal(ctr[GP_BPF_RINGBUF_FULL], 0);
	event_pump__stop(&pump);
	launch_probe__destroy(lp);
}

static void test_an_unfollowed_process_sends_nothing(void **state)
{
	struct launch_probe_opts o = { .filter_pids = true, .ringbuf_bytes = 1 << 20, .wakeup_bytes = 4096 };
	struct launch_attach_result res;
	struct launch_probe *lp = NULL;
	struct seen s = { .pid = getpid() };
	__u64 ctr[GP_BPF_COUNTER_MAX];
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	assert_true(n > 0);
	exe[n] = 0;
	assert_int_equal(launch_probe__open(&o, &lp), 0);
	assert_int_equal(launch_probe__attach_file(lp, exe, &res), 0);
	/* Attaching the same file twice is a no-op, not a second set of probes. */
	assert_int_equal(launch_probe__attach_file(lp, exe, &res), 0);
	assert_true(res.already);
	assert_int_equal(launch_probe__nr_files(lp), 1);
	call_site(0);
	assert_int_equal(launch_probe__poll(lp, 10, on_event, &s), 0);
	assert_int_equal(s.launches, 0);
	assert_int_equal(launch_probe__counters(lp, ctr), 0);
	assert_int_equal(ctr[GP_BPF_FILTERED], CALLS);
	launch_probe__destroy(lp);
}

static void test_a_file_without_launch_entry_points_is_refused(void **state)
{
	struct launch_probe_opts o = { .ringbuf_bytes = 1 << 20, .wakeup_bytes = 4096 };
	struct launch_attach_result res;
	struct launch_probe *lp = NULL;

	assert_int_equal(launch_probe__open(&o, &lp), 0);
	assert_int_equal(launch_probe__attach_file(lp, "/bin/true", &res), -ENOENT);
	assert_int_equal(launch_probe__attach_file(lp, "/nonexistent/libcuda.so.1", &res), -ENOENT);
	launch_probe__destroy(lp);
}

__attribute__((noinline)) static void launch_once(void)
{
	cuLaunchKernel((void *)0x1234, 3, 2, 1, 128, 1, 1, 0, NULL, NULL, NULL);
	__asm__ volatile("" ::: "memory");
}

struct copies {
	unsigned events, with_copy, skipped, copy_ok, copy_after_skip;
	uintptr_t site_lo, site_hi;
};

/*
 * A copy starts at rsp rounded down to a chunk (GP_STACK_COPY_BASE): the
 * return address is the word at rsp's offset in it.
 */
static int on_copy_event(void *ctx, const struct gp_launch_event *e, size_t size)
{
	struct copies *c = ctx;
	__u64 ra;

	c->events++;
	if (e->flags & GP_EV_F_COPY_SKIPPED) {
		c->skipped += e->stack_len == 0;
		return 0;
	}
	if (!e->stack_len || size < GP_LAUNCH_EVENT_HDR + e->stack_len ||
	    e->sp - GP_STACK_COPY_BASE(e->sp) + sizeof(ra) > e->stack_len)
		return 0;
	c->with_copy++;
	c->copy_after_skip += c->skipped > 0;
	memcpy(&ra, (const char *)e + GP_LAUNCH_EVENT_HDR + (e->sp - GP_STACK_COPY_BASE(e->sp)),
	       sizeof(ra));
	if (e->stack_len % GP_STACK_CHUNK == 0 && e->nr_frames == 0 && ra >= c->site_lo &&
	    ra < c->site_hi)
		c->copy_ok++;
	return 0;
}

static void test_a_stack_copy_starts_at_rsp_and_a_busy_ring_sends_events_without_one(void **state)
{
	/* 64 KiB ring, 16 KiB copies: past half full, copies stay behind. */
	struct launch_probe_opts o = { .filter_pids = true, .ringbuf_bytes = 64 << 10,
				       .wakeup_bytes = 1 << 20, .stack_copy = 16 << 10 };
	struct launch_probe *lp = probe_self_with(&o);
	struct copies c = { .site_lo = (uintptr_t)launch_once, .site_hi = (uintptr_t)launch_once + 256 };
	__u64 ctr[GP_BPF_COUNTER_MAX];

	(void)state;
	for (int i = 0; i < 40; i++) /* nothing drains meanwhile */
		launch_once();
	assert_int_equal(launch_probe__poll(lp, 20, on_copy_event, &c), 0);
	assert_int_equal(launch_probe__counters(lp, ctr), 0);
	assert_int_equal(c.events, 40);
	assert_int_equal(ctr[GP_BPF_RINGBUF_FULL], 0);
	/* copies until the ring is half full, then none: every event still sent */
	assert_true(c.with_copy >= 1);
	assert_true(c.skipped >= 1);
	assert_int_equal(c.with_copy + c.skipped, 40);
	assert_int_equal(c.copy_after_skip, 0);
	assert_int_equal(c.copy_ok, c.with_copy);
	assert_int_equal(ctr[GP_BPF_COPY_SKIPPED], c.skipped);
	launch_probe__destroy(lp);
}

/*
 * DESIGN.md invariant 4: a launch the ring has no room for is counted, not
 * lost silently. A 16 KiB ring nobody drains takes some of 400 launches;
 * those it takes arrive, and every other one is in ringbuf_full.
 */
static void test_a_full_ring_counts_every_launch_it_had_no_room_for(void **state)
{
	struct launch_probe_opts o = { .filter_pids = true, .ringbuf_bytes = 16 << 10,
				       .wakeup_bytes = 1 << 20, .stack_copy = 1024 };
	struct launch_probe *lp = probe_self_with(&o);
	struct copies c = { .site_lo = (uintptr_t)launch_once, .site_hi = (uintptr_t)launch_once + 256 };
	__u64 ctr[GP_BPF_COUNTER_MAX];

	(void)state;
	for (int i = 0; i < 400; i++) /* nothing drains meanwhile */
		launch_once();
	assert_int_equal(launch_probe__poll(lp, 20, on_copy_event, &c), 0);
	assert_int_equal(launch_probe__counters(lp, ctr), 0);
	assert_true(c.events >= 1);
	assert_true(ctr[GP_BPF_RINGBUF_FULL] >= 1);
	assert_int_equal(c.events + ctr[GP_BPF_RINGBUF_FULL], 400);
	launch_probe__destroy(lp);
}

static __u64 mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

struct poller {
	struct launch_probe *lp;
	struct copies c;
	__u64 waited_ms, consumed;
	pid_t tid;
	int err;
};

#define WAKEUP_POLL_MS 20000

static void *poll_once(void *arg)
{
	struct poller *p = arg;
	__u64 t0 = mono_ms(), reserved;

	__atomic_store_n(&p->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	p->err = launch_probe__poll(p->lp, WAKEUP_POLL_MS, on_copy_event, &p->c);
	p->waited_ms = mono_ms() - t0;
	launch_probe__ring_positions(p->lp, &p->consumed, &reserved);
	return NULL;
}

/* True once thread tid of this process sleeps in epoll_wait (its syscall, first in the file). */
static bool sleeps_in_epoll(pid_t tid)
{
	char path[64], state[16] = "";
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (f) {
		/* "pid (comm) S ...": this test's threads have no ')' in their comm. */
		if (fscanf(f, "%*d (%*[^)]) %15s", state) != 1)
			state[0] = 0;
		fclose(f);
	}
	return (nr == SYS_epoll_wait || nr == SYS_epoll_pwait) && !strcmp(state, "S");
}

/*
 * Launches paced a millisecond apart: a reader woken early (by any record
 * but the one that crosses the mark) would have read less than the mark.
 */
#define WAKEUP_LAUNCHES 40

static void test_a_ring_past_its_wakeup_mark_wakes_its_reader(void **state)
{
	/* 2 KiB copies: the 64 KiB mark is crossed by about the 30th launch. */
	struct launch_probe_opts o = { .filter_pids = true, .ringbuf_bytes = 1 << 20,
				       .wakeup_bytes = 64 << 10, .stack_copy = 2 << 10 };
	struct poller p = { .c = { .site_lo = (uintptr_t)launch_once,
				   .site_hi = (uintptr_t)launch_once + 256 } };
	__u64 t0, consumed, reserved;
	struct copies rest;
	pthread_t th;
	pid_t tid;

	(void)state;
	p.lp = probe_self_with(&o);
	assert_int_equal(pthread_create(&th, NULL, poll_once, &p), 0);
	/* The reader asleep in its poll before the first launch: 10 s only fails a broken run. */
	t0 = mono_ms();
	while (!(tid = __atomic_load_n(&p.tid, __ATOMIC_ACQUIRE)) || !sleeps_in_epoll(tid)) {
		assert_true(mono_ms() - t0 < 10000);
		usleep(1000);
	}
	for (int i = 0; i < WAKEUP_LAUNCHES; i++) {
		launch_once();
		usleep(1000);
	}
	pthread_join(th, NULL);
	launch_probe__ring_positions(p.lp, &consumed, &reserved);
	rest = p.c;
	assert_int_equal(launch_probe__poll(p.lp, 0, on_copy_event, &rest), 0);
	print_message("  woken after %llu ms having read %llu bytes (%u events) of %llu\n",
		      (unsigned long long)p.waited_ms, (unsigned long long)p.consumed, p.c.events,
		      (unsigned long long)reserved);
	assert_int_equal(p.err, 0);
	/*
	 * Woken, not timed out: the events before the mark go without a wakeup,
	 * so the kernel's default (wake only for a record at the reader's
	 * position) never would. And woken by the record that crossed the mark,
	 * not before: the first read took the mark's worth of records at least.
	 */
	assert_true(p.waited_ms < WAKEUP_POLL_MS / 2);
	assert_true(p.consumed >= o.wakeup_bytes);
	assert_true(p.c.events >= 1 && p.c.events <= WAKEUP_LAUNCHES);
	/* The rest drained by a second read: every launch arrived, each with its copy. */
	assert_int_equal(rest.events, WAKEUP_LAUNCHES);
	assert_int_equal(rest.with_copy, WAKEUP_LAUNCHES);
	assert_int_equal(rest.copy_ok, WAKEUP_LAUNCHES);
	launch_probe__destroy(p.lp);
}

/* The stack_len and flags of each of this process's launch events, in order. */
struct lens {
	unsigned n;
	__u32 len[8];
	__u16 flags[8];
};

static int on_len_event(void *ctx, const struct gp_launch_event *e, size_t size)
{
	struct lens *l = ctx;

	(void)size;
	if (e->pid == (__u32)getpid() && e->probe == GP_PROBE_LAUNCH_KERNEL && l->n < 8) {
		l->flags[l->n] = e->flags;
		l->len[l->n++] = e->stack_len;
	}
	return 0;
}

/* A Python runtime whose interpreter list is empty: the walk ends at step 1. */
static __u64 no_interpreters;

/*
 * The BPF side keeps each thread's filter, copy size and Python answers
 * between launches: a change the loader makes must apply from the very next
 * launch of a thread that launched before it.
 */
static void test_a_new_copy_size_filter_or_python_applies_from_the_next_launch(void **state)
{
	struct gp_py_config py = { .interp_head_addr = (__u64)(uintptr_t)&no_interpreters };
	struct launch_probe_opts o = { .filter_pids = true, .ringbuf_bytes = 1 << 20,
				       .wakeup_bytes = 1 << 20, .stack_copy = 16 << 10 };
	struct launch_probe *lp = probe_self_with(&o);
	struct lens l = { 0 };
	__u64 ctr[GP_BPF_COUNTER_MAX];
	__u32 tid = (__u32)syscall(SYS_gettid);

	(void)state;
	launch_once();
	assert_int_equal(launch_probe__set_copy_hint(lp, tid, GP_STACK_CHUNK), 0);
	launch_once();
	assert_int_equal(launch_probe__unfollow(lp, getpid()), 0);
	launch_once(); /* not followed: no event */
	assert_int_equal(launch_probe__follow(lp, getpid()), 0);
	assert_int_equal(launch_probe__set_copy_hint(lp, tid, 2 * GP_STACK_CHUNK), 0);
	launch_once();
	assert_int_equal(launch_probe__set_python(lp, getpid(), &py), 0);
	launch_once(); /* walked: no runtime */
	assert_int_equal(launch_probe__set_python(lp, getpid(), NULL), 0);
	launch_once();
	assert_int_equal(launch_probe__poll(lp, 10, on_len_event, &l), 0);
	assert_int_equal(launch_probe__counters(lp, ctr), 0);
	print_message("  copies: %u %u %u bytes\n", l.len[0], l.len[1], l.len[2]);
	assert_int_equal(l.n, 5);
	assert_true(l.len[0] > 2 * GP_STACK_CHUNK); /* stack_copy, bounded by the stack */
	assert_int_equal(l.len[1], GP_STACK_CHUNK);
	assert_int_equal(l.len[2], 2 * GP_STACK_CHUNK);
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(!!(l.flags[i] & GP_EV_F_PY), i == 3);
	assert_int_equal(l.flags[3] >> GP_EV_PY_STATUS_SHIFT & 7, GP_PY_WALK_NO_RUNTIME);
	assert_int_equal(ctr[GP_BPF_FILTERED], 1);
	launch_probe__destroy(lp);
}

struct whole {
	unsigned events, whole;
};

/*
 * A record is whole when its copy ends with what the stack holds there now:
 * the frames above the test function's did not change meanwhile.
 */
static int on_whole_event(void *ctx, const struct gp_launch_event *e, size_t size)
{
	struct whole *w = ctx;
	__u64 base = GP_STACK_COPY_BASE(e->sp), last;

	if (e->pid != (__u32)getpid() || e->probe != GP_PROBE_LAUNCH_KERNEL)
		return 0;
	w->events++;
	if (!e->stack_len || size != GP_LAUNCH_EVENT_HDR + 16ull * e->nr_py + e->stack_len ||
	    e->func != 0x1234 || e->grid[0] != 3 || e->block[0] != 128)
		return 0;
	memcpy(&last, (const char *)e + size - sizeof(last), sizeof(last));
	w->whole += last == *(const __u64 *)(uintptr_t)(base + e->stack_len - sizeof(last));
	return 0;
}

/*
 * The reader maps the ring's data once: a record that runs past its end is
 * put together from the end and the start. 2 KiB copies in a 16 KiB ring,
 * read every two launches: the records wrap around it many times.
 */
static void test_records_that_run_past_the_rings_end_arrive_whole(void **state)
{
	struct launch_probe_opts o = { .filter_pids = true, .ringbuf_bytes = 16 << 10,
				       .wakeup_bytes = 1 << 20, .stack_copy = 2 << 10 };
	struct launch_probe *lp = probe_self_with(&o);
	struct whole w = { 0 };
	__u64 ctr[GP_BPF_COUNTER_MAX], consumed, reserved;

	(void)state;
	for (int i = 0; i < 100; i++) {
		launch_once();
		if (i % 2)
			assert_int_equal(launch_probe__poll(lp, 0, on_whole_event, &w), 0);
	}
	assert_int_equal(launch_probe__counters(lp, ctr), 0);
	launch_probe__ring_positions(lp, &consumed, &reserved);
	print_message("  %u of %u whole, %llu bytes through the ring\n", w.whole, w.events,
		      (unsigned long long)consumed);
	assert_int_equal(w.events, 100);
	assert_int_equal(w.whole, 100);
	assert_int_equal(consumed, reserved);
	assert_true(consumed > 8 * (16 << 10)); /* eight laps or more */
	assert_int_equal(ctr[GP_BPF_COPY_SKIPPED], 0);
	launch_probe__destroy(lp);
}

/* The launch events of this process, each kept whole (header, size). */
struct kept {
	unsigned n;
	struct gp_launch_event e[8];
	size_t size[8];
};

static int on_keep_event(void *ctx, const struct gp_launch_event *e, size_t size)
{
	struct kept *k = ctx;

	if (e->pid == (__u32)getpid() && e->probe == GP_PROBE_LAUNCH_KERNEL && k->n < 8) {
		memcpy(&k->e[k->n], e, GP_LAUNCH_EVENT_HDR);
		k->size[k->n++] = size;
	}
	return 0;
}

/* One launch from launch_once, as its event came. */
static struct gp_launch_event one_launch(struct launch_probe *lp, size_t *ret_size)
{
	struct kept k = { 0 };

	launch_once();
	assert_int_equal(launch_probe__poll(lp, 10, on_keep_event, &k), 0);
	assert_int_equal(k.n, 1);
	*ret_size = k.size[0];
	return k.e[0];
}

/*
 * The launch program's half of the stack cache: a miss comes whole and
 * keyed; with its key in the map, the next launch is a hit (the header
 * alone, no copy, no Python frames, the entry's id); a split entry sends
 * the program to look again with the word it names (here the return
 * address at sp, offset 0) filled in, and only the right word hits; a
 * young entry's hits and an unusable entry's launches come whole with its
 * id (audits; not keyed); audits (every hit, --stack-audit 1) likewise.
 */
static void test_a_launch_whose_key_is_held_is_sent_without_its_stack(void **state)
{
	struct launch_probe_opts o = { .filter_pids = true, .ringbuf_bytes = 1 << 20,
				       .wakeup_bytes = 1 << 20, .stack_copy = 16 << 10,
				       .cache_entries = 16 };
	struct launch_probe *lp = probe_self_with(&o);
	struct gp_stack_val v = { .id = 77 };
	struct gp_launch_event e;
	struct gp_stack_key k, child;
	size_t size;

	(void)state;
	assert_true(launch_probe__cache_on(lp));
	e = one_launch(lp, &size);
	assert_true(e.flags & GP_EV_F_KEYED);
	assert_true(e.stack_len > 0 && size > GP_LAUNCH_EVENT_HDR);
	assert_int_equal(e.cache_id, 0);
	stack_cache__key_of(&e, &k);
	assert_int_equal(launch_probe__cache_put(lp, &k, &v), 0);

	e = one_launch(lp, &size);
	assert_true(e.flags & GP_EV_F_CACHED);
	assert_int_equal(size, GP_LAUNCH_EVENT_HDR);
	assert_int_equal(e.stack_len, 0);
	assert_int_equal(e.nr_frames + e.nr_py, 0);
	assert_int_equal(e.cache_id, 77);

	/* Split on the word at sp + 0: the child with the right word hits, another misses. */
	v = (struct gp_stack_val){ .id = 1, .flags = GP_SC_SPLIT | 1u << GP_SC_NSLOTS_SHIFT };
	assert_int_equal(launch_probe__cache_put(lp, &k, &v), 0);
	child = k;
	child.w[0] = e.ret + 1;
	v = (struct gp_stack_val){ .id = 88 };
	assert_int_equal(launch_probe__cache_put(lp, &child, &v), 0);
	e = one_launch(lp, &size);
	assert_true((e.flags & GP_EV_F_KEYED) && !(e.flags & GP_EV_F_CACHED));
	child.w[0] = e.ret;
	v.id = 99;
	assert_int_equal(launch_probe__cache_put(lp, &child, &v), 0);
	e = one_launch(lp, &size);
	assert_true(e.flags & GP_EV_F_CACHED);
	assert_int_equal(e.cache_id, 99);

	/* Young: every hit whole, an audit, with its id. */
	v = (struct gp_stack_val){ .id = 99, .flags = GP_SC_YOUNG };
	assert_int_equal(launch_probe__cache_put(lp, &child, &v), 0);
	e = one_launch(lp, &size);
	assert_true((e.flags & GP_EV_F_AUDIT) && !(e.flags & GP_EV_F_CACHED) && e.stack_len > 0);
	assert_int_equal(e.cache_id, 99);

	/* Unusable: whole, with its id, not keyed. */
	v = (struct gp_stack_val){ .id = 99, .flags = GP_SC_UNUSABLE };
	assert_int_equal(launch_probe__cache_put(lp, &child, &v), 0);
	e = one_launch(lp, &size);
	assert_true(!(e.flags & (GP_EV_F_CACHED | GP_EV_F_KEYED)) && e.stack_len > 0);
	assert_int_equal(e.cache_id, 99);
	launch_probe__destroy(lp);

	/* Every hit audited: whole, with its id. */
	o.audit_every = 1;
	o.audit_max = UINT32_MAX;
	lp = probe_self_with(&o);
	e = one_launch(lp, &size);
	stack_cache__key_of(&e, &k);
	v = (struct gp_stack_val){ .id = 55 };
	assert_int_equal(launch_probe__cache_put(lp, &k, &v), 0);
	for (int i = 0; i < 3; i++) {
		e = one_launch(lp, &size);
		assert_true((e.flags & GP_EV_F_AUDIT) && !(e.flags & GP_EV_F_CACHED));
		assert_true(e.stack_len > 0 && size > GP_LAUNCH_EVENT_HDR);
		assert_int_equal(e.cache_id, 55);
	}
	launch_probe__destroy(lp);
}

/*
 * Past a half-full ring an audit goes as the hit it is (the header alone,
 * the entry's id, counted as an audit skipped), never as a launch with no
 * stack: a young key's hits in a burst keep their stacks.
 */
static void test_an_audit_past_a_half_full_ring_goes_as_its_hit(void **state)
{
	/* 64 KiB ring, 16 KiB copies: the first audits fill it past half. */
	struct launch_probe_opts o = { .filter_pids = true, .ringbuf_bytes = 64 << 10,
				       .wakeup_bytes = 1 << 20, .stack_copy = 16 << 10,
				       .cache_entries = 16 };
	struct launch_probe *lp = probe_self_with(&o);
	struct gp_stack_val v = { .id = 42, .flags = GP_SC_YOUNG };
	struct gp_launch_event e;
	struct gp_stack_key k;
	struct kept kept = { 0 };
	__u64 ctr[GP_BPF_COUNTER_MAX];
	unsigned audits = 0, hits = 0;
	size_t size;

	(void)state;
	e = one_launch(lp, &size);
	stack_cache__key_of(&e, &k);
	assert_int_equal(launch_probe__cache_put(lp, &k, &v), 0);
	for (int i = 0; i < 8; i++) /* nothing drains meanwhile */
		launch_once();
	assert_int_equal(launch_probe__poll(lp, 20, on_keep_event, &kept), 0);
	assert_int_equal(kept.n, 8);
	for (unsigned i = 0; i < kept.n; i++) {
		assert_int_equal(kept.e[i].cache_id, 42);
		assert_false(kept.e[i].flags & GP_EV_F_COPY_SKIPPED);
		if (kept.e[i].flags & GP_EV_F_AUDIT) {
			assert_true(kept.e[i].stack_len > 0);
			assert_int_equal(hits, 0); /* audits until the ring is half full, then hits */
			audits++;
		} else {
			assert_true(kept.e[i].flags & GP_EV_F_CACHED);
			assert_int_equal(kept.size[i], GP_LAUNCH_EVENT_HDR);
			hits++;
		}
	}
	assert_true(audits >= 1 && hits >= 1);
	assert_int_equal(launch_probe__counters(lp, ctr), 0);
	assert_int_equal(ctr[GP_BPF_AUDITS_SKIPPED], hits);
	assert_int_equal(ctr[GP_BPF_CACHE_AUDITS], audits + hits);
	assert_int_equal(ctr[GP_BPF_COPY_SKIPPED], 0);
	launch_probe__destroy(lp);
}

/* ------------------------------------------------ autograd nodes in windows */

/* The stand-in autograd engine (tests/progs/engine), beside the test programs. */
struct engine_lib {
	char path[4096];
	void (*backward)(struct engine_task *task);
	void (*backward_unannounced)(struct engine_task *task);
	const unsigned char *node_entry, *begin_entry;
};

static struct launch_probe *node_lp; /* what a node that resumes the probes resumes */

static void engine_lib(struct engine_lib *ret_lib)
{
	static void *h;
	char exe[4096], *slash;
	int (*start)(void);

	self_exe(exe);
	slash = strrchr(exe, '/');
	assert_non_null(slash);
	*slash = 0;
	snprintf(ret_lib->path, sizeof(ret_lib->path), "%s/../progs/libtorch_cpu.so", exe);
	if (!h) {
		h = dlopen(ret_lib->path, RTLD_NOW);
		assert_non_null(h);
		start = (int (*)(void))dlsym(h, "engine__start");
		assert_non_null(start);
		assert_int_equal(start(), 0);
	}
	ret_lib->backward = (void (*)(struct engine_task *))dlsym(h, "engine__backward");
	ret_lib->backward_unannounced =
		(void (*)(struct engine_task *))dlsym(h, "engine__backward_unannounced");
	assert_non_null(ret_lib->backward_unannounced);
	ret_lib->node_entry = dlsym(h, autograd_points[1].symbol);
	ret_lib->begin_entry = dlsym(h, autograd_points[0].symbol);
	assert_non_null(ret_lib->backward);
	assert_non_null(ret_lib->node_entry);
	assert_non_null(ret_lib->begin_entry);
}

/* A node's work: one launch whose function names it. */
static void node_launches(void *arg)
{
	cuLaunchKernel(arg, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
}

/* A node under way when a window opens: the probes come back, then it launches. */
static void node_resumes_then_launches(void *arg)
{
	launch_probe__pause(node_lp, false);
	node_launches(arg);
}

struct passes {
	pid_t pid;
	unsigned begun;
	__u64 begin[4], of[4]; /* begin events' passes; each node's launch's pass */
};

static int on_pass_event(void *ctx, const struct gp_launch_event *e, size_t size)
{
	struct passes *p = ctx;

	(void)size;
	if (e->pid != (__u32)p->pid)
		return 0;
	if (e->probe == GP_PROBE_AUTOGRAD_EXECUTE && p->begun < 4)
		p->begin[p->begun++] = e->ts_ns;
	if (e->probe == GP_PROBE_LAUNCH_KERNEL && e->func >= 0xa0 && e->func < 0xa4)
		p->of[e->func - 0xa0] = e->autograd_pass;
	return 0;
}

/* A probe on this process, with the stand-in engine (lib) loaded and its two points attached. */
static struct launch_probe *probe_engine(struct engine_lib *lib)
{
	struct launch_probe *lp = probe_self();
	struct launch_attach_result res;

	engine_lib(lib);
	assert_int_equal(launch_probe__attach_autograd(lp, lib->path, &res), 0);
	assert_int_equal(res.missing, 0);
	return lp;
}

/* The events so far into p. */
static void poll_passes(struct launch_probe *lp, struct passes *p)
{
	for (int i = 0; i < 5; i++)
		assert_int_equal(launch_probe__poll(lp, 20, on_pass_event, p), 0);
}

/*
 * Between duty windows the autograd node probe is detached with the
 * launches (where links can be), and the pass a begin names stays probed.
 * A node the engine thread took unseen in the gap (b), at the call of its
 * node before it (a: the same return slot, the task kept at the same
 * place), names its own pass, read where its caller keeps the task: never
 * a's. Nodes taken in the window (c) name their pass too.
 */
static void test_a_node_taken_between_windows_names_its_own_pass(void **state)
{
	struct engine_lib lib;
	struct launch_probe *lp = probe_engine(&lib);
	struct passes p = { .pid = getpid() };
	struct engine_task a = { .fn = node_launches, .arg = (void *)0xa0, .nodes = 1 };
	struct engine_task b = { .fn = node_resumes_then_launches, .arg = (void *)0xa1, .nodes = 1 };
	struct engine_task c = { .fn = node_launches, .arg = (void *)0xa2, .nodes = 1 };
	bool detached = launch_probe__uses_multi(lp);
	__u64 ctr[GP_BPF_COUNTER_MAX];

	(void)state;
	node_lp = lp;
	lib.backward(&a);
	assert_int_equal(lib.node_entry[0], 0xcc);
	assert_int_equal(launch_probe__pause(lp, true), 0);
	/* A pass's begin stays probed; its nodes' probe goes where links can go. */
	assert_int_equal(lib.begin_entry[0], 0xcc);
	assert_int_equal(lib.node_entry[0] == 0xcc, !detached);
	lib.backward(&b);
	assert_int_equal(lib.node_entry[0], 0xcc);
	lib.backward(&c);
	poll_passes(lp, &p);
	assert_int_equal(p.begun, 3);
	assert_int_equal(p.of[0], p.begin[0]);
	assert_int_equal(p.of[1], p.begin[1]);
	assert_int_equal(p.of[2], p.begin[2]);
	/* And what the detached probe costs between windows: no run at all. */
	assert_int_equal(launch_probe__counters(lp, ctr), 0);
	assert_int_equal(ctr[GP_BPF_AG_NODES], detached ? 2 : 3);
	launch_probe__destroy(lp);
}

static void (*backward_here)(struct engine_task *task); /* engine__backward_here */

/* A thread named as an engine's device thread, launching in no node. */
static void *unnamed_node_launch(void *arg)
{
	pthread_setname_np(pthread_self(), "pt_autograd_9");
	node_launches(arg);
	return NULL;
}

/* The same, beginning a pass (of no node) in no node: a reentrant backward in a node unseen. */
static void *unnamed_node_begin(void *arg)
{
	struct engine_task t = { .fn = node_launches, .nodes = 0 };

	(void)arg;
	pthread_setname_np(pthread_self(), "pt_autograd_9");
	backward_here(&t);
	return NULL;
}

/*
 * The node probe taken away once the engine thread has taken a node
 * (launch_probe__quiet_nodes): later passes' nodes, at the call it learnt,
 * name their own pass, the probe never runs, and no call is learnt anew; a
 * pass begun unseen names no pass; a device thread launching, or beginning
 * a pass, in no node known asks for the probe back (GP_BPF_AG_UNLEARNED).
 * Where the probes are perf links, the probe stays and every node is seen.
 */
static void test_nodes_at_a_learnt_call_name_their_pass_with_the_node_probe_away(void **state)
{
	struct engine_lib lib;
	struct launch_probe *lp = probe_engine(&lib);
	struct passes p = { .pid = getpid() };
	struct engine_task a = { .fn = node_launches, .arg = (void *)0xa0, .nodes = 1 };
	struct engine_task b = { .fn = node_launches, .arg = (void *)0xa1, .nodes = 2 };
	struct engine_task c = { .fn = node_launches, .arg = (void *)0xa2, .nodes = 1 };
	bool detached = launch_probe__uses_multi(lp);
	__u64 ctr[GP_BPF_COUNTER_MAX], learnt;
	pthread_t th;

	(void)state;
	lib.backward(&a);
	assert_int_equal(launch_probe__counters(lp, ctr), 0);
	assert_int_equal(ctr[GP_BPF_AG_NODES], 1);
	assert_int_equal(ctr[GP_BPF_AG_LEARNED], 1);
	learnt = ctr[GP_BPF_AG_LEARNED];
	assert_int_equal(launch_probe__quiet_nodes(lp, true), 0);
	assert_int_equal(launch_probe__nodes_quiet(lp), detached); /* perf links stay */
	assert_int_equal(lib.node_entry[0] == 0xcc, !detached);
	assert_int_equal(lib.begin_entry[0], 0xcc);
	lib.backward(&b);
	lib.backward(&c);
	/* A window's pause and resume keep it away. */
	assert_int_equal(launch_probe__pause(lp, true), 0);
	assert_int_equal(launch_probe__pause(lp, false), 0);
	assert_int_equal(lib.node_entry[0] == 0xcc, !detached);
	lib.backward_unannounced(&(struct engine_task){ .fn = node_launches, .arg = (void *)0xa3, .nodes = 1 });
	poll_passes(lp, &p);
	assert_int_equal(p.begun, 3);
	assert_int_equal(p.of[0], p.begin[0]);
	assert_int_equal(p.of[1], p.begin[1]);
	assert_int_equal(p.of[2], p.begin[2]);
	assert_int_equal(p.of[3], AUTOGRAD_PASS_UNSEEN);
	assert_int_equal(launch_probe__counters(lp, ctr), 0);
	assert_int_equal(ctr[GP_BPF_AG_NODES], detached ? 1 : 5);
	assert_int_equal(ctr[GP_BPF_AG_LEARNED], learnt);
	assert_int_equal(ctr[GP_BPF_AG_UNLEARNED], 0);
	assert_int_equal(pthread_create(&th, NULL, unnamed_node_launch, (void *)0xb0), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(launch_probe__counters(lp, ctr), 0);
	assert_int_equal(ctr[GP_BPF_AG_UNLEARNED], 1);
	/* Its begin, as a launch in no node known, and as a pass begun in a node (unseen). */
	backward_here = (void (*)(struct engine_task *))dlsym(dlopen(lib.path, RTLD_NOW | RTLD_NOLOAD),
								"engine__backward_here");
	assert_non_null(backward_here);
	assert_int_equal(pthread_create(&th, NULL, unnamed_node_begin, NULL), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(launch_probe__counters(lp, ctr), 0);
	assert_int_equal(ctr[GP_BPF_AG_UNLEARNED], 3);
	/* Back: the nodes are seen again. */
	assert_int_equal(launch_probe__quiet_nodes(lp, false), 0);
	assert_int_equal(lib.node_entry[0], 0xcc);
	lib.backward(&c);
	assert_int_equal(launch_probe__counters(lp, ctr), 0);
	assert_int_equal(ctr[GP_BPF_AG_NODES], detached ? 2 : 6);
	launch_probe__destroy(lp);
}

static void (*backward_mixed)(struct engine_task *task); /* engine__backward_mixed */

/* A node that begins a reentrant backward on the engine thread: arg its inner pass. */
static void node_reenters(void *arg)
{
	backward_mixed(arg);
}

/*
 * A reentrant backward's inner node, seen (r1: the pass its thread was
 * running for when it began r1, p1), then, with the node probe away, the
 * next step's (p2's node begins r2, whose inner node runs at r1's node's
 * slot): r2's launch runs for p2, never for p1 as the node seen last would
 * say.
 */
static void test_a_node_seen_of_an_older_reentrant_pass_names_no_pass_of_the_next(void **state)
{
	struct engine_lib lib;
	struct launch_probe *lp = probe_engine(&lib);
	struct passes p = { .pid = getpid() };
	struct engine_task r1 = { .fn = node_launches, .arg = (void *)0xa0, .nodes = 1 };
	struct engine_task r2 = { .fn = node_launches, .arg = (void *)0xa1, .nodes = 1 };
	struct engine_task p1 = { .fn = node_reenters, .arg = &r1, .nodes = 1 };
	struct engine_task p2 = { .fn = node_reenters, .arg = &r2, .nodes = 1 };
	void *h;

	(void)state;
	h = dlopen(lib.path, RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(h);
	backward_mixed = (void (*)(struct engine_task *))dlsym(h, "engine__backward_mixed");
	assert_non_null(backward_mixed);
	lib.backward(&p1);
	assert_int_equal(launch_probe__quiet_nodes(lp, true), 0);
	lib.backward(&p2);
	poll_passes(lp, &p);
	assert_int_equal(p.begun, 4); /* p1, r1, p2, r2 */
	assert_int_equal(p.of[0], p.begin[0]);
	assert_int_equal(p.of[1], p.begin[2]);
	launch_probe__destroy(lp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_launch_arrives_once_with_its_arguments_and_stack),
		cmocka_unit_test(test_a_full_pump_queue_holds_events_back_and_loses_none),
		cmocka_unit_test(test_an_unfollowed_process_sends_nothing),
		cmocka_unit_test(test_a_file_without_launch_entry_points_is_refused),
		cmocka_unit_test(test_a_stack_copy_starts_at_rsp_and_a_busy_ring_sends_events_without_one),
		cmocka_unit_test(test_a_full_ring_counts_every_launch_it_had_no_room_for),
		cmocka_unit_test(test_a_ring_past_its_wakeup_mark_wakes_its_reader),
		cmocka_unit_test(test_a_new_copy_size_filter_or_python_applies_from_the_next_launch),
		cmocka_unit_test(test_records_that_run_past_the_rings_end_arrive_whole),
		cmocka_unit_test(test_a_launch_whose_key_is_held_is_sent_without_its_stack),
		cmocka_unit_test(test_an_audit_past_a_half_full_ring_goes_as_its_hit),
		cmocka_unit_test(test_a_node_taken_between_windows_names_its_own_pass),
		cmocka_unit_test(test_nodes_at_a_learnt_call_name_their_pass_with_the_node_probe_away),
		cmocka_unit_test(test_a_node_seen_of_an_older_reentrant_pass_names_no_pass_of_the_next),
		cmocka_unit_test(test_a_destroyed_probe_leaves_no_link_behind),
	};

	int failed = cmocka_run_group_tests_name("default uprobes", tests, NULL, NULL);

	/* Again with a perf-event uprobe per entry point (kernels before 6.6). */
	setenv("GPUPROBE_UPROBES", "perf", 1);
	return failed + cmocka_run_group_tests_name("GPUPROBE_UPROBES=perf", tests, NULL, NULL);
}
