/* SPDX-License-Identifier: MIT */
/*
 * autograd_late: a process that uses CUDA before it maps libtorch (a
 * wrapper that loads modules, then opens the trainer's libraries). CUDA
 * up and its module loaded (a driver call the loader sees), nothing
 * launched, no libtorch_cpu.so mapped; prints "autograd_late: waiting
 * pid=<pid>" and waits for SIGUSR1 (tests/bpf/e2e_autograd.sh sends it once
 * the loader has stopped looking for the engine), a minute at most; then
 * opens the stand-in engine (libtorch_cpu.so, beside it), launches k_first
 * (its first launch: the loader looks for the engine again), waits until
 * the engine's probes are in, and caller_l begins a pass of 2 nodes, each
 * launching k_late (grid 3) on the engine thread. Prints
 * "autograd_late: caller=<tid>"; exit 3 when the probes never came.
 *
 * autograd_late launched: k_first is launched before the wait too (the
 * loader's looks at the first launch end with none as well); after the
 * signal, k_first is launched again at every look until the probes are
 * in (wait_for: a minute at most): a process that goes on launching is looked at again
 * now and then.
 */
#define _GNU_SOURCE
#define PROG "autograd_late"
#include <cuda.h>

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/progs/cubin.h"
#include "base.h"
#include "engine.h"

static CUfunction k_first, k_late;
static pid_t caller_tid;
static int (*start_fn)(void);
static int (*probed_fn)(void);
static void (*backward_fn)(struct engine_task *);

__attribute__((noinline)) static void launch_l(void *arg)
{
	(void)arg;
	on_engine();
	CHECK(cuLaunchKernel(k_late, 3, 1, 1, BLOCK, 1, 1, 0, stream, NULL, NULL));
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void *caller_l(void *arg)
{
	struct engine_task t = { .fn = launch_l, .nodes = 2 };

	(void)arg;
	caller_tid = gettid();
	backward_fn(&t);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

/* SIGUSR1, a minute at most: 0, or -1. */
static int wait_for_go(void)
{
	struct timespec limit = { 60, 0 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	return sigtimedwait(&set, NULL, &limit) == SIGUSR1 ? 0 : -1;
}

static int open_engine(void)
{
	void *h = dlopen("libtorch_cpu.so", RTLD_NOW);

	if (!h) {
		fprintf(stderr, PROG ": %s\n", dlerror());
		return -1;
	}
	start_fn = (int (*)(void))dlsym(h, "engine__start");
	probed_fn = (int (*)(void))dlsym(h, "engine__probed");
	backward_fn = (void (*)(struct engine_task *))dlsym(h, "engine__backward");
	return start_fn && probed_fn && backward_fn ? 0 : -1;
}

/* k_first launched and waited for. */
static void launch_first(void)
{
	CHECK(cuLaunchKernel(k_first, 1, 1, 1, BLOCK, 1, 1, 0, stream, NULL, NULL));
	CHECK(cuStreamSynchronize(stream));
}

/* wait_for's condition in launched mode: the engine's probes in, or else k_first once more. */
static int probed_else_launch(void)
{
	if (probed_fn())
		return 1;
	launch_first();
	return 0;
}

int main(int argc, char **argv)
{
	int launched = argc > 1 && !strcmp(argv[1], "launched");
	static const char *const names[2] = { "k_first", "k_late" };
	uint8_t img[2048];
	CUmodule mod;
	sigset_t set;
	pthread_t c;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	if (!cubin_build(img, sizeof(img), PROG, names, 2))
		return 1;
	CHECK(cuModuleLoadData(&mod, img));
	CHECK(cuModuleGetFunction(&k_first, mod, "k_first"));
	CHECK(cuModuleGetFunction(&k_late, mod, "k_late"));
	CHECK(cuStreamCreate(&stream, 0));
	if (launched)
		launch_first();
	printf("autograd_late: waiting pid=%d\n", (int)getpid());
	fflush(stdout);
	if (wait_for_go()) {
		fprintf(stderr, PROG ": no SIGUSR1 came\n");
		return 3;
	}
	if (open_engine())
		return 1;
	launch_first();
	if (start_fn() || wait_for(launched ? probed_else_launch : probed_fn)) {
		fprintf(stderr, PROG ": the engine's probes never appeared\n");
		return 3;
	}
	if (pthread_create(&c, NULL, caller_l, NULL))
		return 1;
	pthread_join(c, NULL);
	CHECK(cuStreamSynchronize(stream));
	CHECK(cuModuleUnload(mod));
	CHECK(cuDevicePrimaryCtxRelease(0));
	printf("autograd_late: caller=%d\n", (int)caller_tid);
	return 0;
}
