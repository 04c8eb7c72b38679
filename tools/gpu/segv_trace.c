/* SPDX-License-Identifier: MIT */
/*
 * A diagnosis aid for GPU runs, not part of the product: LD_PRELOAD'ed into
 * a profiled program, it prints, when the program faults (SIGSEGV, SIGBUS,
 * SIGILL, SIGFPE), the faulting thread's id, name, fault address, ip and
 * native backtrace to stderr, then lets the signal take its default course.
 * Build: gcc -O1 -g -shared -fPIC -o build/segv_trace.so tools/gpu/segv_trace.c
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	void *frames[64];
	char name[17] = { 0 }, line[256];
	int n, len;

	prctl(PR_GET_NAME, name);
	len = snprintf(line, sizeof(line), "segv_trace: signal %d in tid %ld (%s) at %p, ip %#llx\n", sig,
		       (long)syscall(SYS_gettid), name, si->si_addr,
		       (unsigned long long)uc->uc_mcontext.gregs[REG_RIP]);
	if (write(2, line, (size_t)len) < 0)
		return;
	n = backtrace(frames, 64);
	backtrace_symbols_fd(frames, n, 2);
	signal(sig, SIG_DFL);
	raise(sig);
}

__attribute__((constructor)) static void segv_trace_init(void)
{
	struct sigaction sa;
	void *warm[1];
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE };

	backtrace(warm, 1); /* loads libgcc_s before any fault */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}
