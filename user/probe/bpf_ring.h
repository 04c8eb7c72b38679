/* SPDX-License-Identifier: MIT */
/*
 * A BPF ring buffer's reader, with one mapping of its data. libbpf's reader
 * maps the data twice, end to end, so a record that runs past the end reads
 * whole; the kernel fills every page of both at mmap time, so a 16 MiB ring
 * counted 32 MiB in the loader's RSS. Here a record that runs past the end
 * (one in a lap of the ring) is copied whole into a buffer of our own.
 */
#ifndef GP_BPF_RING_H
#define GP_BPF_RING_H

#include <stddef.h>
#include <linux/types.h>

/* Called for each record in order; its memory is valid only during the call. */
typedef int (*bpf_ring_fn)(void *ctx, const void *data, size_t size);

struct bpf_ring {
	int map_fd, epoll_fd;
	size_t size, page;            /* data bytes (a power of two), page size */
	unsigned long *consumer;      /* the consumer page (ours to write) */
	const unsigned long *producer; /* the producer page, the data after it */
	const __u8 *data;
	__u8 *bounce;                 /* a record that ran past the end, made whole */
	size_t bounce_cap;
};

/* Maps the ring map map_fd of size data bytes; 0 or -errno. */
int bpf_ring__open(struct bpf_ring *r, int map_fd, size_t size);
/*
 * Hands every whole record to fn, in order, and stops at one still being
 * written; each record's space goes back to the probes once fn returned.
 * Returns the records handed, or fn's error (the records before it and the
 * one that failed are consumed), or -EBADMSG for a record that cannot be.
 */
int bpf_ring__consume(struct bpf_ring *r, bpf_ring_fn fn, void *ctx);
/*
 * Waits up to timeout_ms for the probes' wakeup (records sent without one
 * wait for the timeout), then consumes; as bpf_ring__consume, or -errno.
 */
int bpf_ring__poll(struct bpf_ring *r, int timeout_ms, bpf_ring_fn fn, void *ctx);
/* Bytes (free-running) consumed and reserved so far. */
void bpf_ring__positions(const struct bpf_ring *r, __u64 *ret_consumed, __u64 *ret_reserved);
void bpf_ring__close(struct bpf_ring *r);

#endif
