/* SPDX-License-Identifier: MIT */
/* The CUDA calls the shim records, by class (cbids.h). */
#include "nvidia/cbids.h"

static const CUpti_CallbackId driver_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy, CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer, CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2,
};

/* Calls that add a graph node: their records let a node take the call's stack. */
static const CUpti_CallbackId driver_node_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode, CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode_v2,
	CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemcpyNode, CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemsetNode,
	CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode, CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2,
};

static const CUpti_CallbackId runtime_node_cbids[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddKernelNode_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNode_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemsetNode_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNode1D_v11010,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNodeToSymbol_v11010,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNodeFromSymbol_v11010,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddNode_v12020, CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddNode_v12030,
};

static const CUpti_CallbackId runtime_cbids[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v12080, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_v3020,
};

/* The first LAUNCH_CBIDS entries of each list launch; the rest copy or set. */
#define LAUNCH_CBIDS 8
_Static_assert(ARRAY_LEN(driver_cbids) > LAUNCH_CBIDS && ARRAY_LEN(runtime_cbids) > LAUNCH_CBIDS,
	       "each cbid list starts with the launch calls");

static const struct cbid_list lists[] = {
	{ CUPTI_CB_DOMAIN_DRIVER_API, driver_cbids, ARRAY_LEN(driver_cbids) },
	{ CUPTI_CB_DOMAIN_DRIVER_API, driver_node_cbids, ARRAY_LEN(driver_node_cbids) },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, runtime_cbids, ARRAY_LEN(runtime_cbids) },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, runtime_node_cbids, ARRAY_LEN(runtime_node_cbids) },
};

/* Each listed call's class + 1 by callback id (0: not listed). */
static signed char driver_class[CUPTI_DRIVER_TRACE_CBID_SIZE], runtime_class[CUPTI_RUNTIME_TRACE_CBID_SIZE];

size_t cbids__lists(const struct cbid_list **ret_lists)
{
	*ret_lists = lists;
	return ARRAY_LEN(lists);
}

/* ids' classes into table: a fixed cls, or (cls < 0) a launch for the first launch_n, else a copy. */
static void cbids__fill(signed char *table, size_t size, const CUpti_CallbackId *ids, size_t n,
			int launch_n, int cls)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] < size)
			table[ids[i]] = (signed char)((cls < 0 ? (int)i >= launch_n : cls) + 1);
}

void cbids__init(void)
{
	cbids__fill(driver_class, ARRAY_LEN(driver_class), driver_cbids, ARRAY_LEN(driver_cbids),
		    LAUNCH_CBIDS, -1);
	cbids__fill(runtime_class, ARRAY_LEN(runtime_class), runtime_cbids, ARRAY_LEN(runtime_cbids),
		    LAUNCH_CBIDS, -1);
	cbids__fill(driver_class, ARRAY_LEN(driver_class), driver_node_cbids,
		    ARRAY_LEN(driver_node_cbids), 0, CBID_NODE);
	cbids__fill(runtime_class, ARRAY_LEN(runtime_class), runtime_node_cbids,
		    ARRAY_LEN(runtime_node_cbids), 0, CBID_NODE);
}

int cbids__class(bool driver, CUpti_CallbackId cbid)
{
	if (driver)
		return cbid < ARRAY_LEN(driver_class) ? driver_class[cbid] - 1 : CBID_OTHER;
	return cbid < ARRAY_LEN(runtime_class) ? runtime_class[cbid] - 1 : CBID_OTHER;
}
