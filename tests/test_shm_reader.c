/* SPDX-License-Identifier: MIT */
/*
 * The loader's reader of a shim memfd (user/shm/shm_reader.c): layout
 * validation, hostile records and names, settling cubins through a mapping,
 * and a writer scribbling over everything while the reader reads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/skip.h"
#include "shim/shm.h"
#include "shim/cubin_queue.h"
#include "user/shm/shm_reader.h"
#include "user/util/bounded.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

static struct shm *small_shm(void)
{
	struct shm_config cfg = { .ring_records = 64, .strtab_bytes = 16 * 1024,
		.cubin_bytes = 1 << 20, .cubin_max = 64 * 1024 };
	struct shm *shm;

	assert_int_equal(shm__create(&cfg, &shm), 0);
	return shm;
}

/*
 * A private copy of a fresh image, to break in chosen ways. Its consumer
 * area is cleared: a node-wide loader on this machine (--all-cgroups, its
 * ring watch) may have claimed the live ring meanwhile, and these tests are
 * about the layout, not about who reads it.
 */
static __u8 *image_of(struct shm *shm, size_t *ret_size)
{
	size_t size = shm__size(shm);
	__u8 *img = aligned_alloc(64, size);

	assert_non_null(img);
	memcpy(img, shm__header(shm), size);
	memset(&((struct gp_shm_header *)img)->consumer, 0, sizeof(struct gp_shm_consumer));
	*ret_size = size;
	return img;
}

static int open_broken(void (*breakit)(struct gp_shm_layout *l), size_t shrink)
{
	struct shm *shm = small_shm();
	struct shm_reader *r = NULL;
	size_t size;
	__u8 *img = image_of(shm, &size);
	int err;

	breakit((struct gp_shm_layout *)img);
	err = shm_reader__open_mem(img, size - shrink, &r);
	shm_reader__destroy(r);
	free(img);
	shm__destroy(shm);
	return err;
}

static void no_change(struct gp_shm_layout *l) { (void)l; }
static void bad_magic(struct gp_shm_layout *l) { l->magic = 0x12345678; }
static void bad_version(struct gp_shm_layout *l) { l->version = 99; }
static void rec_past_end(struct gp_shm_layout *l) { l->rec_off = l->total_size - 64; }
static void rec_not_pow2(struct gp_shm_layout *l) { l->rec_slots = 63; }
static void str_overlaps_rec(struct gp_shm_layout *l) { l->str_off = l->rec_off + 64; }
static void cubin_wraps_u64(struct gp_shm_layout *l) { l->cubin_off = ~0ull - 7; }
static void total_too_big(struct gp_shm_layout *l) { l->total_size += 4096; }
static void cubin_max_too_big(struct gp_shm_layout *l) { l->cubin_max = l->cubin_size; }
static void rec_in_header(struct gp_shm_layout *l) { l->rec_off = 0; }

static void test_a_valid_image_opens(void **state)
{
	assert_int_equal(open_broken(no_change, 0), 0);
}

static void test_wrong_magic_is_rejected_with_eproto(void **state)
{
	assert_int_equal(open_broken(bad_magic, 0), -EPROTO);
}

static void test_an_unknown_version_is_rejected_with_eprotonosupport(void **state)
{
	assert_int_equal(open_broken(bad_version, 0), -EPROTONOSUPPORT);
}

static void test_bad_offsets_and_sizes_are_rejected_with_ebadmsg(void **state)
{
	assert_int_equal(open_broken(rec_past_end, 0), -EBADMSG);
	assert_int_equal(open_broken(rec_not_pow2, 0), -EBADMSG);
	assert_int_equal(open_broken(str_overlaps_rec, 0), -EBADMSG);
	assert_int_equal(open_broken(cubin_wraps_u64, 0), -EBADMSG);
	assert_int_equal(open_broken(total_too_big, 0), -EBADMSG);
	assert_int_equal(open_broken(cubin_max_too_big, 0), -EBADMSG);
	assert_int_equal(open_broken(rec_in_header, 0), -EBADMSG);
	/* A layout that claims more than the file really has. */
	assert_int_equal(open_broken(no_change, 4096), -EBADMSG);
}

static void test_an_image_smaller_than_a_header_is_rejected(void **state)
{
	static __u64 tiny[16];
	struct shm_reader *r;

	assert_int_equal(shm_reader__open_mem(tiny, sizeof(tiny), &r), -EBADMSG);
}

static void test_an_unsealed_fd_is_refused(void **state)
{
	struct shm *shm = small_shm();
	struct shm_reader *r;
	size_t size;
	__u8 *img = image_of(shm, &size);
	char path[] = "/tmp/gp-shm-test-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, img, size), (ssize_t)size);
	assert_int_equal(shm_reader__open_fd(fd, &r), -EBADFD);
	close(fd);
	free(img);
	shm__destroy(shm);
}

/*
 * A sealed memfd of huge pages is refused before anything is read: a target
 * could make the loader's reads of its mapping SIGBUS (fd__check). Empty, it
 * needs no huge page; a check of the file system after the size would say
 * -EBADMSG instead.
 */
static void test_a_hugetlb_memfd_is_refused(void **state)
{
	struct shm_reader *r;
	int fd = memfd_create("gpuprobe-shm", MFD_HUGETLB | MFD_ALLOW_SEALING | MFD_CLOEXEC);

	(void)state;
	if (fd < 0)
		SKIP_BECAUSE("no hugetlbfs memfd here (%s): nothing to refuse", strerror(errno));
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	assert_int_equal(shm_reader__open_fd(fd, &r), -EBADFD);
	close(fd);
}

/* A memfd of the shim's name on another mount (hugetlbfs) is not taken for a ring; the shim's is. */
static void test_a_ring_is_grabbed_only_from_the_memfds_mount(void **state)
{
	struct shm *shm = small_shm();
	int huge = memfd_create(GP_SHM_NAME, MFD_HUGETLB | MFD_CLOEXEC), fd = -1;

	(void)state;
	if (huge < 0)
		SKIP_BECAUSE("no hugetlbfs memfd here (%s)", strerror(errno));
	assert_int_equal(shm_reader__grab_fd(getpid(), huge, &fd), -ENOENT);
	assert_int_equal(shm_reader__grab_fd(getpid(), shm__fd(shm), &fd), 0);
	assert_true(fd >= 0);
	close(fd);
	close(huge);
	shm__destroy(shm);
}

/*
 * A process whose fd holds a file of a FUSE daemon that stopped answering
 * (tests/progs/hostile_fuse fd) does not hold the ring watch: the fd is
 * refused by its name, nothing asked of the daemon. The look runs in a
 * child, so that a wait fails the test instead of hanging it.
 */
static void test_a_fuse_file_at_a_rings_fd_is_refused_without_a_wait(void **state)
{
	const char *b = getenv("GP_BUILD");
	char prog[4096], dir[] = "/tmp/gp-fuse-XXXXXX", line[128] = "";
	int out[2], status = 0, fd;
	pid_t h, c, done = 0;
	FILE *f;

	(void)state;
	if (access("/dev/fuse", R_OK | W_OK) || geteuid())
		SKIP_BECAUSE("needs root and /dev/fuse");
	snprintf(prog, sizeof(prog), "%s/tests/progs/hostile_fuse", b ? b : "build");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(pipe(out), 0);
	h = fork();
	assert_true(h >= 0);
	if (!h) {
		dup2(out[1], 1);
		execl(prog, prog, dir, "/proc/self/exe", "fd", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	assert_non_null(fgets(line, sizeof(line), f)); /* "hostile_fuse: ready pid=H" */
	assert_non_null(strstr(line, "ready"));
	c = fork();
	assert_true(c >= 0);
	if (!c)
		_exit(shm_reader__grab_fd(h, 100, &fd) == -ENOENT ? 0 : 1);
	for (int i = 0; i < 400 && !(done = waitpid(c, &status, WNOHANG)); i++)
		usleep(50000); /* a bound on a failure only: the look itself never waits */
	if (done != c)
		kill(c, SIGKILL); /* released when the daemon goes */
	kill(h, SIGTERM);
	waitpid(h, NULL, 0);
	if (done != c)
		waitpid(c, NULL, 0);
	fclose(f);
	rmdir(dir);
	assert_int_equal(done, c); /* it did not wait for the daemon */
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * A ring is looked at without being claimed (the loader probes the target's
 * libcuda in between: a shim records from the claim on); a file no shim
 * laid out is not ready.
 */
static void test_a_ready_ring_is_not_claimed_by_the_look(void **state)
{
	struct shm *shm = small_shm();
	struct gp_shm_header *hdr = shm__header(shm);
	struct shm_reader *r;
	int fd = memfd_create("gpuprobe-shm", MFD_ALLOW_SEALING | MFD_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	assert_int_equal(shm_reader__fd_ready(fd), -EBADMSG);
	assert_int_equal(shm_reader__fd_ready(-1), -EINVAL);
	assert_int_equal(shm_reader__fd_ready(shm__fd(shm)), 0);
	assert_int_equal(__atomic_load_n(&hdr->consumer.reader_pid, __ATOMIC_ACQUIRE), 0);
	assert_int_equal(shm_reader__open_fd(shm__fd(shm), &r), 0);
	assert_int_equal(__atomic_load_n(&hdr->consumer.reader_pid, __ATOMIC_ACQUIRE), (__u32)getpid());
	shm_reader__destroy(r);
	close(fd);
	shm__destroy(shm);
}

static void test_a_name_without_nul_reads_as_the_placeholder(void **state)
{
	struct shm *shm = small_shm();
	struct gp_shm_header *hdr = shm__header(shm);
	struct shm_reader *r;
	struct shm_reader_stats st;
	char name[64];
	__u32 off;

	assert_int_equal(shm__intern(shm, "abc", &off), 0);
	assert_int_equal(shm_reader__open_fd(shm__fd(shm), &r), 0);
	/* The writer overwrites the terminating NUL, the last published byte. */
	((__u8 *)hdr)[hdr->layout.str_off + off + 3] = 'X';
	assert_int_equal(shm_reader__name(r, off, name, sizeof(name)), -EBADMSG);
	assert_string_equal(name, SHM_READER_BAD_NAME);
	assert_int_equal(shm_reader__name(r, 60000, name, sizeof(name)), -ERANGE);
	assert_string_equal(name, SHM_READER_BAD_NAME);
	/* str_used itself lies: clamped to the table, still no NUL found. */
	hdr->producer.str_used = ~0ull;
	assert_int_equal(shm_reader__name(r, off, name, 4), -ENAMETOOLONG);
	assert_string_equal(name, "abc");
	shm_reader__stats(r, &st);
	assert_int_equal(st.names_bad, 2);
	assert_true(st.str_used_bad >= 1);
	shm_reader__destroy(r);
	shm__destroy(shm);
}

static void test_a_head_that_jumps_backwards_is_counted_and_resynced(void **state)
{
	struct shm *shm = small_shm();
	struct gp_shm_header *hdr = shm__header(shm);
	struct shm_reader *r;
	struct shm_reader_stats st;
	struct gp_record out[64];
	size_t n;

	for (int i = 0; i < 10; i++)
		shm__write_record(shm, &(struct gp_record){ .type = GP_REC_MEMSET });
	assert_int_equal(shm_reader__open_fd(shm__fd(shm), &r), 0);
	assert_int_equal(shm_reader__read(r, out, 64, &n), 0);
	assert_int_equal(n, 10);
	hdr->producer.rec_head = 3;
	assert_int_equal(shm_reader__read(r, out, 64, &n), 0);
	assert_int_equal(n, 0);
	hdr->producer.rec_head = 3 + (1ull << 40);
	assert_int_equal(shm_reader__read(r, out, 64, &n), 0);
	assert_int_equal(n, 0);
	shm_reader__stats(r, &st);
	assert_int_equal(st.ring_resyncs, 2);
	shm_reader__destroy(r);
	shm__destroy(shm);
}

static void test_invalid_records_are_counted_and_skipped(void **state)
{
	struct shm *shm = small_shm();
	struct shm_reader *r;
	struct shm_reader_stats st;
	struct gp_record out[16];
	size_t n;

	shm__write_record(shm, &(struct gp_record){ .type = 77 });
	shm__write_record(shm, &(struct gp_record){ .type = GP_REC_KERNEL, .kernel.name_off = 1u << 30 });
	shm__write_record(shm, &(struct gp_record){ .type = GP_REC_API, .api.domain = 9 });
	shm__write_record(shm, &(struct gp_record){ .type = GP_REC_MEMCPY, .start_ns = 5, .end_ns = 4 });
	shm__write_record(shm, &(struct gp_record){ .type = GP_REC_API, .api.domain = GP_API_RUNTIME });
	/* PC sampling's: a name past the table, no samples, a stall name past the table */
	shm__write_record(shm, &(struct gp_record){ .type = GP_REC_PC, .pc.name_off = 1u << 30, .pc.samples = 1 });
	shm__write_record(shm, &(struct gp_record){ .type = GP_REC_PC, .pc.samples = 0 });
	shm__write_record(shm, &(struct gp_record){ .type = GP_REC_PC_STALL, .pc_stall.name_off = 1u << 30 });
	shm__write_record(shm, &(struct gp_record){ .type = GP_REC_PC, .pc.samples = 3 });
	/* Graph nodes': an unknown event, an update naming no executable graph's node */
	shm__write_record(shm, &(struct gp_record){ .type = GP_REC_GRAPH_NODE, .graph.node = 1,
						   .graph.event = GP_GRAPH_NODE_SET_PARAMS + 1 });
	shm__write_record(shm, &(struct gp_record){ .type = GP_REC_GRAPH_NODE, .graph.node = 1,
						   .graph.event = GP_GRAPH_NODE_UPDATED });
	shm__write_record(shm, &(struct gp_record){ .type = GP_REC_GRAPH_NODE, .graph.node = 1,
						   .graph.orig_node = 2,
						   .graph.event = GP_GRAPH_NODE_UPDATED });
	assert_int_equal(shm_reader__open_fd(shm__fd(shm), &r), 0);
	assert_int_equal(shm_reader__read(r, out, 16, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(out[0].type, GP_REC_API);
	assert_int_equal(out[1].type, GP_REC_PC);
	assert_int_equal(out[2].type, GP_REC_GRAPH_NODE);
	shm_reader__stats(r, &st);
	assert_int_equal(st.records_bad, 9);
	shm_reader__destroy(r);
	shm__destroy(shm);
}

/*
 * A batch costs at most max slots, valid or not: a ring of garbage cannot
 * make one read scan it whole. The backlog says what is left.
 */
static void test_a_read_looks_at_most_max_slots_and_the_backlog_says_what_is_left(void **state)
{
	struct shm *shm = small_shm();
	struct shm_reader *r;
	struct gp_record out[4];
	size_t n;

	for (int i = 0; i < 10; i++)
		shm__write_record(shm, &(struct gp_record){ .type = 77 });
	shm__write_record(shm, &(struct gp_record){ .type = GP_REC_API, .api.domain = GP_API_RUNTIME });
	assert_int_equal(shm_reader__open_fd(shm__fd(shm), &r), 0);
	assert_int_equal(shm_reader__backlog(r), 11);
	assert_int_equal(shm_reader__read(r, out, 4, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(shm_reader__backlog(r), 7);
	assert_int_equal(shm_reader__read(r, out, 4, &n), 0);
	assert_int_equal(shm_reader__read(r, out, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].type, GP_REC_API);
	assert_int_equal(shm_reader__backlog(r), 0);
	shm_reader__destroy(r);
	shm__destroy(shm);
}

/* ------------------------------------------------ settling through a mapping */

static int sum_crc(void *ctx, const void *cubin, size_t size, __u64 *ret_crc)
{
	const __u8 *p = cubin;
	__u64 h = 7;

	for (size_t i = 0; i < size; i++)
		h = h * 131 + p[i];
	*ret_crc = h;
	return 0;
}

struct seen {
	int n;
	struct gpu_module_load_v1 recs[8];
};

static void on_rec(void *ctx, const struct gpu_module_load_v1 *rec)
{
	struct seen *s = ctx;

	if (s->n < 8)
		s->recs[s->n] = *rec;
	s->n++;
}

static void test_the_loader_settles_what_the_shim_captured_through_its_own_mapping(void **state)
{
	struct shm *shm = small_shm();
	struct cubin_ring ring;
	struct cubin_queue *shim_q;
	struct shm_reader *r;
	struct seen seen = { 0 };
	__u8 cubin[3000];
	char line[512];

	memset(cubin, 0x42, sizeof(cubin));
	shm__cubin_ring(shm, &ring);
	assert_int_equal(cubin_queue__new(&ring, NULL, &shim_q), 0);
	assert_int_equal(cubin_queue__capture(shim_q, &(struct cubin_capture){ .module_id = 5,
		.load_ns = 55, .data = cubin, .size = sizeof(cubin) }), 0);
	assert_int_equal(cubin_queue__capture(shim_q, &(struct cubin_capture){ .module_id = 6,
		.load_ns = 66, .data = cubin, .size = sizeof(cubin) }), 0);
	assert_int_equal(shm_reader__open_fd(shm__fd(shm), &r), 0);
	assert_int_equal(shm_reader__settle(r, sum_crc, NULL, on_rec, &seen), 2);
	assert_int_equal(seen.n, 2);
	assert_int_equal(seen.recs[0].module_id, 5);
	assert_int_equal(seen.recs[1].load_ns, 66);
	assert_int_equal(cubin_queue__drain(shm_reader__cubins(r), 0, NULL, NULL), 1);
	assert_true(cubin_queue__format_counters(shm_reader__cubins(r), line, sizeof(line)) > 0);
	assert_non_null(strstr(line, "modules_captured=2 "));
	assert_non_null(strstr(line, "cubin_pending_depth=0 "));
	/* The consumer tail went back to the shim: the ring space is free. */
	assert_int_equal(shm__header(shm)->consumer.cubin_tail, shm__header(shm)->producer.cubin_head);
	shm_reader__destroy(r);
	cubin_queue__destroy(shim_q);
	shm__destroy(shm);
}

/*
 * The payloads the loader reads from the ring's file (pread, not the
 * mapping) are the bytes captured: each cubin a pattern of its own and a
 * size off the page grid, in three rounds, the third wrapping the ring's end.
 */
static void pattern(__u8 *p, size_t size, unsigned seed)
{
	for (size_t i = 0; i < size; i++)
		p[i] = (__u8)(i * 7 + seed * 13 + (i >> 12));
}

static void test_payloads_read_from_the_rings_file_are_the_bytes_captured(void **state)
{
	struct shm *shm = small_shm();
	struct cubin_ring ring;
	struct cubin_queue *shim_q;
	struct shm_reader *r;
	static __u8 cubin[60001];
	__u64 want[10];

	shm__cubin_ring(shm, &ring);
	assert_int_equal(cubin_queue__new(&ring, NULL, &shim_q), 0);
	assert_int_equal(shm_reader__open_fd(shm__fd(shm), &r), 0);
	for (unsigned round = 0; round < 3; round++) {
		struct seen seen = { 0 };

		for (unsigned i = 0; i < 10; i++) {
			size_t size = sizeof(cubin) - i * 4099;

			pattern(cubin, size, round * 10 + i);
			sum_crc(NULL, cubin, size, &want[i]);
			assert_int_equal(cubin_queue__capture(shim_q, &(struct cubin_capture){
				.module_id = i + 1, .data = cubin, .size = size }), 0);
			if (i == 7) { /* past the first round's records: seen is 8 long */
				assert_int_equal(shm_reader__settle(r, sum_crc, NULL, on_rec, &seen), 8);
				for (unsigned k = 0; k < 8; k++)
					assert_int_equal(seen.recs[k].crc, want[k]);
				seen.n = 0;
			}
		}
		assert_int_equal(shm_reader__settle(r, sum_crc, NULL, on_rec, &seen), 2);
		assert_int_equal(seen.recs[0].crc, want[8]);
		assert_int_equal(seen.recs[1].crc, want[9]);
		cubin_queue__drain(shm_reader__cubins(r), 0, NULL, NULL);
	}
	assert_true(shm__header(shm)->producer.cubin_head > shm__header(shm)->layout.cubin_size);
	shm_reader__destroy(r);
	cubin_queue__destroy(shim_q);
	shm__destroy(shm);
}

/* Rss in KiB of the gpuprobe-shm mapping that does not start at not_at. */
static long other_shm_mapping_rss_kb(const void *not_at)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	unsigned long lo, hi;
	bool in = false;
	long rss = -1, v;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		/* Every mapping's first line, anonymous ones (no path) included. */
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = strstr(line, "gpuprobe-shm") && lo != (unsigned long)not_at;
		else if (in && sscanf(line, "Rss: %ld kB", &v) == 1)
			rss = v;
	}
	fclose(f);
	return rss;
}

/*
 * What the loader has copied out of the cubin ring leaves its RSS: 480 KiB
 * of cubins read through the reader's mapping leave less than 100 KiB of it
 * resident (without the drop: all of it).
 */
static size_t largest_crc_size;

static int size_crc(void *ctx, const void *cubin, size_t size, __u64 *ret_crc)
{
	if (size > largest_crc_size)
		largest_crc_size = size;
	return sum_crc(ctx, cubin, size, ret_crc);
}

/*
 * A cubin entry whose size the ring's layout allows but the loader's own
 * limit does not (256 MiB): consumed without reading or allocating its
 * bytes, counted, its module's record kept (crc 0). The entry's payload is
 * never written: the memfd stays sparse, and so does the loader.
 */
static void test_a_cubin_over_the_loaders_own_limit_is_skipped_before_any_allocation(void **state)
{
	struct shm_config cfg = { .ring_records = 64, .strtab_bytes = 16 * 1024,
		.cubin_bytes = 1ull << 30, .cubin_max = (1ull << 30) - 64 };
	struct gp_cubin_entry e = { .magic = GP_CUBIN_MAGIC, .size = 900ull << 20, .module_id = 7 };
	struct cubin_queue_stats st;
	struct seen seen = { 0 };
	struct shm_reader *r;
	struct shm *shm;
	__u8 *base;

	assert_int_equal(shm__create(&cfg, &shm), 0);
	base = (__u8 *)shm__header(shm);
	memcpy(base + shm__header(shm)->layout.cubin_off, &e, sizeof(e));
	__atomic_store_n(&shm__header(shm)->producer.cubin_head, sizeof(e) + e.size, __ATOMIC_RELEASE);
	assert_int_equal(shm_reader__open_fd(shm__fd(shm), &r), 0);
	largest_crc_size = 0;
	assert_int_equal(shm_reader__settle(r, size_crc, NULL, on_rec, &seen), 1);
	assert_int_equal(largest_crc_size, 0);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.recs[0].module_id, 7);
	assert_int_equal(seen.recs[0].crc, 0);
	cubin_queue__stats(shm_reader__cubins(r), &st);
	assert_int_equal(st.cubin_over_limit, 1);
	assert_int_equal(shm__header(shm)->consumer.cubin_tail, sizeof(e) + e.size);
	shm_reader__destroy(r);
	shm__destroy(shm);
}

static void test_settled_cubin_pages_leave_the_readers_mapping(void **state)
{
	struct shm *shm = small_shm();
	struct cubin_ring ring;
	struct cubin_queue *shim_q;
	struct shm_reader *r;
	static __u8 cubin[60 * 1024];
	long rss;

	memset(cubin, 0x42, sizeof(cubin));
	shm__cubin_ring(shm, &ring);
	assert_int_equal(cubin_queue__new(&ring, NULL, &shim_q), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(cubin_queue__capture(shim_q, &(struct cubin_capture){
			.module_id = (__u64)i + 1, .data = cubin, .size = sizeof(cubin) }), 0);
	assert_int_equal(shm_reader__open_fd(shm__fd(shm), &r), 0);
	assert_int_equal(shm_reader__settle(r, sum_crc, NULL, NULL, NULL), 8);
	rss = other_shm_mapping_rss_kb(shm__header(shm));
	print_message("  reader mapping Rss after settling 480 KiB of cubins: %ld KiB\n", rss);
	assert_true(rss >= 0 && rss < 100);
	shm_reader__destroy(r);
	cubin_queue__destroy(shim_q);
	shm__destroy(shm);
}

/* ------------------------------------------------------------ scribbler */

#ifndef UNDER_TSAN
struct scribble {
	__u8 *base;
	size_t size;
	volatile int stop;
};

static void *scribble_thread(void *arg)
{
	struct scribble *s = arg;
	unsigned seed = 1;

	while (!s->stop) {
		size_t at = (size_t)rand_r(&seed) % s->size;
		__u64 v = ((__u64)rand_r(&seed) << 32) | (__u64)rand_r(&seed);

		/* Keep the header's positions the most abused fields. */
		if (rand_r(&seed) % 4 == 0)
			at = 128 + (size_t)(rand_r(&seed) % 64) * 8 % 256;
		if (at + 8 <= s->size)
			memcpy(s->base + at, &v, 8);
	}
	return NULL;
}

/*
 * Racy by design (a writer scribbling over the reader's memory): not part of
 * the TSan run, which would report the race it is made of; the unit and
 * ASan runs have it.
 */
static void test_a_writer_scribbling_everywhere_cannot_crash_the_reader(void **state)
{
	struct shm *shm = small_shm();
	struct shm_reader *r;
	struct scribble s = { .base = (__u8 *)shm__header(shm), .size = shm__size(shm) };
	struct shm_reader_stats st;
	struct gp_record out[64];
	__u8 cubin[2000];
	char name[128], line[512];
	struct cubin_ring ring;
	struct cubin_queue *shim_q;
	pthread_t t;
	size_t n;

	memset(cubin, 1, sizeof(cubin));
	shm__cubin_ring(shm, &ring);
	assert_int_equal(cubin_queue__new(&ring, NULL, &shim_q), 0);
	assert_int_equal(shm_reader__open_fd(shm__fd(shm), &r), 0);
	assert_int_equal(pthread_create(&t, NULL, scribble_thread, &s), 0);
	for (int i = 0; i < 20000; i++) {
		shm__write_record(shm, &(struct gp_record){ .type = GP_REC_MEMSET });
		if (i % 16 == 0)
			cubin_queue__capture(shim_q, &(struct cubin_capture){ .module_id = (__u64)i,
				.data = cubin, .size = (__u64)(i % 2000) });
		shm_reader__read(r, out, 64, &n);
		for (size_t k = 0; k < n; k++)
			if (out[k].type == GP_REC_KERNEL)
				shm_reader__name(r, out[k].kernel.name_off, name, sizeof(name));
		shm_reader__name(r, (__u32)rand(), name, sizeof(name));
		if (i % 8 == 0) {
			shm_reader__settle(r, sum_crc, NULL, NULL, NULL);
			cubin_queue__drain(shm_reader__cubins(r), 0, NULL, NULL);
		}
	}
	s.stop = 1;
	pthread_join(t, NULL);
	cubin_queue__format_counters(shm_reader__cubins(r), line, sizeof(line));
	shm_reader__stats(r, &st);
	assert_true(st.ring_resyncs + st.records_bad + st.names_bad > 0);
	shm_reader__destroy(r);
	cubin_queue__destroy(shim_q);
	shm__destroy(shm);
}
#endif

/* ------------------------------------------------------------- /proc */

static void test_a_pid_that_is_gone_gives_esrch(void **state)
{
	struct bounded *b = bounded__new();
	struct shm_reader *r;
	pid_t child = fork();

	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	assert_non_null(b);
	assert_int_equal(shm_reader__open_pid(b, child, &r), -ESRCH);
	bounded__free(b);
}

static void test_a_fork_child_does_not_inherit_the_mapping(void **state)
{
	struct shm *shm = small_shm();
	struct bounded *b = bounded__new();
	struct shm_reader *r;
	int pipefd[2];
	pid_t child;
	char c;

	assert_non_null(b);
	assert_int_equal(pipe(pipefd), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(pipefd[1]);
		(void)!read(pipefd[0], &c, 1);
		_exit(0);
	}
	close(pipefd[0]);
	assert_int_equal(shm_reader__open_pid(b, child, &r), -ENOENT);
	close(pipefd[1]);
	waitpid(child, NULL, 0);
	shm__destroy(shm);
	bounded__free(b);
}

static void test_open_pid_finds_this_process_memfd(void **state)
{
	struct shm *shm = small_shm();
	struct bounded *b = bounded__new();
	struct shm_reader *r = NULL;
	int err;

	assert_non_null(b);
	err = shm_reader__open_pid(b, getpid(), &r);
	bounded__free(b); /* the reader keeps no handle */
	/* map_files needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN: the loader is root. */
	if (err == -EPERM || err == -EACCES) {
		shm__destroy(shm);
		SKIP_BECAUSE("opening map_files needs root (CAP_SYS_ADMIN)");
	}
	assert_int_equal(err, 0);
	assert_int_equal(shm_reader__alive(r), 0);
	assert_int_equal(shm_reader__layout(r)->pid, (__u32)getpid());
	shm_reader__destroy(r);
	shm__destroy(shm);
}

/* ------------------------------------------------ one reader per ring */

static __u64 mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* A process that lives until its pipe closes: a stand-in for another loader. */
static pid_t other_loader(int *ret_pipe)
{
	int pipefd[2];
	pid_t child;
	char c;

	assert_int_equal(pipe(pipefd), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(pipefd[1]);
		(void)!read(pipefd[0], &c, 1);
		_exit(0);
	}
	close(pipefd[0]);
	*ret_pipe = pipefd[1];
	return child;
}

static void other_loader_exits(pid_t pid, int pipefd)
{
	close(pipefd);
	waitpid(pid, NULL, 0);
}

/* Opens an image whose consumer area says: read by holder, last visit at beat. */
static int open_held(__u32 holder, __u64 beat, __u32 tick_ms, __u32 *ret_holder_after)
{
	struct shm *shm = small_shm();
	struct shm_reader *r = NULL;
	struct gp_shm_header *h;
	size_t size;
	__u8 *img = image_of(shm, &size);
	int err;

	h = (struct gp_shm_header *)img;
	h->consumer.reader_pid = holder;
	h->consumer.heartbeat_ns = beat;
	h->consumer.tick_ms = tick_ms;
	err = shm_reader__open_mem(img, size, &r);
	*ret_holder_after = h->consumer.reader_pid;
	shm_reader__destroy(r);
	free(img);
	shm__destroy(shm);
	return err;
}

static void test_a_ring_read_by_another_live_loader_is_refused_with_ebusy(void **state)
{
	int pipefd;
	pid_t other = other_loader(&pipefd);
	__u32 after;

	/* Ticks of a minute: a test paused for seconds still finds the beat fresh. */
	assert_int_equal(open_held((__u32)other, mono_now(), 60000, &after), -EBUSY);
	assert_int_equal(after, (__u32)other); /* left to it, untouched */
	/* A long tick keeps its heartbeat fresh for three of them: 15 s old, 10 s ticks. */
	assert_int_equal(open_held((__u32)other, mono_now() - 15000000000ull, 10000, &after), -EBUSY);
	other_loader_exits(other, pipefd);
}

static void test_a_ring_whose_loader_died_is_taken_over(void **state)
{
	int pipefd;
	pid_t other = other_loader(&pipefd);
	__u32 after;

	other_loader_exits(other, pipefd); /* SIGKILLed, say: its heartbeat is still fresh */
	assert_int_equal(open_held((__u32)other, mono_now(), 100, &after), 0);
	assert_int_equal(after, (__u32)getpid());
}

static void test_a_ring_whose_loader_went_silent_is_taken_over(void **state)
{
	int pipefd;
	pid_t other = other_loader(&pipefd);
	__u32 after;

	/* Alive (stopped, or its pid reused) but no visit for 5 s of 100 ms ticks. */
	assert_int_equal(open_held((__u32)other, mono_now() - 5000000000ull, 100, &after), 0);
	assert_int_equal(after, (__u32)getpid());
	/* A heartbeat from the future is a lie, not a fresh visit. */
	assert_int_equal(open_held((__u32)other, mono_now() + 60000000000ull, 100, &after), 0);
	/* Never visited at all. */
	assert_int_equal(open_held((__u32)other, 0, 0, &after), 0);
	other_loader_exits(other, pipefd);
}

static void test_the_loader_holding_a_ring_may_open_it_again(void **state)
{
	__u32 after;

	assert_int_equal(open_held((__u32)getpid(), mono_now(), 100, &after), 0);
	assert_int_equal(open_held(0, mono_now(), 100, &after), 0);
	assert_int_equal(after, (__u32)getpid());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_valid_image_opens),
		cmocka_unit_test(test_wrong_magic_is_rejected_with_eproto),
		cmocka_unit_test(test_an_unknown_version_is_rejected_with_eprotonosupport),
		cmocka_unit_test(test_bad_offsets_and_sizes_are_rejected_with_ebadmsg),
		cmocka_unit_test(test_an_image_smaller_than_a_header_is_rejected),
		cmocka_unit_test(test_an_unsealed_fd_is_refused),
		cmocka_unit_test(test_a_hugetlb_memfd_is_refused),
		cmocka_unit_test(test_a_ring_is_grabbed_only_from_the_memfds_mount),
		cmocka_unit_test(test_a_fuse_file_at_a_rings_fd_is_refused_without_a_wait),
		cmocka_unit_test(test_a_ready_ring_is_not_claimed_by_the_look),
		cmocka_unit_test(test_a_name_without_nul_reads_as_the_placeholder),
		cmocka_unit_test(test_a_head_that_jumps_backwards_is_counted_and_resynced),
		cmocka_unit_test(test_invalid_records_are_counted_and_skipped),
		cmocka_unit_test(test_a_read_looks_at_most_max_slots_and_the_backlog_says_what_is_left),
		cmocka_unit_test(test_the_loader_settles_what_the_shim_captured_through_its_own_mapping),
		cmocka_unit_test(test_payloads_read_from_the_rings_file_are_the_bytes_captured),
		cmocka_unit_test(test_a_cubin_over_the_loaders_own_limit_is_skipped_before_any_allocation),
		cmocka_unit_test(test_settled_cubin_pages_leave_the_readers_mapping),
#ifndef UNDER_TSAN
		cmocka_unit_test(test_a_writer_scribbling_everywhere_cannot_crash_the_reader),
#endif
		cmocka_unit_test(test_a_pid_that_is_gone_gives_esrch),
		cmocka_unit_test(test_a_fork_child_does_not_inherit_the_mapping),
		cmocka_unit_test(test_open_pid_finds_this_process_memfd),
		cmocka_unit_test(test_a_ring_read_by_another_live_loader_is_refused_with_ebusy),
		cmocka_unit_test(test_a_ring_whose_loader_died_is_taken_over),
		cmocka_unit_test(test_a_ring_whose_loader_went_silent_is_taken_over),
		cmocka_unit_test(test_the_loader_holding_a_ring_may_open_it_again),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
