/* SPDX-License-Identifier: MIT */
/* The driver entry points the launch probes attach to (entry_points.h). */
#include <stddef.h>
#include "user/probe/entry_points.h"

const struct entry_point entry_points[GP_PROBE_MAX] = {
	[GP_PROBE_LAUNCH_KERNEL] = { "cuLaunchKernel", NULL, true, false },
	[GP_PROBE_LAUNCH_KERNEL_PTSZ] = { "cuLaunchKernel_ptsz", NULL, true, false },
	[GP_PROBE_LAUNCH_KERNEL_EX] = { "cuLaunchKernelEx", NULL, true, false },
	[GP_PROBE_LAUNCH_KERNEL_EX_PTSZ] = { "cuLaunchKernelEx_ptsz", NULL, true, false },
	[GP_PROBE_LAUNCH_COOPERATIVE] = { "cuLaunchCooperativeKernel", NULL, true, false },
	[GP_PROBE_LAUNCH_COOPERATIVE_PTSZ] = { "cuLaunchCooperativeKernel_ptsz", NULL, true, false },
	[GP_PROBE_GRAPH_LAUNCH] = { "cuGraphLaunch", NULL, true, false },
	[GP_PROBE_GRAPH_LAUNCH_PTSZ] = { "cuGraphLaunch_ptsz", NULL, true, false },
	[GP_PROBE_MODULE_LOAD] = { "cuModuleLoad", NULL, false, false },
	[GP_PROBE_MODULE_LOAD_DATA] = { "cuModuleLoadData", NULL, false, false },
	[GP_PROBE_MODULE_LOAD_DATA_EX] = { "cuModuleLoadDataEx", NULL, false, false },
	[GP_PROBE_MODULE_LOAD_FAT_BINARY] = { "cuModuleLoadFatBinary", NULL, false, false },
	[GP_PROBE_LIBRARY_LOAD_DATA] = { "cuLibraryLoadData", NULL, false, false },
	[GP_PROBE_LIBRARY_LOAD_FROM_FILE] = { "cuLibraryLoadFromFile", NULL, false, false },
	[GP_PROBE_MEMCPY] = { "cuMemcpy", NULL, false, true },
	[GP_PROBE_MEMCPY_PTDS] = { "cuMemcpy_ptds", NULL, false, true },
	[GP_PROBE_MEMCPY_ASYNC] = { "cuMemcpyAsync", NULL, false, true },
	[GP_PROBE_MEMCPY_ASYNC_PTSZ] = { "cuMemcpyAsync_ptsz", NULL, false, true },
	[GP_PROBE_MEMCPY_HTO_D_V2] = { "cuMemcpyHtoD_v2", "cuMemcpyHtoD", false, true },
	[GP_PROBE_MEMCPY_HTO_D_V2_PTDS] = { "cuMemcpyHtoD_v2_ptds", NULL, false, true },
	[GP_PROBE_MEMCPY_DTO_H_V2] = { "cuMemcpyDtoH_v2", "cuMemcpyDtoH", false, true },
	[GP_PROBE_MEMCPY_DTO_H_V2_PTDS] = { "cuMemcpyDtoH_v2_ptds", NULL, false, true },
	[GP_PROBE_MEMCPY_DTO_D_V2] = { "cuMemcpyDtoD_v2", "cuMemcpyDtoD", false, true },
	[GP_PROBE_MEMCPY_DTO_D_V2_PTDS] = { "cuMemcpyDtoD_v2_ptds", NULL, false, true },
	[GP_PROBE_MEMCPY_HTO_D_ASYNC_V2] = { "cuMemcpyHtoDAsync_v2", NULL, false, true },
	[GP_PROBE_MEMCPY_HTO_D_ASYNC_V2_PTSZ] = { "cuMemcpyHtoDAsync_v2_ptsz", NULL, false, true },
	[GP_PROBE_MEMCPY_DTO_H_ASYNC_V2] = { "cuMemcpyDtoHAsync_v2", NULL, false, true },
	[GP_PROBE_MEMCPY_DTO_H_ASYNC_V2_PTSZ] = { "cuMemcpyDtoHAsync_v2_ptsz", NULL, false, true },
	[GP_PROBE_MEMCPY_DTO_D_ASYNC_V2] = { "cuMemcpyDtoDAsync_v2", NULL, false, true },
	[GP_PROBE_MEMCPY_DTO_D_ASYNC_V2_PTSZ] = { "cuMemcpyDtoDAsync_v2_ptsz", NULL, false, true },
	[GP_PROBE_MEMCPY2_D_V2] = { "cuMemcpy2D_v2", NULL, false, true },
	[GP_PROBE_MEMCPY2_D_ASYNC_V2] = { "cuMemcpy2DAsync_v2", NULL, false, true },
	[GP_PROBE_MEMCPY3_D_V2] = { "cuMemcpy3D_v2", NULL, false, true },
	[GP_PROBE_MEMCPY3_D_ASYNC_V2] = { "cuMemcpy3DAsync_v2", NULL, false, true },
	[GP_PROBE_MEMCPY_PEER] = { "cuMemcpyPeer", NULL, false, true },
	[GP_PROBE_MEMCPY_PEER_ASYNC] = { "cuMemcpyPeerAsync", NULL, false, true },
	[GP_PROBE_MEMCPY_BATCH_ASYNC] = { "cuMemcpyBatchAsync", NULL, false, true },
	[GP_PROBE_MEMSET_D8_V2] = { "cuMemsetD8_v2", "cuMemsetD8", false, true },
	[GP_PROBE_MEMSET_D8_ASYNC] = { "cuMemsetD8Async", NULL, false, true },
	[GP_PROBE_MEMSET_D8_ASYNC_PTSZ] = { "cuMemsetD8Async_ptsz", NULL, false, true },
	[GP_PROBE_MEMSET_D16_V2] = { "cuMemsetD16_v2", "cuMemsetD16", false, true },
	[GP_PROBE_MEMSET_D16_ASYNC] = { "cuMemsetD16Async", NULL, false, true },
	[GP_PROBE_MEMSET_D32_V2] = { "cuMemsetD32_v2", "cuMemsetD32", false, true },
	[GP_PROBE_MEMSET_D32_ASYNC] = { "cuMemsetD32Async", NULL, false, true },
	[GP_PROBE_MEMSET_D32_ASYNC_PTSZ] = { "cuMemsetD32Async_ptsz", NULL, false, true },
	[GP_PROBE_MEMSET_D2_D8_V2] = { "cuMemsetD2D8_v2", NULL, false, true },
	[GP_PROBE_MEMSET_D2_D32_V2] = { "cuMemsetD2D32_v2", NULL, false, true },
	/* Two exports each (cuda.h maps the plain name to the _v2 one): both are probed. */
	[GP_PROBE_GRAPH_ADD_KERNEL_NODE] = { "cuGraphAddKernelNode", NULL, .node = true },
	[GP_PROBE_GRAPH_ADD_KERNEL_NODE_V2] = { "cuGraphAddKernelNode_v2", NULL, .node = true },
	[GP_PROBE_GRAPH_ADD_MEMCPY_NODE] = { "cuGraphAddMemcpyNode", NULL, .node = true },
	[GP_PROBE_GRAPH_ADD_MEMSET_NODE] = { "cuGraphAddMemsetNode", NULL, .node = true },
	[GP_PROBE_GRAPH_ADD_NODE] = { "cuGraphAddNode", NULL, .node = true },
	[GP_PROBE_GRAPH_ADD_NODE_V2] = { "cuGraphAddNode_v2", NULL, .node = true },
};

/*
 * A pass's begin stays probed between duty windows (once a pass; its caller
 * must be known whenever its nodes are); a node (a trap each, hundreds a
 * step) is probed in windows only, and only while threads take nodes at
 * calls not seen before (launch_probe__quiet_nodes): a launch reads its
 * node's pass where the node's caller keeps it (bpf/launch.bpf.c: node_pass).
 */
const struct engine_point autograd_points[NR_AUTOGRAD_POINTS] = {
	/* Engine::execute_with_graph_task(shared_ptr<GraphTask> const&, shared_ptr<Node>, InputBuffer&&) */
	{ "_ZN5torch8autograd6Engine23execute_with_graph_taskERKSt10shared_ptrINS0_9GraphTaskEES2_INS0_4NodeEEONS0_11InputBufferE",
	  GP_PROBE_AUTOGRAD_EXECUTE },
	/* Engine::evaluate_function(shared_ptr<GraphTask>&, Node*, InputBuffer&, shared_ptr<ReadyQueue> const&) */
	{ "_ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEEPNS0_4NodeERNS0_11InputBufferERKS2_INS0_10ReadyQueueEE",
	  GP_PROBE_AUTOGRAD_NODE, .windowed = true },
};

const char *entry_point__name(__u32 probe)
{
	if (probe == GP_PROBE_AUTOGRAD_EXECUTE)
		return "torch::autograd::Engine::execute_with_graph_task";
	if (probe >= GP_PROBE_MAX)
		return "?";
	return entry_points[probe].symbol;
}

bool entry_point__is_launch(__u32 probe)
{
	return probe < GP_PROBE_MAX && entry_points[probe].launch;
}

bool entry_point__is_kernel_launch(__u32 probe)
{
	return probe < GP_PROBE_GRAPH_LAUNCH;
}

bool entry_point__is_single(__u32 probe)
{
	return entry_point__is_kernel_launch(probe) ||
	       (entry_point__is_copy(probe) && probe != GP_PROBE_MEMCPY_BATCH_ASYNC);
}

bool entry_point__is_copy(__u32 probe)
{
	return probe < GP_PROBE_MAX && entry_points[probe].copy;
}

bool entry_point__is_node(__u32 probe)
{
	return probe < GP_PROBE_MAX && entry_points[probe].node;
}
