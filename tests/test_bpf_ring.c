/* SPDX-License-Identifier: MIT */
/*
 * The BPF ring reader's record walk on a ring laid out in plain memory, as
 * the kernel lays it out: records in order, one still being written, one
 * discarded, one that runs past the end, and a length no record can have.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>
#include "user/probe/bpf_ring.h"

#define SIZE 4096

struct fake {
	unsigned long consumer;
	unsigned long page[SIZE / sizeof(unsigned long) * 2]; /* producer word, then data */
	struct bpf_ring r;
};

static struct fake *fake_new(void)
{
	struct fake *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->r.size = SIZE;
	f->r.page = SIZE;
	f->r.epoll_fd = -1;
	f->r.consumer = &f->consumer;
	f->r.producer = f->page;
	f->r.data = (const __u8 *)f->page + SIZE;
	return f;
}

static void fake_free(struct fake *f)
{
	free(f->r.bounce);
	free(f);
}

static __u8 *data(struct fake *f)
{
	return (__u8 *)f->page + SIZE;
}

/* Writes a record of len bytes of value v at pos (free-running); returns the next pos. */
static unsigned long put(struct fake *f, unsigned long pos, __u32 len, __u8 v, __u32 flags)
{
	size_t off = pos & (SIZE - 1);
	__u32 hdr[2] = { len | flags, 0 };

	memcpy(data(f) + off, hdr, sizeof(hdr));
	for (__u32 i = 0; i < len; i++)
		data(f)[(off + BPF_RINGBUF_HDR_SZ + i) & (SIZE - 1)] = v;
	return pos + ((len + BPF_RINGBUF_HDR_SZ + 7) & ~7u);
}

struct got {
	unsigned n, bad;
	size_t len[8];
	__u8 v[8];
	int fail_at; /* 1-based record to fail, 0: none */
};

static int on_record(void *ctx, const void *p, size_t size)
{
	struct got *g = ctx;
	const __u8 *b = p;

	if (g->n < 8) {
		g->len[g->n] = size;
		g->v[g->n] = size ? b[0] : 0;
	}
	for (size_t i = 0; i < size; i++)
		g->bad += b[i] != b[0];
	g->n++;
	return g->fail_at && (int)g->n == g->fail_at ? -EIO : 0;
}

static void test_records_in_order_up_to_one_being_written(void **state)
{
	struct fake *f = fake_new();
	struct got g = { 0 };
	unsigned long pos = 0, busy;

	(void)state;
	pos = put(f, pos, 100, 1, 0);
	pos = put(f, pos, 13, 2, BPF_RINGBUF_DISCARD_BIT); /* skipped */
	pos = put(f, pos, 7, 3, 0);
	busy = pos;
	pos = put(f, pos, 50, 4, BPF_RINGBUF_BUSY_BIT);
	f->page[0] = pos;
	assert_int_equal(bpf_ring__consume(&f->r, on_record, &g), 2);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.len[0], 100);
	assert_int_equal(g.v[0], 1);
	assert_int_equal(g.len[1], 7);
	assert_int_equal(g.v[1], 3);
	assert_int_equal(g.bad, 0);
	/* Stopped at the busy record: its space is not given back yet. */
	assert_int_equal(f->consumer, busy);
	/* Written now: the next pass takes it. */
	put(f, busy, 50, 4, 0);
	assert_int_equal(bpf_ring__consume(&f->r, on_record, &g), 1);
	assert_int_equal(g.v[2], 4);
	assert_int_equal(f->consumer, pos);
	fake_free(f);
}

static void test_a_record_past_the_end_is_put_together(void **state)
{
	struct fake *f = fake_new();
	struct got g = { 0 };
	unsigned long pos = SIZE * 3 - 64; /* a few laps on, 64 bytes before the end */

	(void)state;
	f->consumer = pos;
	pos = put(f, pos, 300, 7, 0); /* 56 bytes at the end, 244 at the start */
	pos = put(f, pos, 20, 8, 0);
	f->page[0] = pos;
	assert_int_equal(bpf_ring__consume(&f->r, on_record, &g), 2);
	assert_int_equal(g.len[0], 300);
	assert_int_equal(g.v[0], 7);
	assert_int_equal(g.v[1], 8);
	assert_int_equal(g.bad, 0);
	assert_int_equal(f->consumer, pos);
	fake_free(f);
}

static void test_a_header_that_ends_the_lap(void **state)
{
	struct fake *f = fake_new();
	struct got g = { 0 };
	unsigned long pos = SIZE - 8; /* the header fills the lap's last 8 bytes */

	(void)state;
	f->consumer = pos;
	pos = put(f, pos, 40, 9, 0);
	f->page[0] = pos;
	assert_int_equal(bpf_ring__consume(&f->r, on_record, &g), 1);
	assert_int_equal(g.len[0], 40);
	assert_int_equal(g.v[0], 9);
	assert_int_equal(g.bad, 0);
	fake_free(f);
}

static void test_a_callback_error_stops_after_that_record(void **state)
{
	struct fake *f = fake_new();
	struct got g = { .fail_at = 2 };
	unsigned long pos = 0, after2;

	(void)state;
	pos = put(f, pos, 10, 1, 0);
	pos = put(f, pos, 10, 2, 0);
	after2 = pos;
	pos = put(f, pos, 10, 3, 0);
	f->page[0] = pos;
	assert_int_equal(bpf_ring__consume(&f->r, on_record, &g), -EIO);
	assert_int_equal(g.n, 2);
	assert_int_equal(f->consumer, after2);
	fake_free(f);
}

static void test_a_length_no_record_can_have_is_refused(void **state)
{
	struct fake *f = fake_new();
	struct got g = { 0 };
	unsigned long pos = 0;

	(void)state;
	pos = put(f, pos, 10, 1, 0);
	{
		__u32 hdr[2] = { SIZE, 0 }; /* more than the ring holds */

		memcpy(data(f) + pos, hdr, sizeof(hdr));
	}
	f->page[0] = pos + 64;
	assert_int_equal(bpf_ring__consume(&f->r, on_record, &g), -EBADMSG);
	assert_int_equal(g.n, 1);
	assert_int_equal(f->consumer, pos);
	fake_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records_in_order_up_to_one_being_written),
		cmocka_unit_test(test_a_record_past_the_end_is_put_together),
		cmocka_unit_test(test_a_header_that_ends_the_lap),
		cmocka_unit_test(test_a_callback_error_stops_after_that_record),
		cmocka_unit_test(test_a_length_no_record_can_have_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
