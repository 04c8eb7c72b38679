/* SPDX-License-Identifier: MIT */
/* A BPF ring buffer's reader, with one mapping of its data (bpf_ring.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/bpf.h>
#include "user/probe/bpf_ring.h"

int bpf_ring__open(struct bpf_ring *r, int map_fd, size_t size)
{
	struct epoll_event ev = { .events = EPOLLIN };
	void *c, *p;
	int err;

	memset(r, 0, sizeof(*r));
	r->map_fd = map_fd;
	r->epoll_fd = -1;
	r->size = size;
	r->page = (size_t)sysconf(_SC_PAGESIZE);
	if (!size || (size & (size - 1)) || size % r->page)
		return -EINVAL;
	c = mmap(NULL, r->page, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (c == MAP_FAILED)
		return -errno;
	/* The producer page and the data once: the kernel would map it twice. */
	p = mmap(NULL, r->page + size, PROT_READ, MAP_SHARED, map_fd, (off_t)r->page);
	if (p == MAP_FAILED) {
		err = -errno;
		munmap(c, r->page);
		return err;
	}
	r->consumer = c;
	r->producer = p;
	r->data = (const __u8 *)p + r->page;
	r->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (r->epoll_fd < 0 || epoll_ctl(r->epoll_fd, EPOLL_CTL_ADD, map_fd, &ev)) {
		err = -errno;
		bpf_ring__close(r);
		return err;
	}
	return 0;
}

/* The body of len bytes after the header at off, whole; NULL: no memory. */
static const void *record_body(struct bpf_ring *r, size_t off, size_t len)
{
	size_t start = off + BPF_RINGBUF_HDR_SZ, first;

	if (start + len <= r->size)
		return r->data + start;
	if (start == r->size) /* the header ended the lap: the body starts the next */
		return r->data;
	if (len > r->bounce_cap) {
		__u8 *b = realloc(r->bounce, len);

		if (!b)
			return NULL;
		r->bounce = b;
		r->bounce_cap = len;
	}
	first = r->size - start;
	memcpy(r->bounce, r->data + start, first);
	memcpy(r->bounce + first, r->data, len - first);
	return r->bounce;
}

int bpf_ring__consume(struct bpf_ring *r, bpf_ring_fn fn, void *ctx)
{
	unsigned long cons = __atomic_load_n(r->consumer, __ATOMIC_ACQUIRE), prod;
	int n = 0, err;
	bool more = true;

	while (more) {
		more = false;
		prod = __atomic_load_n(r->producer, __ATOMIC_ACQUIRE);
		while (cons < prod) {
			size_t off = cons & (r->size - 1);
			__u32 len = __atomic_load_n((const __u32 *)(r->data + off), __ATOMIC_ACQUIRE);
			size_t body = len & ~(__u32)(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
			const void *p;

			if (len & BPF_RINGBUF_BUSY_BIT)
				return n; /* still being written: the next pass takes it */
			if (body > r->size - BPF_RINGBUF_HDR_SZ)
				return -EBADMSG;
			more = true;
			cons += (body + BPF_RINGBUF_HDR_SZ + 7) & ~(size_t)7;
			if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
				p = record_body(r, off, body);
				err = p ? fn(ctx, p, body) : -ENOMEM;
				if (err) {
					__atomic_store_n(r->consumer, cons, __ATOMIC_RELEASE);
					return err;
				}
				n++;
			}
			__atomic_store_n(r->consumer, cons, __ATOMIC_RELEASE);
		}
	}
	return n;
}

int bpf_ring__poll(struct bpf_ring *r, int timeout_ms, bpf_ring_fn fn, void *ctx)
{
	struct epoll_event ev;

	if (epoll_wait(r->epoll_fd, &ev, 1, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	return bpf_ring__consume(r, fn, ctx);
}

void bpf_ring__positions(const struct bpf_ring *r, __u64 *ret_consumed, __u64 *ret_reserved)
{
	*ret_consumed = __atomic_load_n(r->consumer, __ATOMIC_ACQUIRE);
	*ret_reserved = __atomic_load_n(r->producer, __ATOMIC_ACQUIRE);
}

void bpf_ring__close(struct bpf_ring *r)
{
	if (r->epoll_fd >= 0)
		close(r->epoll_fd);
	if (r->consumer)
		munmap(r->consumer, r->page);
	if (r->producer)
		munmap((void *)r->producer, r->page + r->size);
	free(r->bounce);
	memset(r, 0, sizeof(*r));
	r->epoll_fd = -1;
}
