/* SPDX-License-Identifier: MIT */
/*
 * The CUPTI adapter's copy of activity records into ring records
 * (nvidia/decode.c, nvidia/cbids.c), on records built here with CUPTI's own
 * layouts: no CUPTI runs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "nvidia/cbids.h"
#include "nvidia/decode.h"

static struct shm *new_shm(void)
{
	struct shm_config cfg = { .ring_records = 64, .strtab_bytes = 16 * 1024,
				  .cubin_bytes = 1 << 20, .cubin_max = 64 * 1024 };
	struct shm *shm;

	assert_int_equal(shm__create(&cfg, &shm), 0);
	return shm;
}

/* Ids that wrap land in the epoch nearest the highest id seen, both ways. */
static void test_correlation_ids_widen_to_the_nearest_epoch(void **state)
{
	__u64 hw = 0;

	(void)state;
	assert_int_equal(decode__corr(&hw, 0), 0);
	assert_int_equal(decode__corr(&hw, 5), 5);
	assert_int_equal(hw, 5);
	hw = 0xfffffff0ull;
	assert_int_equal(decode__corr(&hw, 0x10), 0x100000010ull); /* wrapped: the next epoch */
	assert_int_equal(hw, 0x100000010ull);
	assert_int_equal(decode__corr(&hw, 0xfffffff5u), 0xfffffff5ull); /* late: the one before */
	assert_int_equal(hw, 0x100000010ull);
	assert_int_equal(decode__corr(&hw, 0x20), 0x100000020ull);
}

/* A kernel's grid and block are products of its sizes, never past u32, never negative. */
static void test_a_kernels_sizes_are_saturated_products_and_its_name_is_interned(void **state)
{
	struct shm *shm = new_shm();
	__u64 hw = 0;
	struct decode_ctx c = { .shm = shm, .corr_hw = &hw };
	CUpti_ActivityKernel10 k;
	struct gp_record r;

	(void)state;
	memset(&k, 0, sizeof(k));
	memset(&r, 0, sizeof(r));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.correlationId = 7;
	k.start = 100;
	k.end = 250;
	k.name = "vector_add";
	k.gridX = 1 << 20;
	k.gridY = 1 << 20;
	k.gridZ = 1;
	k.blockX = 2;
	k.blockY = 3;
	k.blockZ = 4;
	k.streamId = 9;
	assert_int_equal(decode__activity(&c, (const CUpti_Activity *)&k, &r), DECODE_KEEP);
	assert_int_equal(r.type, GP_REC_KERNEL);
	assert_int_equal(r.corr, 7);
	assert_int_equal(r.start_ns, 100);
	assert_int_equal(r.end_ns, 250);
	assert_int_equal(r.kernel.grid, UINT32_MAX);
	assert_int_equal(r.kernel.block, 24);
	assert_int_equal(r.kernel.stream, 9);
	assert_int_not_equal(r.kernel.name_off, 0);
	k.blockY = -3;
	k.gridX = 1 << 30; /* 2^30 * 2^30 * 16 is 2^64: a u64 product wraps to 0 */
	k.gridY = 1 << 30;
	k.gridZ = 16;
	assert_int_equal(decode__activity(&c, (const CUpti_Activity *)&k, &r), DECODE_KEEP);
	assert_int_equal(r.kernel.block, 0);
	assert_int_equal(r.kernel.grid, UINT32_MAX);
	shm__destroy(shm);
}

static enum decode_result api_record(const struct decode_ctx *c, CUpti_ActivityKind kind, __u32 cbid,
				     __u32 ret, struct gp_record *r)
{
	CUpti_ActivityAPI a;

	memset(&a, 0, sizeof(a));
	memset(r, 0, sizeof(*r));
	a.kind = kind;
	a.cbid = cbid;
	a.correlationId = 11;
	a.threadId = 1234;
	a.processId = 99;
	a.returnValue = ret;
	return decode__activity(c, (const CUpti_Activity *)&a, r);
}

/* API records are classed by call; with whole kinds on, a call not listed is left out. */
static void test_api_records_take_their_calls_class_and_unlisted_calls_are_filtered(void **state)
{
	__u64 hw = 0;
	struct decode_ctx c = { .corr_hw = &hw, .api_filter = true };
	struct gp_record r;

	(void)state;
	cbids__init();
	assert_int_equal(api_record(&c, CUPTI_ACTIVITY_KIND_RUNTIME,
				    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0, &r), DECODE_KEEP);
	assert_int_equal(r.type, GP_REC_API);
	assert_int_equal(r.flags, 0);
	assert_int_equal(r.api.domain, GP_API_RUNTIME);
	assert_int_equal(r.tid, 1234);
	assert_int_equal(r.api.pid, 99);
	assert_int_equal(api_record(&c, CUPTI_ACTIVITY_KIND_DRIVER,
				    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, 0, &r), DECODE_KEEP);
	assert_int_equal(r.flags, GP_REC_F_COPY);
	assert_int_equal(r.api.domain, GP_API_DRIVER);
	assert_int_equal(api_record(&c, CUPTI_ACTIVITY_KIND_DRIVER,
				    CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode, 1, &r), DECODE_KEEP);
	assert_int_equal(r.flags, GP_REC_F_NODE | GP_REC_F_FAILED);
	assert_int_equal(api_record(&c, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuCtxCreate,
				    0, &r), DECODE_SKIP);
	c.api_filter = false; /* per-call records: CUPTI sends only the listed calls */
	assert_int_equal(api_record(&c, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuCtxCreate,
				    0, &r), DECODE_KEEP);
	assert_int_equal(cbids__class(true, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), CBID_LAUNCH);
	assert_int_equal(cbids__class(false, 0xffff), CBID_OTHER);
}

/* A kind the shim never asked for is told apart (counted by the caller), not copied. */
static void test_an_unknown_kind_is_not_copied(void **state)
{
	__u64 hw = 0;
	struct decode_ctx c = { .corr_hw = &hw };
	CUpti_ActivityAPI a;
	struct gp_record r;

	(void)state;
	memset(&a, 0, sizeof(a));
	memset(&r, 0, sizeof(r));
	a.kind = CUPTI_ACTIVITY_KIND_MARKER;
	assert_int_equal(decode__activity(&c, (const CUpti_Activity *)&a, &r), DECODE_UNKNOWN);
	assert_int_equal(r.type, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_correlation_ids_widen_to_the_nearest_epoch),
		cmocka_unit_test(test_a_kernels_sizes_are_saturated_products_and_its_name_is_interned),
		cmocka_unit_test(test_api_records_take_their_calls_class_and_unlisted_calls_are_filtered),
		cmocka_unit_test(test_an_unknown_kind_is_not_copied),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
