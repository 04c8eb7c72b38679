/* SPDX-License-Identifier: MIT */
/*
 * The shim's shared-memory producer (shim/shm.c): layout, record ring,
 * string interning, counters, and what a lying loader can and cannot do.
 */
#include <stdarg.h>
#include <stdbool.h>
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
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include "shim/shm.h"
#include "shim/cubin_queue.h"
#include "user/shm/shm_reader.h"

static struct shm *small_shm(__u64 records)
{
	struct shm_config cfg = { .ring_records = records, .strtab_bytes = 16 * 1024,
		.cubin_bytes = 1 << 20, .cubin_max = 64 * 1024 };
	struct shm *shm;

	assert_int_equal(shm__create(&cfg, &shm), 0);
	return shm;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void test_records_and_names_round_trip_from_writer_to_reader(void **state)
{
	struct shm *shm = small_shm(64);
	struct shm_reader *r;
	struct gp_record out[8];
	__u32 off;
	size_t n;
	char name[64];

	assert_int_equal(shm__intern(shm, "vectorAdd(float*)", &off), 0);
	assert_int_not_equal(off, 0);
	for (__u64 i = 1; i <= 3; i++)
		assert_int_equal(shm__write_record(shm, &(struct gp_record){ 0 }), 0);
	assert_int_equal(shm_reader__open_fd(shm__fd(shm), &r), 0);
	/* The three empty records are invalid (type 0): counted, skipped. */
	assert_int_equal(shm__write_record(shm, &(struct gp_record){ .type = GP_REC_KERNEL,
		.corr = 7, .start_ns = 1, .end_ns = 2, .kernel.name_off = off }), 0);
	assert_int_equal(shm_reader__read(r, out, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].corr, 7);
	assert_int_equal(shm_reader__name(r, out[0].kernel.name_off, name, sizeof(name)), 0);
	assert_string_equal(name, "vectorAdd(float*)");
	{
		struct shm_reader_stats st;

		shm_reader__stats(r, &st);
		assert_int_equal(st.records_bad, 3);
	}
	shm_reader__destroy(r);
	shm__destroy(shm);
}

static void test_a_name_is_interned_once(void **state)
{
	struct shm *shm = small_shm(64);
	__u32 a, b, c;
	__u64 used;

	assert_int_equal(shm__intern(shm, "k1", &a), 0);
	used = shm__header(shm)->producer.str_used;
	assert_int_equal(shm__intern(shm, "k1", &b), 0);
	assert_int_equal(shm__intern(shm, "k2", &c), 0);
	assert_int_equal(a, b);
	assert_int_not_equal(a, c);
	assert_int_equal(shm__header(shm)->producer.str_used, used + 3);
	assert_int_equal(shm__intern(shm, "", &a), 0);
	assert_int_equal(a, 0);
	shm__destroy(shm);
}

static void test_a_full_string_table_counts_and_gives_the_empty_name(void **state)
{
	struct shm *shm = small_shm(64);
	char name[600];
	__u32 off = 1;
	int err = 0, i;

	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	for (i = 0; i < 100 && !err; i++) {
		name[0] = (char)('A' + i % 26);
		name[1] = (char)('A' + i / 26);
		err = shm__intern(shm, name, &off);
	}
	assert_int_equal(err, -ENOSPC);
	assert_int_equal(off, 0);
	assert_int_equal(shm__counter(shm, GP_CTR_STRINGS_FULL), 1);
	assert_true(shm__header(shm)->producer.str_used <= 16 * 1024);
	shm__destroy(shm);
}

static void test_a_full_ring_counts_drops_and_never_blocks(void **state)
{
	struct shm *shm = small_shm(64);
	__u64 t0 = now_ns();
	int ok = 0;

	for (int i = 0; i < 10000; i++)
		if (shm__write_record(shm, &(struct gp_record){ .type = GP_REC_MEMSET }) == 0)
			ok++;
	assert_int_equal(ok, 64);
	assert_int_equal(shm__counter(shm, GP_CTR_RING_DROPPED), 10000 - 64);
	assert_int_equal(shm__counter(shm, GP_CTR_RECORDS_WRITTEN), 64);
	assert_true(now_ns() - t0 < 2000000000ull);
	shm__destroy(shm);
}

/* Checksums everything but the record ring and the producer area. */
static __u64 outside_records_sum(struct shm *shm)
{
	const __u8 *p = (const __u8 *)shm__header(shm);
	const struct gp_shm_layout *l = &shm__header(shm)->layout;
	__u64 h = 0;

	for (__u64 i = l->str_off; i < l->total_size; i += 64)
		h = h * 31 + p[i];
	for (__u64 i = 0; i < 128; i++)
		h = h * 31 + p[i];
	return h;
}

static void test_a_lying_loader_cannot_make_the_writer_write_out_of_bounds_or_block(void **state)
{
	struct shm *shm = small_shm(64);
	struct gp_shm_header *hdr = shm__header(shm);
	struct cubin_ring ring;
	struct cubin_queue *q;
	__u8 cubin[4096];
	__u64 t0 = now_ns();
	__u64 lies[] = { ~0ull, 1ull << 63, 12345678901ull, 65, 1, 0, ~0ull - 63 };
	struct cubin_capture cap = { .module_id = 1, .data = cubin, .size = sizeof(cubin) };

	memset(cubin, 0xcd, sizeof(cubin));
	shm__cubin_ring(shm, &ring);
	assert_int_equal(cubin_queue__new(&ring, NULL, &q), 0);
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		hdr->consumer.rec_tail = lies[i];
		hdr->consumer.cubin_tail = lies[i];
		for (int j = 0; j < 200; j++)
			shm__write_record(shm, &(struct gp_record){ .type = GP_REC_MEMSET });
		if (lies[i] > 64) /* a tail ahead of every head */
			assert_int_equal(cubin_queue__capture(q, &cap), -ENOSPC);
	}
	assert_true(now_ns() - t0 < 2000000000ull);
	assert_true(hdr->producer.rec_head <= 64 + 64);
	assert_true(shm__counter(shm, GP_CTR_RING_DROPPED) > 0);
	/* Nothing but the rings moved (ASan/UBSan watch the bounds). */
	assert_int_equal(hdr->layout.magic, GP_SHM_MAGIC);
	assert_int_equal(hdr->layout.rec_slots, 64);
	cubin_queue__destroy(q);
	shm__destroy(shm);
}

static void test_records_never_land_outside_the_record_ring(void **state)
{
	struct shm *shm = small_shm(64);
	struct gp_shm_header *hdr = shm__header(shm);
	__u64 before = outside_records_sum(shm);

	for (int i = 0; i < 5000; i++) {
		hdr->consumer.rec_tail = (__u64)rand() * (__u64)rand();
		shm__write_record(shm, &(struct gp_record){ .type = GP_REC_MEMSET, .corr = ~0ull });
	}
	assert_int_equal(outside_records_sum(shm), before);
	shm__destroy(shm);
}

static void test_env_sizes_are_validated_and_clamped(void **state)
{
	struct shm_config cfg;

	unsetenv("GPUPROBE_RING_RECORDS");
	unsetenv("GPUPROBE_STRTAB_KB");
	unsetenv("GPUPROBE_CUBIN_MB");
	unsetenv("GPUPROBE_CUBIN_MAX_MB");
	assert_int_equal(shm_config__from_env(&cfg), 0);
	assert_int_equal(cfg.ring_records, 65536);
	assert_int_equal(cfg.strtab_bytes, 1024 * 1024);
	assert_int_equal(cfg.cubin_bytes, 128ull << 20);
	assert_int_equal(cfg.cubin_max, 64ull << 20);

	setenv("GPUPROBE_RING_RECORDS", "1000", 1);  /* rounded up to 1024 */
	setenv("GPUPROBE_STRTAB_KB", "1", 1);        /* clamped up to 16 KiB */
	setenv("GPUPROBE_CUBIN_MB", "3", 1);         /* rounded up to 4 MiB */
	setenv("GPUPROBE_CUBIN_MAX_MB", "99999", 1); /* clamped under the ring */
	assert_int_equal(shm_config__from_env(&cfg), 0);
	assert_int_equal(cfg.ring_records, 1024);
	assert_int_equal(cfg.strtab_bytes, 16 * 1024);
	assert_int_equal(cfg.cubin_bytes, 4ull << 20);
	assert_int_equal(cfg.cubin_max, (4ull << 20) - 64);

	setenv("GPUPROBE_RING_RECORDS", "12abc", 1);
	setenv("GPUPROBE_CUBIN_MB", "-5", 1);
	assert_int_equal(shm_config__from_env(&cfg), -EINVAL);
	assert_int_equal(cfg.ring_records, 65536);
	assert_int_equal(cfg.cubin_bytes, 128ull << 20);
	unsetenv("GPUPROBE_RING_RECORDS");
	unsetenv("GPUPROBE_STRTAB_KB");
	unsetenv("GPUPROBE_CUBIN_MB");
	unsetenv("GPUPROBE_CUBIN_MAX_MB");
}

static void test_the_memfd_is_sealed_against_resizing(void **state)
{
	struct shm *shm = small_shm(64);
	int seals = fcntl(shm__fd(shm), F_GET_SEALS);

	assert_true(seals & F_SEAL_SHRINK);
	assert_true(seals & F_SEAL_GROW);
	assert_int_not_equal(ftruncate(shm__fd(shm), 4096), 0);
	shm__destroy(shm);
}

static void test_a_detached_writer_writes_nothing(void **state)
{
	struct shm *shm = small_shm(64);
	__u32 off = 99;

	shm__detach(shm);
	assert_int_equal(shm__write_record(shm, &(struct gp_record){ .type = GP_REC_MEMSET }), -ENODEV);
	assert_int_equal(shm__intern(shm, "x", &off), -ENODEV);
	shm__count(shm, GP_CTR_RING_DROPPED, 1);
	assert_int_equal(shm__counter(shm, GP_CTR_RING_DROPPED), 0);
	shm__destroy(shm);
}

/* ------------------------------------------- concurrent writer and reader */

#define STREAM_N 200000

static void *writer_thread(void *arg)
{
	struct shm *shm = arg;
	__u32 off;

	for (__u64 i = 1; i <= STREAM_N; i++) {
		char name[32];

		if (i % 1000 == 0) {
			snprintf(name, sizeof(name), "kernel_%llu", (unsigned long long)(i % 7000));
			shm__intern(shm, name, &off);
		} else {
			off = 0;
		}
		shm__write_record(shm, &(struct gp_record){ .type = GP_REC_KERNEL, .corr = i,
			.start_ns = i, .end_ns = i, .kernel.name_off = off });
	}
	return NULL;
}

static void test_a_concurrent_writer_and_reader_agree_on_order_and_counts(void **state)
{
	struct shm *shm = small_shm(1024);
	struct shm_reader *r;
	struct gp_record out[256];
	__u64 got = 0, last = 0;
	pthread_t w;
	char name[64];
	size_t n;

	assert_int_equal(shm_reader__open_fd(shm__fd(shm), &r), 0);
	assert_int_equal(pthread_create(&w, NULL, writer_thread, shm), 0);
	for (;;) {
		bool finished = shm__counter(shm, GP_CTR_RECORDS_WRITTEN) +
			shm__counter(shm, GP_CTR_RING_DROPPED) == STREAM_N;

		assert_int_equal(shm_reader__read(r, out, 256, &n), 0);
		for (size_t i = 0; i < n; i++) {
			assert_true(out[i].corr > last);
			last = out[i].corr;
			if (out[i].kernel.name_off) {
				assert_int_equal(shm_reader__name(r, out[i].kernel.name_off, name, sizeof(name)), 0);
				assert_true(strncmp(name, "kernel_", 7) == 0);
			}
		}
		got += n;
		if (finished && n == 0)
			break;
	}
	pthread_join(w, NULL);
	assert_int_equal(got, shm__counter(shm, GP_CTR_RECORDS_WRITTEN));
	shm_reader__destroy(r);
	shm__destroy(shm);
}

/* shim/gp_abi.h, "no reader, no records": live only while a heartbeat is fresh. */
static void test_the_reader_is_live_only_while_its_heartbeat_is_fresh(void **state)
{
	struct shm *shm = small_shm(64);
	struct gp_shm_consumer *c = &shm__header(shm)->consumer;
	__u64 now = now_ns(), s = 1000000000ull;

	assert_false(shm__reader_live(shm, now)); /* nobody ever came */
	c->heartbeat_ns = now - s / 2;
	assert_true(shm__reader_live(shm, now));
	c->heartbeat_ns = now - 3 * s; /* no tick said: 2 s */
	assert_false(shm__reader_live(shm, now));
	c->tick_ms = 1000; /* ten ticks */
	assert_true(shm__reader_live(shm, now));
	c->tick_ms = 4000000000u; /* a lie: ten ticks of 1 s at most */
	c->heartbeat_ns = now - 11 * s;
	assert_false(shm__reader_live(shm, now));
	c->heartbeat_ns = now + s; /* from the future: a lie */
	assert_false(shm__reader_live(shm, now));
	c->heartbeat_ns = 0; /* a loader that left */
	assert_false(shm__reader_live(shm, now));
	shm__destroy(shm);
}

/* The ring watch's mark: a memfd only, and the shim then sees a reader. */
static void test_a_ring_marked_by_the_watch_has_a_live_reader(void **state)
{
	struct shm *shm = small_shm(64);
	char path[] = "/tmp/gpuprobe-test-mark-XXXXXX";
	int fd = mkstemp(path), p[2];

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(shm_reader__mark_watched(fd, now_ns(), false), -EINVAL);
	assert_int_equal(shm_reader__mark_watched(p[1], now_ns(), false), -EINVAL);
	assert_int_equal(lseek(fd, 0, SEEK_END), 0); /* nothing written */
	assert_false(shm__reader_live(shm, now_ns()));
	assert_int_equal(shm_reader__mark_watched(shm__fd(shm), now_ns(), false), 0);
	assert_true(shm__reader_live(shm, now_ns()));
	close(fd);
	close(p[0]);
	close(p[1]);
	shm__destroy(shm);
}

/* Whether the reader sees the span recorded as [on, off] (off 0: still on), and recording now. */
static void assert_span(struct shm_reader *r, __u64 on, __u64 off, bool now)
{
	__u64 got_on, got_off;

	assert_int_equal(shm_reader__record_span(r, &got_on, &got_off), now);
	assert_int_equal(got_on, on);
	assert_int_equal(got_off, off);
}

/* What the loader makes of the shim's switches (join__recording's span). */
static void test_the_recording_state_reaches_the_reader(void **state)
{
	struct shm *shm = small_shm(64);
	struct shm_reader *r;

	assert_int_equal(shm_reader__open_fd(shm__fd(shm), &r), 0);
	assert_span(r, 0, 0, true); /* never switched: an older shim, always on */
	shm__set_recording(shm, false, 100);
	assert_span(r, UINT64_MAX, 100, false); /* never on */
	shm__set_recording(shm, true, 200);
	assert_span(r, 200, 0, true);
	shm__set_recording(shm, false, 300);
	assert_span(r, 200, 300, false);
	assert_int_equal(shm__counter(shm, GP_CTR_RECORDING_ON), 1);
	assert_int_equal(shm__counter(shm, GP_CTR_RECORDING_OFF), 2);
	shm__set_flags(shm, GP_SHM_F_INERT, 0);
	assert_span(r, 0, 0, true); /* gave up: said otherwise */
	/* A reader that leaves zeroes the beat: the shim switches off at once. */
	shm__header(shm)->consumer.heartbeat_ns = now_ns();
	shm_reader__destroy(r);
	assert_int_equal(shm__header(shm)->consumer.heartbeat_ns, 0);
	assert_int_equal(shm__header(shm)->consumer.reader_pid, 0);
	shm__destroy(shm);
}

/*
 * A -- COMMAND ring (made by its loader, handed over in GPUPROBE_SHM_FD)
 * that a node-wide loader's ring watch marked before the shim sized it is
 * still the shim's to adopt: the mark made it 352 bytes long, no more.
 */
static void test_a_handed_over_ring_marked_before_it_was_sized_is_adopted(void **state)
{
	struct shm_config cfg = { .ring_records = 64, .strtab_bytes = 16 * 1024,
		.cubin_bytes = 1 << 20, .cubin_max = 64 * 1024 };
	int fd = memfd_create(GP_SHM_NAME, MFD_ALLOW_SEALING);
	struct shm *shm;
	char env[16];

	assert_true(fd >= 0);
	assert_int_equal(shm_reader__mark_watched(fd, now_ns(), false), 0);
	assert_true(lseek(fd, 0, SEEK_END) > 0);
	snprintf(env, sizeof(env), "%d", fd);
	setenv("GPUPROBE_SHM_FD", env, 1);
	assert_int_equal(shm__create(&cfg, &shm), 0);
	unsetenv("GPUPROBE_SHM_FD");
	assert_int_equal(shm__fd(shm), fd);
	assert_true(shm__reader_live(shm, now_ns()));
	shm__destroy(shm);
}

struct beat {
	struct gp_shm_consumer *c;
	int stop;
	bool ack;        /* acknowledge exits, as a loader's visit does */
	__u64 *exit_seq;
};

/* A loader that keeps visiting for 20 s at most: its heartbeat fresh, exits acknowledged or not. */
static void *beat_main(void *arg)
{
	struct beat *b = arg;
	struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < 20000 && !__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE); i++) {
		__atomic_store_n(&b->c->heartbeat_ns, now_ns(), __ATOMIC_RELEASE);
		if (b->ack)
			__atomic_store_n(&b->c->exit_ack, __atomic_load_n(b->exit_seq, __ATOMIC_ACQUIRE),
					 __ATOMIC_RELEASE);
		nanosleep(&ms, NULL);
	}
	/* Gone, with a beat from the future: a wait not bounded by the tick ends here too. */
	__atomic_store_n(&b->c->heartbeat_ns, UINT64_MAX, __ATOMIC_RELEASE);
	return NULL;
}

/* Seconds shm__exit_handshake took with a loader beating at tick_ms (acknowledging or not). */
static double handshake_s(__u32 tick_ms, bool ack)
{
	struct shm *shm = small_shm(64);
	struct gp_shm_header *h = shm__header(shm);
	struct beat b = { .c = &h->consumer, .ack = ack, .exit_seq = &h->producer.exit_seq };
	pthread_t th;
	__u64 t0;

	h->consumer.tick_ms = tick_ms;
	h->consumer.heartbeat_ns = now_ns();
	assert_int_equal(pthread_create(&th, NULL, beat_main, &b), 0);
	t0 = now_ns();
	shm__exit_handshake(shm);
	t0 = now_ns() - t0;
	__atomic_store_n(&b.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	shm__destroy(shm);
	return (double)t0 / 1e9;
}

/*
 * DESIGN.md invariants 3 and 6: the one wait of an application thread on the
 * loader, at its exit, lasts one tick at most (1 s at most, whatever tick
 * the header claims), though the loader keeps visiting and never says it
 * read the last records. A wait that followed the heartbeat instead would
 * last the 20 s this loader beats: the bound of 10 s tells the two apart on
 * any machine.
 */
static void test_the_exit_wait_on_a_live_loader_that_never_acknowledges_is_bounded(void **state)
{
	double a = handshake_s(50, false), b = handshake_s(4000000000u, false),
	       c = handshake_s(50, true);

	(void)state;
	if (a >= 10 || b >= 10 || c >= 10)
		fail_msg("exit waits %.1f s (50 ms ticks), %.1f s (a lying tick), %.1f s (acknowledged)",
			 a, b, c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records_and_names_round_trip_from_writer_to_reader),
		cmocka_unit_test(test_the_reader_is_live_only_while_its_heartbeat_is_fresh),
		cmocka_unit_test(test_a_ring_marked_by_the_watch_has_a_live_reader),
		cmocka_unit_test(test_the_recording_state_reaches_the_reader),
		cmocka_unit_test(test_a_handed_over_ring_marked_before_it_was_sized_is_adopted),
		cmocka_unit_test(test_a_name_is_interned_once),
		cmocka_unit_test(test_a_full_string_table_counts_and_gives_the_empty_name),
		cmocka_unit_test(test_a_full_ring_counts_drops_and_never_blocks),
		cmocka_unit_test(test_a_lying_loader_cannot_make_the_writer_write_out_of_bounds_or_block),
		cmocka_unit_test(test_records_never_land_outside_the_record_ring),
		cmocka_unit_test(test_env_sizes_are_validated_and_clamped),
		cmocka_unit_test(test_the_memfd_is_sealed_against_resizing),
		cmocka_unit_test(test_a_detached_writer_writes_nothing),
		cmocka_unit_test(test_a_concurrent_writer_and_reader_agree_on_order_and_counts),
		cmocka_unit_test(test_the_exit_wait_on_a_live_loader_that_never_acknowledges_is_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
