/* SPDX-License-Identifier: MIT */
/*
 * gpuprobe-crc: CUPTI's cubin CRC, computed out of the loader's process and
 * without its privileges. Cubins are bytes a profiled process wrote, and
 * cuptiGetCubinCrc is a closed-source parser: it gets them only here, after
 * this process has given up root (to nobody), set no_new_privs and
 * installed a seccomp filter that allows memory, reading its request pipe,
 * writing its answer pipe and exiting, and kills it on anything else, in
 * every thread of the process (libcupti's constructors may start some).
 *
 * Usage (run by the loader): gpuprobe-crc LIBCUPTI   on fds 0 (requests) and 1
 * (answers). Request: __u64 size, then size bytes. Answer: __s32 status
 * (0 or -errno), __u32 pad, __u64 crc. A size of 0 ends it. It prints
 * "ready\n"-equivalent as a first answer (status 0, crc 0) once sandboxed.
 */
#include <errno.h>
#include <grp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include "nvidia/helper/cupti_crc.h"

#define MAX_CUBIN (1ull << 30)
#define NOBODY 65534

struct answer {
	__s32 status;
	__u32 pad;
	__u64 crc;
};

/* Reads and drops len bytes of fd: a request it cannot take, answered, not fatal. */
static int skip_in(int fd, __u64 len)
{
	char chunk[65536];

	while (len) {
		size_t n = len < sizeof(chunk) ? (size_t)len : sizeof(chunk);
		ssize_t got = read(fd, chunk, n);

		if (got <= 0) {
			if (got < 0 && errno == EINTR)
				continue;
			return -1;
		}
		len -= (__u64)got;
	}
	return 0;
}

/* Moves all len bytes through fd, either way. */
static int full_io(int fd, bool out, void *buf, size_t len)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = out ? write(fd, (char *)buf + off, len - off)
				: read(fd, (char *)buf + off, len - off);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

/* Root becomes nobody; anyone else stays who they are (already unprivileged). */
static int drop_privileges(void)
{
	if (geteuid() != 0)
		return 0;
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY))
		return -1;
	return geteuid() == 0 ? -1 : 0;
}

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static int sandbox(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		ALLOW(SYS_read), ALLOW(SYS_write), ALLOW(SYS_exit), ALLOW(SYS_exit_group),
		ALLOW(SYS_brk), ALLOW(SYS_mmap), ALLOW(SYS_munmap), ALLOW(SYS_mremap),
		ALLOW(SYS_madvise), ALLOW(SYS_futex), ALLOW(SYS_rt_sigreturn),
		ALLOW(SYS_rt_sigprocmask), ALLOW(SYS_clock_gettime), ALLOW(SYS_gettid),
		ALLOW(SYS_getpid), ALLOW(SYS_sched_yield),
		/*
		 * Waiting and the time: a library's threads poll with them, and
		 * ThreadSanitizer's own thread sleeps 100 ms at a time. The
		 * answer's deadline (crc_helper.c) bounds a cubin that sleeps.
		 */
		ALLOW(SYS_nanosleep), ALLOW(SYS_clock_nanosleep), ALLOW(SYS_gettimeofday),
		/*
		 * What a thread a library's constructor started may still be
		 * doing when the filter lands on it (TSYNC): glibc's and the
		 * sanitizers' thread start-up. None opens, sends or runs anything.
		 */
		ALLOW(SYS_set_robust_list), ALLOW(SYS_rseq), ALLOW(SYS_sigaltstack),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	long ret;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	/*
	 * Every thread, not only this one: libcupti's constructors, run by the
	 * dlopen before this, may have started threads, and a thread outside
	 * the filter could act for a parser a cubin took over. TSYNC fails
	 * (the tid of the thread it could not sync) rather than leave one out.
	 */
	ret = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
	if (ret > 0)
		errno = ESRCH;
	return ret ? -1 : 0;
}

/*
 * The sanitizers' runtimes, in the test builds: told a sandbox comes (TSan
 * stops its background thread then), no leak check at exit (LeakSanitizer
 * would start a thread and open files under the filter: killed), no wait at
 * exit. Weak: the shipped helper has no runtime, and none of these runs.
 */
extern void __sanitizer_sandbox_on_notify(void *args) __attribute__((weak));

const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "atexit_sleep_ms=0";
}

int main(int argc, char **argv)
{
	struct answer a = { 0 };
	struct cupti_crc *c;
	void *buf = NULL;
	size_t cap = 0;
	__u64 size;

	if (argc != 2) {
		fprintf(stderr, "usage: gpuprobe-crc LIBCUPTI (run by gpuprobe-bpf)\n");
		return 2;
	}
	/* The library is loaded (its constructors run) before any cubin arrives. */
	if (cupti_crc__open(argv[1][0] ? argv[1] : NULL, &c)) {
		fprintf(stderr, "gpuprobe-crc: no cuptiGetCubinCrc in %s\n", argv[1]);
		return 1;
	}
	if (__sanitizer_sandbox_on_notify)
		__sanitizer_sandbox_on_notify(NULL);
	if (drop_privileges() || sandbox()) {
		fprintf(stderr, "gpuprobe-crc: cannot drop privileges: %s\n", strerror(errno));
		return 1;
	}
	if (full_io(1, true, &a, sizeof(a))) /* sandboxed: ready */
		return 1;
	while (!full_io(0, false, &size, sizeof(size)) && size) {
		if (size > MAX_CUBIN)
			return 1; /* the loader never asks this (crc_helper.c): a broken pipe, stop */
		if (size > cap) {
			void *n = malloc(size);

			if (!n) {
				/* This cubin is refused; the next ones are still taken. */
				a.crc = 0;
				a.status = -ENOMEM;
				if (skip_in(0, size) || full_io(1, true, &a, sizeof(a)))
					return 1;
				continue;
			}
			free(buf);
			buf = n;
			cap = size;
		}
		if (full_io(0, false, buf, size))
			return 1;
		a.crc = 0;
		a.status = cupti_crc__compute(c, buf, size, &a.crc);
		if (full_io(1, true, &a, sizeof(a)))
			return 1;
	}
	return 0;
}
