/* SPDX-License-Identifier: MIT */
/*
 * CubinQueue: capture (application thread, copy only), settle (loader tick:
 * hostile copy-out, CRC, de-duplication, one record per module), drain.
 * See shim/cubin_queue.h for the contract; the invariants it exists for are
 * DESIGN.md 1 (the callback waits on nothing but our leaf lock) and 5 (the
 * settler treats every byte of the ring as hostile).
 *
 * Locks: q->lock is a leaf, held by capture across reserve + memcpy +
 * publish, and by settle/drain only for the offer queue's pointers, never
 * across the CRC function or a callback. A second concurrent settle() is
 * refused with -EBUSY rather than waited for.
 */
#include "shim/glibc_compat.h"
#include "shim/cubin_queue.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ENTRY_SIZE ((__u64)sizeof(struct gp_cubin_entry))

struct offer {
	struct offer *next;
	struct gpu_module_load_v1 rec;
	void *bytes;
};

struct dedup_slot {
	__u64 crc;
	__u64 used;
};

struct cubin_queue {
	struct cubin_ring ring;
	struct cubin_queue_opts opts;
	int dead;                 /* atomic: detached after fork */

	pthread_mutex_t lock;     /* leaf */
	__u64 head;               /* capture's private head (under lock) */
	struct offer *offer_first, *offer_last; /* under lock */
	__u32 offer_n;            /* under lock */
	__u64 offer_bytes;        /* under lock */

	int settling;             /* atomic: one settler at a time */
	__u64 settle_debt_ns;     /* settler only: time past the bound not paid back yet */
	bool tail_known;          /* settler only */
	__u64 tail;               /* settler's private tail */
	struct dedup_slot *dedup; /* settler only; allocated on first settle */
	__u32 dedup_mask;
	__u32 dedup_used;

	struct cubin_queue_stats st; /* settle/drain side, atomics */
};

static void stat__add(__u64 *ctr, __u64 n)
{
	__atomic_fetch_add(ctr, n, __ATOMIC_RELAXED);
}

static __u64 stat__get(const __u64 *ctr)
{
	return __atomic_load_n(ctr, __ATOMIC_RELAXED);
}

static void ring__count(const struct cubin_ring *r, enum gp_counter ctr)
{
	__atomic_fetch_add(&r->counters[ctr], 1, __ATOMIC_RELAXED);
}

static __u64 round8(__u64 v)
{
	return (v + 7) & ~7ull;
}

static bool detached(const struct cubin_queue *q)
{
	return __atomic_load_n(&q->dead, __ATOMIC_ACQUIRE) != 0;
}

static bool ring__valid(const struct cubin_ring *r)
{
	return r->data && r->head && r->tail && r->counters &&
	       r->size >= 2 * ENTRY_SIZE && !(r->size & (r->size - 1)) &&
	       r->max <= r->size - ENTRY_SIZE;
}

int cubin_queue__new(const struct cubin_ring *ring, const struct cubin_queue_opts *opts,
		     struct cubin_queue **ret_q)
{
	struct cubin_queue *q;

	if (!ring || !ret_q || !ring__valid(ring))
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->ring = *ring;
	if (opts)
		q->opts = *opts;
	if (!q->opts.offer_max_entries)
		q->opts.offer_max_entries = CUBIN_OFFER_ENTRIES_DEFAULT;
	if (!q->opts.offer_max_bytes)
		q->opts.offer_max_bytes = CUBIN_OFFER_BYTES_DEFAULT;
	if (!q->opts.dedup_max)
		q->opts.dedup_max = CUBIN_DEDUP_DEFAULT;
	pthread_mutex_init(&q->lock, NULL);
	/* The producer owns the head; start from whatever was published. */
	q->head = __atomic_load_n(ring->head, __ATOMIC_ACQUIRE);
	*ret_q = q;
	return 0;
}

static void offers__free(struct offer *o)
{
	while (o) {
		struct offer *next = o->next;

		free(o->bytes);
		free(o);
		o = next;
	}
}

void cubin_queue__destroy(struct cubin_queue *q)
{
	if (!q)
		return;
	if (!detached(q))
		pthread_mutex_destroy(&q->lock);
	offers__free(q->offer_first);
	free(q->dedup);
	free(q);
}

void cubin_queue__detach(struct cubin_queue *q)
{
	if (q)
		__atomic_store_n(&q->dead, 1, __ATOMIC_RELEASE);
}

/* Free bytes, with the consumer's tail clamped: a lying tail reads as full. */
static __u64 ring__free(__u64 head, __u64 tail, __u64 size)
{
	if (tail > head || head - tail > size)
		return 0;
	return size - (head - tail);
}

/* ------------------------------------------------------------- capture */

static void entry__write(__u8 *at, __u32 magic, __u64 size, const struct cubin_capture *cap)
{
	struct gp_cubin_entry e = { .magic = magic, .size = size };

	if (cap) {
		e.module_id = cap->module_id;
		e.load_ns = cap->load_ns;
		e.tid = cap->tid;
	}
	memcpy(at, &e, sizeof(e));
}

/* Under q->lock: reserve, copy, publish. Nothing here can wait. */
static int capture__locked(struct cubin_queue *q, const struct cubin_capture *cap)
{
	const struct cubin_ring *r = &q->ring;
	__u64 need = ENTRY_SIZE + round8(cap->size);
	__u64 tail = __atomic_load_n(r->tail, __ATOMIC_ACQUIRE);
	__u64 pos = q->head & (r->size - 1);
	__u64 to_end = r->size - pos;
	__u64 skip = to_end < need ? to_end : 0;

	if (skip + need > ring__free(q->head, tail, r->size))
		return -ENOSPC;
	/* Entries never wrap: pad to the end (implicitly when no header fits). */
	if (skip >= ENTRY_SIZE)
		entry__write(r->data + pos, GP_CUBIN_PAD, skip, NULL);
	pos = (q->head + skip) & (r->size - 1);
	entry__write(r->data + pos, GP_CUBIN_MAGIC, cap->size, cap);
	if (cap->size)
		memcpy(r->data + pos + ENTRY_SIZE, cap->data, cap->size);
	q->head += skip + need;
	__atomic_store_n(r->head, q->head, __ATOMIC_RELEASE);
	return 0;
}

int cubin_queue__capture(struct cubin_queue *q, const struct cubin_capture *cap)
{
	int err;

	if (!q || !cap || (!cap->data && cap->size))
		return -EINVAL;
	if (detached(q))
		return -ENODEV;
	if (cap->size > q->ring.max) {
		ring__count(&q->ring, GP_CTR_CUBIN_TOO_LARGE);
		return -EFBIG;
	}
	pthread_mutex_lock(&q->lock);
	err = capture__locked(q, cap);
	pthread_mutex_unlock(&q->lock);
	ring__count(&q->ring, err ? GP_CTR_CUBIN_PENDING_FULL : GP_CTR_MODULES_CAPTURED);
	return err;
}

/* -------------------------------------------------------------- settle */

enum take_result {
	TAKE_CUBIN,   /* *ret_e and *ret_bytes filled (bytes NULL: no memory) */
	TAKE_SKIPPED, /* padding consumed */
	TAKE_GARBAGE, /* the ring does not parse: resync */
	TAKE_TOO_BIG, /* *ret_e filled: over opts.size_max, consumed unread */
};

static void tail__publish(struct cubin_queue *q)
{
	/* Release: our copies out happen before the producer reuses the space. */
	__atomic_store_n(q->ring.tail, q->tail, __ATOMIC_RELEASE);
}

/*
 * A payload's len bytes at ring position pos into dst: from the ring's file
 * when it has one (what it could not read there, through the mapping).
 */
static void payload__copy(const struct cubin_ring *r, __u64 pos, __u8 *dst, __u64 len)
{
	__u64 done = 0;
	ssize_t n;

	while (r->read_fd && done < len) {
		n = pread(r->fd, dst + done, len - done, (off_t)(r->fd_off + pos + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (__u64)n;
	}
	if (done < len)
		memcpy(dst + done, r->data + pos + done, len - done);
}

/*
 * Copies the entry at q->tail out of the ring, header first, and validates
 * the private copy: the producer may scribble on the ring at any time.
 */
static enum take_result settle__take(struct cubin_queue *q, __u64 head,
				     struct gp_cubin_entry *ret_e, void **ret_bytes)
{
	const struct cubin_ring *r = &q->ring;
	__u64 pos = q->tail & (r->size - 1);
	__u64 to_end = r->size - pos, avail = head - q->tail, need;
	struct gp_cubin_entry e;
	void *bytes;

	if (to_end < ENTRY_SIZE) {
		if (to_end > avail)
			return TAKE_GARBAGE;
		q->tail += to_end;
		return TAKE_SKIPPED;
	}
	if (avail < ENTRY_SIZE)
		return TAKE_GARBAGE;
	memcpy(&e, r->data + pos, sizeof(e));
	if (e.magic == GP_CUBIN_PAD) {
		if (e.size != to_end || to_end > avail)
			return TAKE_GARBAGE;
		q->tail += to_end;
		return TAKE_SKIPPED;
	}
	if (e.magic != GP_CUBIN_MAGIC || e.size > r->max)
		return TAKE_GARBAGE;
	need = ENTRY_SIZE + round8(e.size);
	if (need > to_end || need > avail)
		return TAKE_GARBAGE;
	/* Checked before any allocation: the ring's own bound is the writer's word. */
	if (q->opts.size_max && e.size > q->opts.size_max) {
		q->tail += need;
		*ret_e = e;
		return TAKE_TOO_BIG;
	}
	bytes = malloc(e.size ? e.size : 1);
	if (bytes)
		payload__copy(r, pos + ENTRY_SIZE, bytes, e.size);
	q->tail += need;
	*ret_e = e;
	*ret_bytes = bytes;
	return TAKE_CUBIN;
}

static int dedup__alloc(struct cubin_queue *q)
{
	__u64 slots = 16;

	while (slots < (__u64)q->opts.dedup_max * 4 / 3 + 1)
		slots <<= 1;
	q->dedup = calloc(slots, sizeof(*q->dedup));
	if (!q->dedup)
		return -ENOMEM;
	q->dedup_mask = (__u32)(slots - 1);
	return 0;
}

/* 1: seen before; 0: first time (remembered); -ENOSPC: table full. */
static int dedup__check(struct cubin_queue *q, __u64 crc)
{
	__u64 h = crc * 0x9e3779b97f4a7c15ull;
	__u32 i;

	for (i = (__u32)(h >> 32) & q->dedup_mask;; i = (i + 1) & q->dedup_mask) {
		struct dedup_slot *s = &q->dedup[i];

		if (!s->used)
			break;
		if (s->crc == crc)
			return 1;
	}
	if (q->dedup_used >= q->opts.dedup_max)
		return -ENOSPC;
	q->dedup[i].crc = crc;
	q->dedup[i].used = 1;
	q->dedup_used++;
	return 0;
}

/* Takes ownership of bytes. The lock covers only the list update. */
static void offer__push(struct cubin_queue *q, const struct gpu_module_load_v1 *rec, void *bytes)
{
	struct offer *o = malloc(sizeof(*o));
	bool fits;

	if (!o) {
		stat__add(&q->st.cubin_nomem, 1);
		free(bytes);
		return;
	}
	o->next = NULL;
	o->rec = *rec;
	o->bytes = bytes;
	pthread_mutex_lock(&q->lock);
	fits = q->offer_n < q->opts.offer_max_entries &&
	       q->offer_bytes + rec->size <= q->opts.offer_max_bytes;
	if (fits) {
		if (q->offer_last)
			q->offer_last->next = o;
		else
			q->offer_first = o;
		q->offer_last = o;
		q->offer_n++;
		q->offer_bytes += rec->size;
	}
	pthread_mutex_unlock(&q->lock);
	if (!fits) {
		stat__add(&q->st.cubin_offer_full, 1);
		free(bytes);
		free(o);
	}
}

/* CRC, de-duplicate, offer; no lock held here. Consumes bytes. */
static void settle__module(struct cubin_queue *q, const struct gp_cubin_entry *e, void *bytes,
			   cubin_crc_fn crc, void *crc_ctx, struct gpu_module_load_v1 *ret_rec)
{
	struct gpu_module_load_v1 rec = {
		.module_id = e->module_id, .size = e->size, .load_ns = e->load_ns,
	};
	int dup;

	if (!bytes) {
		stat__add(&q->st.cubin_nomem, 1);
		*ret_rec = rec;
		return;
	}
	if (crc(crc_ctx, bytes, e->size, &rec.crc)) {
		stat__add(&q->st.cubin_crc_failed, 1);
		rec.crc = 0;
		free(bytes);
		*ret_rec = rec;
		return;
	}
	dup = dedup__check(q, rec.crc);
	if (dup == 1) {
		stat__add(&q->st.cubin_duplicates, 1);
		free(bytes);
	} else {
		if (dup < 0)
			stat__add(&q->st.cubin_dedup_full, 1);
		offer__push(q, &rec, bytes);
	}
	*ret_rec = rec;
}

/* The settler's first look at a ring it may not have created. */
static void settle__init_tail(struct cubin_queue *q, __u64 head)
{
	__u64 tail = __atomic_load_n(q->ring.tail, __ATOMIC_ACQUIRE);

	if (tail > head || head - tail > q->ring.size) {
		stat__add(&q->st.cubin_garbage, 1);
		tail = head;
	}
	q->tail = tail;
	q->tail_known = true;
	tail__publish(q);
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static __u64 settle__now(const struct cubin_queue *q)
{
	return q->opts.clock_ns ? q->opts.clock_ns() : mono_ns();
}

/*
 * Whether this call settles at all: not while an earlier call's overrun
 * (one entry past the time bound: a large cubin) is being paid back, one
 * bound a call, so that a ring that keeps offering cubins that take long
 * costs the settler its bound a call on average, not more.
 */
static bool settle__paid_up(struct cubin_queue *q)
{
	if (q->settle_debt_ns <= q->opts.settle_max_ns) {
		q->settle_debt_ns = 0;
		return true;
	}
	q->settle_debt_ns -= q->opts.settle_max_ns;
	stat__add(&q->st.settle_deferred, 1);
	return false;
}

/* Whether this call may take one more entry: its bounds in count, bytes and time. */
static bool settle__may_go_on(const struct cubin_queue *q, int n, __u64 steps, __u64 bytes,
			      __u64 deadline)
{
	if (q->opts.settle_max && (__u32)n >= q->opts.settle_max)
		return false;
	if (q->opts.settle_max_bytes && bytes >= q->opts.settle_max_bytes)
		return false;
	/*
	 * The time bound between entries: a call always takes one step (a busy
	 * or slow caller still gets on). Steps, not entries settled: a writer
	 * that keeps the ring one padding entry ahead is bounded too.
	 */
	return !deadline || steps == 0 || settle__now(q) < deadline;
}

static int settle__run(struct cubin_queue *q, cubin_crc_fn crc, void *crc_ctx,
			      cubin_record_fn on_record, void *rec_ctx)
{
	struct gpu_module_load_v1 rec;
	struct gp_cubin_entry e;
	enum take_result res;
	void *bytes = NULL;
	__u64 head, copied = 0, start = settle__now(q), deadline = 0, took;
	__u64 steps = 0;
	int n = 0;

	if (!q->dedup && dedup__alloc(q))
		return -ENOMEM;
	if (q->opts.settle_max_ns) {
		if (!settle__paid_up(q))
			return 0;
		deadline = start + q->opts.settle_max_ns;
	}
	head = __atomic_load_n(q->ring.head, __ATOMIC_ACQUIRE);
	if (!q->tail_known)
		settle__init_tail(q, head);
	for (;;) {
		head = __atomic_load_n(q->ring.head, __ATOMIC_ACQUIRE);
		if (head == q->tail)
			break;
		if (!settle__may_go_on(q, n, steps, copied, deadline)) {
			stat__add(&q->st.settle_cut, 1); /* a writer as fast as we read: next call */
			break;
		}
		steps++;
		if (head < q->tail || head - q->tail > q->ring.size) {
			res = TAKE_GARBAGE; /* the head jumped: nothing between is trustworthy */
		} else {
			res = settle__take(q, head, &e, &bytes);
		}
		if (res == TAKE_GARBAGE) {
			stat__add(&q->st.cubin_garbage, 1);
			q->tail = head;
			tail__publish(q);
			break;
		}
		tail__publish(q);
		if (res == TAKE_SKIPPED)
			continue;
		if (res == TAKE_TOO_BIG) {
			/* Lost alone: one record saying so, nothing read or allocated. */
			stat__add(&q->st.cubin_over_limit, 1);
			rec = (struct gpu_module_load_v1){ .module_id = e.module_id, .size = e.size,
							   .load_ns = e.load_ns };
		} else {
			copied += e.size;
			settle__module(q, &e, bytes, crc, crc_ctx, &rec);
		}
		stat__add(&q->st.modules_settled, 1);
		n++;
		if (on_record)
			on_record(rec_ctx, &rec);
	}
	took = settle__now(q) - start;
	if (deadline && took > q->opts.settle_max_ns)
		q->settle_debt_ns += took - q->opts.settle_max_ns;
	return n;
}

int cubin_queue__settle(struct cubin_queue *q, cubin_crc_fn crc, void *crc_ctx,
			cubin_record_fn on_record, void *rec_ctx)
{
	int ret;

	if (!q || !crc)
		return -EINVAL;
	if (detached(q))
		return -ENODEV;
	if (__atomic_exchange_n(&q->settling, 1, __ATOMIC_ACQUIRE))
		return -EBUSY;
	ret = settle__run(q, crc, crc_ctx, on_record, rec_ctx);
	__atomic_store_n(&q->settling, 0, __ATOMIC_RELEASE);
	return ret;
}

/* --------------------------------------------------------------- drain */

static struct offer *offer__pop(struct cubin_queue *q)
{
	struct offer *o;

	pthread_mutex_lock(&q->lock);
	o = q->offer_first;
	if (o) {
		q->offer_first = o->next;
		if (!q->offer_first)
			q->offer_last = NULL;
		q->offer_n--;
		q->offer_bytes -= o->rec.size;
	}
	pthread_mutex_unlock(&q->lock);
	return o;
}

int cubin_queue__drain(struct cubin_queue *q, unsigned max, cubin_drain_fn fn, void *ctx)
{
	struct offer *o;
	int n = 0;

	if (!q)
		return -EINVAL;
	if (detached(q))
		return -ENODEV;
	while ((!max || (unsigned)n < max) && (o = offer__pop(q))) {
		if (fn)
			fn(ctx, &o->rec, o->bytes, o->rec.size);
		free(o->bytes);
		free(o);
		stat__add(&q->st.modules_drained, 1);
		n++;
	}
	return n;
}

/* ------------------------------------------------------------- counters */

static __u64 ring__counter(const struct cubin_ring *r, enum gp_counter ctr)
{
	return __atomic_load_n(&r->counters[ctr], __ATOMIC_RELAXED);
}

static __u64 ring__depth(const struct cubin_ring *r)
{
	__u64 head = __atomic_load_n(r->head, __ATOMIC_ACQUIRE);
	__u64 tail = __atomic_load_n(r->tail, __ATOMIC_ACQUIRE);

	return tail <= head && head - tail <= r->size ? head - tail : 0;
}

void cubin_queue__stats(const struct cubin_queue *q, struct cubin_queue_stats *ret_stats)
{
	const struct cubin_ring *r = &q->ring;
	struct cubin_queue_stats s = {
		.modules_settled = stat__get(&q->st.modules_settled),
		.cubin_duplicates = stat__get(&q->st.cubin_duplicates),
		.cubin_offer_full = stat__get(&q->st.cubin_offer_full),
		.cubin_dedup_full = stat__get(&q->st.cubin_dedup_full),
		.cubin_garbage = stat__get(&q->st.cubin_garbage),
		.cubin_crc_failed = stat__get(&q->st.cubin_crc_failed),
		.cubin_nomem = stat__get(&q->st.cubin_nomem),
		.modules_drained = stat__get(&q->st.modules_drained),
		.cubin_over_limit = stat__get(&q->st.cubin_over_limit),
		.settle_cut = stat__get(&q->st.settle_cut),
		.settle_deferred = stat__get(&q->st.settle_deferred),
	};

	if (!detached(q)) {
		s.modules_captured = ring__counter(r, GP_CTR_MODULES_CAPTURED);
		s.cubin_too_large = ring__counter(r, GP_CTR_CUBIN_TOO_LARGE);
		s.cubin_pending_full = ring__counter(r, GP_CTR_CUBIN_PENDING_FULL);
		s.ring_dropped = ring__counter(r, GP_CTR_RING_DROPPED);
		s.cupti_dropped = ring__counter(r, GP_CTR_CUPTI_DROPPED);
		s.cubin_pending_depth = ring__depth(r);
	}
	*ret_stats = s;
}

int cubin_queue__format_counters(const struct cubin_queue *q, char *buf, size_t len)
{
	struct cubin_queue_stats s;
	int n;

	if (!q || !buf || !len)
		return -EINVAL;
	cubin_queue__stats(q, &s);
	n = snprintf(buf, len,
		     "modules_captured=%llu cubin_too_large=%llu cubin_pending_depth=%llu "
		     "cubin_pending_full=%llu ring_dropped=%llu cupti_dropped=%llu "
		     "modules_settled=%llu cubin_duplicates=%llu cubin_offer_full=%llu "
		     "cubin_dedup_full=%llu cubin_garbage=%llu cubin_crc_failed=%llu "
		     "cubin_nomem=%llu cubin_over_limit=%llu settle_cut=%llu settle_deferred=%llu",
		     (unsigned long long)s.modules_captured,
		     (unsigned long long)s.cubin_too_large,
		     (unsigned long long)s.cubin_pending_depth,
		     (unsigned long long)s.cubin_pending_full,
		     (unsigned long long)s.ring_dropped,
		     (unsigned long long)s.cupti_dropped,
		     (unsigned long long)s.modules_settled,
		     (unsigned long long)s.cubin_duplicates,
		     (unsigned long long)s.cubin_offer_full,
		     (unsigned long long)s.cubin_dedup_full,
		     (unsigned long long)s.cubin_garbage,
		     (unsigned long long)s.cubin_crc_failed,
		     (unsigned long long)s.cubin_nomem,
		     (unsigned long long)s.cubin_over_limit,
		     (unsigned long long)s.settle_cut,
		     (unsigned long long)s.settle_deferred);
	return n < 0 ? -EINVAL : n;
}
