// Launches that the driver refuses, beside ones it takes, through the
// driver API: N launches of a kernel with a grid of 0 (cuLaunchKernel
// returns CUDA_ERROR_INVALID_VALUE), then N good ones. Under the loader
// each refused call has an API record (its returnValue set) and no kernel
// record: it must not count as a kernel record lost
// (launches_without_activity, tools/gpu/failed_launch.sh).
// Usage: failed_launch [N]
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

__global__ void good_kernel() {}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100, refused = 0;
	cudaFunction_t rf;
	CUstream s = 0;

	if (cudaFree(0) != cudaSuccess || cudaGetFuncBySymbol(&rf, (const void *)good_kernel) != cudaSuccess) {
		fprintf(stderr, "failed_launch: no CUDA\n");
		return 1;
	}
	for (int i = 0; i < n; i++)
		refused += cuLaunchKernel((CUfunction)rf, 0, 1, 1, 1, 1, 1, 0, s, NULL, NULL) != CUDA_SUCCESS;
	for (int i = 0; i < n; i++)
		if (cuLaunchKernel((CUfunction)rf, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL) != CUDA_SUCCESS)
			return 1;
	cudaDeviceSynchronize();
	printf("failed_launch: refused=%d good=%d\n", refused, n);
	return refused == n ? 0 : 1;
}
