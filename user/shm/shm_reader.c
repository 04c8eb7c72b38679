/* SPDX-License-Identifier: MIT */
/*
 * Reading a profiled process's gpuprobe-shm memfd: locate it through
 * /proc/<pid>/maps and map_files, validate the whole layout once into a
 * private snapshot, then read records, names and counters, and settle its
 * cubin ring through the same CubinQueue code the shim uses.
 *
 * Hostile-input rules (DESIGN.md invariant 5): copy a record or a name out
 * before looking at it; bound every index by the snapshot; clamp positions;
 * count every anomaly; refuse an unsealed memfd (it could be shrunk under us
 * and turn a read into SIGBUS).
 */
#include "user/shm/shm_reader.h"
#include "user/proc/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SHM_MAPS_NAME "/memfd:" GP_SHM_NAME " (deleted)"
/* Sanity bounds well above anything the shim lays out (shim/shm.h). */
#define READER_MAX_SLOTS (1ull << 26)
#define READER_MAX_TOTAL (1ull << 40)
/*
 * Another loader holds the ring while it lives and has visited within this
 * many of its ticks (the shim's exit wait trusts a heartbeat as long), and
 * never less than a second: a slow tick must not hand the ring over.
 */
#define HOLDER_STALE_TICKS 3ull
#define HOLDER_MIN_STALE_NS 1000000000ull
#define HOLDER_DEFAULT_TICK_MS 100u
#define HOLDER_MAX_TICK_MS 60000u /* tick_ms is hostile: bound the wait it buys */
/*
 * What one settle() may cost the loader, whatever the ring's layout claims
 * (DESIGN.md invariants 4 and 8): the entries, payload bytes and time of one
 * visit, and the largest cubin copied out at all (the shim's default ring is
 * 128 MiB; the CRC helper's own limit, 1 GiB, is never reached).
 */
#define READER_SETTLE_ENTRIES 256u
#define READER_SETTLE_BYTES (256ull << 20)
#define READER_SETTLE_NS (50ull * 1000000ull)
#define READER_CUBIN_MAX (256ull << 20)

struct shm_reader {
	__u8 *base;
	__u64 map_size;
	bool owns_map;
	int map_fd;  /* the mapped memfd (owns_map), for the cubins' payloads, or -1 */
	pid_t pid;
	int pidfd;
	struct gp_shm_layout layout; /* validated snapshot */
	struct gp_shm_header *hdr;
	__u64 rec_tail;
	struct cubin_queue *cubins;
	struct shm_reader_stats st;
};

static bool is_pow2(__u64 v)
{
	return v && !(v & (v - 1));
}

static bool region__inside(__u64 off, __u64 len, __u64 total)
{
	return off <= total && len <= total - off;
}

static bool region__overlap(__u64 a, __u64 alen, __u64 b, __u64 blen)
{
	return a < b + blen && b < a + alen;
}

int shm_reader__validate_layout(const struct gp_shm_layout *l, __u64 real_size)
{
	__u64 hdr = sizeof(struct gp_shm_header), rec_len;

	if (l->magic != GP_SHM_MAGIC)
		return -EPROTO;
	if (l->version != GP_SHM_VERSION)
		return -EPROTONOSUPPORT;
	if (l->header_size != hdr || l->record_size != sizeof(struct gp_record))
		return -EBADMSG;
	if (l->total_size < hdr || l->total_size > real_size || l->total_size > READER_MAX_TOTAL)
		return -EBADMSG;
	if (!is_pow2(l->rec_slots) || l->rec_slots > READER_MAX_SLOTS || l->rec_off % 64)
		return -EBADMSG;
	rec_len = l->rec_slots * sizeof(struct gp_record);
	/* name_off is a __u32; a wider table could not be addressed anyway. */
	if (!l->str_size || l->str_size > UINT32_MAX)
		return -EBADMSG;
	if (!is_pow2(l->cubin_size) || l->cubin_size < 2 * sizeof(struct gp_cubin_entry) ||
	    l->cubin_off % 8 || l->cubin_max > l->cubin_size - sizeof(struct gp_cubin_entry))
		return -EBADMSG;
	if (l->rec_off < hdr || l->str_off < hdr || l->cubin_off < hdr)
		return -EBADMSG;
	if (!region__inside(l->rec_off, rec_len, l->total_size) ||
	    !region__inside(l->str_off, l->str_size, l->total_size) ||
	    !region__inside(l->cubin_off, l->cubin_size, l->total_size))
		return -EBADMSG;
	if (region__overlap(l->rec_off, rec_len, l->str_off, l->str_size) ||
	    region__overlap(l->rec_off, rec_len, l->cubin_off, l->cubin_size) ||
	    region__overlap(l->str_off, l->str_size, l->cubin_off, l->cubin_size))
		return -EBADMSG;
	return 0;
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/*
 * True when a loader other than us reads the ring: its process lives and its
 * heartbeat is fresh. A dead one (SIGKILLed) or a silent one (stopped, or its
 * pid reused) is stale, and its ring is taken over.
 */
static bool consumer__held_by_other(struct gp_shm_consumer *c, __u32 holder, __u64 now)
{
	__u64 beat = __atomic_load_n(&c->heartbeat_ns, __ATOMIC_ACQUIRE), stale;
	__u32 tick_ms = __atomic_load_n(&c->tick_ms, __ATOMIC_RELAXED);

	if (!holder || holder == (__u32)getpid() || holder > INT32_MAX)
		return false;
	if (!tick_ms)
		tick_ms = HOLDER_DEFAULT_TICK_MS;
	else if (tick_ms > HOLDER_MAX_TICK_MS)
		tick_ms = HOLDER_MAX_TICK_MS;
	stale = HOLDER_STALE_TICKS * tick_ms * 1000000ull;
	if (stale < HOLDER_MIN_STALE_NS)
		stale = HOLDER_MIN_STALE_NS;
	if (!beat || beat > now || now - beat > stale)
		return false;
	return kill((pid_t)holder, 0) == 0 || errno == EPERM;
}

/*
 * One reader per ring: two would race on the shared tails, the slower one
 * reading slots the shim already reused and the cubins split between them.
 * The compare-and-swap settles two loaders arriving at once; the heartbeat
 * stamped with the claim keeps a third away until our first tick.
 */
static int consumer__claim(struct gp_shm_header *hdr, __u32 owner)
{
	struct gp_shm_consumer *c = &hdr->consumer;
	__u32 holder = __atomic_load_n(&c->reader_pid, __ATOMIC_ACQUIRE);
	__u64 now = mono_ns();

	/* Made for a -- COMMAND run: its loader reads it, whoever comes first. */
	if (owner && owner != (__u32)getpid() && owner <= INT32_MAX &&
	    (kill((pid_t)owner, 0) == 0 || errno == EPERM))
		return -EBUSY;
	if (consumer__held_by_other(c, holder, now))
		return -EBUSY;
	if (!__atomic_compare_exchange_n(&c->reader_pid, &holder, (__u32)getpid(), false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return -EBUSY;
	__atomic_store_n(&c->heartbeat_ns, now, __ATOMIC_RELEASE);
	return 0;
}

/* Validates the snapshot, then builds everything that trusts it. */
static int reader__init(struct shm_reader *r, __u64 real_size)
{
	struct cubin_ring ring;
	int err;

	if (real_size < sizeof(struct gp_shm_header))
		return -EBADMSG;
	memcpy(&r->layout, r->base, sizeof(r->layout));
	err = shm_reader__validate_layout(&r->layout, real_size);
	if (err)
		return err;
	r->hdr = (struct gp_shm_header *)r->base;
	ring.data = r->base + r->layout.cubin_off;
	ring.size = r->layout.cubin_size;
	ring.max = r->layout.cubin_max;
	ring.head = &r->hdr->producer.cubin_head;
	ring.tail = &r->hdr->consumer.cubin_tail;
	ring.counters = r->hdr->producer.counters;
	ring.read_fd = r->map_fd >= 0;
	ring.fd = r->map_fd;
	ring.fd_off = r->layout.cubin_off; /* mapped from the file's start */
	err = cubin_queue__new(&ring, &(struct cubin_queue_opts){
					.settle_max = READER_SETTLE_ENTRIES,
					.settle_max_bytes = READER_SETTLE_BYTES,
					.settle_max_ns = READER_SETTLE_NS,
					.size_max = READER_CUBIN_MAX,
				}, &r->cubins);
	if (err)
		return err;
	err = consumer__claim(r->hdr, r->layout.owner_pid);
	if (err) {
		cubin_queue__destroy(r->cubins);
		r->cubins = NULL;
		return err;
	}
	/* Resume where a previous loader stopped; clamped on the first read. */
	r->rec_tail = __atomic_load_n(&r->hdr->consumer.rec_tail, __ATOMIC_ACQUIRE);
	return 0;
}

static struct shm_reader *reader__alloc(void)
{
	struct shm_reader *r = calloc(1, sizeof(*r));

	if (r)
		r->pidfd = r->map_fd = -1;
	return r;
}

int shm_reader__open_mem(void *mem, size_t size, struct shm_reader **ret_r)
{
	struct shm_reader *r;
	int err;

	if (!mem || ((uintptr_t)mem & 7) || !ret_r)
		return -EINVAL;
	r = reader__alloc();
	if (!r)
		return -ENOMEM;
	r->base = mem;
	r->map_size = size;
	err = reader__init(r, size);
	if (err) {
		free(r);
		return err;
	}
	*ret_r = r;
	return 0;
}

/*
 * Reads the header with pread so nothing is mapped before it is validated.
 * Only a shmem file (a memfd as the shim makes it) is read: a hugetlbfs
 * memfd passes the same seals, and a target that punches a hole in it and
 * takes every free huge page makes the loader's next read of the mapping
 * a SIGBUS, where shmem gives a zero page.
 */
static int fd__check(int fd, __u64 *ret_size, struct gp_shm_layout *ret_l)
{
	struct statfs fs;
	struct stat st;
	ssize_t n;
	int seals, err;

	if (fstatfs(fd, &fs) < 0 || fstat(fd, &st) < 0)
		return -errno;
	if (fs.f_type != TMPFS_MAGIC)
		return -EBADFD;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EBADFD;
	if (st.st_size < (off_t)sizeof(struct gp_shm_header))
		return -EBADMSG;
	n = pread(fd, ret_l, sizeof(*ret_l), 0);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(*ret_l))
		return -EBADMSG;
	err = shm_reader__validate_layout(ret_l, (__u64)st.st_size);
	if (err)
		return err;
	*ret_size = (__u64)st.st_size;
	return 0;
}

int shm_reader__open_fd(int fd, struct shm_reader **ret_r)
{
	struct gp_shm_layout l;
	struct shm_reader *r;
	__u64 size;
	void *map;
	int err;

	if (fd < 0 || !ret_r)
		return -EINVAL;
	err = fd__check(fd, &size, &l);
	if (err)
		return err;
	r = reader__alloc();
	if (!r)
		return -ENOMEM;
	/* Map only what the layout covers; it was checked against st_size. */
	map = mmap(NULL, l.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		err = -errno;
		goto err_free;
	}
	r->base = map;
	r->map_size = l.total_size;
	r->owns_map = true;
	/* Without it (no fd left), the payloads are copied through the mapping. */
	r->map_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	err = reader__init(r, l.total_size);
	if (err)
		goto err_unmap;
	*ret_r = r;
	return 0;
err_unmap:
	munmap(map, l.total_size);
	if (r->map_fd >= 0)
		close(r->map_fd);
err_free:
	free(r);
	return err;
}

/* ENOENT on a /proc path means the pid is gone if /proc/<pid> is gone too. */
static int proc__errno(pid_t pid, int err)
{
	char path[64];

	if (err != -ENOENT && err != -ESRCH)
		return err;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return access(path, F_OK) ? -ESRCH : err;
}

/*
 * [start, end) of the ring's mapping: the first of the shim's memfd name,
 * read by the one maps parser (proc__find_memfd), at offset 0 as the shim
 * maps it (a process that maps it otherwise has no ring read).
 */
static int maps__find(pid_t pid, __u64 *ret_start, __u64 *ret_end)
{
	struct proc_mapping m;
	int err = proc__find_memfd(pid, GP_SHM_NAME, &m);

	if (err)
		return proc__errno(pid, err);
	if (m.offset != 0)
		return -ENOENT;
	*ret_start = m.start;
	*ret_end = m.end;
	return 0;
}

/*
 * The ring's memfd through the mapping's own file, checked to be a regular
 * file before it is opened (proc.h): a process could map something else
 * under the ring's name.
 */
static int ring__open(struct bounded *b, pid_t pid, int flags, int *ret_fd)
{
	__u64 start, end;
	int err = maps__find(pid, &start, &end);

	if (!err)
		err = proc__open_mapped(b, pid, start, end, NULL, flags, ret_fd);
	return err ? proc__errno(pid, err) : 0;
}

int shm_reader__fd_ready(int fd)
{
	struct gp_shm_layout l;
	__u64 size;

	return fd < 0 ? -EINVAL : fd__check(fd, &size, &l);
}

int shm_reader__find_pid(struct bounded *b, pid_t pid, int *ret_fd)
{
	if (pid <= 0 || !ret_fd)
		return -EINVAL;
	return ring__open(b, pid, O_RDWR, ret_fd);
}

int shm_reader__open_found(int fd, pid_t pid, struct shm_reader **ret_r)
{
	struct shm_reader *r;
	int err;

	if (pid <= 0 || !ret_r)
		return -EINVAL;
	err = shm_reader__open_fd(fd, &r);
	if (err)
		return err;
	r->pid = pid;
	/* A pidfd tells "gone" apart from a recycled pid. */
	r->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	*ret_r = r;
	return 0;
}

int shm_reader__open_pid(struct bounded *b, pid_t pid, struct shm_reader **ret_r)
{
	int fd, err = shm_reader__find_pid(b, pid, &fd);

	if (err)
		return err;
	err = shm_reader__open_found(fd, pid, ret_r);
	close(fd);
	return err;
}

/* The device every memfd (on the kernel's internal shmem mount) has: 0 if none could be made. */
static dev_t memfd_dev;
static pthread_once_t memfd_dev_once = PTHREAD_ONCE_INIT;

static void memfd_dev__find(void)
{
	struct stat st;
	int fd = memfd_create("gpuprobe-dev", MFD_CLOEXEC);

	if (fd >= 0 && !fstat(fd, &st))
		memfd_dev = st.st_dev;
	if (fd >= 0)
		close(fd);
}

/*
 * Whether the O_PATH fd pfd is a regular file on the memfds' own mount,
 * asked of the attributes the kernel has (AT_STATX_DONT_SYNC): a file of a
 * FUSE daemon that never answers, under the shim's name, makes no request
 * of it, where fstat would wait for the daemon (a hugetlbfs memfd is on
 * another mount too).
 */
static bool on_memfd_mount(int pfd)
{
	struct statx sx;

	pthread_once(&memfd_dev_once, memfd_dev__find);
	if (statx(pfd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &sx))
		return false;
	return memfd_dev && S_ISREG(sx.stx_mode) &&
	       makedev(sx.stx_dev_major, sx.stx_dev_minor) == memfd_dev;
}

/*
 * The fd is looked at through an O_PATH open, which has no side effects
 * whatever the process put there (a FIFO, a device), and reopened only when
 * it is a memfd of the shim's name on the memfds' mount: the same file, so
 * the ring outlives the process while we hold it. Nothing asks the file's
 * own file system before that (the name is procfs', the device the
 * kernel's cached attributes).
 */
int shm_reader__grab_fd(pid_t pid, int fd, int *ret_fd)
{
	char path[64], link[sizeof(SHM_MAPS_NAME) + 1];
	int pfd, rfd = -1, err = 0;
	ssize_t n;

	if (pid <= 0 || fd < 0 || !ret_fd)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return proc__errno(pid, -errno);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", pfd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		err = -errno;
	} else {
		link[n] = '\0';
		if (strcmp(link, SHM_MAPS_NAME) != 0 || !on_memfd_mount(pfd))
			err = -ENOENT;
		else if ((rfd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0)
			err = -errno;
	}
	close(pfd);
	if (err)
		return err;
	*ret_fd = rfd;
	return 0;
}

/*
 * The pid of the loader that last claimed pid's ring, 0 if none ever did: it
 * names the holder after an open answered -EBUSY. Only the consumer area is
 * read (pread, nothing mapped), and only a pid's worth of it is believed.
 */
int shm_reader__mark_watched(int fd, __u64 now_ns, bool paused)
{
	off_t at = (off_t)offsetof(struct gp_shm_header, consumer.heartbeat_ns);
	off_t pause_at = (off_t)offsetof(struct gp_shm_header, consumer.record_pause);
	__u32 one = 1;

	/* Only a memfd: seals answer for nothing else, and a memfd never blocks. */
	if (fcntl(fd, F_GET_SEALS) < 0)
		return -errno;
	if (paused && pwrite(fd, &one, sizeof(one), pause_at) != (ssize_t)sizeof(one))
		return -EIO;
	if (pwrite(fd, &now_ns, sizeof(now_ns), at) != (ssize_t)sizeof(now_ns))
		return -EIO;
	return 0;
}

int shm_reader__holder(struct bounded *b, pid_t pid, pid_t *ret_holder)
{
	struct gp_shm_consumer c;
	ssize_t n;
	int fd, err;

	if (pid <= 0 || !ret_holder)
		return -EINVAL;
	err = ring__open(b, pid, O_RDONLY, &fd);
	if (err)
		return err;
	n = pread(fd, &c, sizeof(c), offsetof(struct gp_shm_header, consumer));
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	if (n != (ssize_t)sizeof(c) || c.reader_pid > INT32_MAX)
		return -EBADMSG;
	*ret_holder = (pid_t)c.reader_pid;
	return 0;
}

/*
 * Gives the ring back: the shim switches its activity off at once rather
 * than when our heartbeat goes stale (gp_abi.h, "no reader, no records").
 * Only our own claim: a loader that took the ring over since keeps it.
 */
static void consumer__release(struct gp_shm_header *hdr)
{
	struct gp_shm_consumer *c = &hdr->consumer;
	__u32 me = (__u32)getpid();

	if (__atomic_compare_exchange_n(&c->reader_pid, &me, 0, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		__atomic_store_n(&c->heartbeat_ns, 0, __ATOMIC_RELEASE);
}

void shm_reader__destroy(struct shm_reader *r)
{
	if (!r)
		return;
	if (r->hdr)
		consumer__release(r->hdr);
	cubin_queue__destroy(r->cubins);
	if (r->owns_map)
		munmap(r->base, r->map_size);
	if (r->map_fd >= 0)
		close(r->map_fd);
	if (r->pidfd >= 0)
		close(r->pidfd);
	free(r);
}

const struct gp_shm_layout *shm_reader__layout(const struct shm_reader *r)
{
	return &r->layout;
}

static bool record__valid(const struct shm_reader *r, const struct gp_record *rec)
{
	switch (rec->type) {
	case GP_REC_KERNEL:
		if (rec->kernel.name_off >= r->layout.str_size)
			return false;
		break;
	case GP_REC_API:
		if (rec->api.domain != GP_API_DRIVER && rec->api.domain != GP_API_RUNTIME)
			return false;
		break;
	case GP_REC_MEMCPY:
	case GP_REC_MEMSET:
		break;
	case GP_REC_MODULE:
		return rec->module.event == 1;
	case GP_REC_GRAPH_NODE:
		/* A node is never its own origin (a loop in the loader's walk otherwise). */
		if (!rec->graph.node || rec->graph.orig_node == rec->graph.node ||
		    rec->graph.event > GP_GRAPH_NODE_SET_PARAMS ||
		    (rec->graph.event == GP_GRAPH_NODE_UPDATED && !rec->graph.orig_node))
			return false;
		break;
	case GP_REC_PC:
		if (rec->pc.name_off >= r->layout.str_size || !rec->pc.samples)
			return false;
		break;
	case GP_REC_PC_STALL:
		if (rec->pc_stall.name_off >= r->layout.str_size)
			return false;
		break;
	case GP_REC_PC_TOTALS:
		break;
	default:
		return false;
	}
	return rec->start_ns <= rec->end_ns;
}

static void tail__publish(struct shm_reader *r)
{
	__atomic_store_n(&r->hdr->consumer.rec_tail, r->rec_tail, __ATOMIC_RELEASE);
}

/* The record head, with a head that went backwards or leapt a ring ahead resynced. */
static __u64 head__load(struct shm_reader *r)
{
	__u64 head = __atomic_load_n(&r->hdr->producer.rec_head, __ATOMIC_ACQUIRE);

	if (head < r->rec_tail || head - r->rec_tail > r->layout.rec_slots) {
		r->st.ring_resyncs++;
		r->rec_tail = head;
	}
	return head;
}

int shm_reader__read(struct shm_reader *r, struct gp_record *recs, size_t max, size_t *ret_n)
{
	const __u8 *ring;
	__u64 mask, head;
	struct gp_record rec;
	size_t n = 0, seen = 0;

	if (!r || (!recs && max) || !ret_n)
		return -EINVAL;
	ring = r->base + r->layout.rec_off;
	mask = r->layout.rec_slots - 1;
	head = head__load(r);
	/* At most max slots, valid or not: a ring of garbage costs what a full batch does. */
	while (r->rec_tail != head && seen < max) {
		memcpy(&rec, ring + (r->rec_tail & mask) * sizeof(rec), sizeof(rec));
		r->rec_tail++;
		seen++;
		if (!record__valid(r, &rec)) {
			r->st.records_bad++;
			continue;
		}
		recs[n++] = rec;
	}
	tail__publish(r);
	r->st.records_read += n;
	*ret_n = n;
	return 0;
}

__u64 shm_reader__backlog(struct shm_reader *r)
{
	return r ? head__load(r) - r->rec_tail : 0;
}

__u64 shm_reader__read_pos(const struct shm_reader *r)
{
	return r ? r->rec_tail : 0;
}

static void name__bad(char *buf, size_t len)
{
	snprintf(buf, len, "%s", SHM_READER_BAD_NAME);
}

int shm_reader__name(struct shm_reader *r, __u32 off, char *buf, size_t len)
{
	const __u8 *tab = r->base + r->layout.str_off;
	__u64 used, avail, n;
	char *nul;

	if (!buf || !len)
		return -EINVAL;
	used = __atomic_load_n(&r->hdr->producer.str_used, __ATOMIC_ACQUIRE);
	if (used > r->layout.str_size) {
		r->st.str_used_bad++;
		used = r->layout.str_size;
	}
	if (off >= used) {
		r->st.names_bad++;
		name__bad(buf, len);
		return -ERANGE;
	}
	avail = used - off;
	n = avail < len ? avail : len;
	/* Copy first, then look: the writer may change the bytes meanwhile. */
	memcpy(buf, tab + off, n);
	nul = memchr(buf, 0, n);
	if (nul)
		return 0;
	if (avail > len) {
		buf[len - 1] = 0;
		return -ENAMETOOLONG;
	}
	r->st.names_bad++;
	name__bad(buf, len);
	return -EBADMSG;
}

void shm_reader__counters(const struct shm_reader *r, __u64 ret_ctr[GP_CTR_MAX])
{
	for (int i = 0; i < GP_CTR_MAX; i++)
		ret_ctr[i] = __atomic_load_n(&r->hdr->producer.counters[i], __ATOMIC_RELAXED);
}

__u32 shm_reader__flags(const struct shm_reader *r)
{
	return __atomic_load_n(&r->hdr->producer.flags, __ATOMIC_ACQUIRE);
}

bool shm_reader__record_span(const struct shm_reader *r, __u64 *ret_on, __u64 *ret_off)
{
	const struct gp_shm_producer *p = &r->hdr->producer;
	__u32 flags = shm_reader__flags(r);
	__u64 on = __atomic_load_n(&p->record_on_ns, __ATOMIC_ACQUIRE);
	__u64 off = __atomic_load_n(&p->record_off_ns, __ATOMIC_ACQUIRE);

	*ret_on = *ret_off = 0;
	/* Said otherwise (the shim gave up), or never switched either way (an older shim): always on. */
	if ((flags & GP_SHM_F_INERT) || (!on && !off))
		return true;
	*ret_on = on;
	if (flags & GP_SHM_F_RECORDING)
		return true;
	*ret_on = on ? on : UINT64_MAX;
	*ret_off = off;
	return false;
}

__u64 shm_reader__record_last_off(const struct shm_reader *r)
{
	return __atomic_load_n(&r->hdr->producer.record_off_ns, __ATOMIC_ACQUIRE);
}

__s64 shm_reader__clock_offset(const struct shm_reader *r)
{
	return (__s64)__atomic_load_n(&r->hdr->producer.clock_offset_ns, __ATOMIC_ACQUIRE);
}

void shm_reader__stats(const struct shm_reader *r, struct shm_reader_stats *ret_stats)
{
	*ret_stats = r->st;
}

struct cubin_queue *shm_reader__cubins(struct shm_reader *r)
{
	return r->cubins;
}

/* Whole pages inside [p, p + len) leave this mapping; the memfd keeps them. */
static void drop_pages(__u8 *p, __u64 len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1), hi = ((uintptr_t)p + len) & ~(page - 1);

	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/*
 * Cubin bytes the loader has copied out need not stay in its RSS: a 128 MiB
 * cubin ring cycled by an eager-loading PyTorch would otherwise all count as
 * the loader's. Dropping a page of our shared mapping only unmaps it here (a
 * later read faults the same bytes back in), so a hostile tail costs at most
 * a refault.
 */
static void drop_consumed_cubins(struct shm_reader *r, __u64 from, __u64 to)
{
	__u8 *data = r->base + r->layout.cubin_off;
	__u64 size = r->layout.cubin_size, len = to - from, off, first;

	if (len >= size) {
		drop_pages(data, size);
		return;
	}
	off = from & (size - 1);
	first = len < size - off ? len : size - off;
	drop_pages(data + off, first);
	if (len > first)
		drop_pages(data, len - first);
}

int shm_reader__settle(struct shm_reader *r, cubin_crc_fn crc, void *crc_ctx,
		       cubin_record_fn on_record, void *rec_ctx)
{
	__u64 from = __atomic_load_n(&r->hdr->consumer.cubin_tail, __ATOMIC_ACQUIRE), to;
	int ret = cubin_queue__settle(r->cubins, crc, crc_ctx, on_record, rec_ctx);

	to = __atomic_load_n(&r->hdr->consumer.cubin_tail, __ATOMIC_ACQUIRE);
	/* Only our own shared mapping: on private memory (open_mem) it would zero bytes. */
	if (r->owns_map && to != from)
		drop_consumed_cubins(r, from, to);
	return ret;
}

int shm_reader__alive(const struct shm_reader *r)
{
	struct pollfd p;

	if (r->pid <= 0)
		return -EOPNOTSUPP;
	if (r->pidfd >= 0) {
		p.fd = r->pidfd;
		p.events = POLLIN;
		p.revents = 0;
		/* A pidfd polls readable once the process has exited. */
		if (poll(&p, 1, 0) > 0)
			return -ESRCH;
		return 0;
	}
	if (kill(r->pid, 0) < 0 && errno == ESRCH)
		return -ESRCH;
	return 0;
}

/* ------------------------------------------------------ exit handshake */

void shm_reader__pause(struct shm_reader *r, bool paused)
{
	__u32 *p = &r->hdr->consumer.record_pause;

	if ((__atomic_load_n(p, __ATOMIC_RELAXED) != 0) != paused)
		__atomic_store_n(p, paused ? 1u : 0u, __ATOMIC_RELEASE);
}

void shm_reader__heartbeat(struct shm_reader *r, __u64 now_ns, __u32 tick_ms)
{
	__atomic_store_n(&r->hdr->consumer.tick_ms, tick_ms, __ATOMIC_RELAXED);
	__atomic_store_n(&r->hdr->consumer.heartbeat_ns, now_ns, __ATOMIC_RELEASE);
}

__u64 shm_reader__exit_seq(const struct shm_reader *r)
{
	return __atomic_load_n(&r->hdr->producer.exit_seq, __ATOMIC_ACQUIRE);
}

void shm_reader__ack_exit(struct shm_reader *r, __u64 seq)
{
	__atomic_store_n(&r->hdr->consumer.exit_ack, seq, __ATOMIC_RELEASE);
}
