/* SPDX-License-Identifier: MIT */
/* CUPTI's activity records into the ring's records (decode.h). */
#include <stdint.h>
#include "nvidia/cbids.h"
#include "nvidia/decode.h"

__u64 decode__corr(__u64 *hw_at, __u32 id)
{
	__u64 hw = __atomic_load_n(hw_at, __ATOMIC_RELAXED), best, cand, epoch;
	__u64 best_d = ~0ull;

	if (!id)
		return 0;
	epoch = hw >> 32;
	best = ((__u64)epoch << 32) | id;
	for (int d = -1; d <= 1; d++) {
		if (d < 0 && !epoch)
			continue;
		cand = ((epoch + (__u64)(__s64)d) << 32) | id;
		__u64 dist = cand > hw ? cand - hw : hw - cand;
		if (dist < best_d) {
			best_d = dist;
			best = cand;
		}
	}
	while (best > hw && !__atomic_compare_exchange_n(hw_at, &hw, best, true, __ATOMIC_RELAXED,
							 __ATOMIC_RELAXED))
		;
	return best;
}

static __u32 sat_mul3(__s32 a, __s32 b, __s32 c)
{
	__u64 v = (__u64)(a > 0 ? a : 0) * (__u64)(b > 0 ? b : 0);

	if (v > UINT32_MAX)
		return UINT32_MAX;
	v *= (__u64)(c > 0 ? c : 0);
	return v > UINT32_MAX ? UINT32_MAX : (__u32)v;
}

static bool decode__kernel(const struct decode_ctx *c, const CUpti_Activity *a,
			  struct gp_record *r)
{
	/* CUPTI writes its newest layout; the fields we read share offsets. */
	const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)a;
	__u32 off = 0;

	r->type = GP_REC_KERNEL;
	r->corr = decode__corr(c->corr_hw, k->correlationId);
	r->start_ns = k->start;
	r->end_ns = k->end;
	shm__intern(c->shm, k->name, &off);
	r->kernel.name_off = off;
	r->kernel.device = k->deviceId;
	r->kernel.stream = k->streamId;
	r->kernel.graph_id = k->graphId;
	r->kernel.graph_node = k->graphNodeId;
	r->kernel.grid = sat_mul3(k->gridX, k->gridY, k->gridZ);
	r->kernel.block = sat_mul3(k->blockX, k->blockY, k->blockZ);
	return true;
}

static bool decode__memcpy(const struct decode_ctx *c, const CUpti_Activity *a,
			  struct gp_record *r)
{
	const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)a;

	r->type = GP_REC_MEMCPY;
	r->corr = decode__corr(c->corr_hw, m->correlationId);
	r->start_ns = m->start;
	r->end_ns = m->end;
	r->copy.bytes = m->bytes;
	r->copy.kind = m->copyKind;
	r->copy.device = m->deviceId;
	r->copy.stream = m->streamId;
	r->copy.graph_id = m->graphId;
	r->copy.graph_node = m->graphNodeId;
	return true;
}

static bool decode__memset(const struct decode_ctx *c, const CUpti_Activity *a,
			  struct gp_record *r)
{
	const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)a;

	r->type = GP_REC_MEMSET;
	r->corr = decode__corr(c->corr_hw, m->correlationId);
	r->start_ns = m->start;
	r->end_ns = m->end;
	r->copy.bytes = m->bytes;
	r->copy.device = m->deviceId;
	r->copy.stream = m->streamId;
	r->copy.graph_id = m->graphId;
	r->copy.graph_node = m->graphNodeId;
	return true;
}

static bool decode__api(const struct decode_ctx *c, const CUpti_Activity *a,
			  struct gp_record *r)
{
	const CUpti_ActivityAPI *api = (const CUpti_ActivityAPI *)a;
	bool driver = a->kind == CUPTI_ACTIVITY_KIND_DRIVER;
	int cls = cbids__class(driver, api->cbid);

	if (cls < 0 && c->api_filter)
		return false;
	r->type = GP_REC_API;
	r->flags = cls == CBID_COPY ? GP_REC_F_COPY : cls == CBID_NODE ? GP_REC_F_NODE : 0;
	if (api->returnValue)
		r->flags |= GP_REC_F_FAILED;
	r->tid = api->threadId;
	r->corr = decode__corr(c->corr_hw, api->correlationId);
	r->start_ns = api->start;
	r->end_ns = api->end;
	r->api.cbid = api->cbid;
	r->api.domain = driver ? GP_API_DRIVER : GP_API_RUNTIME;
	r->api.pid = api->processId;
	return true;
}

enum decode_result decode__activity(const struct decode_ctx *c, const CUpti_Activity *a,
				    struct gp_record *r)
{
	bool keep;

	switch (a->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		keep = decode__kernel(c, a, r);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		keep = decode__memcpy(c, a, r);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		keep = decode__memset(c, a, r);
		break;
	case CUPTI_ACTIVITY_KIND_DRIVER:
	case CUPTI_ACTIVITY_KIND_RUNTIME:
		keep = decode__api(c, a, r);
		break;
	default:
		return DECODE_UNKNOWN;
	}
	return keep ? DECODE_KEEP : DECODE_SKIP;
}
