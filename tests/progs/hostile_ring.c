/* SPDX-License-Identifier: MIT */
/*
 * hostile_ring: a process that lays out a shim ring of its own (a sealed
 * memfd named like the shim's, a valid layout) and then abuses it, as an
 * unprivileged tenant could, to test that the root loader stays bounded
 * (DESIGN.md invariants 4, 5 and 8).
 *
 *   hostile_ring [-r] [-c] [-t] [-E] [-N] [-g MIB] [-n SLOTS] [-x] [-s SECONDS]
 *
 *   -r      records: keep the record ring full, whatever the loader reads,
 *           so that every batch it reads comes back full
 *   -c      cubins: keep the cubin ring full of small cubins as fast as the
 *           loader settles them
 *   -t      toggle: flip its recording state (flag, switch-on time) without
 *           end, so that the loader sees a switch at every visit
 *   -E      exits: bump its exit_seq without end, as if it exited at every
 *           moment, so that the loader has an exit to answer at every look
 *   -N      names: keep the record ring full of kernel records, each naming
 *           a kernel the one before did not (NAMES distinct names in turn,
 *           with its pid in them: each process's names are its own)
 *   -g MIB  one cubin entry claiming MIB MiB (its bytes are never written:
 *           the memfd is sparse), in a cubin ring just large enough for it
 *   -n SLOTS  record slots (a power of two; default 65536)
 *   -x      fill the record ring once, then exit at once
 *   -s SECONDS  stop after this long (0, the default: until SIGTERM/SIGINT)
 *
 * It prints "hostile_ring: ready pid=PID" (flushed) once the ring is laid
 * out, and at the end "hostile_ring: records=N cubins=N" (what it published).
 * Run by gpuprobe-bpf -- COMMAND, it names that loader the ring's owner
 * (GPUPROBE_SHM_OWNER, as the shim does), so that no other loader on the
 * machine takes the ring over.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "shim/gp_abi.h"

#define NAMES 20000ull
#define NAME_BYTES 32ull
#define SMALL_CUBIN_RING (1ull << 20)
#define SMALL_CUBIN 8ull

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static long parse_long(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "hostile_ring: bad number: %s\n", s);
		exit(2);
	}
	return v;
}

static __u64 pow2_at_least(__u64 v)
{
	__u64 p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static __u64 rec_slots = 65536, str_size = 4096, names_sent;
static bool names;

struct ring {
	__u8 *base;
	struct gp_shm_header *hdr;
	struct gp_shm_layout l;
	__u64 rec_head, cubin_head;
};

static int ring_make(struct ring *r, __u64 cubin_size)
{
	__u64 total;
	int fd;

	memset(r, 0, sizeof(*r));
	r->l = (struct gp_shm_layout){
		.magic = GP_SHM_MAGIC, .version = GP_SHM_VERSION,
		.header_size = sizeof(struct gp_shm_header), .record_size = sizeof(struct gp_record),
		.pid = (__u32)getpid(), .create_ns = mono_ns(),
		.rec_off = sizeof(struct gp_shm_header), .rec_slots = rec_slots,
	};
	r->l.str_off = r->l.rec_off + rec_slots * sizeof(struct gp_record);
	r->l.str_size = str_size;
	r->l.cubin_off = r->l.str_off + str_size;
	r->l.cubin_size = cubin_size;
	r->l.cubin_max = cubin_size - sizeof(struct gp_cubin_entry);
	total = r->l.cubin_off + cubin_size;
	r->l.total_size = total;
	if (getenv("GPUPROBE_SHM_OWNER"))
		r->l.owner_pid = (__u32)strtoul(getenv("GPUPROBE_SHM_OWNER"), NULL, 10);
	fd = memfd_create(GP_SHM_NAME, MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)total) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		perror("hostile_ring: memfd");
		return -1;
	}
	r->base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (r->base == MAP_FAILED) {
		perror("hostile_ring: mmap");
		return -1;
	}
	r->hdr = (struct gp_shm_header *)r->base;
	memcpy(&r->hdr->layout, &r->l, sizeof(r->l));
	r->hdr->producer.flags = GP_SHM_F_CLOCK_MONOTONIC;
	r->base[r->l.str_off] = 0; /* str_used stays 0 unless -N: no names */
	if (names) {
		for (__u64 i = 0; i < NAMES; i++)
			snprintf((char *)r->base + r->l.str_off + NAME_BYTES + i * NAME_BYTES, NAME_BYTES,
				 "evil_%d_%09llu", (int)getpid(), (unsigned long long)i);
		r->hdr->producer.str_used = NAME_BYTES + NAMES * NAME_BYTES;
	}
	return 0;
}

/* Fills every free slot with a valid record (a module unload: joined to nothing). */
static __u64 records_refill(struct ring *r)
{
	__u64 tail = __atomic_load_n(&r->hdr->consumer.rec_tail, __ATOMIC_ACQUIRE), n = 0;
	struct gp_record *slots = (struct gp_record *)(r->base + r->l.rec_off);

	if (tail > r->rec_head)
		tail = r->rec_head;
	while (r->rec_head - tail < rec_slots) {
		struct gp_record *rec = &slots[r->rec_head & (rec_slots - 1)];

		memset(rec, 0, sizeof(*rec));
		if (names) { /* a kernel of the next name, now: joined to nothing, named */
			rec->type = GP_REC_KERNEL;
			rec->tid = (__u32)getpid();
			rec->corr = r->rec_head + 1;
			rec->start_ns = rec->end_ns = mono_ns();
			rec->kernel.name_off = (__u32)(NAME_BYTES + (names_sent++ % NAMES) * NAME_BYTES);
		} else {
			rec->type = GP_REC_MODULE;
			rec->module.event = 1;
			rec->module.module_id = r->rec_head;
		}
		r->rec_head++;
		n++;
	}
	if (n)
		__atomic_store_n(&r->hdr->producer.rec_head, r->rec_head, __ATOMIC_RELEASE);
	return n;
}

static void entry_write(struct ring *r, __u64 at, __u32 magic, __u64 size)
{
	struct gp_cubin_entry e = { .magic = magic, .size = size, .module_id = at,
				    .load_ns = mono_ns(), .tid = (__u32)getpid() };

	memcpy(r->base + r->l.cubin_off + (at & (r->l.cubin_size - 1)), &e, sizeof(e));
}

/* Fills the cubin ring with small cubins (distinct bytes: no de-duplication). */
static __u64 cubins_refill(struct ring *r)
{
	__u64 tail = __atomic_load_n(&r->hdr->consumer.cubin_tail, __ATOMIC_ACQUIRE), n = 0;
	__u64 need = sizeof(struct gp_cubin_entry) + SMALL_CUBIN;

	if (tail > r->cubin_head)
		tail = r->cubin_head;
	for (;;) {
		__u64 pos = r->cubin_head & (r->l.cubin_size - 1), to_end = r->l.cubin_size - pos;
		__u64 skip = to_end < need ? to_end : 0;

		if (r->cubin_head + skip + need - tail > r->l.cubin_size)
			break;
		if (skip >= sizeof(struct gp_cubin_entry))
			entry_write(r, r->cubin_head, GP_CUBIN_PAD, skip);
		r->cubin_head += skip;
		entry_write(r, r->cubin_head, GP_CUBIN_MAGIC, SMALL_CUBIN);
		memcpy(r->base + r->l.cubin_off + ((r->cubin_head + sizeof(struct gp_cubin_entry)) &
						   (r->l.cubin_size - 1)),
		       &r->cubin_head, SMALL_CUBIN);
		r->cubin_head += need;
		n++;
	}
	if (n)
		__atomic_store_n(&r->hdr->producer.cubin_head, r->cubin_head, __ATOMIC_RELEASE);
	return n;
}

int main(int argc, char **argv)
{
	bool records = false, cubins = false, fill_exit = false, toggle = false, exits = false;
	long giant_mib = 0, seconds = 0;
	__u64 nrec = 0, ncub = 0, end;
	struct ring r;
	int c;

	while ((c = getopt(argc, argv, "rctENg:n:xs:")) != -1) {
		switch (c) {
		case 'r': records = true; break;
		case 't': toggle = true; break;
		case 'E': exits = true; break;
		case 'N': names = records = true; str_size = NAME_BYTES * (NAMES + 1); break;
		case 'c': cubins = true; break;
		case 'g': giant_mib = parse_long(optarg, 1, 1 << 20); break;
		case 's': seconds = parse_long(optarg, 0, 86400); break;
		case 'n': rec_slots = (__u64)parse_long(optarg, 64, 1 << 24); break;
		case 'x': fill_exit = true; break;
		default:
			fprintf(stderr, "usage: hostile_ring [-r] [-c] [-t] [-E] [-N] [-g MIB] [-n SLOTS] [-x] [-s SECONDS]\n");
			return 2;
		}
	}
	if (rec_slots & (rec_slots - 1)) {
		fprintf(stderr, "hostile_ring: -n: not a power of two\n");
		return 2;
	}
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	if (ring_make(&r, giant_mib ? pow2_at_least(((__u64)giant_mib << 20) +
						    2 * sizeof(struct gp_cubin_entry))
				    : SMALL_CUBIN_RING))
		return 1;
	if (giant_mib) {
		/* One entry, header only: the loader must not believe its size. */
		entry_write(&r, 0, GP_CUBIN_MAGIC, (__u64)giant_mib << 20);
		r.cubin_head = sizeof(struct gp_cubin_entry) + ((__u64)giant_mib << 20);
		__atomic_store_n(&r.hdr->producer.cubin_head, r.cubin_head, __ATOMIC_RELEASE);
		ncub = 1;
	}
	printf("hostile_ring: ready pid=%d\n", (int)getpid());
	fflush(stdout);
	if (fill_exit) {
		printf("hostile_ring: records=%llu\n", (unsigned long long)records_refill(&r));
		return 0;
	}
	end = seconds ? mono_ns() + (__u64)seconds * 1000000000ull : 0;
	while (!stop_flag && (!end || mono_ns() < end)) {
		__u64 n = 0;

		if (records) {
			__u64 m = records_refill(&r);

			nrec += m;
			n += m;
		}
		if (cubins) {
			__u64 m = cubins_refill(&r);

			ncub += m;
			n += m;
		}
		if (toggle) {
			__atomic_fetch_xor(&r.hdr->producer.flags, GP_SHM_F_RECORDING, __ATOMIC_RELEASE);
			__atomic_store_n(&r.hdr->producer.record_on_ns, mono_ns(), __ATOMIC_RELEASE);
		}
		if (exits)
			__atomic_fetch_add(&r.hdr->producer.exit_seq, 1, __ATOMIC_RELEASE);
		if (!n)
			usleep(records || cubins || toggle || exits ? 50 : 10000); /* the loader reads: a moment */
	}
	printf("hostile_ring: records=%llu cubins=%llu\n", (unsigned long long)nrec,
	       (unsigned long long)ncub);
	return 0;
}
