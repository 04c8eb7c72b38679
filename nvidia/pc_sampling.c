/* SPDX-License-Identifier: MIT */
/*
 * PC sampling in the shim (pc_sampling.h): the collector, on the shim's
 * thread. Each context the callbacks saw has a slot, enabled and configured
 * once (continuous collection, every stall reason, CUPTI's buffer for what
 * it flushes on its own) by the callback that saw it, or here when that
 * found the slot busy; each is collected every flush: up to PC_BATCH
 * instructions a GetData call, each instruction's samples of each stall
 * reason one GP_REC_PC record. CUPTI allocates each instruction's function
 * name; each is freed once.
 */
#include "shim/glibc_compat.h"
#include "nvidia/pc_internal.h"
#include "shim/shm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct pc_shim pc;

bool pc__wanted(unsigned *ret_period)
{
	const char *v = getenv("GPUPROBE_PC_SAMPLING");
	char *end;
	unsigned long n;

	if (!v || !*v)
		return false;
	n = strtoul(v, &end, 10);
	if (*end || (n && (n < 5 || n > 31)))
		return false;
	*ret_period = (unsigned)n;
	return true;
}

bool pc__setup(const struct pc_api *api, struct shm *shm, unsigned period)
{
	if (!api->enable || !api->disable || !api->num_stalls || !api->stalls || !api->configure ||
	    !api->get_data)
		return false;
	pc.api = *api;
	pc.shm = shm;
	pc.period = period;
	for (size_t i = 0; i < PC_CTX_MAX; i++)
		pthread_mutex_init(&pc.ctx[i].lock, NULL);
	pc.on = true;
	return true;
}

bool pc__on(void)
{
	return pc.on;
}

/* ------------------------------------------------------------ enabling */

static bool buf__alloc(struct pc_buf *b, size_t nstall)
{
	b->pcs = calloc(PC_BATCH, sizeof(*b->pcs));
	b->stalls = calloc((size_t)PC_BATCH * nstall, sizeof(*b->stalls));
	return b->pcs && b->stalls;
}

/* Ready for CUPTI to fill: every instruction's stall array given. */
static void buf__arm(struct pc_buf *b, size_t nstall)
{
	memset(&b->data, 0, sizeof(b->data));
	b->data.size = sizeof(b->data);
	b->data.collectNumPcs = PC_BATCH;
	b->data.pPcData = b->pcs;
	for (size_t i = 0; i < PC_BATCH; i++) {
		b->pcs[i].size = sizeof(b->pcs[i]);
		b->pcs[i].stallReason = b->stalls + i * nstall;
	}
}

/* Room for the stall reasons and both buffers, made once per slot. */
static bool stalls__room(struct pc_ctx *c)
{
	if (c->stall_index)
		return true;
	c->stall_index = calloc(PC_STALLS_MAX, sizeof(*c->stall_index));
	c->stall_name = calloc(PC_STALLS_MAX, sizeof(*c->stall_name));
	if (!c->stall_index || !c->stall_name)
		return false;
	for (size_t i = 0; i < PC_STALLS_MAX; i++)
		if (!(c->stall_name[i] = calloc(1, CUPTI_STALL_REASON_STRING_SIZE)))
			return false;
	return buf__alloc(&c->cfg, PC_STALLS_MAX) && buf__alloc(&c->out, PC_STALLS_MAX);
}

/* CUPTI's stall reasons for c: their indexes (not positions) and names. */
static bool stalls__read(struct pc_ctx *c)
{
	CUpti_PCSamplingGetNumStallReasonsParams np = {
		.size = CUpti_PCSamplingGetNumStallReasonsParamsSize, .ctx = c->ctx,
		.numStallReasons = &c->nstall };
	CUpti_PCSamplingGetStallReasonsParams sp = { .size = CUpti_PCSamplingGetStallReasonsParamsSize,
						     .ctx = c->ctx };

	if (!stalls__room(c) || pc.api.num_stalls(&np) != CUPTI_SUCCESS || !c->nstall)
		return false;
	if (c->nstall > PC_STALLS_MAX)
		c->nstall = PC_STALLS_MAX;
	sp.numStallReasons = c->nstall;
	sp.stallReasonIndex = c->stall_index;
	sp.stallReasons = c->stall_name;
	return pc.api.stalls(&sp) == CUPTI_SUCCESS;
}

static bool configure(struct pc_ctx *c)
{
	CUpti_PCSamplingConfigurationInfo a[6];
	CUpti_PCSamplingConfigurationInfoParams p = {
		.size = CUpti_PCSamplingConfigurationInfoParamsSize, .ctx = c->ctx,
		.pPCSamplingConfigurationInfo = a };
	size_t n = 0;

	memset(a, 0, sizeof(a));
	a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
	a[n].attributeData.stallReasonData.stallReasonCount = c->nstall;
	a[n++].attributeData.stallReasonData.pStallReasonIndex = c->stall_index;
	a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
	a[n++].attributeData.samplingDataBufferData.samplingDataBuffer = &c->cfg.data;
	a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
	a[n++].attributeData.collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
	a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
	a[n++].attributeData.outputDataFormatData.outputDataFormat = CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
	a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
	a[n++].attributeData.enableStartStopControlData.enableStartStopControl = 0;
	if (pc.period) {
		a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
		a[n++].attributeData.samplingPeriodData.samplingPeriod = pc.period;
	}
	p.numAttributes = n;
	return pc.api.configure(&p) == CUPTI_SUCCESS;
}

/* c's lock held. */
void pc_ctx__enable(struct pc_ctx *c)
{
	CUpti_PCSamplingEnableParams ep = { .size = CUpti_PCSamplingEnableParamsSize, .ctx = c->ctx };
	bool ok = pc.api.enable(&ep) == CUPTI_SUCCESS && stalls__read(c);

	if (ok) {
		buf__arm(&c->cfg, c->nstall);
		ok = configure(c);
	}
	c->names_sent = false;
	__atomic_store_n(&c->state, ok ? PC_ENABLED : PC_FAILED, __ATOMIC_RELEASE);
	if (!ok)
		shm__count(pc.shm, GP_CTR_CUPTI_ERRORS, 1);
}

/* ------------------------------------------------------------ collecting */

static void record_stall_names(struct pc_ctx *c)
{
	struct gp_record r;
	__u32 off = 0;

	for (size_t i = 0; i < c->nstall; i++) {
		memset(&r, 0, sizeof(r));
		r.type = GP_REC_PC_STALL;
		r.start_ns = r.end_ns = shm__now_ns();
		shm__intern(pc.shm, c->stall_name[i], &off);
		r.pc_stall.stall = c->stall_index[i];
		r.pc_stall.name_off = off;
		shm__write_record(pc.shm, &r);
	}
	c->names_sent = true;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(char *const *)a, y = (uintptr_t)*(char *const *)b;

	return x < y ? -1 : x > y;
}

/* CUPTI's function names of one hand-over, each freed once (one name may serve several). */
static void names__free(struct pc_ctx *c, size_t n)
{
	qsort(c->names, n, sizeof(c->names[0]), cmp_ptr);
	for (size_t i = 0; i < n; i++)
		if (!i || c->names[i] != c->names[i - 1])
			free(c->names[i]);
}

/* One hand-over: its instructions' samples into the ring when kept; the names freed. */
static void emit(struct pc_ctx *c, const CUpti_PCSamplingData *d, bool keep)
{
	size_t npc = d->totalNumPcs < PC_BATCH ? d->totalNumPcs : PC_BATCH, nnames = 0;
	struct gp_record r;
	__u32 lost = 0;

	for (size_t i = 0; i < npc; i++)
		if (d->pPcData[i].functionName)
			c->names[nnames++] = d->pPcData[i].functionName;
	if (keep && !c->names_sent)
		record_stall_names(c);
	for (size_t i = 0; keep && i < npc; i++) {
		const CUpti_PCSamplingPCData *p = &d->pPcData[i];
		size_t ns = p->stallReasonCount < c->nstall ? p->stallReasonCount : c->nstall;
		__u32 off = 0;

		if (p->functionName)
			shm__intern(pc.shm, p->functionName, &off);
		for (size_t j = 0; j < ns; j++) {
			if (!p->stallReason[j].samples)
				continue;
			memset(&r, 0, sizeof(r));
			r.type = GP_REC_PC;
			r.start_ns = r.end_ns = shm__now_ns();
			r.pc.cubin_crc = p->cubinCrc;
			r.pc.pc_offset = p->pcOffset;
			r.pc.name_off = off;
			r.pc.stall = p->stallReason[j].pcSamplingStallReasonIndex;
			r.pc.samples = p->stallReason[j].samples;
			lost += shm__write_record(pc.shm, &r) != 0;
		}
	}
	if (keep && (d->totalSamples || d->droppedSamples || lost || d->hardwareBufferFull)) {
		memset(&r, 0, sizeof(r));
		r.type = GP_REC_PC_TOTALS;
		r.start_ns = r.end_ns = shm__now_ns();
		r.pc_totals.total = d->totalSamples;
		r.pc_totals.dropped = d->droppedSamples;
		r.pc_totals.non_user = d->nonUsrKernelsTotalSamples;
		r.pc_totals.hw_full = d->hardwareBufferFull;
		r.pc_totals.pcs_lost = lost;
		shm__write_record(pc.shm, &r);
	}
	names__free(c, nnames);
}

/* c's lock held: what CUPTI holds for c, then what it flushed on its own. */
void pc_ctx__drain(struct pc_ctx *c, bool keep)
{
	CUpti_PCSamplingGetDataParams gp = { .size = CUpti_PCSamplingGetDataParamsSize, .ctx = c->ctx,
					     .pcSamplingData = &c->out.data };

	for (int k = 0; k < PC_GETDATA_MAX; k++) {
		buf__arm(&c->out, c->nstall);
		if (pc.api.get_data(&gp) != CUPTI_SUCCESS) {
			shm__count(pc.shm, GP_CTR_CUPTI_ERRORS, 1);
			break;
		}
		emit(c, &c->out.data, keep);
		if (!c->out.data.remainingNumPcs)
			break;
	}
	if (c->cfg.data.totalNumPcs) {
		emit(c, &c->cfg.data, keep);
		buf__arm(&c->cfg, c->nstall);
	}
}

void pc__keep(bool keep)
{
	__atomic_store_n(&pc.keep, keep, __ATOMIC_RELEASE);
}

void pc__collect(void)
{
	bool keep = __atomic_load_n(&pc.keep, __ATOMIC_ACQUIRE);

	if (!pc.on)
		return;
	for (size_t i = 0; i < PC_CTX_MAX; i++) {
		struct pc_ctx *c = &pc.ctx[i];

		if (!__atomic_load_n(&c->ctx, __ATOMIC_ACQUIRE))
			continue;
		pthread_mutex_lock(&c->lock);
		if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == PC_SEEN)
			pc_ctx__enable(c);
		if (!keep)
			c->names_sent = false;
		if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == PC_ENABLED)
			pc_ctx__drain(c, keep);
		pthread_mutex_unlock(&c->lock);
	}
}

void pc__at_exit(void)
{
	if (!pc.on)
		return;
	for (size_t i = 0; i < PC_CTX_MAX; i++) {
		struct pc_ctx *c = &pc.ctx[i];
		CUpti_PCSamplingDisableParams dp = { .size = CUpti_PCSamplingDisableParamsSize,
						     .ctx = c->ctx };

		if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) != PC_ENABLED)
			continue;
		if (pthread_mutex_trylock(&c->lock)) {
			shm__count(pc.shm, GP_CTR_PC_UNLOAD_BUSY, 1); /* the collector's last batch: not waited for */
			continue;
		}
		pc_ctx__drain(c, __atomic_load_n(&pc.keep, __ATOMIC_ACQUIRE));
		/* Disabling flushes what is left into the configured buffer. */
		if (pc.api.disable(&dp) == CUPTI_SUCCESS && c->cfg.data.totalNumPcs)
			emit(c, &c->cfg.data, __atomic_load_n(&pc.keep, __ATOMIC_ACQUIRE));
		__atomic_store_n(&c->state, PC_GONE, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&c->lock);
	}
}
