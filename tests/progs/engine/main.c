/* SPDX-License-Identifier: MIT */
/*
 * autograd: backward passes on the stand-in autograd engine (engine.h),
 * whose device thread launches every kernel for threads that wait for it
 * (exits 0 on success, 1 on a CUDA failure, 2 on bad arguments, 3 when the
 * engine's probes never appeared).
 *
 *   autograd N
 *
 * main launches k_warm (the loader meets the process and probes its
 * engine), waits until both engine functions carry a breakpoint, then
 * starts two threads at once:
 *   caller_a   N x backward_a: a pass of 2 nodes, each launch_a on the
 *              engine thread: cuLaunchKernel(k_a, grid 2)
 *   caller_b   N x backward_b: a pass of 2 nodes, each launch_b: k_b, grid 3
 * then, from main, one pass of 1 node (launch_orphan: k_orphan, grid 1)
 * handed to the engine without the call a pass begins with: no caller;
 * then own_pass: a pass of 1 node that main runs itself (launch_own:
 * k_own, grid 1), its own caller; then deep_after: k_after (grid 1)
 * launched from main 16 frames deeper than own_pass's node ran, after it
 * returned: in no pass.
 * The stub runs a kernel grid*1000 ns: k_a 2N for 4000*N ns, k_b 2N for
 * 6000*N ns, k_orphan, k_own, k_after and k_warm 1 each for 1000 ns.
 * With GP_TEST_QUIET_NODES=1 it first waits until the loader has taken the
 * node probe away (prog__quiet_nodes).
 * Prints "autograd: tid_a=<tid> tid_b=<tid> passes=<2N+1> kernels=<4N+5>".
 */
#define _GNU_SOURCE
#define PROG "autograd"
#include <pthread.h>
#include <unistd.h>

#include "tests/progs/args.h"
#include "prog.h"

enum { K_WARM, K_A, K_B, K_ORPHAN, K_OWN, K_AFTER, NK };
static CUfunction k[NK];
#define k_a k[K_A]
#define k_b k[K_B]
#define k_orphan k[K_ORPHAN]
#define k_own k[K_OWN]
#define k_after k[K_AFTER]
static long passes;
static pid_t tid_a, tid_b;
static pthread_barrier_t start;

__attribute__((noinline)) static void launch_a(void *arg)
{
	(void)arg;
	on_engine();
	CHECK(cuLaunchKernel(k_a, 2, 1, 1, BLOCK, 1, 1, 0, stream, NULL, NULL));
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void launch_b(void *arg)
{
	(void)arg;
	on_engine();
	CHECK(cuLaunchKernel(k_b, 3, 1, 1, BLOCK, 1, 1, 0, stream, NULL, NULL));
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void launch_orphan(void *arg)
{
	(void)arg;
	on_engine();
	CHECK(cuLaunchKernel(k_orphan, 1, 1, 1, BLOCK, 1, 1, 0, stream, NULL, NULL));
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void launch_own(void *arg)
{
	(void)arg;
	CHECK(cuLaunchKernel(k_own, 1, 1, 1, BLOCK, 1, 1, 0, stream, NULL, NULL));
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void own_pass(void)
{
	struct engine_task t = { .fn = launch_own, .nodes = 1 };

	engine__backward_here(&t);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void backward_a(void)
{
	struct engine_task t = { .fn = launch_a, .nodes = 2 };

	engine__backward(&t);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void backward_b(void)
{
	struct engine_task t = { .fn = launch_b, .nodes = 2 };

	engine__backward(&t);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void *caller_a(void *arg)
{
	(void)arg;
	tid_a = gettid();
	pthread_barrier_wait(&start);
	for (long i = 0; i < passes; i++)
		backward_a();
	__asm__ volatile("" ::: "memory");
	return NULL;
}

__attribute__((noinline)) static void *caller_b(void *arg)
{
	(void)arg;
	tid_b = gettid();
	pthread_barrier_wait(&start);
	for (long i = 0; i < passes; i++)
		backward_b();
	__asm__ volatile("" ::: "memory");
	return NULL;
}

int main(int argc, char **argv)
{
	static const char *const names[NK] = { "k_warm", "k_a", "k_b", "k_orphan", "k_own", "k_after" };
	struct engine_task orphan = { .fn = launch_orphan, .nodes = 1 };
	pthread_t a, b;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: autograd N\n");
		return 2;
	}
	passes = parse_count("autograd", argv[1]);
	if ((err = prog__start(names, k, NK)) || (err = prog__quiet_nodes()))
		return err;
	pthread_barrier_init(&start, NULL, 2);
	if (pthread_create(&a, NULL, caller_a, NULL) || pthread_create(&b, NULL, caller_b, NULL))
		return 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	engine__backward_unannounced(&orphan);
	own_pass();
	deep_after(k_after, 16);
	prog__end();
	printf("autograd: tid_a=%d tid_b=%d passes=%ld kernels=%ld\n", (int)tid_a, (int)tid_b,
	       2 * passes + 1, 4 * passes + 5);
	return 0;
}
