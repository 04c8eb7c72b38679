// Launch-bound microbenchmark: N launches of an empty kernel through the
// runtime (cudaLaunchKernel -> cuLaunchKernel), time per launch: the mean
// over the whole loop (ns_per_launch) and the median of its batches of
// BATCH launches (batch_median_ns), which a stall of the machine (another
// tenant, a page fault storm) moves less.
// BATCH_TIMES=FILE gets "batch start_ns end_ns" a line (CLOCK_MONOTONIC), as
// train.py's STEP_TIMES: what tools/gpu/probe_windows.py labels by window.
// Usage: empty_launch [N] [WAIT_FILE]   (waits for WAIT_FILE to exist first)
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__global__ void empty_kernel() {}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

#define BATCH 5000
#define MAX_BATCHES 4096

__attribute__((noinline)) static void launch_loop(long n)
{
	for (long i = 0; i < n; i++)
		empty_kernel<<<1, 1>>>();
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000, nb = 0;
	static double batch[MAX_BATCHES];
	double t0, t1, tb;
	const char *times_path = getenv("BATCH_TIMES");
	FILE *times = times_path ? fopen(times_path, "w") : NULL;

	if (times_path && !times) {
		perror(times_path);
		return 1;
	}
	if (cudaFree(0) != cudaSuccess) {
		fprintf(stderr, "empty_launch: no CUDA device\n");
		return 1;
	}
	empty_kernel<<<1, 1>>>(); /* module load, outside the timed loop */
	cudaDeviceSynchronize();
	if (argc > 2)
		while (access(argv[2], F_OK))
			usleep(1000);
	t0 = tb = now_ns();
	for (long done = 0; done < n; done += BATCH) {
		long k = n - done < BATCH ? n - done : BATCH;
		double t;

		launch_loop(k);
		t = now_ns();
		if (k == BATCH && nb < MAX_BATCHES)
			batch[nb++] = (t - tb) / k;
		if (times && k == BATCH)
			fprintf(times, "%ld %.0f %.0f\n", done / BATCH, tb, t);
		tb = t;
	}
	cudaDeviceSynchronize();
	t1 = now_ns();
	if (times && fclose(times)) {
		perror(times_path);
		return 1;
	}
	qsort(batch, nb, sizeof(batch[0]), cmp_double);
	printf("launches=%ld ns_per_launch=%.1f batch_median_ns=%.1f batches=%ld\n", n,
	       (t1 - t0) / n, nb ? batch[nb / 2] : 0.0, nb);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
