/* SPDX-License-Identifier: MIT */
/*
 * spin: launches one kernel in a loop until killed or for a while, for the
 * "program started before the loader" and "program exits mid-run" tests.
 *
 *   spin [-s SECONDS] [-w FILE] [-S] [-g GRID] [-i INTERVAL_US] [-t TIMES] [-m FILE] [-v]
 *
 * It initialises CUDA and loads its module ("spin_mod", kernel "spin_kernel")
 * first, prints "spin: ready pid=PID" (flushed), then waits, if asked, until
 * FILE exists (-w) or SIGUSR1 arrives (-S), so a test can attach a loader in
 * between. Then it calls cuLaunchKernel(spin_kernel, grid GRID (default 1),
 * block 32) on its own stream every INTERVAL_US microseconds (default 1000),
 * from a noinline spin_site(), for SECONDS (0, the default: until SIGTERM or
 * SIGINT). On the stub each launch is GRID*1000 GPU ns; -g 0 makes a launch
 * the driver refuses (CUDA_ERROR_INVALID_VALUE), for the failed-call tests. On SIGUSR2 it prints
 * "spin: progress launches=N" (flushed), its count so far. With -t, each
 * launch's CLOCK_MONOTONIC ns (read just before the call, the clock of the
 * probes) goes to TIMES, a line each, for tests of the duty cycle's window
 * edges. With -m, once FILE exists it loads a second module ("late", kernel
 * "late_kernel") and from then on launches late_kernel (grid 1) after each
 * spin_kernel, from a noinline late_site(), and prints "spin: late loaded"
 * (flushed): a module loaded while the loader's duty cycle is between
 * windows. It ends with
 * "spin: launches=N" and exit status 0 (1 on a CUDA failure, 2 on bad flags).
 * Under lazy loading the module-loaded callback fires inside the first launch,
 * so after the wait.
 */
#include <cuda.h>

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/progs/cubin.h"

#define CHECK(call) \
	do { \
		CUresult r_ = (call); \
		if (r_ != CUDA_SUCCESS) { \
			fprintf(stderr, "spin: %s failed: %d\n", #call, (int)r_); \
			exit(1); \
		} \
	} while (0)

static volatile sig_atomic_t stop_flag;
static volatile sig_atomic_t go_flag;
static volatile sig_atomic_t progress_flag;

static void on_stop(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void on_go(int sig)
{
	(void)sig;
	go_flag = 1;
}

static void on_progress(int sig)
{
	(void)sig;
	progress_flag = 1;
}

static long parse_long(const char *s, long lo, long hi, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "spin: %s: expected an integer in [%ld, %ld], got '%s'\n",
			what, lo, hi, s);
		exit(2);
	}
	return v;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	nanosleep(&ts, NULL); /* EINTR on a signal is fine: we re-check flags */
}

__attribute__((noinline)) static void spin_site(CUfunction f, unsigned int grid,
						CUstream s)
{
	CHECK(cuLaunchKernel(f, grid, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
}

__attribute__((noinline)) static void late_site(CUfunction f, CUstream s)
{
	CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
}

/* The -m module, loaded once its file exists: its kernel, or NULL before. */
static CUfunction late_module(const char *file)
{
	static const char *const kernels[] = { "late_kernel" };
	static uint8_t img[1024];
	CUmodule mod;
	CUfunction f;

	if (!file || access(file, F_OK))
		return NULL;
	if (!cubin_build(img, sizeof(img), "late", kernels, 1))
		exit(1);
	CHECK(cuModuleLoadData(&mod, img));
	CHECK(cuModuleGetFunction(&f, mod, "late_kernel"));
	printf("spin: late loaded\n");
	fflush(stdout);
	return f;
}

static void install(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static void wait_to_start(const char *file, bool want_signal)
{
	while (!stop_flag) {
		if (file && access(file, F_OK) == 0)
			return;
		if (want_signal && go_flag)
			return;
		if (!file && !want_signal)
			return;
		sleep_us(10000);
	}
}

int main(int argc, char **argv)
{
	static const char *const kernels[] = { "spin_kernel" };
	long seconds = 0, grid = 1, interval = 1000;
	unsigned long long launches = 0;
	const char *file = NULL, *late_file = NULL;
	FILE *times = NULL;
	CUfunction late = NULL;
	bool want_signal = false, verbose = false;
	uint8_t img[1024];
	CUcontext ctx;
	CUmodule mod;
	CUfunction f;
	CUstream s;
	double end;
	int opt;

	while ((opt = getopt(argc, argv, "s:w:Sg:i:t:m:v")) != -1) {
		switch (opt) {
		case 's': seconds = parse_long(optarg, 0, 86400, "-s SECONDS"); break;
		case 'w': file = optarg; break;
		case 'S': want_signal = true; break;
		case 'g': grid = parse_long(optarg, 0, 1000000, "-g GRID"); break;
		case 'i': interval = parse_long(optarg, 0, 10000000, "-i INTERVAL_US"); break;
		case 't':
			times = fopen(optarg, "w");
			if (!times) {
				fprintf(stderr, "spin: %s: %s\n", optarg, strerror(errno));
				return 2;
			}
			break;
		case 'm': late_file = optarg; break;
		case 'v': verbose = true; break;
		default:
			fprintf(stderr, "usage: spin [-s SECONDS] [-w FILE] [-S] [-g GRID] "
				"[-i INTERVAL_US] [-t TIMES] [-m FILE] [-v]\n");
			return 2;
		}
	}
	install(SIGTERM, on_stop);
	install(SIGINT, on_stop);
	install(SIGUSR1, on_go);
	install(SIGUSR2, on_progress);

	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	if (!cubin_build(img, sizeof(img), "spin", kernels, 1))
		return 1;
	CHECK(cuModuleLoadData(&mod, img));
	CHECK(cuModuleGetFunction(&f, mod, "spin_kernel"));
	CHECK(cuStreamCreate(&s, 0));
	printf("spin: ready pid=%d\n", (int)getpid());
	fflush(stdout);

	wait_to_start(file, want_signal);
	end = now_s() + (double)seconds;
	while (!stop_flag && (seconds == 0 || now_s() < end)) {
		if (times)
			fprintf(times, "%llu\n", now_ns());
		spin_site(f, (unsigned int)grid, s);
		launches++;
		if (!late)
			late = late_module(late_file);
		else
			late_site(late, s);
		if (progress_flag) {
			progress_flag = 0;
			printf("spin: progress launches=%llu\n", launches);
			fflush(stdout);
		}
		if (interval)
			sleep_us(interval);
	}
	CHECK(cuStreamSynchronize(s));
	CHECK(cuModuleUnload(mod));
	if (times && fclose(times)) {
		fprintf(stderr, "spin: cannot write the launch times\n");
		return 1;
	}
	printf("spin: launches=%llu\n", launches);
	if (verbose)
		printf("spin: gpu_ns=%llu\n", launches * (unsigned long long)grid * 1000ull);
	return 0;
}
