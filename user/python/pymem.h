/* SPDX-License-Identifier: MIT */
/*
 * Reading another process's memory for the Python walker and resolver:
 * process_vm_readv, falling back to pread of /proc/<pid>/mem where the
 * syscall is filtered or missing. All or nothing: a short read is an error.
 */
#ifndef GP_PYTHON_PYMEM_H
#define GP_PYTHON_PYMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The longest read (larger: -EFAULT). */
#define PYMEM_READ_MAX (64u << 10)

struct bounded;

/* Copies len bytes at addr in pid into buf, as a bounded call through b.
 * -EFAULT on a partial or unmapped read, -ESRCH when the process is gone,
 * -ETIMEDOUT when the read blocked past BOUNDED_TIMEOUT_MS or the process
 * made one through b block before (user/util/bounded.h). */
int pymem__read(struct bounded *b, pid_t pid, uint64_t addr, void *buf, size_t len);
int pymem__read_u64(struct bounded *b, pid_t pid, uint64_t addr, uint64_t *ret);

/* One piece of a gathered read: err 0 when buf holds all len bytes at addr. */
struct pymem_seg {
	uint64_t addr;
	void *buf;
	size_t len;
	int err;
};

/*
 * Reads each segment whole or not at all (its err), with as few system
 * calls as the kernel allows (process_vm_readv stops at the first segment
 * it cannot read; the rest are read on), in as few bounded calls through b
 * (user/util/bounded.h) as the jobs' size allows: a process whose memory
 * blocks costs its own reads, never the loader's time.
 */
void pymem__readv(struct bounded *b, pid_t pid, struct pymem_seg *segs, size_t n);

#endif /* GP_PYTHON_PYMEM_H */
