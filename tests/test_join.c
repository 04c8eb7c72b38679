/* SPDX-License-Identifier: MIT */
/* The join of launch events and CUPTI records (user/join/join.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "user/join/join.h"

#define MAXS 4096
#define MS 1000000ull

struct sink {
	struct join_sample s[MAXS];
	struct join_activity act[MAXS];
	unsigned n;
};

static void on_sample(void *ctx, const struct join_sample *s)
{
	struct sink *k = ctx;

	if (k->n < MAXS) {
		k->act[k->n] = *s->act;
		k->s[k->n] = *s;
		k->s[k->n].act = &k->act[k->n];
	}
	k->n++;
}

static struct join *new_join_opts(struct sink *k, struct join_opts o)
{
	struct join *j = NULL;

	memset(k, 0, sizeof(*k));
	if (!o.horizon_ns)
		o.horizon_ns = 1000 * MS;
	assert_int_equal(join__new(&o, on_sample, k, &j), 0);
	return j;
}

static struct join *new_join(struct sink *k, size_t max_queue)
{
	return new_join_opts(k, (struct join_opts){ .max_queue = max_queue });
}

static void launch(struct join *j, __u32 tid, __u64 ts, __u64 site)
{
	struct join_launch l = { .pid = 100, .tid = tid, .ts = ts, .probe = 0,
				 .cls = JOIN_CLASS_LAUNCH, .site = site, .single = true };

	join__add_launch(j, &l);
}

static void api(struct join *j, __u32 tid, __u64 start, __u64 end, __u64 corr, __u32 domain)
{
	struct join_api a = { .pid = 100, .tid = tid, .start = start, .end = end, .corr = corr,
			      .domain = domain, .cls = JOIN_CLASS_LAUNCH };

	join__add_api(j, &a);
}

static void kernel(struct join *j, __u64 corr, __u32 cookie)
{
	struct join_activity a = { .pid = 100, .corr = corr, .start = 1, .end = 2, .aux = { cookie } };

	join__add_activity(j, &a);
}

/* The sample for the activity with this cookie (its aux[0]). */
static const struct join_sample *find(const struct sink *k, __u32 cookie)
{
	for (unsigned i = 0; i < k->n && i < MAXS; i++)
		if (k->s[i].act->aux[0] == cookie)
			return &k->s[i];
	fail_msg("no sample for cookie %u", cookie);
	return NULL;
}

static void test_driver_records_join_the_launch_that_precedes_them_per_thread(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 0);

	/* Two threads interleaved in time; each call: event, then record inside it. */
	for (int i = 0; i < 10; i++) {
		launch(j, 1, 1000 + 100 * i, 10 + i);
		launch(j, 2, 1010 + 100 * i, 20 + i);
	}
	for (int i = 0; i < 10; i++) {
		api(j, 1, 1001 + 100 * i, 1005 + 100 * i, 500 + i, JOIN_DOMAIN_DRIVER);
		api(j, 2, 1011 + 100 * i, 1015 + 100 * i, 600 + i, JOIN_DOMAIN_DRIVER);
		kernel(j, 500 + i, 500 + i);
		kernel(j, 600 + i, 600 + i);
	}
	join__advance(j, 1000 * MS, 1);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(find(&k, 500 + i)->site, 10 + i);
		assert_int_equal(find(&k, 500 + i)->tid, 1);
		assert_int_equal(find(&k, 600 + i)->site, 20 + i);
		assert_int_equal(find(&k, 600 + i)->reason, JOIN_OK);
	}
	assert_int_equal(k.n, 20);
	join__destroy(j);
}

/*
 * Two matched calls of one correlation id (CUPTI gives each call its own:
 * a shim or ring that repeats one): counted, the first kept; an activity
 * that comes then goes to the later call, and is counted as a guess.
 */
static void test_a_correlation_id_two_calls_hold_is_counted(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 0);
	struct join_counters c;
	const struct join_reuse *r;

	launch(j, 1, 1000, 10);
	launch(j, 1, 1100, 11);
	api(j, 1, 1001, 1005, 500, JOIN_DOMAIN_DRIVER);
	api(j, 1, 1101, 1105, 500, JOIN_DOMAIN_DRIVER);
	join__advance(j, 10 * MS, 1);
	kernel(j, 500, 1);
	join__advance(j, 1000 * MS, 1);
	join__counters(j, &c);
	assert_int_equal(c.corr_reused, 1);
	assert_int_equal(c.activities_on_reused, 1);
	assert_int_equal(join__reuses(j, &r), 1);
	assert_int_equal(r[0].corr, 500);
	assert_int_equal(r[0].ts[0], 1000);
	assert_int_equal(r[0].ts[1], 1100);
	assert_int_equal(r[0].domain[1], JOIN_DOMAIN_DRIVER);
	assert_int_equal(k.n, 1);
	assert_int_equal(find(&k, 1)->site, 10); /* the first kernel launch of the id */
	join__destroy(j);
}

/* An activity of kind; node: the graph node it ran (aux[4], the caller's handle; 0: none). */
static void kind_act(struct join *j, __u64 corr, __u32 cookie, __u32 kind, __u32 node)
{
	struct join_activity a = { .pid = 100, .corr = corr, .start = 1, .end = 2,
				   .aux = { cookie, 0, 0, 0, node }, .kind = kind };

	join__add_activity(j, &a);
}

/*
 * The fault CUPTI 13.0 showed under 1 s windows (docs/BENCHMARKS.md): from
 * some call on, one thread's calls and their kernels all carry one id. The
 * kernels, which come in the order the stream ran them, some before their
 * calls are matched and some after, go to the calls in the order those
 * were made, each its own; what a graph ran goes to its graph launch; also
 * past the bound of held calls. Each is counted a guess.
 */
static void test_activities_of_calls_sharing_one_id_go_to_them_in_order(void **state)
{
	enum { N = 40, LAG = 8 };
	struct sink k;
	struct join *j = new_join_opts(&k, (struct join_opts){ .max_corr = 16 });
	struct join_counters c;
	__u32 cookie = 0, first_of[N];

	for (int i = 0; i < N; i++) {
		bool graph = i % 5 == 4; /* every fifth call a graph launch of two kernels */
		struct join_launch l = { .pid = 100, .tid = 1, .ts = 1000 + 100 * i, .probe = 0,
					 .cls = JOIN_CLASS_LAUNCH, .site = 10 + i, .single = !graph };

		join__add_launch(j, &l);
		api(j, 1, 999 + 100 * i, 1005 + 100 * i, 700, JOIN_DOMAIN_RUNTIME);
		first_of[i] = cookie;
		cookie += graph ? 2 : 1;
		if (i % 3 == 0) /* calls matched in bursts, kernels in between */
			join__advance(j, (__u64)(1 + i) * MS, 1);
		if (i >= LAG) {
			int b = i - LAG;

			kind_act(j, 700, first_of[b], b % 5 == 4 ? JOIN_ACT_GRAPH : JOIN_ACT_KERNEL,
				 b % 5 == 4);
			if (b % 5 == 4)
				kind_act(j, 700, first_of[b] + 1, JOIN_ACT_GRAPH, 2);
		}
	}
	for (int b = N - LAG; b < N; b++) {
		kind_act(j, 700, first_of[b], b % 5 == 4 ? JOIN_ACT_GRAPH : JOIN_ACT_KERNEL, b % 5 == 4);
		if (b % 5 == 4)
			kind_act(j, 700, first_of[b] + 1, JOIN_ACT_GRAPH, 2);
	}
	join__advance(j, 1000 * MS, 1);
	for (int i = 0; i < N; i++) {
		assert_int_equal(find(&k, first_of[i])->site, 10 + i);
		if (i % 5 == 4)
			assert_int_equal(find(&k, first_of[i] + 1)->site, 10 + i);
	}
	join__counters(j, &c);
	assert_int_equal(c.corr_reused, N - 1);
	assert_int_equal(c.launches_without_activity, 0);
	assert_int_equal(k.n, cookie);
	join__destroy(j);
}

/*
 * The same fault, every kernel come before any call of the id is matched;
 * the first call of the id one that adds a graph node (it runs nothing of
 * its own), then a graph launch; or the graph launch first: each takes only
 * what its kind runs, and the kernel launches after them each their own.
 */
static void burst_by_kind(bool node_first)
{
	struct sink k;
	struct join *j = new_join(&k, 0);
	struct join_launch node = { .pid = 100, .tid = 1, .ts = node_first ? 1000 : 1100,
				    .cls = JOIN_CLASS_NODE, .site = 9 };
	struct join_launch graph = { .pid = 100, .tid = 1, .ts = node_first ? 1100 : 1000,
				     .cls = JOIN_CLASS_LAUNCH, .site = 10 };
	struct join_api na = { .pid = 100, .tid = 1, .start = node.ts - 1, .end = node.ts + 5,
			       .corr = 700, .domain = JOIN_DOMAIN_RUNTIME, .cls = JOIN_CLASS_NODE };

	kind_act(j, 700, 1, JOIN_ACT_GRAPH, 1);
	kind_act(j, 700, 2, JOIN_ACT_GRAPH, 2);
	for (int i = 0; i < 4; i++)
		kind_act(j, 700, 3 + i, JOIN_ACT_KERNEL, 0);
	if (node_first) { /* else no node call: the graph launch is the id's first */
		join__add_launch(j, &node);
		join__add_api(j, &na);
	}
	join__add_launch(j, &graph);
	api(j, 1, graph.ts - 1, graph.ts + 5, 700, JOIN_DOMAIN_RUNTIME);
	join__advance(j, 1 * MS, 1);
	for (int i = 0; i < 4; i++) {
		launch(j, 1, 1200 + 100 * i, 11 + i);
		api(j, 1, 1199 + 100 * i, 1205 + 100 * i, 700, JOIN_DOMAIN_RUNTIME);
	}
	join__advance(j, 1000 * MS, 1);
	assert_int_equal(find(&k, 1)->site, 10);
	assert_int_equal(find(&k, 2)->site, 10);
	for (int i = 0; i < 4; i++)
		assert_int_equal(find(&k, 3 + (__u32)i)->site, 11 + i);
	assert_int_equal(k.n, 6);
	join__destroy(j);
}

static void test_a_burst_of_one_ids_activities_goes_to_its_calls_by_kind(void **state)
{
	burst_by_kind(true);
	burst_by_kind(false);
}

/*
 * The same fault across two streams of one thread: the second launch's
 * kernel runs first. A kernel goes to the oldest launch of its grid and
 * block, so each still reaches its own.
 */
static void test_kernels_of_one_id_from_two_streams_go_by_their_shape(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 0);
	struct join_activity a = { .pid = 100, .corr = 700, .start = 5000, .end = 5001,
				   .kind = JOIN_ACT_KERNEL };

	for (int i = 0; i < 3; i++) {
		struct join_launch l = { .pid = 100, .tid = 1, .ts = 1000 + 100 * i,
					 .cls = JOIN_CLASS_LAUNCH, .site = 10 + i, .single = true,
					 .shape = join__shape(2 + i, 32) };

		join__add_launch(j, &l);
		api(j, 1, 999 + 100 * i, 1005 + 100 * i, 700, JOIN_DOMAIN_RUNTIME);
	}
	join__advance(j, 10 * MS, 1);
	for (int i = 2; i >= 0; i--) { /* the last launch's kernel first */
		a.aux[0] = 20 + (__u32)i;
		a.shape = join__shape(2 + (__u32)i, 32);
		join__add_activity(j, &a);
	}
	join__advance(j, 1000 * MS, 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(find(&k, 20 + (__u32)i)->site, 10 + i);
	join__destroy(j);
}

static void test_a_kernel_arriving_before_its_api_record_waits_for_it(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 0);

	struct join_counters c;

	kernel(j, 7, 1);
	join__advance(j, 0, 1);
	assert_int_equal(k.n, 0);
	launch(j, 1, 100, 42);
	api(j, 1, 101, 110, 7, JOIN_DOMAIN_DRIVER);
	join__advance(j, 200, 2);
	assert_int_equal(k.n, 1);
	assert_int_equal(find(&k, 1)->site, 42);
	assert_int_equal(find(&k, 1)->reason, JOIN_OK);
	kernel(j, 7, 2); /* its call is matched now: joined at once, no wait */
	join__counters(j, &c);
	assert_int_equal(c.activities_waited, 1);
	join__destroy(j);
}

/*
 * join__advance_pid between a read's API records and its activities (the
 * shim side): the process's calls are paired, so its kernels join at once;
 * another process's call is left for the tick's advance, its kernel waits.
 */
static void test_advance_pid_pairs_one_process_before_its_activities(void **state)
{
	struct join_launch l = { .pid = 200, .tid = 1, .ts = 100, .cls = JOIN_CLASS_LAUNCH,
				 .site = 43, .single = true };
	struct join_api a = { .pid = 200, .tid = 1, .start = 101, .end = 110, .corr = 8,
			      .domain = JOIN_DOMAIN_DRIVER, .cls = JOIN_CLASS_LAUNCH };
	struct join_activity other = { .pid = 200, .corr = 8, .start = 1, .end = 2, .aux = { 2 } };
	struct join_counters c;
	struct sink k;
	struct join *j = new_join(&k, 0);

	(void)state;
	launch(j, 1, 100, 42);
	join__add_launch(j, &l);
	api(j, 1, 101, 110, 7, JOIN_DOMAIN_DRIVER);
	join__add_api(j, &a);
	join__advance_pid(j, 100, 200, 2);
	kernel(j, 7, 1);
	join__add_activity(j, &other);
	assert_int_equal(k.n, 1); /* pid 100's, at once */
	assert_int_equal(find(&k, 1)->site, 42);
	join__counters(j, &c);
	assert_int_equal(c.activities_waited, 1); /* pid 200's */
	assert_int_equal(c.launches_matched, 1);
	join__advance(j, 200, 3);
	assert_int_equal(k.n, 2);
	assert_int_equal(find(&k, 2)->site, 43);
	assert_int_equal(find(&k, 2)->reason, JOIN_OK);
	join__destroy(j);
}

struct match_order {
	__u64 corr[8];
	unsigned n;
};

static bool note_match(void *ctx, const struct join_matched *m)
{
	struct match_order *o = ctx;

	if (o->n < 8)
		o->corr[o->n] = m->corr;
	o->n++;
	return false;
}

static void graph_launch(struct join *j, __u32 tid, __u64 ts, __u64 site)
{
	struct join_launch l = { .pid = 100, .tid = tid, .ts = ts, .cls = JOIN_CLASS_LAUNCH,
				 .site = site, .single = false };

	join__add_launch(j, &l);
}

/*
 * A read's early pairing (join__advance_pid) leaves a graph launch, and
 * its thread's calls after it, for the tick's advance: thread 2's replay
 * (a launch after it, so it could pair at once) whose node thread 1's
 * capture made; the capture pairs, the replay waits, then both pair.
 */
static void test_advance_pid_leaves_a_graph_launch_for_the_tick(void **state)
{
	struct match_order o = { 0 };
	struct sink k;
	struct join *j = new_join(&k, 0);

	(void)state;
	join__on_matched(j, note_match, &o);
	graph_launch(j, 2, 200, 20); /* thread 2 first in the process's threads */
	launch(j, 2, 300, 21);
	launch(j, 1, 100, 10);
	launch(j, 1, 400, 11);
	api(j, 1, 101, 110, 1, JOIN_DOMAIN_DRIVER);
	api(j, 2, 201, 210, 2, JOIN_DOMAIN_DRIVER);
	api(j, 2, 301, 310, 3, JOIN_DOMAIN_DRIVER);
	join__advance_pid(j, 100, 1000, 1);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.corr[0], 1);
	join__advance(j, 1000, 2);
	assert_int_equal(o.n, 3);
	assert_int_equal(o.corr[1], 2);
	assert_int_equal(o.corr[2], 3);
	join__destroy(j);
}

static void test_a_graph_launch_gives_all_its_kernels_to_one_site(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 0);

	launch(j, 1, 100, 42);
	api(j, 1, 101, 110, 9, JOIN_DOMAIN_DRIVER);
	join__advance(j, 200, 1);
	kernel(j, 9, 1);
	kernel(j, 9, 2);
	kernel(j, 9, 3);
	assert_int_equal(k.n, 3);
	for (int c = 1; c <= 3; c++)
		assert_int_equal(find(&k, c)->site, 42);
	join__destroy(j);
}

static void test_a_lost_launch_event_is_counted_and_the_rest_resynchronise(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 0);
	struct join_counters c;

	/* Calls 0..4; the uprobe event of call 2 was lost. */
	for (int i = 0; i < 5; i++) {
		if (i != 2)
			launch(j, 1, 1000 + 100 * i, 10 + i);
		api(j, 1, 1001 + 100 * i, 1050 + 100 * i, 500 + i, JOIN_DOMAIN_DRIVER);
		kernel(j, 500 + i, i);
	}
	join__advance(j, 10000, 1);
	assert_int_equal(find(&k, 2)->reason, JOIN_NO_LAUNCH_EVENT);
	for (int i = 0; i < 5; i++)
		if (i != 2)
			assert_int_equal(find(&k, i)->site, 10 + i);
	join__counters(j, &c);
	assert_int_equal(c.api_without_launch, 1);
	assert_int_equal(c.launches_matched, 4);
	assert_int_equal(c.activities_unattributed[JOIN_NO_LAUNCH_EVENT], 1);
	join__destroy(j);
}

static void test_a_lost_api_record_is_counted_and_the_rest_resynchronise(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 0);
	struct join_counters c;

	/* CUPTI dropped the API record (and kernel) of call 1. */
	for (int i = 0; i < 4; i++) {
		launch(j, 1, 1000 + 100 * i, 10 + i);
		if (i != 1) {
			api(j, 1, 1001 + 100 * i, 1050 + 100 * i, 500 + i, JOIN_DOMAIN_DRIVER);
			kernel(j, 500 + i, i);
		}
	}
	join__advance(j, 10000, 1);
	assert_int_equal(find(&k, 0)->site, 10);
	assert_int_equal(find(&k, 2)->site, 12);
	assert_int_equal(find(&k, 3)->site, 13);
	join__counters(j, &c);
	assert_int_equal(c.launches_without_record, 1);
	assert_int_equal(k.n, 3);
	join__destroy(j);
}

static void test_a_runtime_record_joins_the_driver_call_it_brackets(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 0);
	struct join_counters c;

	launch(j, 1, 150, 1);   /* inside [100, 200] */
	launch(j, 1, 250, 2);   /* no record: between calls */
	launch(j, 1, 350, 3);   /* inside [300, 400] */
	api(j, 1, 100, 200, 70, JOIN_DOMAIN_RUNTIME);
	api(j, 1, 300, 400, 71, JOIN_DOMAIN_RUNTIME);
	api(j, 1, 500, 600, 72, JOIN_DOMAIN_RUNTIME); /* its event was lost */
	kernel(j, 70, 70);
	kernel(j, 71, 71);
	kernel(j, 72, 72);
	join__advance(j, 1000, 1);
	assert_int_equal(find(&k, 70)->site, 1);
	assert_int_equal(find(&k, 71)->site, 3);
	assert_int_equal(find(&k, 72)->reason, JOIN_NO_LAUNCH_EVENT);
	join__counters(j, &c);
	assert_int_equal(c.launches_without_record, 1);
	join__destroy(j);
}

static void test_a_record_waits_until_the_bpf_side_has_been_read_past_it(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 0);

	api(j, 1, 1001, 1050, 5, JOIN_DOMAIN_DRIVER);
	kernel(j, 5, 5);
	join__advance(j, 1000, 1); /* events up to 1000 read: the call's may still come */
	assert_int_equal(k.n, 0);
	launch(j, 1, 1000, 77);
	join__advance(j, 2000, 2);
	assert_int_equal(find(&k, 5)->site, 77);
	join__destroy(j);
}

/* The loader reads its rings before its first tick: CLOCK_MONOTONIC is hours, not 0. */
static void test_a_kernel_read_before_the_first_tick_still_waits_a_horizon(void **state)
{
	const __u64 t = 5000ull * 1000 * MS; /* a machine up 5000 s */
	struct join_activity a = { .pid = 100, .corr = 9, .start = t - 10, .end = t - 5, .aux = { 9 } };
	struct sink k;
	struct join *j = new_join(&k, 0);

	join__add_activity(j, &a);
	join__advance(j, t - 100, t + MS);
	assert_int_equal(k.n, 0);
	launch(j, 1, t - 100, 42);
	api(j, 1, t - 99, t - 90, 9, JOIN_DOMAIN_DRIVER);
	join__advance(j, t + 2 * MS, t + 2 * MS);
	assert_int_equal(k.n, 1);
	assert_int_equal(find(&k, 9)->reason, JOIN_OK);
	assert_int_equal(find(&k, 9)->site, 42);
	join__destroy(j);
}

static void test_an_activity_without_api_record_leaves_after_the_horizon(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 0);

	kernel(j, 5, 5);
	join__advance(j, 0, 10);
	assert_int_equal(k.n, 0);
	join__advance(j, 0, 10 + 1000 * MS);
	assert_int_equal(k.n, 1);
	assert_int_equal(find(&k, 5)->reason, JOIN_NO_API_RECORD);
	join__destroy(j);
}

static void test_finishing_a_process_resolves_everything_it_holds(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 0);
	struct join_counters c;

	launch(j, 1, 100, 1);
	api(j, 1, 101, 110, 5, JOIN_DOMAIN_DRIVER);
	kernel(j, 5, 5);
	kernel(j, 6, 6);
	launch(j, 1, 200, 2);
	join__finish_pid(j, 100);
	assert_int_equal(k.n, 2);
	assert_int_equal(find(&k, 5)->site, 1);
	assert_int_equal(find(&k, 6)->reason, JOIN_NO_API_RECORD);
	join__counters(j, &c);
	assert_int_equal(c.launches_without_record, 1);
	join__destroy(j);
}

static void test_calls_made_before_attach_are_labelled_so(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 0);

	assert_int_equal(join__attach(j, 100, 500), 0);
	api(j, 1, 101, 110, 5, JOIN_DOMAIN_DRIVER);
	kernel(j, 5, 5);
	join__advance(j, 1000, 1);
	assert_int_equal(find(&k, 5)->reason, JOIN_BEFORE_ATTACH);
	join__destroy(j);
}

static void copy_api(struct join *j, __u32 tid, __u64 start, __u64 end, __u64 corr)
{
	struct join_api a = { .pid = 100, .tid = tid, .start = start, .end = end, .corr = corr,
			      .domain = JOIN_DOMAIN_DRIVER, .cls = JOIN_CLASS_COPY };

	join__add_api(j, &a);
}

/*
 * A driver record is stamped inside its call: one starting just after the
 * attach may be a call entered before it (no probe saw it), or a call whose
 * launch event was lost; nothing tells the two apart, so it is counted under
 * its own reason, never as launched before attach. Only one call of a thread
 * can have been under way at the attach: its first to start after it. So a
 * second record of the thread in the slack (of the same kind: launch or
 * copy), a record after a probed call of the thread, a runtime record
 * (stamped before the call's entry) or a driver record 1 ms or more after
 * the attach had its entry probed: no launch event.
 */
static void test_a_driver_record_just_after_attach_is_counted_apart_once_per_thread(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 0);
	struct join_counters c;
	const __u64 at = 1000000;

	(void)state;
	assert_int_equal(join__attach(j, 100, at), 0);
	api(j, 1, at - 5, at + 3, 1, JOIN_DOMAIN_DRIVER);        /* started before: exact */
	api(j, 2, at + 10, at + 20, 2, JOIN_DOMAIN_DRIVER);      /* the one call at the attach */
	api(j, 2, at + 30, at + 40, 3, JOIN_DOMAIN_DRIVER);      /* its thread's second: lost */
	launch(j, 3, at + 5, 33);                                /* a probed call first... */
	api(j, 3, at + 6, at + 8, 4, JOIN_DOMAIN_DRIVER);
	api(j, 3, at + 50, at + 60, 5, JOIN_DOMAIN_DRIVER);      /* ...then one without an event */
	api(j, 4, at + 10, at + 20, 6, JOIN_DOMAIN_RUNTIME);     /* brackets its call: exact */
	api(j, 5, at + 1000000, at + 1000010, 7, JOIN_DOMAIN_DRIVER); /* past the slack */
	/* Thread 6: two copies in the slack: the first counts apart, the second is lost. */
	copy_api(j, 6, at + 20, at + 30, 8);
	copy_api(j, 6, at + 40, at + 50, 9);
	/*
	 * Thread 7: a launch and a copy in the slack. Its two queues merge apart
	 * and either record may arrive first: each queue's first counts apart.
	 */
	api(j, 7, at + 40, at + 50, 10, JOIN_DOMAIN_DRIVER);
	copy_api(j, 7, at + 20, at + 30, 11);
	for (__u64 corr = 1; corr <= 11; corr++)
		kernel(j, corr, corr);
	join__advance(j, 3 * at, 1);
	assert_int_equal(find(&k, 1)->reason, JOIN_BEFORE_ATTACH);
	assert_int_equal(find(&k, 2)->reason, JOIN_AT_ATTACH);
	assert_int_equal(find(&k, 3)->reason, JOIN_NO_LAUNCH_EVENT);
	assert_int_equal(find(&k, 4)->reason, JOIN_OK);
	assert_int_equal(find(&k, 4)->site, 33);
	assert_int_equal(find(&k, 5)->reason, JOIN_NO_LAUNCH_EVENT);
	assert_int_equal(find(&k, 6)->reason, JOIN_NO_LAUNCH_EVENT);
	assert_int_equal(find(&k, 7)->reason, JOIN_NO_LAUNCH_EVENT);
	assert_int_equal(find(&k, 8)->reason, JOIN_AT_ATTACH);
	assert_int_equal(find(&k, 9)->reason, JOIN_NO_LAUNCH_EVENT);
	assert_int_equal(find(&k, 10)->reason, JOIN_AT_ATTACH);
	assert_int_equal(find(&k, 11)->reason, JOIN_AT_ATTACH);
	assert_int_equal(k.n, 11);
	join__counters(j, &c);
	assert_int_equal(c.api_before_attach, 1);
	assert_int_equal(c.api_at_attach, 4);
	assert_int_equal(c.api_without_launch, 5);
	assert_int_equal(c.activities_unattributed[JOIN_AT_ATTACH], 4);
	assert_int_equal(c.activities_unattributed[JOIN_BEFORE_ATTACH], 1);
	assert_string_equal(join__reason_name(JOIN_AT_ATTACH), "launched at attach");
	join__destroy(j);
}

static void test_every_activity_leaves_exactly_once_when_queues_overflow(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 4);
	struct join_counters c;

	for (int i = 0; i < 20; i++)
		launch(j, 1, 1000 + 100 * i, i);
	for (int i = 0; i < 20; i++) {
		api(j, 1, 1001 + 100 * i, 1050 + 100 * i, 500 + i, JOIN_DOMAIN_DRIVER);
		kernel(j, 500 + i, i);
	}
	join__finish_all(j);
	join__counters(j, &c);
	assert_int_equal(k.n, 20);
	for (int i = 0; i < 20; i++)
		find(&k, i);
	assert_true(c.queue_full > 0);
	assert_int_equal(c.activities_joined + c.activities_unattributed[JOIN_NO_LAUNCH_EVENT] +
			 c.activities_unattributed[JOIN_NO_API_RECORD] +
			 c.activities_unattributed[JOIN_TABLE_FULL], 20);
	join__destroy(j);
}

struct unrecorded_sink {
	unsigned n, out_of_order, before, no_activity;
	__u64 next_site;
};

static void on_unrecorded(void *ctx, const struct join_unrecorded *u)
{
	struct unrecorded_sink *us = ctx;

	us->out_of_order += u->site != us->next_site || u->pid != 100 || u->tid != 1;
	us->next_site = u->site + 1;
	us->before += u->before_recording;
	us->no_activity += u->no_activity;
	us->n++;
}

/* The session's answer for a paired call: site *ctx made a graph node (it was captured). */
static bool captures_site(void *ctx, const struct join_matched *m)
{
	return m->site == *(const __u64 *)ctx;
}

/* Finishes j and checks what reached the unrecorded callback: n launches, before of them labelled. */
static void finish_unrecorded(struct join *j, const struct unrecorded_sink *us, unsigned n,
			      unsigned before)
{
	struct join_counters c;

	join__finish_all(j);
	join__counters(j, &c);
	assert_int_equal(us->n, n);
	assert_int_equal(us->out_of_order, 0);
	assert_int_equal(us->before, before);
	assert_int_equal(c.launches_before_recording, before);
	assert_int_equal(c.launches_without_record, n - before);
	join__destroy(j);
}

/*
 * shim/gp_abi.h, "no reader, no records": a launch made before the shim
 * switched its recording on is labelled and counted apart, not as a lost
 * record; one made after it is a lost record; while the shim is off, every
 * launch is before its recording.
 */
static void test_launches_before_the_shim_recorded_are_labelled_not_lost(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 16);
	struct unrecorded_sink us = { 0 };

	join__on_unrecorded(j, on_unrecorded, &us);
	assert_int_equal(join__recording(j, 100, UINT64_MAX, 500, 600), 0); /* off, never on */
	launch(j, 1, 1000, 0);
	assert_int_equal(join__recording(j, 100, 3000, 0, 3100), 0); /* on since 3000 */
	launch(j, 1, 2000, 1);
	launch(j, 1, 3000, 2); /* at the switch: a record was due */
	launch(j, 1, 4000, 3);
	finish_unrecorded(j, &us, 4, 2);
}

/*
 * The duty cycle switches the shim at each window: a launch made inside an
 * earlier window whose record never came is a lost record, judged after the
 * shim went off and on again; one made between the windows (or before the
 * first, or after a window was last seen on when its end came unseen) is
 * labelled made before the shim recorded.
 */
static void test_a_launch_inside_an_earlier_window_is_not_called_before_recording(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 16);
	struct unrecorded_sink us = { 0 };

	join__on_unrecorded(j, on_unrecorded, &us);
	launch(j, 1, 500 * MS, 0);   /* before the first window */
	launch(j, 1, 1500 * MS, 1);  /* inside it: its record lost */
	launch(j, 1, 3000 * MS, 2);  /* between the windows */
	launch(j, 1, 6000 * MS, 3);  /* inside the second: its record lost */
	launch(j, 1, 8500 * MS, 4);  /* inside the third, seen on at 8600: lost */
	launch(j, 1, 9500 * MS, 5);  /* after it was last seen on: it went off unseen */
	launch(j, 1, 10500 * MS, 6); /* inside the fourth, still on */
	assert_int_equal(join__recording(j, 100, 1000 * MS, 0, 1100 * MS), 0);         /* on */
	assert_int_equal(join__recording(j, 100, 1000 * MS, 2000 * MS, 2100 * MS), 0); /* off */
	assert_int_equal(join__recording(j, 100, 5000 * MS, 0, 5100 * MS), 0);         /* on again */
	assert_int_equal(join__recording(j, 100, 5000 * MS, 7000 * MS, 7100 * MS), 0); /* off */
	assert_int_equal(join__recording(j, 100, 8000 * MS, 0, 8600 * MS), 0);  /* on: its end unseen */
	assert_int_equal(join__recording(j, 100, 10000 * MS, 0, 10100 * MS), 0); /* on since 10000 */
	finish_unrecorded(j, &us, 7, 3);
}

/*
 * At a switch-off the shim closes its API window a moment before it says
 * it records no more: a launch just before the off whose record never
 * came was not due one, labelled as before recording; one well inside the
 * span is a lost record.
 */
static void test_a_launch_without_its_record_just_before_a_switch_off_is_not_a_loss(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 16);
	struct unrecorded_sink us = { 0 };

	join__on_unrecorded(j, on_unrecorded, &us);
	launch(j, 1, 1500 * MS, 0);         /* inside: lost */
	launch(j, 1, 2000 * MS - 2000, 1);  /* 2 us before the off: at the edge */
	assert_int_equal(join__recording(j, 100, 1000 * MS, 2000 * MS, 2100 * MS), 0);
	finish_unrecorded(j, &us, 2, 1);
}

/*
 * At a switch-off, CUPTI may keep a call's API record and not its kernel
 * (the shim closes its API window last): a matched launch whose kernel
 * never came, made within JOIN_EDGE_NS before a seen switch-off, is
 * labelled as the edge's; one made well inside the span stays silent (a
 * launch captured into a graph has no kernel).
 */
static void test_a_matched_launch_just_before_a_switch_off_without_its_kernel_is_labelled(void **state)
{
	const __u64 on = 1000000000ull, off = 2000000000ull;
	struct sink k = { 0 };
	struct join *j = new_join(&k, 0);
	struct unrecorded_sink us = { .next_site = 32 }; /* the first to reach it */
	__u64 captured = 31;

	join__on_unrecorded(j, on_unrecorded, &us);
	join__on_matched(j, captures_site, &captured);
	assert_int_equal(join__recording(j, 100, on, 0, on + 1000), 0);
	launch(j, 1, 1500000000ull, 31);                 /* inside: captured, say */
	api(j, 1, 1499999900ull, 1500000100ull, 1, JOIN_DOMAIN_RUNTIME);
	launch(j, 1, off - 1000000, 32);                 /* 1 ms before the off */
	api(j, 1, off - 1000100, off - 999900, 2, JOIN_DOMAIN_RUNTIME);
	assert_int_equal(join__recording(j, 100, on, off, off + 1000), 0);
	finish_unrecorded(j, &us, 1, 1);
}

/*
 * A process without the shim: no record ever comes. Far more launches than
 * the thread's queue holds each reach the unrecorded callback once, in
 * order, none refused; a launch that is matched never does.
 */
static void test_launches_without_records_all_leave_once_past_the_queue_bound(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 16);
	struct unrecorded_sink us = { 0 };
	struct join_counters c;

	join__on_unrecorded(j, on_unrecorded, &us);
	for (int i = 0; i < 1000; i++) {
		launch(j, 1, 1000 + 100 * i, i);
		if (i % 100 == 0)
			join__advance(j, 1000 + 100 * i, 1);
	}
	assert_int_equal(us.n, 1000 - 16); /* the newest wait for their horizon */
	join__finish_all(j);
	join__counters(j, &c);
	assert_int_equal(us.n, 1000);
	assert_int_equal(us.out_of_order, 0);
	assert_int_equal(c.queue_full, 0);
	assert_int_equal(c.launches_without_record, 1000);
	join__destroy(j);

	/* Matched: only the one launch without a record comes out. */
	j = new_join(&k, 16);
	us = (struct unrecorded_sink){ .next_site = 7 };
	join__on_unrecorded(j, on_unrecorded, &us);
	launch(j, 1, 1000, 7);
	launch(j, 1, 2000, 8);
	api(j, 1, 2001, 2050, 9, JOIN_DOMAIN_DRIVER);
	kernel(j, 9, 9);
	join__finish_all(j);
	assert_int_equal(us.n, 1);
	assert_int_equal(find(&k, 9)->site, 8);
	join__destroy(j);
}

static __u64 site_plus_1000(void *ctx, __u64 site)
{
	(*(unsigned *)ctx)++;
	return site + 1000;
}

/*
 * Renumbering under the join: every site it holds, a queued launch (thread
 * 1: its record comes later) or a matched correlation (thread 2: its kernel
 * comes later), is visited once and the new number is what comes out.
 */
static void test_visiting_sites_renumbers_queued_and_matched_launches(void **state)
{
	struct sink k;
	struct join *j = new_join(&k, 0);
	unsigned visited = 0;

	launch(j, 1, 100, 7);
	launch(j, 2, 110, 8);
	api(j, 2, 111, 115, 20, JOIN_DOMAIN_DRIVER);
	join__advance(j, 200, 1);
	assert_int_equal(k.n, 0);
	join__visit_sites(j, site_plus_1000, &visited);
	assert_int_equal(visited, 2);
	api(j, 1, 101, 105, 10, JOIN_DOMAIN_DRIVER);
	kernel(j, 10, 1);
	kernel(j, 20, 2);
	join__advance(j, 300, 2);
	assert_int_equal(k.n, 2);
	assert_int_equal(find(&k, 1)->site, 1007);
	assert_int_equal(find(&k, 2)->site, 1008);
	join__destroy(j);
}

/*
 * join__stop: the profile ends at the stop. A launch before it joins its
 * records as they come after it; one after it is left out, with its API
 * record and its kernel (whichever comes first); a call at the edge (a
 * runtime record straddling the stop whose event came after it, an event
 * just before it whose record came after) is left out too, never lost.
 */
static void test_a_stop_ends_the_profile_and_joins_what_came_before_it(void **state)
{
	struct sink k = { 0 };
	struct join *j = new_join(&k, 0);
	struct join_counters c;

	launch(j, 1, 1000, 11);                           /* before the stop */
	join__stop(j, 5000000);
	launch(j, 1, 6000000, 12);                        /* after: left out */
	kernel(j, 2, 2);                                  /* its kernel before its record */
	api(j, 1, 900, 1100, 1, JOIN_DOMAIN_RUNTIME);     /* the first call's record, late */
	kernel(j, 1, 1);
	api(j, 1, 5900000, 6100000, 2, JOIN_DOMAIN_RUNTIME);
	/* Thread 2: a runtime record straddling the stop, its event after it. */
	launch(j, 2, 5000001, 13);
	api(j, 2, 4999000, 5000500, 3, JOIN_DOMAIN_RUNTIME);
	kernel(j, 3, 3);
	/* Thread 3: an event just before the stop, its driver record after it. */
	launch(j, 3, 4999900, 14);
	api(j, 3, 5000100, 5000200, 4, JOIN_DOMAIN_DRIVER);
	kernel(j, 4, 4);
	join__finish_all(j);
	join__counters(j, &c);
	assert_int_equal(k.n, 1);
	assert_int_equal(find(&k, 1)->reason, JOIN_OK);
	assert_int_equal(find(&k, 1)->site, 11);
	assert_int_equal(c.activities_outside, 3);
	assert_int_equal(c.launches_without_record, 0);
	assert_int_equal(c.api_without_launch, 0);
	for (int r = 0; r < JOIN_REASON_MAX; r++)
		assert_int_equal(c.activities_unattributed[r], 0);
	join__destroy(j);
}

/*
 * At a stop, an activity whose API record never came: begun within
 * JOIN_EDGE_NS before the stop (its call's record, written at its return,
 * missed the last flush) or after it, it is left out, as a launch event at
 * the close is; begun earlier, it is unattributed (no API record), a loss.
 */
static void test_an_activity_at_the_stop_without_its_api_record_is_left_out(void **state)
{
	const __u64 stop = 1000000000ull;
	struct sink k = { 0 };
	struct join *j = new_join(&k, 0);
	struct join_counters c;
	struct join_activity edge = { .pid = 100, .corr = 7, .start = stop - JOIN_EDGE_NS / 2,
				      .end = stop + 1000, .aux = { 7 } };
	struct join_activity after = { .pid = 100, .corr = 8, .start = stop + 1000,
				       .end = stop + 2000, .aux = { 8 } };
	struct join_activity early = { .pid = 100, .corr = 9, .start = stop - 2 * JOIN_EDGE_NS,
				       .end = stop - JOIN_EDGE_NS - 1, .aux = { 9 } };

	join__stop(j, stop);
	join__add_activity(j, &edge);
	join__add_activity(j, &after);
	join__add_activity(j, &early);
	join__finish_all(j);
	join__counters(j, &c);
	assert_int_equal(c.activities_outside, 2);
	assert_int_equal(c.activities_unattributed[JOIN_NO_API_RECORD], 1);
	assert_int_equal(find(&k, 9)->reason, JOIN_NO_API_RECORD);
	join__destroy(j);
}

/*
 * Duty-cycle windows: a launch in a window joins its records even when they
 * come after it closed; calls between windows are left out with their
 * activities, whichever side comes first; a driver record just after an
 * opening whose event came before it is left out, not lost; a second
 * window joins as the first did.
 */
static void test_windows_keep_what_was_launched_inside_them(void **state)
{
	struct sink k = { 0 };
	struct join *j = new_join(&k, 0);
	struct join_counters c;

	join__pause(j, 0);
	join__resume(j, 10 * MS);                              /* window 1: [10, 20) ms */
	launch(j, 1, 11 * MS, 11);
	join__pause(j, 20 * MS);
	launch(j, 1, 25 * MS, 12);                             /* between: left out */
	api(j, 1, 11 * MS - 100, 11 * MS + 100, 1, JOIN_DOMAIN_RUNTIME); /* late */
	kernel(j, 1, 1);
	kernel(j, 2, 2);                                       /* before its record */
	api(j, 1, 25 * MS - 100, 25 * MS + 100, 2, JOIN_DOMAIN_RUNTIME);
	join__resume(j, 30 * MS);                              /* window 2: [30, ...) */
	/* Thread 2: an event before the opening, its driver record just after. */
	launch(j, 2, 30 * MS - 100, 13);
	api(j, 2, 30 * MS + 100, 30 * MS + 200, 3, JOIN_DOMAIN_DRIVER);
	kernel(j, 3, 3);
	launch(j, 1, 31 * MS, 14);
	api(j, 1, 31 * MS + 10, 31 * MS + 20, 4, JOIN_DOMAIN_DRIVER);
	kernel(j, 4, 4);
	join__finish_all(j);
	join__counters(j, &c);
	assert_int_equal(k.n, 2);
	assert_int_equal(find(&k, 1)->reason, JOIN_OK);
	assert_int_equal(find(&k, 1)->site, 11);
	assert_int_equal(find(&k, 4)->reason, JOIN_OK);
	assert_int_equal(find(&k, 4)->site, 14);
	assert_int_equal(c.activities_outside, 2);
	assert_int_equal(c.launches_matched, 2);
	assert_int_equal(c.launches_without_record, 0);
	assert_int_equal(c.api_without_launch, 0);
	for (int r = 0; r < JOIN_REASON_MAX; r++)
		assert_int_equal(c.activities_unattributed[r], 0);
	join__destroy(j);
}

/* Only the last JOIN_WINDOWS_MAX windows are kept: a call in an older one is outside. */
static void test_windows_older_than_the_last_kept_are_outside(void **state)
{
	struct sink k = { 0 };
	struct join *j = new_join(&k, 0);
	struct join_counters c;

	join__pause(j, 0);
	for (unsigned w = 0; w <= JOIN_WINDOWS_MAX; w++) {
		join__resume(j, (10 * w + 10) * MS);
		join__pause(j, (10 * w + 15) * MS);
	}
	launch(j, 1, 11 * MS, 1);                    /* in the first window, forgotten */
	launch(j, 2, (10 * JOIN_WINDOWS_MAX + 11) * MS, 2); /* in the last */
	join__counters(j, &c);
	assert_int_equal(c.launches_outside, 1);
	join__destroy(j);
}

/*
 * At a recording switch CUPTI may keep a call's API record and not its
 * kernel: a matched launch made before the switch-on whose activity never
 * comes is labelled, not dropped unsaid; one made after it that was
 * captured into a graph (its call made a node) has no kernel and stays
 * silent.
 */
static void test_a_matched_launch_at_a_switch_whose_kernel_never_came_is_labelled(void **state)
{
	struct sink k = { 0 };
	struct join *j = new_join(&k, 0);
	struct unrecorded_sink us = { .next_site = 21 };
	struct join_counters c;
	__u64 captured = 22;

	join__on_unrecorded(j, on_unrecorded, &us);
	join__on_matched(j, captures_site, &captured);
	assert_int_equal(join__recording(j, 100, 5000, 0, 5100), 0);
	launch(j, 1, 4000, 21);                           /* at the edge: no kernel */
	api(j, 1, 3900, 4100, 1, JOIN_DOMAIN_RUNTIME);
	launch(j, 1, 6000, 22);                           /* after: captured, say */
	api(j, 1, 5900, 6100, 2, JOIN_DOMAIN_RUNTIME);
	launch(j, 1, 7000, 23);                           /* after, with its kernel */
	api(j, 1, 6900, 7100, 3, JOIN_DOMAIN_RUNTIME);
	kernel(j, 3, 3);
	join__finish_all(j);
	join__counters(j, &c);
	assert_int_equal(k.n, 1);
	assert_int_equal(us.n, 1);
	assert_int_equal(us.before, 1);
	assert_int_equal(us.out_of_order, 0);
	assert_int_equal(c.launches_before_recording, 1);
	assert_int_equal(c.launches_without_record, 0);
	assert_int_equal(c.launches_without_activity, 0);
	join__destroy(j);
}

/*
 * A launch paired with its API record while the shim recorded, that made
 * no graph node, and whose kernel never came: CUPTI lost its record. It is
 * counted launches_without_activity and reaches the unrecorded callback
 * labelled so, once; a captured one, a failed one and one with its kernel
 * do not.
 */
static void test_a_matched_launch_whose_kernel_never_came_while_recording_is_a_loss(void **state)
{
	struct sink k = { 0 };
	struct join *j = new_join(&k, 0);
	struct unrecorded_sink us = { .next_site = 43 };
	struct join_counters c;
	__u64 captured = 42;

	join__on_unrecorded(j, on_unrecorded, &us);
	join__on_matched(j, captures_site, &captured);
	assert_int_equal(join__recording(j, 100, 1000, 0, 1100), 0);
	launch(j, 1, 5000, 41);                           /* its kernel came */
	api(j, 1, 4900, 5100, 1, JOIN_DOMAIN_RUNTIME);
	kernel(j, 1, 1);
	launch(j, 1, 6000, 42);                           /* captured: no kernel due */
	api(j, 1, 5900, 6100, 2, JOIN_DOMAIN_RUNTIME);
	launch(j, 1, 7000, 43);                           /* its kernel never came */
	api(j, 1, 6900, 7100, 3, JOIN_DOMAIN_RUNTIME);
	launch(j, 1, 8000, 44);                           /* it failed: no kernel due */
	join__add_api(j, &(struct join_api){ .pid = 100, .tid = 1, .start = 7900, .end = 8100,
					      .corr = 4, .domain = JOIN_DOMAIN_RUNTIME,
					      .cls = JOIN_CLASS_LAUNCH, .failed = true });
	join__finish_all(j);
	join__counters(j, &c);
	assert_int_equal(k.n, 1);
	assert_int_equal(us.n, 1);
	assert_int_equal(us.no_activity, 1);
	assert_int_equal(us.before, 0);
	assert_int_equal(us.out_of_order, 0);
	assert_int_equal(c.launches_without_activity, 1);
	assert_int_equal(c.launches_before_recording, 0);
	assert_int_equal(c.launches_without_record, 0);
	join__destroy(j);
}

/*
 * A hostile ring naming a new thread in every record holds at most
 * max_threads queues of the process: the rest are refused, counted, and the
 * threads it has still pair. A queue with nothing queued goes to a new
 * thread (a run that keeps starting threads keeps profiling them), and a
 * launch refused a queue still reaches the profile, without its record.
 */
static void test_made_up_threads_are_bounded_per_process(void **state)
{
	struct join_opts o = { .max_threads = 4 };
	struct unrecorded_sink us = { 0 };
	struct join_counters c;
	struct sink k;
	struct join *j = new_join_opts(&k, o);

	(void)state;
	join__on_unrecorded(j, on_unrecorded, &us);
	for (__u32 tid = 1; tid <= 10; tid++)
		api(j, tid, 1000 * tid + 1, 1000 * tid + 5, 500 + tid, JOIN_DOMAIN_DRIVER);
	join__counters(j, &c);
	assert_int_equal(c.queue_full, 6);
	launch(j, 1, 1000, 7);
	kernel(j, 501, 501);
	join__advance(j, 1000 * MS, 1);
	assert_int_equal(find(&k, 501)->site, 7);
	assert_int_equal(find(&k, 501)->reason, JOIN_OK);
	/* Threads 2-4 have records waiting (their calls still under way, for all the join knows). */
	for (__u32 tid = 2; tid <= 4; tid++)
		api(j, tid, 5000 * MS, 5000 * MS + 5, 600 + tid, JOIN_DOMAIN_DRIVER);
	/* Thread 1's queue is empty now: thread 20 takes it; 21 finds none and its launch goes on. */
	launch(j, 20, 50000, 8);
	api(j, 20, 50001, 50005, 520, JOIN_DOMAIN_DRIVER);
	kernel(j, 520, 520);
	us.next_site = 9;
	launch(j, 21, 60000, 9);
	join__counters(j, &c);
	assert_int_equal(c.queue_full, 7);
	assert_int_equal(us.n, 1);
	join__advance(j, 1000 * MS, 2);
	assert_int_equal(find(&k, 520)->site, 8);
	assert_int_equal(find(&k, 520)->reason, JOIN_OK);
	join__destroy(j);
}

/* API records queued in a process, all threads together, are bounded; paired ones make room. */
static void test_queued_api_records_are_bounded_per_process(void **state)
{
	struct join_opts o = { .max_proc_apis = 8 };
	struct join_counters c;
	struct sink k;
	struct join *j = new_join_opts(&k, o);

	(void)state;
	for (int i = 0; i < 10; i++)
		api(j, 1 + i % 2, 1001 + 100 * i, 1005 + 100 * i, 500 + i, JOIN_DOMAIN_DRIVER);
	join__counters(j, &c);
	assert_int_equal(c.queue_full, 2);
	/* Every record's call was probed: all eight pair, and the queue takes more. */
	for (int i = 0; i < 8; i++)
		launch(j, 1 + i % 2, 1000 + 100 * i, 10 + i);
	join__advance(j, 1000 * MS, 1);
	join__counters(j, &c);
	assert_int_equal(c.launches_matched, 8);
	api(j, 1, 5001, 5005, 900, JOIN_DOMAIN_DRIVER);
	join__counters(j, &c);
	assert_int_equal(c.queue_full, 2);
	join__destroy(j);
}

/*
 * Launch events queued in a process, all threads together, are bounded: at
 * the bound the thread's own oldest goes on without a record (a thread with
 * none queued: the event itself), and every launch still reaches the profile.
 */
static void test_queued_launch_events_are_bounded_per_process(void **state)
{
	struct join_opts o = { .max_proc_launches = 8 };
	struct unrecorded_sink us = { .next_site = 10 };
	struct join_counters c;
	struct sink k;
	struct join *j = new_join_opts(&k, o);

	(void)state;
	join__on_unrecorded(j, on_unrecorded, &us);
	for (int i = 0; i < 10; i++)
		launch(j, 1 + i % 2, 1000 + 100 * i, 10 + i);
	join__counters(j, &c);
	assert_int_equal(c.queue_full, 2);
	assert_int_equal(c.launches_without_record + c.launches_before_recording, 2);
	/* each thread's oldest, sites 10 and 11, went on to the profile */
	assert_int_equal(us.n, 2);
	assert_int_equal(us.next_site, 12);
	/* A third thread, nothing of its own queued: its event goes on at once. */
	launch(j, 3, 2100, 30);
	join__counters(j, &c);
	assert_int_equal(c.queue_full, 3);
	assert_int_equal(us.n, 3);
	assert_int_equal(us.next_site, 31);
	/* The eight kept pair with their records, and make room again. */
	for (int i = 2; i < 10; i++)
		api(j, 1 + i % 2, 1001 + 100 * i, 1005 + 100 * i, 500 + i, JOIN_DOMAIN_DRIVER);
	join__advance(j, 1000 * MS, 1);
	join__counters(j, &c);
	assert_int_equal(c.launches_matched, 8);
	launch(j, 3, 5000, 31);
	join__counters(j, &c);
	assert_int_equal(c.queue_full, 3);
	join__destroy(j);
}

/*
 * Records in falling start order each walk back past the whole queue: the
 * walking is paid from the process's budget, a record past it stays where it
 * came (counted), and the next advance gives the budget again.
 */
static void test_ordering_out_of_order_records_has_a_budget(void **state)
{
	struct join_opts o = { .max_disorder = 5 };
	struct join_counters c;
	struct sink k;
	struct join *j = new_join_opts(&k, o);

	(void)state;
	/* Steps: 0, 1, 2, then 2 of the 3 the fourth needs. */
	for (int i = 0; i < 4; i++)
		api(j, 1, 10000 - 100 * i, 10001 - 100 * i, 500 + i, JOIN_DOMAIN_DRIVER);
	join__counters(j, &c);
	assert_int_equal(c.api_disordered, 1);
	join__advance(j, 1, 1); /* nothing can pair yet: the watermark is before them all */
	api(j, 1, 9000, 9001, 600, JOIN_DOMAIN_DRIVER); /* 4 steps, paid from the new budget */
	join__counters(j, &c);
	assert_int_equal(c.api_disordered, 1);
	api(j, 1, 8000, 8001, 601, JOIN_DOMAIN_DRIVER);
	join__counters(j, &c);
	assert_int_equal(c.api_disordered, 2);
	join__destroy(j);
}

/* ------------------------------------------------------------ memory budget */

static void launch_of(struct join *j, __u32 pid, __u32 tid, __u64 ts, __u64 site)
{
	struct join_launch l = { .pid = pid, .tid = tid, .ts = ts, .cls = JOIN_CLASS_LAUNCH,
				 .site = site };

	join__add_launch(j, &l);
}

static void api_of(struct join *j, __u32 pid, __u32 tid, __u64 start, __u64 end, __u64 corr)
{
	struct join_api a = { .pid = pid, .tid = tid, .start = start, .end = end, .corr = corr,
			      .domain = JOIN_DOMAIN_DRIVER, .cls = JOIN_CLASS_LAUNCH };

	join__add_api(j, &a);
}

static void kernel_of(struct join *j, __u32 pid, __u64 corr, __u32 cookie)
{
	struct join_activity a = { .pid = pid, .corr = corr, .start = 1, .end = 2, .aux = { cookie } };

	join__add_activity(j, &a);
}

struct pid_unrecorded {
	unsigned n[2]; /* pid 100's, pid 200's */
};

static void count_unrecorded(void *ctx, const struct join_unrecorded *u)
{
	struct pid_unrecorded *pu = ctx;

	pu->n[u->pid == 200]++;
}

/*
 * The memory budget (all processes together): a process that swells its
 * queues (launch events no record takes, as a hostile ring's would) grows
 * to the budget and no further; what it sends past it is refused, counted,
 * and still reaches the profile as launches without a record. A second
 * process, under its share (half the budget), keeps growing and joins
 * exactly; the join holds less than twice the budget.
 */
static void test_a_process_past_its_share_of_the_memory_budget_is_refused_and_another_joins(void **state)
{
	struct join_opts o = { .max_bytes = 256 << 10 };
	struct pid_unrecorded pu = { 0 };
	struct join_counters c;
	struct sink k;
	struct join *j = new_join_opts(&k, o);

	(void)state;
	join__on_unrecorded(j, count_unrecorded, &pu);
	for (__u32 i = 0; i < 40000; i++)
		launch_of(j, 100, 1 + i % 4, 1000 + i, 10 + i);
	join__counters(j, &c);
	assert_true(c.budget_refused > 0);
	assert_int_equal(pu.n[0], c.queue_full);
	assert_true(pu.n[0] > 10000);
	assert_true(join__bytes(j) < 2 * o.max_bytes);
	/* The second process: 500 calls, a tick every 50, each paired and its kernel joined. */
	for (__u32 i = 0; i < 500; i++) {
		launch_of(j, 200, 7, 5000 + 10 * i, 70 + i);
		api_of(j, 200, 7, 5001 + 10 * i, 5005 + 10 * i, 9000 + i);
		kernel_of(j, 200, 9000 + i, 9000 + i);
		if (i % 50 == 49)
			join__advance(j, 5010 + 10 * i, 1 + i);
	}
	for (__u32 i = 0; i < 500; i++) {
		assert_int_equal(find(&k, 9000 + i)->reason, JOIN_OK);
		assert_int_equal(find(&k, 9000 + i)->site, 70 + i);
	}
	assert_int_equal(pu.n[1], 0);
	assert_true(join__bytes(j) < 2 * o.max_bytes);
	join__finish_all(j);
	assert_int_equal(join__bytes(j), 0);
	join__destroy(j);
}

/*
 * The budget is a bound, not a level to reach: a process holding exactly
 * the budget (alone: its share too) takes no more, its first thread's
 * queue refused and counted.
 */
static void test_a_process_holding_the_whole_budget_takes_no_more(void **state)
{
	struct sink k;
	struct join *j = new_join_opts(&k, (struct join_opts){ 0 });
	struct join_counters c;
	size_t attached;

	(void)state;
	assert_int_equal(join__attach(j, 100, 1), 0);
	attached = join__bytes(j);
	join__destroy(j);
	j = new_join_opts(&k, (struct join_opts){ .max_bytes = attached });
	assert_int_equal(join__attach(j, 100, 1), 0);
	assert_int_equal(join__bytes(j), attached);
	launch_of(j, 100, 1, 1000, 10);
	join__counters(j, &c);
	assert_int_equal(c.budget_refused, 1);
	assert_int_equal(join__bytes(j), attached);
	join__destroy(j);
}

/*
 * What a burst took goes back: 30,000 calls of one process, all joined,
 * held until the horizon; once they are gone, its queues and tables are
 * small again. (Without it, processes swelling in turn would each keep
 * their peak, whatever the budget.)
 */
static void test_the_memory_a_burst_took_goes_back_once_it_is_done(void **state)
{
	struct sink k;
	struct join *j = new_join_opts(&k, (struct join_opts){ 0 });
	size_t base, peak;

	(void)state;
	launch_of(j, 100, 1, 10, 1);
	join__advance(j, 100, 1);
	base = join__bytes(j);
	for (__u32 i = 0; i < 30000; i++) {
		launch_of(j, 100, 1, 1000 + 10 * i, 10 + i);
		api_of(j, 100, 1, 1001 + 10 * i, 1005 + 10 * i, 100000 + i);
	}
	for (__u32 i = 0; i < 30000; i++)
		kernel_of(j, 100, 200000 + i, i); /* activities whose record never comes: they wait */
	peak = join__bytes(j);
	assert_true(peak > base + (1 << 20));
	join__advance(j, 2 * MS, 2 * MS);
	/* 300 later calls, still within the horizon when the burst's expire: their queues shrink to them. */
	for (__u32 i = 0; i < 300; i++) {
		launch_of(j, 100, 1, 1500 * MS + 10 * i, 50000 + i);
		api_of(j, 100, 1, 1500 * MS + 10 * i + 1, 1500 * MS + 10 * i + 5, 300000 + i);
	}
	join__advance(j, 1600 * MS, 1500 * MS);
	join__advance(j, 1600 * MS, 2000 * MS);
	print_message("  bytes with 300 calls held: %zu\n", join__bytes(j));
	assert_true(join__bytes(j) <= base + (128 << 10)); /* kept whole: over 1.5 MB */
	join__advance(j, 5000 * MS, 5000 * MS); /* past the horizon: everything resolved or expired */
	print_message("  bytes: %zu at the start, %zu at the peak, %zu after\n", base, peak, join__bytes(j));
	assert_true(join__bytes(j) <= base + 4096);
	join__finish_all(j);
	assert_int_equal(join__bytes(j), 0);
	join__destroy(j);
}

/* A kernel launch of corr at 1.7 s, matched at 1.8 s, then its kernel (cookie). */
static void call_at_1700ms(struct join *j, __u64 corr, __u64 site, __u32 cookie)
{
	launch(j, 1, 1700 * MS, site);
	api(j, 1, 1700 * MS + 1, 1700 * MS + 5, corr, JOIN_DOMAIN_DRIVER);
	join__advance(j, 1800 * MS, 1800 * MS);
	kernel(j, corr, cookie);
}

/*
 * A call that took its one kernel leaves the table a second after it took
 * it, not at the horizon (10 s here, as the loader's): a stuck id's next
 * call within that second is still counted a reuse, and the kernel that
 * comes then is that call's, not the done one's; a call after that second
 * is one of its own, and its kernel joins it, not a guess. A call still
 * waiting for its kernel stays for the horizon.
 */
static void test_a_call_that_took_its_kernel_leaves_before_the_horizon(void **state)
{
	struct sink k;
	struct join *j = new_join_opts(&k, (struct join_opts){ .horizon_ns = 10000 * MS });
	struct join_counters c;

	(void)state;
	launch(j, 1, 1000, 10); /* A, 500: its kernel comes at once */
	api(j, 1, 1001, 1005, 500, JOIN_DOMAIN_DRIVER);
	launch(j, 1, 2000, 11); /* D, 700: its kernel comes after 5 s */
	api(j, 1, 2001, 2005, 700, JOIN_DOMAIN_DRIVER);
	launch(j, 1, 3000, 12); /* B, 600: its kernel comes at once */
	api(j, 1, 3001, 3005, 600, JOIN_DOMAIN_DRIVER);
	join__advance(j, 10 * MS, 1);
	kernel(j, 500, 1);
	kernel(j, 600, 2);
	launch(j, 1, 500 * MS, 13); /* C, 600 again, 0.5 s later: B is still held */
	api(j, 1, 500 * MS + 1, 500 * MS + 5, 600, JOIN_DOMAIN_DRIVER);
	join__advance(j, 600 * MS, 500 * MS);
	join__counters(j, &c);
	assert_int_equal(c.corr_reused, 1);
	{ /* C's kernel, begun after C was made: B is done with its own */
		struct join_activity a = { .pid = 100, .corr = 600, .start = 500 * MS + 10,
					   .end = 500 * MS + 20, .aux = { 5 } };

		join__add_activity(j, &a);
	}
	assert_int_equal(find(&k, 5)->site, 13);
	join__advance(j, 1600 * MS, 1500 * MS); /* A has left; D waits */
	call_at_1700ms(j, 500, 14, 3); /* E, 500 again: a call of its own now */
	join__advance(j, 5000 * MS, 5000 * MS);
	kernel(j, 700, 4);
	join__advance(j, 5100 * MS, 5100 * MS);
	join__counters(j, &c);
	assert_int_equal(c.corr_reused, 1);
	assert_int_equal(find(&k, 3)->site, 14);
	assert_int_equal(find(&k, 3)->reason, JOIN_OK);
	assert_int_equal(find(&k, 4)->site, 11); /* D: kept while it waited */
	assert_int_equal(find(&k, 4)->reason, JOIN_OK);
	assert_int_equal(c.activities_on_reused, 1); /* C's, paired in the chain of 600 */
	join__destroy(j);
}

static void typed_call(struct join *j, enum join_class cls, bool single, __u64 at, __u64 corr, __u64 site)
{
	struct join_launch l = { .pid = 100, .tid = 1, .ts = at, .cls = cls, .site = site,
				 .single = single };

	join__add_launch(j, &l);
	if (cls == JOIN_CLASS_COPY)
		copy_api(j, 1, at + 1, at + 5, corr);
	else
		api(j, 1, at + 1, at + 5, corr, JOIN_DOMAIN_DRIVER);
}

/*
 * A copy call's second each counts from its record, not from its match (a
 * record 3 s late, then one more); a graph launch, which takes what its
 * graph ran however many, stays for the horizon after its first kernel.
 */
static void test_a_copy_stays_a_second_after_its_record_and_a_graph_launch_the_horizon(void **state)
{
	struct sink k;
	struct join *j = new_join_opts(&k, (struct join_opts){ .horizon_ns = 10000 * MS });

	(void)state;
	typed_call(j, JOIN_CLASS_COPY, true, 1000, 500, 10);    /* K: one copy */
	typed_call(j, JOIN_CLASS_LAUNCH, false, 2000, 600, 11); /* G: a graph launch */
	join__advance(j, 10 * MS, 1);
	kind_act(j, 600, 1, JOIN_ACT_GRAPH, 7);
	join__advance(j, 3000 * MS, 3000 * MS);
	kind_act(j, 500, 2, JOIN_ACT_COPY, 0);
	join__advance(j, 3100 * MS, 3100 * MS);
	join__advance(j, 3500 * MS, 3500 * MS);
	kind_act(j, 500, 3, JOIN_ACT_COPY, 0); /* within K's second: still K's */
	join__advance(j, 5000 * MS, 5000 * MS); /* K has left */
	kind_act(j, 600, 4, JOIN_ACT_GRAPH, 8);
	join__advance(j, 6000 * MS, 6000 * MS);
	assert_int_equal(find(&k, 2)->site, 10);
	assert_int_equal(find(&k, 3)->site, 10);
	assert_int_equal(find(&k, 3)->reason, JOIN_OK);
	assert_int_equal(find(&k, 1)->site, 11);
	assert_int_equal(find(&k, 4)->site, 11);
	assert_int_equal(find(&k, 4)->reason, JOIN_OK);
	join__destroy(j);
}

/*
 * A process launching 10,000 kernels a second for 6 s, each kernel in the
 * tick after its call: the join holds about a second of calls, not the
 * horizon's 10 s (about 60,000 here; 114,000 on the bench's small step).
 */
static void test_calls_that_took_their_kernels_do_not_pile_up_for_the_horizon(void **state)
{
	enum { PER_TICK = 1000, TICKS = 60 };
	struct sink k;
	struct join *j = new_join_opts(&k, (struct join_opts){ .horizon_ns = 10000 * MS });
	struct join_counters c;
	size_t held;

	(void)state;
	for (__u32 t = 0; t < TICKS; t++) {
		__u64 at = (t + 1) * 100 * MS;

		for (__u32 i = 0; i < PER_TICK; i++) {
			__u32 n = t * PER_TICK + i;

			launch(j, 1, at + 10 * i, 10);
			api(j, 1, at + 10 * i + 1, at + 10 * i + 5, 1000 + n, JOIN_DOMAIN_DRIVER);
		}
		join__advance(j, at + 50 * MS, at + 50 * MS);
		for (__u32 i = 0; i < PER_TICK && t > 0; i++)
			kernel(j, 1000 + (t - 1) * PER_TICK + i, 0);
	}
	held = join__bytes(j);
	join__counters(j, &c);
	print_message("  bytes held after %u calls: %zu\n", TICKS * PER_TICK, held);
	assert_int_equal(c.activities_joined, (TICKS - 1) * PER_TICK);
	assert_true(held < (3u << 20)); /* every call held: over 6 MB */
	join__destroy(j);
}

/*
 * A call due no activity (it failed) leaves a second after it was matched,
 * so the calls behind it that are done leave too: a later call of their id
 * is one of its own, not a reuse.
 */
static void test_a_call_due_nothing_leaves_after_a_second(void **state)
{
	struct sink k;
	struct join *j = new_join_opts(&k, (struct join_opts){ .horizon_ns = 10000 * MS });
	struct join_api failed = { .pid = 100, .tid = 1, .start = 1001, .end = 1005, .corr = 900,
				   .domain = JOIN_DOMAIN_DRIVER, .cls = JOIN_CLASS_LAUNCH, .failed = true };
	struct join_counters c;

	(void)state;
	launch(j, 1, 1000, 10); /* F: returned an error */
	join__add_api(j, &failed);
	launch(j, 1, 2000, 11); /* A, 500 */
	api(j, 1, 2001, 2005, 500, JOIN_DOMAIN_DRIVER);
	join__advance(j, 10 * MS, 1);
	kernel(j, 500, 1);
	join__advance(j, 1500 * MS, 1500 * MS);
	call_at_1700ms(j, 500, 12, 2); /* E, 500 again */
	join__advance(j, 1900 * MS, 1900 * MS);
	join__counters(j, &c);
	assert_int_equal(c.corr_reused, 0);
	assert_int_equal(find(&k, 2)->site, 12);
	assert_int_equal(c.launches_without_activity, 0);
	join__destroy(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_driver_records_join_the_launch_that_precedes_them_per_thread),
		cmocka_unit_test(test_a_correlation_id_two_calls_hold_is_counted),
		cmocka_unit_test(test_a_call_that_took_its_kernel_leaves_before_the_horizon),
		cmocka_unit_test(test_calls_that_took_their_kernels_do_not_pile_up_for_the_horizon),
		cmocka_unit_test(test_a_copy_stays_a_second_after_its_record_and_a_graph_launch_the_horizon),
		cmocka_unit_test(test_a_call_due_nothing_leaves_after_a_second),
		cmocka_unit_test(test_activities_of_calls_sharing_one_id_go_to_them_in_order),
		cmocka_unit_test(test_a_burst_of_one_ids_activities_goes_to_its_calls_by_kind),
		cmocka_unit_test(test_kernels_of_one_id_from_two_streams_go_by_their_shape),
		cmocka_unit_test(test_a_kernel_arriving_before_its_api_record_waits_for_it),
		cmocka_unit_test(test_advance_pid_pairs_one_process_before_its_activities),
		cmocka_unit_test(test_advance_pid_leaves_a_graph_launch_for_the_tick),
		cmocka_unit_test(test_a_graph_launch_gives_all_its_kernels_to_one_site),
		cmocka_unit_test(test_a_lost_launch_event_is_counted_and_the_rest_resynchronise),
		cmocka_unit_test(test_a_lost_api_record_is_counted_and_the_rest_resynchronise),
		cmocka_unit_test(test_a_runtime_record_joins_the_driver_call_it_brackets),
		cmocka_unit_test(test_a_record_waits_until_the_bpf_side_has_been_read_past_it),
		cmocka_unit_test(test_an_activity_without_api_record_leaves_after_the_horizon),
		cmocka_unit_test(test_a_kernel_read_before_the_first_tick_still_waits_a_horizon),
		cmocka_unit_test(test_finishing_a_process_resolves_everything_it_holds),
		cmocka_unit_test(test_calls_made_before_attach_are_labelled_so),
		cmocka_unit_test(test_a_driver_record_just_after_attach_is_counted_apart_once_per_thread),
		cmocka_unit_test(test_every_activity_leaves_exactly_once_when_queues_overflow),
		cmocka_unit_test(test_visiting_sites_renumbers_queued_and_matched_launches),
		cmocka_unit_test(test_launches_without_records_all_leave_once_past_the_queue_bound),
		cmocka_unit_test(test_launches_before_the_shim_recorded_are_labelled_not_lost),
		cmocka_unit_test(test_a_launch_inside_an_earlier_window_is_not_called_before_recording),
		cmocka_unit_test(test_a_matched_launch_just_before_a_switch_off_without_its_kernel_is_labelled),
		cmocka_unit_test(test_a_launch_without_its_record_just_before_a_switch_off_is_not_a_loss),
		cmocka_unit_test(test_a_stop_ends_the_profile_and_joins_what_came_before_it),
		cmocka_unit_test(test_an_activity_at_the_stop_without_its_api_record_is_left_out),
		cmocka_unit_test(test_windows_keep_what_was_launched_inside_them),
		cmocka_unit_test(test_windows_older_than_the_last_kept_are_outside),
		cmocka_unit_test(test_a_matched_launch_at_a_switch_whose_kernel_never_came_is_labelled),
		cmocka_unit_test(test_a_matched_launch_whose_kernel_never_came_while_recording_is_a_loss),
		cmocka_unit_test(test_made_up_threads_are_bounded_per_process),
		cmocka_unit_test(test_a_process_past_its_share_of_the_memory_budget_is_refused_and_another_joins),
		cmocka_unit_test(test_a_process_holding_the_whole_budget_takes_no_more),
		cmocka_unit_test(test_the_memory_a_burst_took_goes_back_once_it_is_done),
		cmocka_unit_test(test_queued_api_records_are_bounded_per_process),
		cmocka_unit_test(test_queued_launch_events_are_bounded_per_process),
		cmocka_unit_test(test_ordering_out_of_order_records_has_a_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
