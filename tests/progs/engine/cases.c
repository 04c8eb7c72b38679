/* SPDX-License-Identifier: MIT */
/*
 * autograd_cases: backward passes whose caller is easy to get wrong, on the
 * stand-in engine (engine.h; exits 0 on success, 1 on a CUDA failure, 2 on
 * bad arguments, 3 when the engine's probes never appeared).
 *
 *   autograd_cases reent|lost|stale|graph|post|hold|unlaunched
 *
 * reent  caller_a's pass has one node, reentrant_node, which (on the engine
 *        thread) begins a pass of its own once caller_b's node waits in the
 *        device queue: the engine takes b's node first (launch_b: k_b),
 *        then its own (launch_inner: k_inner). k_inner belongs to
 *        caller_a's backward, k_b to caller_b's.
 * lost   caller_b_reuse runs a pass on a task at one address (k_b), then
 *        one on another (nothing launched: its pass at the first address
 *        is over); then main hands the engine a pass at the first address
 *        without the call a pass begins with (launch_inner: k_inner), and
 *        a final callback (final_cb: k_post): no caller, not
 *        caller_b_reuse's old one, for either.
 * stale  main runs a pass itself whose first node begins a second pass
 *        there (a reentrant backward on the calling thread); then
 *        caller_b_reuse's pass reuses the first task's address (k_b); then
 *        main launches k_after 16 frames deep, in no pass: main's own.
 * graph  main captures k_graph (grid 2) in capture_graph, in no pass;
 *        caller_g's pass has 3 nodes, each replay_node on the engine
 *        thread: cuGraphLaunch of that graph. Each k_graph belongs to its
 *        capture, the engine's replay and caller_g's backward, in that order.
 * post   caller_p's pass has 2 nodes (launch_b: k_b) and a final callback,
 *        final_cb, that the engine thread runs after the last node
 *        returned: k_post (grid 1), caller_p's backward's too.
 * hold   once the engine is probed, prints "held" and waits for a signal
 *        (tests/bpf/e2e_hostile_autograd.sh: engines that take the slots).
 * unlaunched  loads its module and launches nothing until the engine is
 *        probed (a module load is a driver call the loader sees: under a
 *        duty cycle, the first launch may wait for a window); then the post
 *        case.
 * nodes N  main runs N passes of 64 nodes itself (nothing launched), timed:
 *        what each node costs the thread (tools/node_cost.sh); prints
 *        "autograd_cases: nodes ns_per_node=<ns>" instead.
 * With GP_TEST_QUIET_NODES=1, each first waits until the loader has taken the
 * node probe away (prog__quiet_nodes), and reent then until it is back.
 * Prints "autograd_cases: MODE main=<tid> tid_a=<tid> tid_b=<tid>" (graph:
 * tid_b is caller_g's).
 */
#define _GNU_SOURCE
#define PROG "autograd_cases"
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "tests/progs/args.h"
#include "prog.h"

enum { K_WARM, K_INNER, K_B, K_AFTER, K_GRAPH, K_POST, NK };
static CUfunction k[NK];
#define k_inner k[K_INNER]
#define k_b k[K_B]
#define k_after k[K_AFTER]
static pid_t tid_a, tid_b;
static volatile int b_may_go;
static struct engine_task shared_task; /* one address, as an allocator reuses a GraphTask's */
static int outer_nodes;
static CUgraphExec replayed;

static int b_allowed(void)
{
	return b_may_go;
}

__attribute__((noinline)) static void launch_inner(void *arg)
{
	(void)arg;
	on_engine();
	CHECK(cuLaunchKernel(k_inner, 1, 1, 1, BLOCK, 1, 1, 0, stream, NULL, NULL));
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void launch_b(void *arg)
{
	(void)arg;
	on_engine();
	CHECK(cuLaunchKernel(k_b, 3, 1, 1, BLOCK, 1, 1, 0, stream, NULL, NULL));
	__asm__ volatile("" ::: "memory");
}

static void nothing(void *arg)
{
	(void)arg;
}

__attribute__((noinline)) static void reentrant_node(void *arg)
{
	struct engine_task inner = { .fn = launch_inner, .nodes = 1 };

	(void)arg;
	on_engine();
	b_may_go = 1;
	if (wait_for(engine__queued))
		exit(1);
	engine__backward_mixed(&inner);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void *caller_a(void *arg)
{
	struct engine_task t = { .fn = reentrant_node, .nodes = 1 };

	(void)arg;
	tid_a = gettid();
	engine__backward(&t);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

__attribute__((noinline)) static void *caller_b(void *arg)
{
	static struct engine_task t = { .fn = launch_b, .nodes = 1 };

	(void)arg;
	tid_b = gettid();
	if (wait_for(b_allowed))
		exit(1);
	engine__backward(&t);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

__attribute__((noinline)) static void *caller_b_reuse(void *arg)
{
	struct engine_task next = { .fn = nothing, .nodes = 1 };

	tid_b = gettid();
	shared_task = (struct engine_task){ .fn = launch_b, .nodes = 1 };
	engine__backward(&shared_task);
	if (arg) /* lost: one more pass, elsewhere */
		engine__backward(&next);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

__attribute__((noinline)) static void outer_node(void *arg)
{
	struct engine_task inner = { .fn = nothing, .nodes = 1 };

	(void)arg;
	if (!outer_nodes++)
		engine__backward_here(&inner); /* a reentrant backward on the calling thread */
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void own_reentrant_pass(void)
{
	shared_task = (struct engine_task){ .fn = outer_node, .nodes = 2 };
	engine__backward_here(&shared_task);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void capture_graph(void)
{
	CUgraph g;

	CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(cuLaunchKernel(k[K_GRAPH], 2, 1, 1, BLOCK, 1, 1, 0, stream, NULL, NULL));
	CHECK(cuStreamEndCapture(stream, &g));
	CHECK(cuGraphInstantiate(&replayed, g, 0));
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void replay_node(void *arg)
{
	(void)arg;
	on_engine();
	CHECK(cuGraphLaunch(replayed, stream));
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void *caller_g(void *arg)
{
	struct engine_task t = { .fn = replay_node, .nodes = 3 };

	(void)arg;
	tid_b = gettid();
	engine__backward(&t);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

__attribute__((noinline)) static void final_cb(void *arg)
{
	(void)arg;
	CHECK(cuLaunchKernel(k[K_POST], 1, 1, 1, BLOCK, 1, 1, 0, stream, NULL, NULL));
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void *caller_p(void *arg)
{
	struct engine_task t = { .fn = launch_b, .nodes = 2, .post = final_cb };

	(void)arg;
	tid_b = gettid();
	engine__backward(&t);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

/* N passes of 64 nodes, run by this thread: ns a node. */
static double time_nodes(long n)
{
	struct engine_task t = { .fn = nothing, .nodes = 64 };
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		engine__backward_here(&t);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (n * 64.0);
}

static void run(const char *mode)
{
	pthread_t a, b;

	if (!strcmp(mode, "reent")) {
		if (pthread_create(&a, NULL, caller_a, NULL) || pthread_create(&b, NULL, caller_b, NULL))
			exit(1);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
	} else if (!strcmp(mode, "post") || !strcmp(mode, "unlaunched")) {
		if (pthread_create(&b, NULL, caller_p, NULL))
			exit(1);
		pthread_join(b, NULL);
	} else if (!strcmp(mode, "graph")) {
		capture_graph();
		if (pthread_create(&b, NULL, caller_g, NULL))
			exit(1);
		pthread_join(b, NULL);
	} else if (!strcmp(mode, "lost")) {
		if (pthread_create(&b, NULL, caller_b_reuse, &shared_task))
			exit(1);
		pthread_join(b, NULL);
		shared_task = (struct engine_task){ .fn = launch_inner, .nodes = 1, .post = final_cb };
		engine__backward_unannounced(&shared_task);
	} else {
		own_reentrant_pass();
		if (pthread_create(&b, NULL, caller_b_reuse, NULL))
			exit(1);
		pthread_join(b, NULL);
		deep_after(k_after, 16);
	}
}

int main(int argc, char **argv)
{
	static const char *const names[NK] = { "k_warm", "k_inner", "k_b", "k_after", "k_graph",
					       "k_post" };
	int err, unlaunched;

	long n = 0;

	if (argc == 3 && !strcmp(argv[1], "nodes"))
		n = parse_count(PROG, argv[2]);
	if ((argc != 2 || (strcmp(argv[1], "reent") && strcmp(argv[1], "lost") && strcmp(argv[1], "stale") &&
			   strcmp(argv[1], "graph") && strcmp(argv[1], "post") && strcmp(argv[1], "hold") &&
			   strcmp(argv[1], "unlaunched"))) &&
	    n <= 0) {
		fprintf(stderr, "usage: autograd_cases reent|lost|stale|graph|post|hold|unlaunched | nodes N\n");
		return 2;
	}
	unlaunched = argc == 2 && !strcmp(argv[1], "unlaunched");
	if ((err = prog__start_with(names, k, NK, !unlaunched)) || (err = prog__quiet_nodes()))
		return err;
	if (n) {
		printf("autograd_cases: nodes ns_per_node=%.1f\n", time_nodes(n));
		prog__end();
		return 0;
	}
	if (!strcmp(argv[1], "hold")) {
		printf("held\n");
		fflush(stdout);
		pause();
		return 0;
	}
	run(argv[1]);
	/* The node probe away, a reentrant pass brings it back (GP_BPF_AG_UNLEARNED). */
	if (getenv("GP_TEST_QUIET_NODES") && !strcmp(argv[1], "reent") && wait_for(engine__node_probed)) {
		fprintf(stderr, PROG ": the node probe never came back\n");
		return 3;
	}
	prog__end();
	printf("autograd_cases: %s main=%d tid_a=%d tid_b=%d\n", argv[1], (int)gettid(), (int)tid_a,
	       (int)tid_b);
	return 0;
}
