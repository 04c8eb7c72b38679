/* SPDX-License-Identifier: MIT */
/* The launch-event queue's storage: order, bound, and memory that leaves. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "user/ingest/event_queue.h"

/* The sanitizers' shadow memory of the blocks stays: RSS says nothing there. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER_RSS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER_RSS 1
#endif
#endif
#ifndef UNDER_SANITIZER_RSS
#define UNDER_SANITIZER_RSS 0
#endif

#define BIG ((size_t)5 << 20) /* over one block */
#define SPARES ((size_t)16 << 20) /* four 4 MiB blocks kept for reuse, at most */

static size_t event_len(size_t i)
{
	if (i % 1000 == 999)
		return BIG;
	return 1 + (i * 7919) % 40000;
}

/* Event i: its index, then bytes that depend on both index and offset. */
static void fill_event(uint8_t *buf, size_t i, size_t len)
{
	for (size_t k = 0; k < len; k++)
		buf[k] = (uint8_t)(i * 31 + k);
	if (len >= sizeof(i))
		memcpy(buf, &i, sizeof(i));
}

struct seen {
	size_t next, fail_at;
	uint8_t *want;
};

static int check_event(void *ctx, const void *data, size_t len)
{
	struct seen *s = ctx;
	size_t i = s->next++;

	if (i == s->fail_at)
		return -EBADMSG;
	assert_int_equal(len, event_len(i));
	assert_int_equal((uintptr_t)data % 8, 0);
	fill_event(s->want, i, len);
	assert_memory_equal(data, s->want, len);
	return 0;
}

static void test_events_come_out_in_order_and_intact(void **state)
{
	struct event_queue q;
	struct seen s = { .fail_at = SIZE_MAX, .want = malloc(BIG) };
	uint8_t *buf = malloc(BIG);
	size_t i, n = 3000, total = 0;

	event_queue__init(&q, (size_t)1 << 30);
	for (i = 0; i < n; i++) {
		fill_event(buf, i, event_len(i));
		assert_int_equal(event_queue__push(&q, buf, event_len(i)), 0);
		total += event_len(i);
	}
	assert_int_equal(q.bytes, total);
	assert_int_equal(q.peak_bytes, total);
	assert_true(event_queue__resident(&q) >= total);
	assert_int_equal(event_queue__consume(&q, event_queue__take(&q), check_event, &s), 0);
	assert_int_equal(s.next, n);
	assert_int_equal(q.bytes, 0);
	assert_true(event_queue__empty(&q));
	assert_true(event_queue__resident(&q) <= SPARES);
	event_queue__destroy(&q, NULL);
	assert_int_equal(event_queue__resident(&q), 0);
	free(buf);
	free(s.want);
}

static void test_a_push_past_the_bound_is_refused_until_the_queue_is_taken(void **state)
{
	struct event_queue q;
	uint8_t buf[1000] = { 0 };
	size_t n = 0;

	event_queue__init(&q, 100000);
	while (event_queue__push(&q, buf, sizeof(buf)) == 0)
		n++;
	assert_int_equal(n, 100);
	assert_int_equal(event_queue__push(&q, buf, sizeof(buf)), -ENOSPC);
	assert_int_equal(event_queue__push(&q, buf, 200000), -ENOSPC);
	assert_int_equal(q.bytes, 100000);
	event_queue__consume(&q, event_queue__take(&q), NULL, NULL);
	assert_int_equal(event_queue__push(&q, buf, sizeof(buf)), 0);
	event_queue__destroy(&q, event_queue__take(&q));
	assert_int_equal(event_queue__resident(&q), 0);
}

static void test_an_error_stops_the_handing_on_but_frees_everything(void **state)
{
	struct event_queue q;
	struct seen s = { .fail_at = 20, .want = malloc(BIG) };
	uint8_t *buf = malloc(BIG);
	size_t i;

	event_queue__init(&q, (size_t)1 << 30);
	for (i = 0; i < 2500; i++) {
		fill_event(buf, i, event_len(i));
		assert_int_equal(event_queue__push(&q, buf, event_len(i)), 0);
	}
	assert_int_equal(event_queue__consume(&q, event_queue__take(&q), check_event, &s), -EBADMSG);
	assert_int_equal(s.next, 21);
	assert_true(event_queue__resident(&q) <= SPARES);
	event_queue__destroy(&q, NULL);
	assert_int_equal(event_queue__resident(&q), 0);
	free(buf);
	free(s.want);
}

static size_t rss_kib(void)
{
	unsigned long size, resident;
	FILE *f = fopen("/proc/self/statm", "r");

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%lu %lu", &size, &resident), 2);
	fclose(f);
	return resident * (size_t)sysconf(_SC_PAGESIZE) / 1024;
}

/*
 * A 96 MiB backlog of 30 KiB events: the process's RSS goes back once it is
 * handled, but for the spare blocks, and all of it once the queue is freed.
 */
static void test_a_backlogs_memory_leaves_the_process_once_handled(void **state)
{
	struct event_queue q;
	static uint8_t buf[30 << 10];
	size_t i, before, during, after;

	event_queue__init(&q, (size_t)256 << 20);
	memset(buf, 0x5a, sizeof(buf));
	before = rss_kib();
	for (i = 0; i < (96u << 20) / sizeof(buf); i++)
		assert_int_equal(event_queue__push(&q, buf, sizeof(buf)), 0);
	during = rss_kib();
	assert_true(event_queue__resident(&q) >= (size_t)96 << 20);
	event_queue__consume(&q, event_queue__take(&q), NULL, NULL);
	after = rss_kib();
	print_message("RSS %zu -> %zu -> %zu KiB\n", before, during, after);
	/* What stays is the spare blocks, and it is counted. */
	assert_true(event_queue__resident(&q) <= SPARES);
	/* The peak since the last read still says what the backlog held, once. */
	assert_true(event_queue__resident_peak(&q) >= (size_t)96 << 20);
	assert_int_equal(event_queue__resident_peak(&q), event_queue__resident(&q));
	/* Another backlog reuses the spares: nothing more stays. */
	for (i = 0; i < (12u << 20) / sizeof(buf); i++)
		assert_int_equal(event_queue__push(&q, buf, sizeof(buf)), 0);
	event_queue__consume(&q, event_queue__take(&q), NULL, NULL);
	assert_true(event_queue__resident(&q) <= SPARES);
	if (!UNDER_SANITIZER_RSS) {
		assert_true(during >= before + (90u << 10));
		assert_true(after <= before + (SPARES >> 10) + 1024);
		assert_true(rss_kib() <= before + (SPARES >> 10) + 1024);
	}
	event_queue__destroy(&q, NULL);
	assert_int_equal(event_queue__resident(&q), 0);
	if (!UNDER_SANITIZER_RSS)
		assert_true(rss_kib() <= before + 1024);
}

static size_t mappings(void)
{
	static char buf[1 << 16];
	size_t lines = 0;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY);

	assert_true(fd >= 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t k = 0; k < n; k++)
			lines += buf[k] == '\n';
	close(fd);
	return lines;
}

/*
 * Backlogs whose blocks were mapped between other mappings (another
 * thread's stack, a library) leave the mapping count as it was: the kept
 * blocks lie in one mapping, made once, whatever was mapped beside them.
 */
static void test_the_kept_blocks_never_change_the_mapping_count(void **state)
{
	struct event_queue q;
	static uint8_t buf[1 << 20];
	void *other[12];
	size_t page = (size_t)sysconf(_SC_PAGESIZE), before, round, k;

	event_queue__init(&q, (size_t)256 << 20);
	before = mappings();
	for (round = 0; round < 3; round++) {
		for (k = 0; k < 12; k++) {
			for (int e = 0; e < 4; e++) /* more than a block's worth */
				assert_int_equal(event_queue__push(&q, buf, sizeof(buf)), 0);
			other[k] = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			assert_true(other[k] != MAP_FAILED);
		}
		event_queue__consume(&q, event_queue__take(&q), NULL, NULL);
		for (k = 0; k < 12; k++)
			munmap(other[k], page);
		assert_int_equal(mappings(), before);
	}
	assert_true(event_queue__resident(&q) <= SPARES);
	event_queue__destroy(&q, NULL);
	assert_int_equal(event_queue__resident(&q), 0);
}

/* The pump's pattern: a producer pushing under a lock, a consumer taking under it. */
struct shared {
	pthread_mutex_t lock;
	struct event_queue q;
	size_t n;
	int done;
};

static void *producer(void *arg)
{
	struct shared *sh = arg;
	uint8_t buf[64];

	for (size_t i = 0; i < sh->n; i++) {
		int err;

		memset(buf, 0, sizeof(buf));
		memcpy(buf, &i, sizeof(i));
		do {
			pthread_mutex_lock(&sh->lock);
			err = event_queue__push(&sh->q, buf, 8 + i % 56);
			pthread_mutex_unlock(&sh->lock);
		} while (err == -ENOSPC);
		assert_int_equal(err, 0);
	}
	__atomic_store_n(&sh->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int count_in_order(void *ctx, const void *data, size_t len)
{
	size_t *next = ctx, i;

	memcpy(&i, data, sizeof(i));
	assert_int_equal(i, *next);
	assert_int_equal(len, 8 + i % 56);
	(*next)++;
	return 0;
}

static void test_a_producer_and_a_consumer_thread_lose_nothing(void **state)
{
	struct shared sh = { .lock = PTHREAD_MUTEX_INITIALIZER, .n = 200000 };
	size_t next = 0;
	pthread_t t;

	event_queue__init(&sh.q, 64 << 10); /* small: the producer waits on the bound */
	assert_int_equal(pthread_create(&t, NULL, producer, &sh), 0);
	for (;;) {
		int done = __atomic_load_n(&sh.done, __ATOMIC_ACQUIRE);
		struct eq_block *list;

		pthread_mutex_lock(&sh.lock);
		list = event_queue__take(&sh.q);
		pthread_mutex_unlock(&sh.lock);
		assert_int_equal(event_queue__consume(&sh.q, list, count_in_order, &next), 0);
		if (done && !list)
			break;
	}
	pthread_join(t, NULL);
	assert_int_equal(next, sh.n);
	event_queue__destroy(&sh.q, NULL);
	assert_int_equal(event_queue__resident(&sh.q), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_events_come_out_in_order_and_intact),
		cmocka_unit_test(test_a_push_past_the_bound_is_refused_until_the_queue_is_taken),
		cmocka_unit_test(test_an_error_stops_the_handing_on_but_frees_everything),
		cmocka_unit_test(test_a_backlogs_memory_leaves_the_process_once_handled),
		cmocka_unit_test(test_the_kept_blocks_never_change_the_mapping_count),
		cmocka_unit_test(test_a_producer_and_a_consumer_thread_lose_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
