/* SPDX-License-Identifier: MIT */
/*
 * CubinQueue (shim/cubin_queue.c): capture copies only, settle computes the
 * CRC outside the queue lock and emits one record per module, drain hands
 * out one copy per CRC, and every loss is bounded and counted.
 *
 * Mutation check kept for invariant 1: make settle() hold q->lock across the
 * CRC and test_capture_completes_while_settle_is_inside_a_blocked_crc fails.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim/cubin_queue.h"

/* A cubin ring over plain memory, as a test double for the memfd. */
struct fixture {
	__u8 *data;
	__u64 head, tail;
	__u64 counters[GP_CTR_MAX];
	struct cubin_ring ring;
	struct cubin_queue *q;
	/* what the callbacks saw */
	int crc_calls;
	int nrecs;
	struct gpu_module_load_v1 recs[64];
	int ndrained;
	struct gpu_module_load_v1 drained[64];
	__u8 drained_first[64];
};

static struct fixture *fixture__new(__u64 size, __u64 max, const struct cubin_queue_opts *opts)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->data = aligned_alloc(64, size);
	assert_non_null(f->data);
	memset(f->data, 0, size);
	f->ring = (struct cubin_ring){ .data = f->data, .size = size, .max = max,
		.head = &f->head, .tail = &f->tail, .counters = f->counters };
	assert_int_equal(cubin_queue__new(&f->ring, opts, &f->q), 0);
	return f;
}

static void fixture__free(struct fixture *f)
{
	cubin_queue__destroy(f->q);
	free(f->data);
	free(f);
}

/* Not zlib's CRC, like cuptiGetCubinCrc: the queue must not care. */
static int test_crc(void *ctx, const void *cubin, size_t size, __u64 *ret_crc)
{
	struct fixture *f = ctx;
	const __u8 *p = cubin;
	__u64 h = 1469598103934665603ull;

	__atomic_fetch_add(&f->crc_calls, 1, __ATOMIC_RELAXED);
	for (size_t i = 0; i < size; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	*ret_crc = h;
	return 0;
}

static void on_record(void *ctx, const struct gpu_module_load_v1 *rec)
{
	struct fixture *f = ctx;

	if (f->nrecs < 64)
		f->recs[f->nrecs] = *rec;
	f->nrecs++;
}

static void on_drain(void *ctx, const struct gpu_module_load_v1 *rec, const void *cubin, size_t size)
{
	struct fixture *f = ctx;

	assert_int_equal(size, rec->size);
	if (f->ndrained < 64) {
		f->drained[f->ndrained] = *rec;
		f->drained_first[f->ndrained] = size ? *(const __u8 *)cubin : 0;
	}
	f->ndrained++;
}

static int capture(struct fixture *f, __u64 module_id, __u64 load_ns, __u8 fill, size_t size)
{
	__u8 *bytes = malloc(size ? size : 1);
	struct cubin_capture cap = { .module_id = module_id, .load_ns = load_ns,
		.tid = 42, .data = bytes, .size = size };
	int err;

	memset(bytes, fill, size);
	if (size)
		bytes[0] = fill; /* first byte identifies the module in drains */
	err = cubin_queue__capture(f->q, &cap);
	free(bytes);
	return err;
}

static int settle(struct fixture *f)
{
	return cubin_queue__settle(f->q, test_crc, f, on_record, f);
}

static void test_capture_computes_no_crc_and_emits_no_record(void **state)
{
	struct fixture *f = fixture__new(1 << 16, 8192, NULL);

	assert_int_equal(capture(f, 1, 100, 0xa1, 1000), 0);
	assert_int_equal(capture(f, 2, 200, 0xa2, 2000), 0);
	assert_int_equal(capture(f, 3, 300, 0xa3, 3000), 0);
	assert_int_equal(f->crc_calls, 0);
	assert_int_equal(f->nrecs, 0);
	assert_int_equal(f->counters[GP_CTR_MODULES_CAPTURED], 3);
	assert_int_equal(settle(f), 3);
	assert_int_equal(f->crc_calls, 3);
	assert_int_equal(f->nrecs, 3);
	fixture__free(f);
}

static void test_record_keeps_the_callbacks_module_id_and_load_time(void **state)
{
	struct fixture *f = fixture__new(1 << 16, 8192, NULL);
	__u64 crc;

	assert_int_equal(capture(f, 0x1234567, 987654321ull, 0x5c, 777), 0);
	assert_int_equal(settle(f), 1);
	assert_int_equal(f->recs[0].module_id, 0x1234567);
	assert_int_equal(f->recs[0].load_ns, 987654321ull);
	assert_int_equal(f->recs[0].size, 777);
	{
		__u8 bytes[777];

		memset(bytes, 0x5c, sizeof(bytes));
		test_crc(f, bytes, sizeof(bytes), &crc);
	}
	assert_int_equal(f->recs[0].crc, crc);
	fixture__free(f);
}

/* ------------------------------------------- capture during a blocked CRC */

struct blocking {
	struct fixture *f;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool crc_entered, crc_release, capture_done;
	int capture_err;
};

static int blocking_crc(void *ctx, const void *cubin, size_t size, __u64 *ret_crc)
{
	struct blocking *b = ctx;

	pthread_mutex_lock(&b->mu);
	b->crc_entered = true;
	pthread_cond_broadcast(&b->cv);
	while (!b->crc_release)
		pthread_cond_wait(&b->cv, &b->mu);
	pthread_mutex_unlock(&b->mu);
	return test_crc(b->f, cubin, size, ret_crc);
}

static void *settle_thread(void *arg)
{
	struct blocking *b = arg;

	cubin_queue__settle(b->f->q, blocking_crc, b, on_record, b->f);
	return NULL;
}

static void *capture_thread(void *arg)
{
	struct blocking *b = arg;
	int err = capture(b->f, 2, 2, 0xb2, 4000);

	pthread_mutex_lock(&b->mu);
	b->capture_err = err;
	b->capture_done = true;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

/* Waits for *flag under b->mu for at most secs; false on timeout. */
static bool wait_flag(struct blocking *b, bool *flag, int secs)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += secs;
	pthread_mutex_lock(&b->mu);
	while (!*flag && pthread_cond_timedwait(&b->cv, &b->mu, &until) != ETIMEDOUT)
		;
	ok = *flag;
	pthread_mutex_unlock(&b->mu);
	return ok;
}

static void test_capture_completes_while_settle_is_inside_a_blocked_crc(void **state)
{
	struct fixture *f = fixture__new(1 << 16, 8192, NULL);
	struct blocking b = { .f = f };
	pthread_t settler, capturer;
	bool entered, done;

	pthread_mutex_init(&b.mu, NULL);
	pthread_cond_init(&b.cv, NULL);
	assert_int_equal(capture(f, 1, 1, 0xb1, 3000), 0);
	assert_int_equal(pthread_create(&settler, NULL, settle_thread, &b), 0);
	entered = wait_flag(&b, &b.crc_entered, 10);
	if (entered)
		assert_int_equal(pthread_create(&capturer, NULL, capture_thread, &b), 0);
	done = entered && wait_flag(&b, &b.capture_done, 30); /* only a capture waiting on the CRC takes that long */

	/* Release before asserting, so a failure does not leave threads hung. */
	pthread_mutex_lock(&b.mu);
	b.crc_release = true;
	pthread_cond_broadcast(&b.cv);
	pthread_mutex_unlock(&b.mu);
	pthread_join(settler, NULL);
	if (entered)
		pthread_join(capturer, NULL);

	assert_true(entered);
	assert_true(done); /* capture() waited on settle()'s CRC: invariant 1 broken */
	assert_int_equal(b.capture_err, 0);
	/* The settler may already have taken the second module after release. */
	assert_true(settle(f) >= 0);
	assert_int_equal(f->nrecs, 2);
	pthread_cond_destroy(&b.cv);
	pthread_mutex_destroy(&b.mu);
	fixture__free(f);
}

/* ------------------------------------------------------------ dedup/bounds */

static void test_two_loads_of_one_crc_drain_as_one_module_but_emit_two_records(void **state)
{
	struct fixture *f = fixture__new(1 << 16, 8192, NULL);
	struct cubin_queue_stats st;

	assert_int_equal(capture(f, 10, 1000, 0x77, 5000), 0);
	assert_int_equal(capture(f, 11, 2000, 0x77, 5000), 0);
	assert_int_equal(settle(f), 2);
	assert_int_equal(f->nrecs, 2);
	assert_int_equal(f->recs[0].module_id, 10);
	assert_int_equal(f->recs[1].module_id, 11);
	assert_int_equal(f->recs[1].load_ns, 2000);
	assert_true(f->recs[0].crc == f->recs[1].crc);
	assert_int_equal(cubin_queue__drain(f->q, 0, on_drain, f), 1);
	assert_int_equal(f->ndrained, 1);
	assert_int_equal(f->drained[0].module_id, 10);
	cubin_queue__stats(f->q, &st);
	assert_int_equal(st.cubin_duplicates, 1);
	fixture__free(f);
}

static void test_a_full_offer_queue_still_lets_new_modules_reach_settle_and_their_record(void **state)
{
	struct cubin_queue_opts opts = { .offer_max_entries = 1 };
	struct fixture *f = fixture__new(1 << 14, 4096, &opts);
	struct cubin_queue_stats st;

	/* The offer queue holds one module and nobody drains it. */
	for (int round = 0; round < 8; round++) {
		assert_int_equal(capture(f, 100 + round, round, (__u8)(0x10 + round), 3000), 0);
		assert_int_equal(capture(f, 200 + round, round, (__u8)(0x80 + round), 3000), 0);
		assert_int_equal(settle(f), 2);
	}
	assert_int_equal(f->nrecs, 16);
	cubin_queue__stats(f->q, &st);
	assert_int_equal(st.cubin_offer_full, 15);
	assert_int_equal(st.cubin_pending_full, 0);
	assert_int_equal(st.modules_settled, 16);
	assert_int_equal(cubin_queue__drain(f->q, 0, on_drain, f), 1);
	assert_int_equal(f->drained_first[0], 0x10);
	fixture__free(f);
}

static void test_past_the_pending_bound_a_module_is_lost_whole_and_counted(void **state)
{
	struct fixture *f = fixture__new(4096, 2048, NULL);
	int ok = 0, err;

	while ((err = capture(f, (__u64)ok, 0, (__u8)(0x30 + ok), 1000)) == 0)
		ok++;
	assert_int_equal(err, -ENOSPC);
	assert_int_equal(ok, 3); /* 3 x (64 + 1000) fit in 4096, a 4th does not */
	assert_int_equal(f->counters[GP_CTR_CUBIN_PENDING_FULL], 1);
	assert_int_equal(f->head, 3 * (64 + 1000));
	assert_int_equal(settle(f), 3);
	assert_int_equal(cubin_queue__drain(f->q, 0, on_drain, f), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(f->drained[i].size, 1000);
		assert_int_equal(f->drained_first[i], 0x30 + i);
	}
	/* The space is free again once settled. */
	assert_int_equal(capture(f, 9, 0, 0x39, 1000), 0);
	fixture__free(f);
}

static void test_a_cubin_over_the_limit_is_counted_too_large_and_not_written(void **state)
{
	struct fixture *f = fixture__new(1 << 14, 1024, NULL);

	assert_int_equal(capture(f, 1, 0, 0x1, 1025), -EFBIG);
	assert_int_equal(f->counters[GP_CTR_CUBIN_TOO_LARGE], 1);
	assert_int_equal(f->head, 0);
	assert_int_equal(settle(f), 0);
	fixture__free(f);
}

static void test_entries_that_reach_the_ring_end_wrap_through_padding(void **state)
{
	struct fixture *f = fixture__new(4096, 2048, NULL);

	for (int i = 0; i < 40; i++) {
		assert_int_equal(capture(f, (__u64)i, (__u64)i, (__u8)i, (size_t)(100 + 37 * i) % 1500), 0);
		assert_int_equal(settle(f), 1);
		assert_int_equal(f->recs[i < 64 ? i : 63].module_id, (__u64)i);
	}
	assert_int_equal(cubin_queue__drain(f->q, 0, on_drain, f), 40);
	for (int i = 0; i < 40; i++)
		if (f->drained[i].size)
			assert_int_equal(f->drained_first[i], (__u8)i);
	fixture__free(f);
}

static void test_settle_resyncs_over_garbage_and_counts_it(void **state)
{
	struct fixture *f = fixture__new(4096, 2048, NULL);
	struct cubin_queue_stats st;

	assert_int_equal(capture(f, 1, 0, 0x1, 100), 0);
	memset(f->data, 0xee, 64); /* the writer scribbled on the header */
	assert_int_equal(settle(f), 0);
	cubin_queue__stats(f->q, &st);
	assert_int_equal(st.cubin_garbage, 1);
	assert_int_equal(f->tail, f->head);
	/* A head that leaps more than a ring ahead is garbage too. */
	f->head += 1 << 20;
	assert_int_equal(settle(f), 0);
	cubin_queue__stats(f->q, &st);
	assert_int_equal(st.cubin_garbage, 2);
	fixture__free(f);
}

static void test_a_lying_consumer_tail_makes_capture_report_full_instead_of_overwriting(void **state)
{
	struct fixture *f = fixture__new(4096, 2048, NULL);

	f->tail = 1ull << 40; /* ahead of the head: a lie */
	assert_int_equal(capture(f, 1, 0, 0x1, 100), -ENOSPC);
	assert_int_equal(f->head, 0);
	f->tail = 0;
	assert_int_equal(capture(f, 1, 0, 0x1, 100), 0);
	fixture__free(f);
}

static void test_the_counters_line_reports_every_loss(void **state)
{
	struct fixture *f = fixture__new(4096, 1024, NULL);
	char line[1024];

	f->counters[GP_CTR_RING_DROPPED] = 7;
	f->counters[GP_CTR_CUPTI_DROPPED] = 9;
	assert_int_equal(capture(f, 1, 0, 0x1, 2000), -EFBIG);
	assert_int_equal(capture(f, 2, 0, 0x2, 1000), 0);
	assert_int_equal(capture(f, 3, 0, 0x3, 1000), 0);
	assert_int_equal(capture(f, 4, 0, 0x4, 1000), 0);
	assert_int_equal(capture(f, 5, 0, 0x5, 1000), -ENOSPC);
	assert_true(cubin_queue__format_counters(f->q, line, sizeof(line)) > 0);
	assert_non_null(strstr(line, "modules_captured=3 "));
	assert_non_null(strstr(line, "cubin_too_large=1 "));
	assert_non_null(strstr(line, "cubin_pending_depth=3192 "));
	assert_non_null(strstr(line, "cubin_pending_full=1 "));
	assert_non_null(strstr(line, "ring_dropped=7 "));
	assert_non_null(strstr(line, "cupti_dropped=9 "));
	assert_null(strchr(line, '\n'));
	fixture__free(f);
}

/*
 * The loader's own limit on one cubin, below what the ring's layout allows
 * (a writer chooses the layout): the entry is consumed without a byte of it
 * read or allocated, its module still gets its record (crc 0), counted.
 */
static void test_a_cubin_over_the_settlers_limit_is_skipped_unread_and_counted(void **state)
{
	struct cubin_queue_opts o = { .size_max = 1000 };
	struct fixture *f = fixture__new(1 << 16, 8192, &o);
	struct cubin_queue_stats st;

	assert_int_equal(capture(f, 1, 10, 0x1, 4000), 0);
	assert_int_equal(capture(f, 2, 20, 0x2, 1000), 0);
	assert_int_equal(settle(f), 2);
	assert_int_equal(f->crc_calls, 1); /* the small one only */
	assert_int_equal(f->recs[0].module_id, 1);
	assert_int_equal(f->recs[0].crc, 0);
	assert_int_equal(f->recs[0].size, 4000);
	assert_int_equal(f->recs[1].module_id, 2);
	assert_int_not_equal(f->recs[1].crc, 0);
	assert_int_equal(f->tail, f->head);
	cubin_queue__stats(f->q, &st);
	assert_int_equal(st.cubin_over_limit, 1);
	assert_int_equal(cubin_queue__drain(f->q, 0, on_drain, f), 1);
	assert_int_equal(f->drained[0].module_id, 2);
	fixture__free(f);
}

/* A writer as fast as the settler: each call takes its share, the rest waits. */
static void test_settle_stops_at_its_entry_and_byte_bounds_and_the_rest_waits(void **state)
{
	struct cubin_queue_opts o = { .settle_max = 4, .settle_max_bytes = 3000 };
	struct fixture *f = fixture__new(1 << 16, 8192, &o);
	struct cubin_queue_stats st;

	for (int i = 0; i < 5; i++)
		assert_int_equal(capture(f, (__u64)i, 0, (__u8)(0x40 + i), 1000), 0);
	assert_int_equal(settle(f), 3); /* the third crosses 3000 bytes: the last one */
	assert_int_equal(settle(f), 2);
	assert_int_equal(settle(f), 0);
	for (int i = 0; i < 12; i++)
		assert_int_equal(capture(f, (__u64)i, 0, (__u8)(0x50 + i), 10), 0);
	assert_int_equal(settle(f), 4);
	cubin_queue__stats(f->q, &st);
	assert_int_equal(st.settle_cut, 2);
	assert_int_equal(st.modules_settled, 9);
	fixture__free(f);
}

/* The settler's clock in these tests: it moves only by what each CRC is said to take. */
static __u64 fake_ns, crc_cost_ns[8];
static unsigned crc_calls;

static __u64 fake_clock(void)
{
	return fake_ns;
}

static int timed_crc(void *ctx, const void *cubin, size_t size, __u64 *ret_crc)
{
	fake_ns += crc_cost_ns[crc_calls++ % 8];
	return test_crc(ctx, cubin, size, ret_crc);
}

static void crc_costs(__u64 ms0, __u64 ms_rest)
{
	fake_ns = 1000;
	crc_calls = 0;
	crc_cost_ns[0] = ms0 * 1000000;
	for (int i = 1; i < 8; i++)
		crc_cost_ns[i] = ms_rest * 1000000;
}

/*
 * The time bound is checked between entries, never before the first (a
 * call preempted past its bound before it began still settles one): five
 * 20 ms CRCs in 30 ms calls go two, two, one; each call's 10 ms past the
 * bound is less than a bound, paid back at once by the next.
 */
static void test_settle_stops_at_its_time_bound(void **state)
{
	struct cubin_queue_opts o = { .settle_max_ns = 30ull * 1000 * 1000, .clock_ns = fake_clock };
	struct fixture *f = fixture__new(1 << 16, 8192, &o);
	struct cubin_queue_stats st;

	(void)state;
	crc_costs(20, 20);
	for (int i = 0; i < 5; i++)
		assert_int_equal(capture(f, (__u64)i, 0, (__u8)(0x60 + i), 100), 0);
	assert_int_equal(cubin_queue__settle(f->q, timed_crc, f, on_record, f), 2);
	assert_int_equal(cubin_queue__settle(f->q, timed_crc, f, on_record, f), 2);
	assert_int_equal(cubin_queue__settle(f->q, timed_crc, f, on_record, f), 1);
	cubin_queue__stats(f->q, &st);
	assert_int_equal(st.settle_deferred, 0);
	fixture__free(f);
}

/*
 * An entry that takes far past the bound (a ring offering huge cubins) is
 * paid back: the calls after it settle nothing, one bound each, until the
 * overrun is paid; so a ring costs its settler a bound a call on average.
 */
static void test_an_entry_past_the_time_bound_is_paid_back_by_the_next_calls(void **state)
{
	struct cubin_queue_opts o = { .settle_max_ns = 30ull * 1000 * 1000, .clock_ns = fake_clock };
	struct fixture *f = fixture__new(1 << 16, 8192, &o);
	struct cubin_queue_stats st;

	(void)state;
	crc_costs(100, 1); /* the first takes 100 ms: 70 past the bound */
	for (int i = 0; i < 3; i++)
		assert_int_equal(capture(f, (__u64)i, 0, (__u8)(0x70 + i), 100), 0);
	assert_int_equal(cubin_queue__settle(f->q, timed_crc, f, on_record, f), 1);
	assert_int_equal(cubin_queue__settle(f->q, timed_crc, f, on_record, f), 0); /* 70 -> 40 */
	assert_int_equal(cubin_queue__settle(f->q, timed_crc, f, on_record, f), 0); /* 40 -> 10 */
	assert_int_equal(cubin_queue__settle(f->q, timed_crc, f, on_record, f), 2);
	cubin_queue__stats(f->q, &st);
	assert_int_equal(st.settle_deferred, 2);
	assert_int_equal(st.modules_settled, 3);
	fixture__free(f);
}

static void test_a_detached_queue_after_fork_touches_nothing(void **state)
{
	struct fixture *f = fixture__new(4096, 1024, NULL);

	cubin_queue__detach(f->q);
	assert_int_equal(capture(f, 1, 0, 0x1, 100), -ENODEV);
	assert_int_equal(f->head, 0);
	assert_int_equal(f->counters[GP_CTR_MODULES_CAPTURED], 0);
	fixture__free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_computes_no_crc_and_emits_no_record),
		cmocka_unit_test(test_record_keeps_the_callbacks_module_id_and_load_time),
		cmocka_unit_test(test_capture_completes_while_settle_is_inside_a_blocked_crc),
		cmocka_unit_test(test_two_loads_of_one_crc_drain_as_one_module_but_emit_two_records),
		cmocka_unit_test(test_a_full_offer_queue_still_lets_new_modules_reach_settle_and_their_record),
		cmocka_unit_test(test_past_the_pending_bound_a_module_is_lost_whole_and_counted),
		cmocka_unit_test(test_a_cubin_over_the_limit_is_counted_too_large_and_not_written),
		cmocka_unit_test(test_entries_that_reach_the_ring_end_wrap_through_padding),
		cmocka_unit_test(test_settle_resyncs_over_garbage_and_counts_it),
		cmocka_unit_test(test_a_lying_consumer_tail_makes_capture_report_full_instead_of_overwriting),
		cmocka_unit_test(test_the_counters_line_reports_every_loss),
		cmocka_unit_test(test_a_cubin_over_the_settlers_limit_is_skipped_unread_and_counted),
		cmocka_unit_test(test_settle_stops_at_its_entry_and_byte_bounds_and_the_rest_waits),
		cmocka_unit_test(test_settle_stops_at_its_time_bound),
		cmocka_unit_test(test_an_entry_past_the_time_bound_is_paid_back_by_the_next_calls),
		cmocka_unit_test(test_a_detached_queue_after_fork_touches_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
