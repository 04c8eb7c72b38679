/* SPDX-License-Identifier: MIT */
/*
 * PC sampling in the shim (pc_sampling.h): the collector, on the shim's
 * thread, and the calls the callbacks make under a slot's lock. Each
 * context the callbacks saw has a slot, enabled and configured once
 * (continuous collection, every stall reason, CUPTI's buffer for what it
 * flushes on its own) by the callback that saw it, or here when that found
 * the slot busy; each is collected every flush with GetData, up to
 * PC_BATCH instructions a call, each instruction's samples of each stall
 * reason one GP_REC_PC record. The configured buffer is read only where
 * CUPTI cannot be writing it (pc_internal.h). CUPTI allocates the
 * instructions' function names and may hand one name over many times: each
 * is kept once and freed at exit.
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

static void buf__free(struct pc_buf *b)
{
	free(b->pcs);
	free(b->stalls);
	b->pcs = NULL;
	b->stalls = NULL;
}

static bool buf__alloc(struct pc_buf *b)
{
	b->pcs = calloc(PC_BATCH, sizeof(*b->pcs));
	b->stalls = calloc((size_t)PC_BATCH * PC_STALLS_MAX, sizeof(*b->stalls));
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

/* The slot's buffers and name set, made once; none of them when one cannot be. */
static bool room__make(struct pc_ctx *c)
{
	if (c->room)
		return true;
	c->names = calloc(2 * PC_NAMES_MAX, sizeof(*c->names));
	if (!c->names || !buf__alloc(&c->cfg) || !buf__alloc(&c->out)) {
		free(c->names);
		c->names = NULL;
		buf__free(&c->cfg);
		buf__free(&c->out);
		return false;
	}
	for (size_t i = 0; i < PC_STALLS_MAX; i++)
		c->stall_name[i] = c->stall_text[i];
	c->room = true;
	return true;
}

/* CUPTI's stall reasons for c: their indexes (not positions) and names. */
static bool stalls__read(struct pc_ctx *c)
{
	CUpti_PCSamplingGetNumStallReasonsParams np = {
		.size = CUpti_PCSamplingGetNumStallReasonsParamsSize, .ctx = c->ctx,
		.numStallReasons = &c->nstall };
	CUpti_PCSamplingGetStallReasonsParams sp = { .size = CUpti_PCSamplingGetStallReasonsParamsSize,
						     .ctx = c->ctx };

	if (pc.api.num_stalls(&np) != CUPTI_SUCCESS || !c->nstall)
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

/* c's lock held, c SEEN. A failure after Enable disables it again: nobody would collect. */
void pc_ctx__enable(struct pc_ctx *c)
{
	CUpti_PCSamplingEnableParams ep = { .size = CUpti_PCSamplingEnableParamsSize, .ctx = c->ctx };
	CUpti_PCSamplingDisableParams dp = { .size = CUpti_PCSamplingDisableParamsSize, .ctx = c->ctx };
	bool enabled = false, ok = room__make(c);

	if (ok)
		ok = enabled = pc.api.enable(&ep) == CUPTI_SUCCESS;
	if (ok)
		ok = stalls__read(c);
	if (ok) {
		buf__arm(&c->cfg, c->nstall);
		ok = configure(c);
	}
	if (!ok && enabled)
		pc.api.disable(&dp);
	c->names_gen = __atomic_load_n(&pc.keep_gen, __ATOMIC_ACQUIRE) - 1; /* its names go first */
	__atomic_store_n(&c->state, ok ? PC_ENABLED : PC_FAILED, __ATOMIC_RELEASE);
	if (!ok)
		shm__count(pc.shm, GP_CTR_CUPTI_ERRORS, 1);
}

/* ------------------------------------------------------------ collecting */

/* The stall names into the ring: true when every one went. */
static bool record_stall_names(struct pc_ctx *c)
{
	struct gp_record r;
	bool all = true;

	for (size_t i = 0; i < c->nstall; i++) {
		__u32 off = 0;

		memset(&r, 0, sizeof(r));
		r.type = GP_REC_PC_STALL;
		r.start_ns = r.end_ns = shm__now_ns();
		all &= shm__intern(pc.shm, c->stall_name[i], &off) == 0;
		r.pc_stall.stall = c->stall_index[i];
		r.pc_stall.name_off = off;
		all &= shm__write_record(pc.shm, &r) == 0;
	}
	return all;
}

/* A function name CUPTI handed over, kept (once) to be freed at exit. */
static void names__keep(struct pc_ctx *c, char *name)
{
	size_t cap = 2 * PC_NAMES_MAX, i = ((uintptr_t)name >> 4) * 0x9e3779b97f4a7c15ull % cap;

	if (!name)
		return;
	for (; c->names[i]; i = (i + 1) % cap)
		if (c->names[i] == name)
			return;
	if (c->nnames == PC_NAMES_MAX)
		return; /* left to the process */
	c->names[i] = name;
	c->nnames++;
}

static void names__free(struct pc_ctx *c)
{
	for (size_t i = 0; c->names && i < 2 * PC_NAMES_MAX; i++) {
		free(c->names[i]);
		c->names[i] = NULL;
	}
	c->nnames = 0;
}

/* One hand-over: its instructions' samples into the ring when kept; their names kept. */
static void emit(struct pc_ctx *c, const CUpti_PCSamplingData *d, bool keep)
{
	size_t npc = d->totalNumPcs < PC_BATCH ? d->totalNumPcs : PC_BATCH;
	unsigned gen = __atomic_load_n(&pc.keep_gen, __ATOMIC_ACQUIRE);
	struct gp_record r;
	__u32 lost = 0;

	for (size_t i = 0; i < npc; i++)
		names__keep(c, d->pPcData[i].functionName);
	if (keep && c->names_gen != gen && record_stall_names(c))
		c->names_gen = gen;
	for (size_t i = 0; keep && i < npc; i++) {
		const CUpti_PCSamplingPCData *p = &d->pPcData[i];
		size_t ns = p->stallReasonCount < c->nstall ? p->stallReasonCount : c->nstall;
		__u32 off = 0;

		if (p->functionName)
			shm__intern(pc.shm, p->functionName, &off);
		for (size_t j = 0; p->stallReason && j < ns; j++) {
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
}

/* c's lock held, c ENABLED (or just made GONE by its end): what CUPTI holds for it. */
void pc_ctx__drain(struct pc_ctx *c, bool keep, bool gone_stops)
{
	CUpti_PCSamplingGetDataParams gp = { .size = CUpti_PCSamplingGetDataParamsSize, .ctx = c->ctx,
					     .pcSamplingData = &c->out.data };

	for (int k = 0; k < PC_GETDATA_MAX; k++) {
		if (gone_stops && __atomic_load_n(&c->state, __ATOMIC_ACQUIRE) != PC_ENABLED)
			break; /* its context is ending: its own thread collects what is left */
		buf__arm(&c->out, c->nstall);
		if (pc.api.get_data(&gp) != CUPTI_SUCCESS) {
			shm__count(pc.shm, GP_CTR_CUPTI_ERRORS, 1);
			break;
		}
		emit(c, &c->out.data, keep);
		if (!c->out.data.remainingNumPcs)
			break;
	}
}

/* c's lock held, where CUPTI cannot be writing its configured buffer: what it flushed there. */
void pc_ctx__take_flushed(struct pc_ctx *c, bool keep)
{
	if (!c->cfg.data.totalNumPcs)
		return;
	emit(c, &c->cfg.data, keep);
	buf__arm(&c->cfg, c->nstall);
}

/* c's lock held: PC sampling off for c, then what that flushed taken. */
void pc_ctx__disable(struct pc_ctx *c, bool keep)
{
	CUpti_PCSamplingDisableParams dp = { .size = CUpti_PCSamplingDisableParamsSize, .ctx = c->ctx };

	if (pc.api.disable(&dp) != CUPTI_SUCCESS)
		shm__count(pc.shm, GP_CTR_CUPTI_ERRORS, 1);
	pc_ctx__take_flushed(c, keep);
}

void pc__keep(bool keep)
{
	if (keep && !__atomic_exchange_n(&pc.keep, 1, __ATOMIC_ACQ_REL))
		__atomic_fetch_add(&pc.keep_gen, 1, __ATOMIC_ACQ_REL); /* a reader came: names again */
	else if (!keep)
		__atomic_store_n(&pc.keep, 0, __ATOMIC_RELEASE);
}

/* The shim's thread: a context seen is enabled, an enabled one collected (GetData only). */
void pc__collect(void)
{
	bool keep = __atomic_load_n(&pc.keep, __ATOMIC_ACQUIRE);

	if (!pc.on || __atomic_load_n(&pc.exiting, __ATOMIC_ACQUIRE))
		return;
	for (size_t i = 0; i < PC_CTX_MAX; i++) {
		struct pc_ctx *c = &pc.ctx[i];
		int st = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);

		if (st != PC_SEEN && st != PC_ENABLED)
			continue;
		pthread_mutex_lock(&c->lock);
		if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == PC_SEEN)
			pc_ctx__enable(c);
		if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == PC_ENABLED)
			pc_ctx__drain(c, keep, true);
		pthread_mutex_unlock(&c->lock);
	}
}

/*
 * The exiting thread: no context is enabled from here; each enabled one is
 * collected, disabled and its names freed, unless the collector holds it
 * (not waited for: counted).
 */
void pc__at_exit(void)
{
	bool keep = __atomic_load_n(&pc.keep, __ATOMIC_ACQUIRE);

	if (!pc.on)
		return;
	__atomic_store_n(&pc.exiting, 1, __ATOMIC_RELEASE);
	for (size_t i = 0; i < PC_CTX_MAX; i++) {
		struct pc_ctx *c = &pc.ctx[i];
		int enabled = PC_ENABLED;

		if (!__atomic_compare_exchange_n(&c->state, &enabled, PC_GONE, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		if (pthread_mutex_trylock(&c->lock)) {
			shm__count(pc.shm, GP_CTR_PC_UNLOAD_BUSY, 1);
			continue;
		}
		pc_ctx__drain(c, keep, false);
		pc_ctx__disable(c, keep);
		names__free(c);
		pthread_mutex_unlock(&c->lock);
	}
}
