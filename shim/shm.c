/* SPDX-License-Identifier: MIT */
/*
 * The shared-memory producer: memfd creation and layout, the record ring
 * writer, string interning and counters. See shim/shm.h for the rules.
 *
 * The producer keeps private copies of everything it needs (layout, its own
 * positions, the intern index) and never trusts what it reads back from the
 * mapping: the loader, or anything else with access, may scribble on it.
 */
#include "shim/glibc_compat.h"
#include "shim/shm.h"
#include "shim/cubin_queue.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096ull

struct intern_slot {
	__u32 off;  /* 0: empty */
	__u32 hash;
};

struct shm {
	int fd;
	__u8 *base;
	struct gp_shm_header *hdr;
	struct gp_shm_layout layout; /* private copy: never re-read */
	int dead;                    /* atomic: detached after fork */
	bool adopted;                /* the loader created the memfd: it is reading */

	pthread_mutex_t lock;        /* leaf: guards everything below */
	__u64 rec_head;
	__u64 str_used;
	struct intern_slot *index;
	__u32 index_mask;
	__u32 index_used;
};

static __u64 round_pow2(__u64 v)
{
	__u64 p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static __u64 clamp_u64(__u64 v, __u64 lo, __u64 hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void shm_config__defaults(struct shm_config *cfg)
{
	cfg->ring_records = SHM_RING_RECORDS_DEFAULT;
	cfg->strtab_bytes = SHM_STRTAB_KB_DEFAULT * 1024;
	cfg->cubin_bytes = SHM_CUBIN_MB_DEFAULT << 20;
	cfg->cubin_max = SHM_CUBIN_MAX_MB_DEFAULT << 20;
}

void shm_config__normalize(struct shm_config *cfg)
{
	cfg->ring_records = round_pow2(clamp_u64(cfg->ring_records,
			SHM_RING_RECORDS_MIN, SHM_RING_RECORDS_MAX));
	cfg->strtab_bytes = clamp_u64(cfg->strtab_bytes, SHM_STRTAB_KB_MIN * 1024,
			SHM_STRTAB_KB_MAX * 1024);
	cfg->strtab_bytes = (cfg->strtab_bytes + PAGE - 1) & ~(PAGE - 1);
	cfg->cubin_bytes = round_pow2(clamp_u64(cfg->cubin_bytes,
			SHM_CUBIN_MB_MIN << 20, SHM_CUBIN_MB_MAX << 20));
	/* One entry header must always fit beside the largest payload. */
	cfg->cubin_max = clamp_u64(cfg->cubin_max, 1,
			cfg->cubin_bytes - sizeof(struct gp_cubin_entry));
}

/* Parses a decimal env var; 0 and *ret_v written when set and valid. */
static int env_u64(const char *name, __u64 lo, __u64 hi, __u64 *ret_v)
{
	const char *s = getenv(name);
	unsigned long long v;
	char *end;

	if (!s || !*s)
		return -ENOENT;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || s[0] == '-')
		return -EINVAL;
	*ret_v = clamp_u64(v, lo, hi);
	return 0;
}

int shm_config__from_env(struct shm_config *cfg)
{
	__u64 v;
	int err, bad = 0;

	shm_config__defaults(cfg);
	err = env_u64("GPUPROBE_RING_RECORDS", SHM_RING_RECORDS_MIN,
		      SHM_RING_RECORDS_MAX, &v);
	if (!err)
		cfg->ring_records = v;
	bad |= err == -EINVAL;
	err = env_u64("GPUPROBE_STRTAB_KB", SHM_STRTAB_KB_MIN, SHM_STRTAB_KB_MAX, &v);
	if (!err)
		cfg->strtab_bytes = v * 1024;
	bad |= err == -EINVAL;
	err = env_u64("GPUPROBE_CUBIN_MB", SHM_CUBIN_MB_MIN, SHM_CUBIN_MB_MAX, &v);
	if (!err)
		cfg->cubin_bytes = v << 20;
	bad |= err == -EINVAL;
	err = env_u64("GPUPROBE_CUBIN_MAX_MB", 1, SHM_CUBIN_MB_MAX, &v);
	if (!err)
		cfg->cubin_max = v << 20;
	bad |= err == -EINVAL;
	shm_config__normalize(cfg);
	return bad ? -EINVAL : 0;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void layout__fill(struct gp_shm_layout *l, const struct shm_config *cfg)
{
	memset(l, 0, sizeof(*l));
	l->magic = GP_SHM_MAGIC;
	l->version = GP_SHM_VERSION;
	l->header_size = sizeof(struct gp_shm_header);
	l->record_size = sizeof(struct gp_record);
	l->pid = (__u32)getpid();
	l->create_ns = now_ns();
	l->rec_off = sizeof(struct gp_shm_header);
	l->rec_slots = cfg->ring_records;
	l->str_off = l->rec_off + l->rec_slots * sizeof(struct gp_record);
	l->str_size = cfg->strtab_bytes;
	l->cubin_off = l->str_off + l->str_size;
	l->cubin_size = cfg->cubin_bytes;
	l->cubin_max = cfg->cubin_max;
	l->total_size = l->cubin_off + l->cubin_size;
}

/*
 * `gpuprobe-bpf -- COMMAND` creates the memfd and hands it down in
 * GPUPROBE_SHM_FD, so it holds the rings before the program runs and reads
 * them in full even when the program exits within a tick. The fd is taken
 * only if it is an empty, unsealed gpuprobe memfd; sealing it is the claim,
 * so of two processes that inherited it (a fork before cuInit) exactly one
 * wins and the other creates its own. Anything else: ignored.
 */
static int memfd__adopt(__u64 size, int *ret_fd)
{
	const char *env = getenv("GPUPROBE_SHM_FD");
	char link[64], target[64];
	off_t end_off;
	long fd;
	char *end;
	ssize_t n;

	if (!env || !*env)
		return -ENOENT;
	errno = 0;
	fd = strtol(env, &end, 10);
	if (errno || *end || fd < 0 || fd > 65535)
		return -EINVAL;
	snprintf(link, sizeof(link), "/proc/self/fd/%ld", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = 0;
	if (strncmp(target, "/memfd:" GP_SHM_NAME, strlen("/memfd:" GP_SHM_NAME)) != 0)
		return -EINVAL;
	/*
	 * lseek, not fstat: fstat is a GLIBC_2.33 symbol, the shim stays at 2.28.
	 * Unsized, or holding no more than a node-wide loader's mark (its ring
	 * watch stamps a heartbeat into the header of a ring just made, which
	 * sizes an unsized memfd to the end of that field).
	 */
	end_off = lseek((int)fd, 0, SEEK_END);
	if (end_off < 0 || end_off > (off_t)sizeof(struct gp_shm_header) ||
	    fcntl((int)fd, F_GET_SEALS) != 0)
		return -EBUSY;
	if (ftruncate((int)fd, (off_t)size) < 0 ||
	    fcntl((int)fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return -EBUSY;
	if (lseek((int)fd, 0, SEEK_END) != (off_t)size)
		return -EBUSY; /* lost a race over its size: leave it alone */
	fcntl((int)fd, F_SETFD, FD_CLOEXEC);
	*ret_fd = (int)fd;
	return 0;
}

/*
 * The loader that made the memfd (-- COMMAND) owns the ring: other loaders
 * (a node-wide --all-cgroups one) leave it alone while it lives.
 */
static __u32 owner__from_env(void)
{
	const char *env = getenv("GPUPROBE_SHM_OWNER");
	char *end;
	long v;

	if (!env || !*env)
		return 0;
	errno = 0;
	v = strtol(env, &end, 10);
	return errno || *end || v <= 0 || v > INT32_MAX ? 0 : (__u32)v;
}

/* Sealed so that nobody can shrink it under a reader (SIGBUS) or grow it. */
static int memfd__open(__u64 size, int *ret_fd, bool *ret_adopted)
{
	int fd, err;

	*ret_adopted = memfd__adopt(size, ret_fd) == 0;
	if (*ret_adopted)
		return 0;
	fd = memfd_create(GP_SHM_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		err = -errno;
		goto err_close;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		err = -errno;
		goto err_close;
	}
	*ret_fd = fd;
	return 0;
err_close:
	close(fd);
	return err;
}

static int index__alloc(struct shm *shm)
{
	__u64 slots = round_pow2(clamp_u64(shm->layout.str_size / 16, 1024, 1u << 20));

	shm->index = calloc(slots, sizeof(*shm->index));
	if (!shm->index)
		return -ENOMEM;
	shm->index_mask = (__u32)(slots - 1);
	return 0;
}

int shm__create(const struct shm_config *cfg_in, struct shm **ret_shm)
{
	struct shm_config cfg = *cfg_in;
	struct shm *shm;
	void *map;
	int err;

	shm_config__normalize(&cfg);
	shm = calloc(1, sizeof(*shm));
	if (!shm)
		return -ENOMEM;
	layout__fill(&shm->layout, &cfg);
	err = index__alloc(shm);
	if (err)
		goto err_free;
	err = memfd__open(shm->layout.total_size, &shm->fd, &shm->adopted);
	if (err)
		goto err_free_index;
	if (shm->adopted)
		shm->layout.owner_pid = owner__from_env();
	map = mmap(NULL, shm->layout.total_size, PROT_READ | PROT_WRITE,
		   MAP_SHARED, shm->fd, 0);
	if (map == MAP_FAILED) {
		err = -errno;
		goto err_close;
	}
	/* A fork child must never write into its parent's rings. */
	madvise(map, shm->layout.total_size, MADV_DONTFORK);
	shm->base = map;
	shm->hdr = map;
	pthread_mutex_init(&shm->lock, NULL);
	/* Offset 0 is the empty name, so name_off 0 always reads "". */
	shm->base[shm->layout.str_off] = 0;
	shm->str_used = 1;
	__atomic_store_n(&shm->hdr->producer.str_used, shm->str_used, __ATOMIC_RELEASE);
	/* The layout is published last: a reader checks the magic first. */
	memcpy(&shm->hdr->layout, &shm->layout, sizeof(shm->layout));
	__atomic_store_n(&shm->hdr->layout.magic, GP_SHM_MAGIC, __ATOMIC_RELEASE);
	*ret_shm = shm;
	return 0;
err_close:
	close(shm->fd);
err_free_index:
	free(shm->index);
err_free:
	free(shm);
	return err;
}

void shm__destroy(struct shm *shm)
{
	if (!shm)
		return;
	if (!shm__detached(shm)) {
		munmap(shm->base, shm->layout.total_size);
		pthread_mutex_destroy(&shm->lock);
	}
	close(shm->fd);
	free(shm->index);
	free(shm);
}

void shm__detach(struct shm *shm)
{
	if (shm)
		__atomic_store_n(&shm->dead, 1, __ATOMIC_RELEASE);
}

bool shm__detached(const struct shm *shm)
{
	return __atomic_load_n(&shm->dead, __ATOMIC_ACQUIRE) != 0;
}

int shm__fd(const struct shm *shm)
{
	return shm->fd;
}

struct gp_shm_header *shm__header(const struct shm *shm)
{
	return shm->hdr;
}

__u64 shm__size(const struct shm *shm)
{
	return shm->layout.total_size;
}

void shm__count(struct shm *shm, enum gp_counter ctr, __u64 n)
{
	if ((unsigned)ctr >= GP_CTR_MAX || shm__detached(shm))
		return;
	__atomic_fetch_add(&shm->hdr->producer.counters[ctr], n, __ATOMIC_RELAXED);
}

__u64 shm__counter(const struct shm *shm, enum gp_counter ctr)
{
	if ((unsigned)ctr >= GP_CTR_MAX || shm__detached(shm))
		return 0;
	return __atomic_load_n(&shm->hdr->producer.counters[ctr], __ATOMIC_RELAXED);
}

void shm__set_flags(struct shm *shm, __u32 set, __u32 clear)
{
	__u32 *flags;

	if (shm__detached(shm))
		return;
	flags = &shm->hdr->producer.flags;
	__atomic_fetch_or(flags, set, __ATOMIC_RELEASE);
	__atomic_fetch_and(flags, ~clear, __ATOMIC_RELEASE);
}

/*
 * See gp_abi.h, "no reader, no records". The consumer area is hostile: a
 * lying heartbeat or tick can switch our own activity on or off, no more.
 */
bool shm__reader_live(const struct shm *shm, __u64 now)
{
	const struct gp_shm_consumer *c;
	__u64 beat, stale;
	__u32 tick_ms;

	if (!shm || shm__detached(shm))
		return false;
	c = &shm->hdr->consumer;
	beat = __atomic_load_n(&c->heartbeat_ns, __ATOMIC_ACQUIRE);
	tick_ms = __atomic_load_n(&c->tick_ms, __ATOMIC_RELAXED);
	/* The loader that made our memfd reads it from its first tick. */
	if (shm->adopted && !beat && !tick_ms)
		return now - shm->layout.create_ns < GP_RECORD_STALE_MIN_NS * 5;
	/* A loader's ring watch stamps the beat alone, before any claim. */
	if (!beat || beat > now)
		return false;
	if (tick_ms > GP_RECORD_MAX_TICK_MS)
		tick_ms = GP_RECORD_MAX_TICK_MS;
	stale = GP_RECORD_STALE_TICKS * tick_ms * 1000000ull;
	if (stale < GP_RECORD_STALE_MIN_NS)
		stale = GP_RECORD_STALE_MIN_NS;
	return now - beat <= stale;
}

bool shm__reader_paused(const struct shm *shm)
{
	if (!shm || shm__detached(shm))
		return false;
	return __atomic_load_n(&shm->hdr->consumer.record_pause, __ATOMIC_ACQUIRE) != 0;
}

void shm__set_recording(struct shm *shm, bool on, __u64 now)
{
	struct gp_shm_producer *p;

	if (shm__detached(shm))
		return;
	p = &shm->hdr->producer;
	/* The time first: a loader that sees the flag finds the time it was set. */
	__atomic_store_n(on ? &p->record_on_ns : &p->record_off_ns, now, __ATOMIC_RELEASE);
	shm__set_flags(shm, on ? GP_SHM_F_RECORDING : 0, on ? 0 : GP_SHM_F_RECORDING);
	shm__count(shm, on ? GP_CTR_RECORDING_ON : GP_CTR_RECORDING_OFF, 1);
}

__u64 shm__now_ns(void)
{
	return now_ns();
}

void shm__set_clock_offset(struct shm *shm, __s64 offset_ns)
{
	if (shm__detached(shm))
		return;
	__atomic_store_n(&shm->hdr->producer.clock_offset_ns, (__u64)offset_ns,
			 __ATOMIC_RELEASE);
}

/*
 * Free slots, with the loader's tail clamped: a tail ahead of our head, or
 * one more than a ring behind it, is a lie; report full rather than trust it.
 */
static __u64 ring__free(__u64 head, __u64 tail, __u64 size)
{
	if (tail > head || head - tail > size)
		return 0;
	return size - (head - tail);
}

int shm__write_record(struct shm *shm, const struct gp_record *rec)
{
	__u64 tail, slot;

	if (shm__detached(shm))
		return -ENODEV;
	pthread_mutex_lock(&shm->lock);
	tail = __atomic_load_n(&shm->hdr->consumer.rec_tail, __ATOMIC_ACQUIRE);
	if (!ring__free(shm->rec_head, tail, shm->layout.rec_slots)) {
		pthread_mutex_unlock(&shm->lock);
		shm__count(shm, GP_CTR_RING_DROPPED, 1);
		return -ENOSPC;
	}
	slot = shm->rec_head & (shm->layout.rec_slots - 1);
	memcpy(shm->base + shm->layout.rec_off + slot * sizeof(*rec), rec, sizeof(*rec));
	shm->rec_head++;
	__atomic_store_n(&shm->hdr->producer.rec_head, shm->rec_head, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&shm->lock);
	shm__count(shm, GP_CTR_RECORDS_WRITTEN, 1);
	return 0;
}

static __u32 name__hash(const char *s, size_t len)
{
	__u32 h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (__u8)s[i]) * 16777619u;
	return h;
}

/* Compares against our own published bytes, bounded by our private str_used. */
static bool strtab__equals(const struct shm *shm, __u32 off, const char *s, size_t len)
{
	const __u8 *tab = shm->base + shm->layout.str_off;

	if ((__u64)off + len + 1 > shm->str_used)
		return false;
	return memcmp(tab + off, s, len) == 0 && tab[off + len] == 0;
}

/* Appends under the lock; the bytes are published before str_used. */
static int strtab__append(struct shm *shm, const char *s, size_t len, __u32 *ret_off)
{
	__u8 *tab = shm->base + shm->layout.str_off;
	__u64 off = shm->str_used;

	if (off + len + 1 > shm->layout.str_size || off + len + 1 > UINT32_MAX)
		return -ENOSPC;
	memcpy(tab + off, s, len);
	tab[off + len] = 0;
	shm->str_used = off + len + 1;
	__atomic_store_n(&shm->hdr->producer.str_used, shm->str_used, __ATOMIC_RELEASE);
	*ret_off = (__u32)off;
	return 0;
}

static int intern__locked(struct shm *shm, const char *name, size_t len, __u32 *ret_off)
{
	__u32 h = name__hash(name, len), i, off;
	struct intern_slot *slot;
	int err;

	for (i = h & shm->index_mask;; i = (i + 1) & shm->index_mask) {
		slot = &shm->index[i];
		if (!slot->off)
			break;
		if (slot->hash == h && strtab__equals(shm, slot->off, name, len)) {
			*ret_off = slot->off;
			return 0;
		}
	}
	/* Keep the open-addressing index under 3/4 full so probes stay short. */
	if ((__u64)shm->index_used + 1 > (__u64)(shm->index_mask + 1) * 3 / 4)
		return -ENOSPC;
	err = strtab__append(shm, name, len, &off);
	if (err)
		return err;
	slot->off = off;
	slot->hash = h;
	shm->index_used++;
	*ret_off = off;
	return 0;
}

int shm__intern(struct shm *shm, const char *name, __u32 *ret_off)
{
	size_t len;
	__u32 off = 0;
	int err;

	if (shm__detached(shm))
		return -ENODEV;
	if (!name || !*name) {
		*ret_off = 0;
		return 0;
	}
	len = strnlen(name, SHM_NAME_MAX);
	pthread_mutex_lock(&shm->lock);
	err = intern__locked(shm, name, len, &off);
	pthread_mutex_unlock(&shm->lock);
	if (err)
		shm__count(shm, GP_CTR_STRINGS_FULL, 1);
	*ret_off = off;
	return err;
}

void shm__cubin_ring(const struct shm *shm, struct cubin_ring *ret_ring)
{
	struct cubin_ring r = {
		.data = shm->base + shm->layout.cubin_off,
		.size = shm->layout.cubin_size,
		.max = shm->layout.cubin_max,
		.head = &shm->hdr->producer.cubin_head,
		.tail = &shm->hdr->consumer.cubin_tail,
		.counters = shm->hdr->producer.counters,
	};

	*ret_ring = r;
}

/* ------------------------------------------------------ exit handshake */

/*
 * See gp_abi.h. Called at exit holding no lock; returns after at most one
 * loader tick (capped at 1 s), at once when no loader is reading.
 */
void shm__exit_handshake(struct shm *shm)
{
	struct gp_shm_consumer *c;
	__u64 seq, start, tick_ns;
	__u32 tick_ms;

	if (!shm || shm__detached(shm))
		return;
	c = &shm->hdr->consumer;
	seq = __atomic_add_fetch(&shm->hdr->producer.exit_seq, 1, __ATOMIC_RELEASE);
	tick_ms = __atomic_load_n(&c->tick_ms, __ATOMIC_RELAXED);
	if (!tick_ms && !shm->adopted)
		return; /* no loader has ever visited */
	if (!tick_ms)
		tick_ms = 100; /* the loader that made our memfd has not visited yet */
	tick_ns = (tick_ms > 1000 ? 1000 : tick_ms) * 1000000ull;
	start = now_ns();
	for (;;) {
		__u64 beat = __atomic_load_n(&c->heartbeat_ns, __ATOMIC_ACQUIRE), now = now_ns();
		struct timespec ms = { 0, 1000000 };

		if (__atomic_load_n(&c->exit_ack, __ATOMIC_ACQUIRE) >= seq)
			return;
		if (beat > now || (beat && now - beat > 3 * tick_ns) || now - start >= tick_ns)
			return; /* the loader is gone or late: do not wait for it */
		nanosleep(&ms, NULL);
	}
}
