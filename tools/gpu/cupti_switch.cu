// What CUPTI records when its activity is switched on after CUDA is up, as
// the shim does when a loader comes (no reader, no records): 2000 launches
// with nothing enabled, then the switch in the order ORDER names, then 2000
// more; counts the kernel records and the launch API records (per-cbid
// cudaLaunchKernel and cuLaunchKernel) that arrive, and those whose
// correlation id the other kind lacks. Then switches off (kinds first, API
// last) and launches 2000 more, which must leave no record.
//   ORDER=api-kinds | kinds-api | api-kinds-api   ./cupti_switch
// Build and run: tools/gpu/switch_facts.sh OUTDIR
#include <cupti.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <set>

__global__ void empty_kernel() {}

static std::set<unsigned> kcorr, acorr;
static unsigned long long kernels, apis, others;

static void CUPTIAPI req(uint8_t **buf, size_t *size, size_t *max)
{
	*buf = (uint8_t *)aligned_alloc(8, 8u << 20);
	*size = 8u << 20;
	*max = 0;
}

static void CUPTIAPI done(CUcontext c, uint32_t s, uint8_t *buf, size_t size, size_t valid)
{
	CUpti_Activity *r = NULL;

	while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
		if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
			kernels++;
			kcorr.insert(((CUpti_ActivityKernel10 *)r)->correlationId);
		} else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME || r->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
			apis++;
			acorr.insert(((CUpti_ActivityAPI *)r)->correlationId);
		} else {
			others++;
		}
	}
	free(buf);
}

static void api(int on)
{
	int a = cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, on);
	int b = cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, on);
	printf("  api %s: runtime %d driver %d\n", on ? "on" : "off", a, b);
}

static void kinds(int on)
{
	int a = on ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
		   : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	printf("  kernel kind %s: %d\n", on ? "on" : "off", a);
}

static void launches(int n)
{
	for (int i = 0; i < n; i++)
		empty_kernel<<<1, 1>>>();
	cudaDeviceSynchronize();
}

static void report(const char *when)
{
	size_t k_only = 0, a_only = 0;

	cuptiActivityFlushAll(1);
	for (unsigned c : kcorr)
		k_only += !acorr.count(c);
	for (unsigned c : acorr)
		a_only += !kcorr.count(c);
	printf("%s: kernels=%llu apis=%llu others=%llu kernel_without_api=%zu api_without_kernel=%zu\n",
	       when, kernels, apis, others, k_only, a_only);
}

int main()
{
	const char *order = getenv("ORDER") ? getenv("ORDER") : "api-kinds";

	cuptiActivityRegisterCallbacks(req, done);
	launches(2000);
	report("before any switch");
	printf("ORDER=%s\n", order);
	if (!strcmp(order, "kinds-api")) {
		kinds(1);
		api(1);
	} else {
		api(1);
		kinds(1);
		if (!strcmp(order, "api-kinds-api"))
			api(1);
	}
	launches(2000);
	report("after switching on");
	kinds(0);
	api(0);
	launches(2000);
	report("after switching off");
	api(1);
	kinds(1);
	launches(2000);
	report("after switching on again");
	return 0;
}
