/* SPDX-License-Identifier: MIT */
/*
 * The stub CUPTI's PC sampling API (cupti_pcsampling.h), with samples a
 * test can predict.
 *
 * - Enable makes PC sampling for a context (the stub has one: a second
 *   context's Enable is refused); the stall reasons are STUB_PC_NSTALL, with
 *   CUPTI's names and indexes that are not their positions, so a client
 *   that confuses the two is caught.
 * - Samples: each kernel run while PC sampling is enabled adds, g being
 *   its gridX * gridY * gridZ, g samples of long_scoreboard and 1 of
 *   selected at pcOffset 0x40 of its function, and g of wait at 0x80. Its
 *   cubinCrc is cuptiGetCubinCrc's of the module it was loaded from.
 *   As on the H200, a "_not_issued" reason counts again samples already
 *   counted under its reason (those in which the warp issued nothing): g - 1
 *   of long_scoreboard's g at 0x40 are also long_scoreboard_not_issued,
 *   which totalSamples does not count again. A period under 2^11 samples
 *   nothing, as measured on the H200 (=5 and =8 gave no sample at all).
 * - Held per (module, function, offset), STUB_PC_MAX_PCS at most: past it
 *   a kernel's samples are dropped (droppedSamples). GetData hands over up
 *   to collectNumPcs of them, with totalSamples and droppedSamples since
 *   the last call and remainingNumPcs; it never waits for the GPU. Each
 *   function's name is malloc'ed once and handed over in every hand-over
 *   (shared_name): a client that frees it after one reads freed memory
 *   and frees it twice.
 * - Disable puts what is still held into the configured buffer
 *   (SAMPLING_DATA_BUFFER), as far as it has room, and drops the rest.
 * - Continuous collection's rule: a module's samples must be collected
 *   before it goes. Those still held when it is unloaded (after the
 *   UNLOAD_STARTING callback returned) are dropped, counted in the next
 *   GetData's droppedSamples.
 * - GPUPROBE_STUB_PC_GETDATA_WAIT=1: the first GetData on a thread that
 *   made no driver call (a client's own thread) waits, inside the call,
 *   until a module unload has finished, 30 s at most, and says on stderr
 *   which it was ("stub: pc GetData held until an unload finished", or
 *   "... waited out"); the first module unload waits (30 s at most) for
 *   that GetData to be held before it tells the client: a collection
 *   blocked inside CUPTI while the application unloads a module, the
 *   pattern that hangs a client whose unload callback waits for its
 *   collecting thread.
 */
#include "stub/cupti/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STUB_PC_MAX_PCS 4096
#define STUB_PC_MODULES 1024
#define STUB_PC_NSTALL 5
#define STUB_PC_WAIT_S 30

static const struct {
	uint32_t index;
	const char *name;
} stalls[STUB_PC_NSTALL] = {
	{ 1, "smsp__pcsamp_warps_issue_stalled_barrier" },
	{ 3, "smsp__pcsamp_warps_issue_stalled_long_scoreboard" },
	{ 9, "smsp__pcsamp_warps_issue_stalled_selected" },
	{ 12, "smsp__pcsamp_warps_issue_stalled_wait" },
	{ 4, "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued" },
};
enum { S_BARRIER, S_LONG_SB, S_SELECTED, S_WAIT, S_LONG_SB_NOT_ISSUED };

struct stub_pc {
	uint32_t module_id;
	const char *fn;       /* the driver's name: valid for the process lifetime */
	uint64_t off;
	uint64_t samples[STUB_PC_NSTALL];
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t unloaded, held;
	void *ctx;            /* the context enabled, NULL: none */
	CUpti_PCSamplingData *cfg; /* SAMPLING_DATA_BUFFER, as configured */
	uint32_t period;
	struct stub_pc pcs[STUB_PC_MAX_PCS];
	size_t n;
	uint64_t total, dropped;
	struct {
		uint32_t id;
		uint64_t crc;
	} mods[STUB_PC_MODULES];
	size_t nmods;
	unsigned unloads;     /* module unloads finished */
	int wait_hook;        /* -1 unread, 0 off, 1 armed, 2 used */
} P = { .mu = PTHREAD_MUTEX_INITIALIZER, .unloaded = PTHREAD_COND_INITIALIZER,
	.held = PTHREAD_COND_INITIALIZER, .wait_hook = -1 };

/* Caller holds P.mu: GPUPROBE_STUB_PC_GETDATA_WAIT, read once. */
/* A PC's samples, each counted once (its _not_issued reason is a part of another's). */
static uint64_t counted(const struct stub_pc *pc)
{
	uint64_t n = 0;

	for (int s = 0; s < STUB_PC_NSTALL; s++)
		if (s != S_LONG_SB_NOT_ISSUED)
			n += pc->samples[s];
	return n;
}

static int wait_hook(void)
{
	if (P.wait_hook < 0) {
		const char *v = getenv("GPUPROBE_STUB_PC_GETDATA_WAIT");

		P.wait_hook = v && !strcmp(v, "1");
	}
	return P.wait_hook;
}

static struct timespec wait_until(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += STUB_PC_WAIT_S;
	return t;
}

/* ------------------------------------------------------------ the driver's side */

void stub_pc_module_loaded(uint32_t module_id, const void *image, size_t size)
{
	uint64_t crc = image && size ? stub_crc32c(image, size) : 0;

	pthread_mutex_lock(&P.mu);
	if (P.nmods < STUB_PC_MODULES)
		P.mods[P.nmods++] = (typeof(P.mods[0])){ .id = module_id, .crc = crc };
	pthread_mutex_unlock(&P.mu);
}

/* Before the UNLOAD_STARTING callback: the test hook's first unload waits for a GetData held. */
void stub_pc_unload_starting(void)
{
	struct timespec until = wait_until();
	int err = 0;

	pthread_mutex_lock(&P.mu);
	while (wait_hook() == 1 && err != ETIMEDOUT)
		err = pthread_cond_timedwait(&P.held, &P.mu, &until);
	pthread_mutex_unlock(&P.mu);
}

/* After the UNLOAD_STARTING callback: what is still held of the module goes. */
void stub_pc_module_gone(uint32_t module_id)
{
	size_t i, kept = 0;

	pthread_mutex_lock(&P.mu);
	for (i = 0; i < P.n; i++) {
		if (P.pcs[i].module_id != module_id) {
			P.pcs[kept++] = P.pcs[i];
			continue;
		}
		P.dropped += counted(&P.pcs[i]);
	}
	P.n = kept;
	P.unloads++;
	pthread_cond_broadcast(&P.unloaded);
	pthread_mutex_unlock(&P.mu);
}

static struct stub_pc *pc_slot(uint32_t module_id, const char *fn, uint64_t off)
{
	for (size_t i = 0; i < P.n; i++)
		if (P.pcs[i].module_id == module_id && P.pcs[i].off == off && !strcmp(P.pcs[i].fn, fn))
			return &P.pcs[i];
	if (P.n == STUB_PC_MAX_PCS)
		return NULL;
	P.pcs[P.n] = (struct stub_pc){ .module_id = module_id, .fn = fn, .off = off };
	return &P.pcs[P.n++];
}

static void pc_add(uint32_t module_id, const char *fn, uint64_t off, int stall, uint64_t n)
{
	struct stub_pc *pc = pc_slot(module_id, fn, off);

	if (pc)
		pc->samples[stall] += n;
	if (stall == S_LONG_SB_NOT_ISSUED) /* counted once, under its reason */
		return;
	P.total += n;
	if (!pc)
		P.dropped += n;
}

void stub_pc_kernel_ran(const struct stub_kernel_exec *k)
{
	uint64_t g = (uint64_t)k->grid[0] * k->grid[1] * k->grid[2];

	pthread_mutex_lock(&P.mu);
	if (P.ctx && k->name && !(P.period && P.period < 11)) {
		pc_add(k->module_id, k->name, 0x40, S_LONG_SB, g);
		pc_add(k->module_id, k->name, 0x40, S_SELECTED, 1);
		if (g > 1)
			pc_add(k->module_id, k->name, 0x40, S_LONG_SB_NOT_ISSUED, g - 1);
		pc_add(k->module_id, k->name, 0x80, S_WAIT, g);
	}
	pthread_mutex_unlock(&P.mu);
}

/* ------------------------------------------------------------ the client's side */

CUptiResult CUPTIAPI cuptiPCSamplingEnable(CUpti_PCSamplingEnableParams *pParams)
{
	CUptiResult r = CUPTI_SUCCESS;

	if (!pParams || !pParams->ctx)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (pParams->size < CUpti_PCSamplingEnableParamsSize)
		return CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
	pthread_mutex_lock(&P.mu);
	if (P.ctx && P.ctx != pParams->ctx)
		r = CUPTI_ERROR_NOT_SUPPORTED; /* one context */
	else
		P.ctx = pParams->ctx;
	pthread_mutex_unlock(&P.mu);
	return r;
}

static bool hand_over(const struct stub_pc *pc, CUpti_PCSamplingPCData *d);

/*
 * Caller holds P.mu: what is still held goes into the configured buffer, as
 * far as it has room (collectNumPcs); the rest is dropped, as CUPTI's
 * Disable does.
 */
static void flush_to_configured(void)
{
	CUpti_PCSamplingData *d = P.cfg;
	size_t given = 0;

	if (d && d->pPcData)
		while (given < d->collectNumPcs && given < P.n && hand_over(&P.pcs[given], &d->pPcData[given]))
			given++;
	for (size_t i = given; i < P.n; i++)
		P.dropped += counted(&P.pcs[i]);
	if (d) {
		d->totalNumPcs = given;
		d->remainingNumPcs = 0;
		d->totalSamples = P.total;
		d->droppedSamples = P.dropped;
		P.total = P.dropped = 0;
	}
	P.n = 0;
}

CUptiResult CUPTIAPI cuptiPCSamplingDisable(CUpti_PCSamplingDisableParams *pParams)
{
	if (!pParams || pParams->size < CUpti_PCSamplingDisableParamsSize)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&P.mu);
	if (P.ctx == pParams->ctx) {
		flush_to_configured();
		P.ctx = NULL;
		P.cfg = NULL;
	}
	pthread_mutex_unlock(&P.mu);
	return CUPTI_SUCCESS;
}

static bool enabled(void *ctx)
{
	bool on;

	pthread_mutex_lock(&P.mu);
	on = ctx && P.ctx == ctx;
	pthread_mutex_unlock(&P.mu);
	return on;
}

CUptiResult CUPTIAPI cuptiPCSamplingGetNumStallReasons(CUpti_PCSamplingGetNumStallReasonsParams *pParams)
{
	if (!pParams || pParams->size < CUpti_PCSamplingGetNumStallReasonsParamsSize ||
	    !pParams->numStallReasons)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (!enabled(pParams->ctx))
		return CUPTI_ERROR_INVALID_OPERATION; /* Enable first */
	*pParams->numStallReasons = STUB_PC_NSTALL;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPCSamplingGetStallReasons(CUpti_PCSamplingGetStallReasonsParams *pParams)
{
	if (!pParams || pParams->size < CUpti_PCSamplingGetStallReasonsParamsSize ||
	    !pParams->stallReasonIndex || !pParams->stallReasons)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (!enabled(pParams->ctx))
		return CUPTI_ERROR_INVALID_OPERATION;
	for (size_t i = 0; i < pParams->numStallReasons && i < STUB_PC_NSTALL; i++) {
		if (!pParams->stallReasons[i])
			return CUPTI_ERROR_INVALID_PARAMETER;
		pParams->stallReasonIndex[i] = stalls[i].index;
		snprintf(pParams->stallReasons[i], CUPTI_STALL_REASON_STRING_SIZE, "%s", stalls[i].name);
	}
	return CUPTI_SUCCESS;
}

static CUptiResult configure(CUpti_PCSamplingConfigurationInfo *c)
{
	switch (c->attributeType) {
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
		if (c->attributeData.samplingPeriodData.samplingPeriod < 5 ||
		    c->attributeData.samplingPeriodData.samplingPeriod > 31)
			return CUPTI_ERROR_INVALID_OPERATION;
		P.period = c->attributeData.samplingPeriodData.samplingPeriod;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
		P.cfg = c->attributeData.samplingDataBufferData.samplingDataBuffer;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
		return c->attributeData.collectionModeData.collectionMode ==
				       CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS
			       ? CUPTI_SUCCESS
			       : CUPTI_ERROR_NOT_SUPPORTED;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON:
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE:
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE:
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL:
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT:
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN:
		return CUPTI_SUCCESS; /* taken, changes nothing here */
	default:
		return CUPTI_ERROR_INVALID_PARAMETER;
	}
}

CUptiResult CUPTIAPI cuptiPCSamplingSetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams *pParams)
{
	CUptiResult r = CUPTI_SUCCESS;

	if (!pParams || pParams->size < CUpti_PCSamplingConfigurationInfoParamsSize ||
	    (pParams->numAttributes && !pParams->pPCSamplingConfigurationInfo))
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (!enabled(pParams->ctx))
		return CUPTI_ERROR_INVALID_OPERATION;
	pthread_mutex_lock(&P.mu);
	for (size_t i = 0; i < pParams->numAttributes; i++) {
		CUpti_PCSamplingConfigurationInfo *c = &pParams->pPCSamplingConfigurationInfo[i];

		c->attributeStatus = configure(c);
		if (c->attributeStatus != CUPTI_SUCCESS)
			r = c->attributeStatus;
	}
	pthread_mutex_unlock(&P.mu);
	return r;
}

/* Caller holds P.mu: the module's CRC (0: not loaded while PC sampling could see it). */
static uint64_t module_crc(uint32_t id)
{
	for (size_t i = 0; i < P.nmods; i++)
		if (P.mods[i].id == id)
			return P.mods[i].crc;
	return 0;
}

/* The test hook: the first call on a client thread waits here for an unload (P.mu held). */
static void hold_until_unload(void)
{
	struct timespec until = wait_until();
	unsigned seen = P.unloads;
	int err = 0;

	if (wait_hook() != 1 || stub_thread_is_app())
		return;
	P.wait_hook = 2;
	pthread_cond_broadcast(&P.held);
	while (P.unloads == seen && err != ETIMEDOUT)
		err = pthread_cond_timedwait(&P.unloaded, &P.mu, &until);
	fprintf(stderr, "stub: pc GetData %s\n",
		P.unloads != seen ? "held until an unload finished" : "waited out: no unload finished");
}

/*
 * A function's name as CUPTI hands it over: one copy per function for the
 * life of the process, the same pointer in every hand-over (as CUPTI may:
 * "shared across all the records"), the client's to free once, at the end.
 * Caller holds P.mu.
 */
static char *shared_name(const char *fn)
{
	static struct {
		const char *fn;
		char *copy;
	} names[256];
	static size_t n;

	for (size_t i = 0; i < n; i++)
		if (names[i].fn == fn)
			return names[i].copy;
	if (n == 256)
		return strdup(fn); /* a test with more functions than this: a copy each time */
	names[n].fn = fn;
	names[n].copy = strdup(fn);
	return names[n++].copy;
}

/* One held PC into d (its stall reasons those with samples); false when d has no room for them. */
static bool hand_over(const struct stub_pc *pc, CUpti_PCSamplingPCData *d)
{
	size_t n = 0;

	if (!d->stallReason)
		return false;
	d->size = sizeof(*d);
	d->cubinCrc = module_crc(pc->module_id);
	d->pcOffset = pc->off;
	d->functionIndex = 0;
	d->functionName = shared_name(pc->fn);
	for (int s = 0; s < STUB_PC_NSTALL; s++)
		if (pc->samples[s])
			d->stallReason[n++] = (CUpti_PCSamplingStallReason){
				.pcSamplingStallReasonIndex = stalls[s].index, .samples = (uint32_t)pc->samples[s] };
	d->stallReasonCount = n;
	return true;
}

CUptiResult CUPTIAPI cuptiPCSamplingGetData(CUpti_PCSamplingGetDataParams *pParams)
{
	CUpti_PCSamplingData *d;
	size_t given = 0;

	if (!pParams || pParams->size < CUpti_PCSamplingGetDataParamsSize || !pParams->pcSamplingData)
		return CUPTI_ERROR_INVALID_PARAMETER;
	d = pParams->pcSamplingData;
	if (d->size < sizeof(*d) || (d->collectNumPcs && !d->pPcData))
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&P.mu);
	if (!P.ctx || P.ctx != pParams->ctx) {
		pthread_mutex_unlock(&P.mu);
		return CUPTI_ERROR_INVALID_OPERATION;
	}
	if (d == P.cfg) {
		pthread_mutex_unlock(&P.mu);
		return CUPTI_ERROR_INVALID_PARAMETER; /* a buffer of its own, as CUPTI asks */
	}
	hold_until_unload();
	while (given < d->collectNumPcs && given < P.n && hand_over(&P.pcs[given], &d->pPcData[given]))
		given++;
	memmove(P.pcs, P.pcs + given, (P.n - given) * sizeof(P.pcs[0]));
	P.n -= given;
	d->totalSamples = P.total;
	d->droppedSamples = P.dropped;
	d->nonUsrKernelsTotalSamples = 0;
	d->hardwareBufferFull = 0;
	d->totalNumPcs = given;
	d->remainingNumPcs = P.n;
	d->rangeId = 0;
	P.total = P.dropped = 0;
	pthread_mutex_unlock(&P.mu);
	return CUPTI_SUCCESS;
}
