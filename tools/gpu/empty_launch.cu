// Launch-bound microbenchmark: N launches of an empty kernel through the
// runtime (cudaLaunchKernel -> cuLaunchKernel), time per launch.
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

__attribute__((noinline)) static void launch_loop(long n)
{
	for (long i = 0; i < n; i++)
		empty_kernel<<<1, 1>>>();
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	double t0, t1;

	if (cudaFree(0) != cudaSuccess) {
		fprintf(stderr, "empty_launch: no CUDA device\n");
		return 1;
	}
	empty_kernel<<<1, 1>>>(); /* module load, outside the timed loop */
	cudaDeviceSynchronize();
	if (argc > 2)
		while (access(argv[2], F_OK))
			usleep(1000);
	t0 = now_ns();
	launch_loop(n);
	cudaDeviceSynchronize();
	t1 = now_ns();
	printf("launches=%ld ns_per_launch=%.1f\n", n, (t1 - t0) / n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
